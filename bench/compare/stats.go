package compare

import (
	"math"
	"slices"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/perf/benchmath"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Statistics shared by compare and tune (gonum's median order statistics and normal quantile).
// compare follows benchstat: a sample's centre is its median with a distribution-free
// confidence interval, and two samples differ when the
// Mann-Whitney U test rejects "same distribution" at alpha (both from golang.org/x/perf's
// benchmath). A single run per side has no sample of its own; its HDR histogram does, so the
// test then runs over values drawn from the two histograms (see histSamples).

// defaultConfidence is the confidence level of the intervals compare prints.
const defaultConfidence = 0.95

// maxHistSamples caps the values drawn from one histogram for the U test. More values only
// narrow p further on distributions the table already shows; the cap keeps the test's cost
// bounded (it sorts both samples) whatever the run's event count.
const maxHistSamples = 4000

// sampleSummary is a sample's median and its confidence interval.
type sampleSummary struct {
	Center, Lo, Hi float64
	N              int
}

// summarize returns the median and its confidence interval of values (benchmath's
// AssumeNothing); the interval is infinite when there are too few values for one.
func summarize(values []float64, confidence float64) sampleSummary {
	if len(values) == 0 {
		return sampleSummary{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	s := benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, confidence)
	return sampleSummary{Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi, N: len(values)}
}

// uTest runs the two-sided Mann-Whitney U test and returns its p value; a failed test (all
// values tied, an empty side) gives p = 1, "no evidence of a difference".
func UTest(a, b []float64, alpha float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 1
	}
	th := &benchmath.Thresholds{CompareAlpha: alpha}
	sa := benchmath.NewSample(slices.Clone(a), th)
	sb := benchmath.NewSample(slices.Clone(b), th)
	return benchmath.AssumeNothing.Compare(sa, sb).P
}

// Median returns the median of values (NaN for none): the middle value, or the mean of the two
// middle ones. gonum's Quantile has no such median (its Empirical kind gives the lower middle
// value of an even count), so the two middle order statistics are read with it and averaged:
// p = 0.5 gives the lower (or only) middle one, p = 0.5 + 1/(4n) the upper one (the rank
// n/2 + 1/4 falls strictly inside it, clear of any rounding).
func Median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	v := slices.Sorted(slices.Values(values))
	lo := stat.Quantile(0.5, stat.Empirical, v, nil)
	hi := stat.Quantile(0.5+0.25/float64(len(v)), stat.Empirical, v, nil)
	return (lo + hi) / 2
}

// histSamples returns up to maxN values that represent h's distribution, times scale. A
// histogram with at most maxN recorded values gives them all (each at its bucket's
// representative value); a larger one gives maxN values at evenly spaced quantiles
// ((i+0.5)/maxN), a deterministic stand-in for a random draw with the same distribution,
// so the same inputs always give the same p value.
func histSamples(h *hdr.Histogram, scale float64, maxN int) []float64 {
	if h == nil || h.TotalCount() == 0 || maxN <= 0 {
		return nil
	}
	total := h.TotalCount()
	if total <= int64(maxN) {
		out := make([]float64, 0, total)
		for _, b := range h.Distribution() {
			// b.To is the bucket's highest equivalent value, what ValueAtPercentile reports.
			v := float64(b.To) * scale
			for i := int64(0); i < b.Count; i++ {
				out = append(out, v)
			}
		}
		return out
	}
	out := make([]float64, maxN)
	for i := range out {
		out[i] = float64(h.ValueAtPercentile(100*(float64(i)+0.5)/float64(maxN))) * scale
	}
	return out
}

// quantileCI is a distribution-free confidence interval for the q-quantile (0..1) of h: the
// order statistics whose ranks bracket n·q by z·sqrt(n·q·(1−q)) (the normal approximation to
// the binomial count of values below the quantile), read back from the histogram.
//
// nEff is the effective sample size (at most the count): within a run, observations are
// clustered (every client that receives one push reports nearly the same latency), so the
// interval is as wide as nEff independent values would make it. The ranks are found on the
// nEff scale and read back as quantiles of the whole histogram.
func quantileCI(h *hdr.Histogram, scale, q, confidence float64, nEff int) (lo, hi float64) {
	n := float64(h.TotalCount())
	if nEff > 0 && float64(nEff) < n {
		n = float64(nEff)
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	z := normalQuantile(0.5 + confidence/2)
	half := z * math.Sqrt(n*q*(1-q))
	loRank := math.Floor(n*q - half)
	hiRank := math.Ceil(n*q+half) + 1
	if loRank < 1 {
		return math.Inf(-1), rankValue(h, scale, hiRank, n)
	}
	if hiRank > n {
		return rankValue(h, scale, loRank, n), math.Inf(1)
	}
	return rankValue(h, scale, loRank, n), rankValue(h, scale, hiRank, n)
}

func rankValue(h *hdr.Histogram, scale, rank, n float64) float64 {
	return float64(h.ValueAtPercentile(100*rank/n)) * scale
}

// effectiveN is the effective sample size of a histogram of count values from runs
// that saw events independent events in all: observations of one event by many clients
// are one piece of evidence, not many. events <= 0 (unknown) leaves count.
func effectiveN(count int64, events float64) int {
	n := count
	if events > 0 && events < float64(n) {
		n = int64(events)
	}
	if n > maxHistSamples {
		n = maxHistSamples
	}
	return int(n)
}

// normalQuantile is the standard normal quantile function (for the CI half width).
func normalQuantile(p float64) float64 { return distuv.UnitNormal.Quantile(p) }
