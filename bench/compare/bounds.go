package compare

import (
	"math"

	"github.com/xdslab/xdslab/internal/summary"
)

// span is where one side's figure lies over its runs: between lo and hi, lo excluded when
// loOpen (a bucket bound) and included when a run gave it as a point.
type span struct {
	lo, hi float64
	loOpen bool
	n      int // runs that add to it
}

func newSpan() span { return span{lo: math.Inf(1), hi: math.Inf(-1)} }

// add widens the span by one run's interval.
func (sp *span) add(lo, hi float64, open bool) {
	switch {
	case sp.n == 0 || lo < sp.lo:
		sp.lo, sp.loOpen = lo, open
	case lo == sp.lo:
		sp.loOpen = sp.loOpen && open
	}
	sp.hi = math.Max(sp.hi, hi)
	sp.n++
}

// above reports whether every value in a is above every value in b.
func (a span) above(b span) bool {
	return a.lo > b.hi || a.lo == b.hi && a.loOpen
}

// boundSide is one side of a bounds row: the bucket that holds the figure (shown), the
// bucket range that holds its confidence interval (tested), the point values of runs written
// before bounds, and how many observations the buckets hold.
type boundSide struct {
	shown, ci span
	bounded   bool
	points    []float64
	obs       uint64
}

// anyBounded reports whether some run knows the stat only as a bucket bound.
func anyBounded(ms []*summary.Metric, stat string) bool {
	for _, m := range ms {
		if m == nil {
			continue
		}
		if _, ok := m.Bounded(stat); ok {
			return true
		}
	}
	return false
}

// bucketCI bounds the confidence interval of the q-quantile of b's observations: the
// buckets of the order statistics that bracket it (the rank interval quantileCI uses for
// HDR histograms). With few observations a tail quantile's interval is unbounded: 18 pushes
// cannot place their p(99).
func bucketCI(b summary.Buckets, q, conf float64) (lo, hi float64) {
	n := float64(b.Count)
	z := normalQuantile(0.5 + conf/2)
	half := z * math.Sqrt(n*q*(1-q))
	lo, hi = math.Inf(-1), math.Inf(1)
	if r := math.Floor(n*q - half); r >= 1 {
		if bd, ok := b.RankBound(uint64(r)); ok {
			lo = bd.Lower()
		}
	}
	if r := math.Ceil(n*q+half) + 1; r <= n {
		if bd, ok := b.RankBound(uint64(r)); ok {
			hi = bd.Upper()
		}
	}
	return lo, hi
}

// boundSideOf gathers the stat of every run of a side; a run without it (an empty bucket
// histogram: no data) adds nothing.
func boundSideOf(ms []*summary.Metric, stat string, conf float64) boundSide {
	sd := boundSide{shown: newSpan(), ci: newSpan()}
	q, isQuantile := trendQuantile(stat)
	for _, m := range ms {
		if m == nil {
			continue
		}
		if b, ok := m.Bounded(stat); ok {
			sd.bounded = true
			sd.shown.add(b.Lower(), b.Upper(), true)
			lo, hi := b.Lower(), b.Upper()
			if m.Buckets != nil && isQuantile {
				sd.obs += m.Buckets.Count
				clo, chi := bucketCI(*m.Buckets, q, conf)
				lo, hi = math.Min(lo, clo), math.Max(hi, chi)
			}
			sd.ci.add(lo, hi, true)
			continue
		}
		if v := values([]*summary.Metric{m}, stat); len(v) == 1 {
			sd.shown.add(v[0], v[0], false)
			sd.ci.add(v[0], v[0], false)
			sd.points = append(sd.points, v[0])
		}
	}
	return sd
}

func (sd boundSide) estimate() Estimate {
	n := int(sd.obs)
	if !sd.bounded {
		e := pointEstimate(sd.points)
		if sd.shown.n > 0 {
			e.Lo, e.Hi = Float(sd.shown.lo), Float(sd.shown.hi)
		}
		return e
	}
	return Estimate{Center: Float(math.NaN()), Lo: Float(sd.shown.lo), Hi: Float(sd.shown.hi), N: n, Bounded: true}
}

// testBounds fills a row of a stat that some run knows only as a bucket bound. The sides
// differ only when the bucket ranges of their confidence intervals do not overlap (so a
// handful of pushes cannot move a tail), and Delta is the smallest change that proves (the
// figures are durations and counts: a ratio needs a positive denominator).
func testBounds(row *Row, bm, nm []*summary.Metric, stat string, conf float64) {
	row.Method = MethodBounds
	row.P = 1
	row.Delta = Float(math.NaN())
	b, n := boundSideOf(bm, stat, conf), boundSideOf(nm, stat, conf)
	row.Base, row.New = b.estimate(), n.estimate()
	row.Note = "bucket bounds: the figure is known only to lie in a bucket of the control plane's histogram; a change is claimed only when the buckets of the sides' confidence intervals do not overlap"
	if b.shown.n == 0 || n.shown.n == 0 {
		row.Note = "stat missing on one side (no observations)"
		return
	}
	switch {
	case n.ci.above(b.ci):
		row.Significant, row.P = true, 0
		if hi := b.ci.hi; hi > 0 && !math.IsInf(hi, 0) && !math.IsInf(n.ci.lo, 0) {
			row.Delta = Float(n.ci.lo/hi - 1)
		}
	case b.ci.above(n.ci):
		row.Significant, row.P = true, 0
		if lo := b.ci.lo; lo > 0 && !math.IsInf(lo, 0) && !math.IsInf(n.ci.hi, 0) {
			row.Delta = Float(n.ci.hi/lo - 1)
		}
	case n.shown.above(b.shown) || b.shown.above(n.shown):
		row.Note = "bucket bounds: the buckets differ, but their confidence intervals overlap (too few observations to place this quantile)"
	}
	if !row.Significant && (b.ci.unbounded() || n.ci.unbounded()) {
		// Too few observations to bound the quantile: no change could have been claimed.
		row.noPower = true
	}
}

// unbounded reports whether the span is open-ended (a quantile its observations cannot place).
func (sp span) unbounded() bool { return math.IsInf(sp.lo, 0) || math.IsInf(sp.hi, 0) }

// boundText renders a bounds estimate: "(100ms, 1s]", "≤ 100ms", "> 30s", or the point
// (range) of a side whose runs gave points.
func boundText(e Estimate, contains summary.ValueType) string {
	lo, hi := float64(e.Lo), float64(e.Hi)
	f := func(x float64) string { return FormatValue(x, contains) }
	if !e.Bounded {
		if lo == hi || math.IsNaN(lo) || math.IsNaN(hi) {
			return f(float64(e.Center))
		}
		return "[" + f(lo) + ", " + f(hi) + "]"
	}
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return "unbounded"
	case math.IsInf(lo, -1):
		return "≤ " + f(hi)
	case math.IsInf(hi, 1):
		return "> " + f(lo)
	}
	return "(" + f(lo) + ", " + f(hi) + "]"
}
