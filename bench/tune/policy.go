package tune

import (
	"fmt"
	"math"
	"strings"

	"github.com/xdslab/xdslab/bench/compare"
)

// PolicyComparison says whether the adaptive debounce policy beats the best fixed setting of
// a tune that ran both: the best point of each policy (bestOf) are compared figure by
// figure with the Mann-Whitney U test over their runs' values.
type PolicyComparison struct {
	// Fixed and Adaptive are the compared points' indices.
	Fixed    int     `json:"fixedPoint"`
	Adaptive int     `json:"adaptivePoint"`
	Alpha    float64 `json:"alpha"`
	// MinRuns is the fewest runs a side with which the U test can reject at Alpha.
	MinRuns int `json:"minRuns"`
	// How says how each best point was chosen.
	How     string                 `json:"how"`
	Figures []PolicyFigureVerdict  `json:"figures"`
	Verdict PolicyComparisonResult `json:"verdict"`
	// Why explains the verdict in a sentence.
	Why string `json:"why"`
}

// PolicyFigureVerdict compares one figure (lower is better) between the two points.
type PolicyFigureVerdict struct {
	Figure   string        `json:"figure"`
	Fixed    compare.Float `json:"fixedMedian"`
	Adaptive compare.Float `json:"adaptiveMedian"`
	NFixed   int           `json:"fixedRuns"`
	NAdapt   int           `json:"adaptiveRuns"`
	// P is the two-sided U test's p value over the runs' values; NaN when not tested.
	P       compare.Float          `json:"p"`
	Verdict PolicyComparisonResult `json:"verdict"`
}

// PolicyComparisonResult is adaptive against fixed.
type PolicyComparisonResult string

// The verdicts. Inconclusive is the lab failing closed: too few runs (or figures missing)
// for the test to say anything either way.
const (
	PolicyBetter       PolicyComparisonResult = "better"
	PolicyWorse        PolicyComparisonResult = "worse"
	PolicyNoDifference PolicyComparisonResult = "no significant difference"
	PolicyMixed        PolicyComparisonResult = "mixed"
	PolicyInconclusive PolicyComparisonResult = "inconclusive"
	policyAlphaDefault                        = 0.05
)

// policyFigures are the compared figures: the latency the proxies see and what it costs.
var policyFigures = []struct {
	name string
	get  func(PointFigures) compare.Float
	unit string
}{
	{"p50 push latency", func(f PointFigures) compare.Float { return f.PushLatencyP50 }, "time"},
	{"p99 push latency", func(f PointFigures) compare.Float { return f.PushLatencyP99 }, "time"},
	{"push cycles", func(f PointFigures) compare.Float { return f.PushCycles }, "default"},
	{"control-plane CPU", func(f PointFigures) compare.Float { return f.CPUSeconds }, "time"},
}

// bestOf picks the best usable measured point among those of policy: the cheapest that
// meets every latency threshold (as the recommendation does), else the knee of the policy's
// own frontier. -1 for none.
func bestOf(r *Result, policy string, haveThresholds bool) (int, string) {
	var sub []Point
	var idx []int
	for i, p := range r.Points {
		if p.Policy == policy && p.Measured != nil && p.usable(r.Cost) {
			sub = append(sub, p)
			idx = append(idx, i)
		}
	}
	if len(sub) == 0 {
		return -1, ""
	}
	if haveThresholds {
		best := -1
		for k, p := range sub {
			if !p.MeetsThresholds {
				continue
			}
			if best < 0 {
				best = k
				continue
			}
			b := sub[best]
			if x, y := p.CostValue(r.Cost), b.CostValue(r.Cost); x < y || x == y && p.Latency() < b.Latency() {
				best = k
			}
		}
		if best >= 0 {
			return idx[best], "the cheapest " + policy + " point meeting every latency threshold"
		}
	}
	knee := knee(sub, paretoFrontier(sub, r.Cost), r.Cost)
	if knee < 0 {
		return -1, ""
	}
	why := "the knee of the " + policy + " points' frontier"
	if haveThresholds {
		why += " (none meets the latency thresholds)"
	}
	return idx[knee], why
}

// comparePolicies compares the best adaptive point with the best fixed one; nil when the
// tune did not measure both policies.
func comparePolicies(r *Result, haveThresholds bool, alpha float64) *PolicyComparison {
	if r.EstimateOnly {
		return nil
	}
	if !(alpha > 0 && alpha < 1) {
		alpha = policyAlphaDefault
	}
	fi, fwhy := bestOf(r, "fixed", haveThresholds)
	ai, awhy := bestOf(r, "adaptive", haveThresholds)
	if fi < 0 || ai < 0 {
		return nil
	}
	c := &PolicyComparison{Fixed: fi, Adaptive: ai, Alpha: alpha, MinRuns: compare.MinRuns(alpha),
		How: fmt.Sprintf("fixed: %s (point %d); adaptive: %s (point %d)", fwhy, fi, awhy, ai)}
	fp, ap := r.Points[fi], r.Points[ai]
	var better, worse, unsure []string
	for _, fig := range policyFigures {
		var fv, av []float64
		for _, f := range fp.perRun {
			if v := float64(fig.get(f)); !math.IsNaN(v) {
				fv = append(fv, v)
			}
		}
		for _, f := range ap.perRun {
			if v := float64(fig.get(f)); !math.IsNaN(v) {
				av = append(av, v)
			}
		}
		v := PolicyFigureVerdict{Figure: fig.name, Fixed: compare.Float(compare.Median(fv)), Adaptive: compare.Float(compare.Median(av)),
			NFixed: len(fv), NAdapt: len(av), P: compare.Float(math.NaN())}
		if len(fv) > 0 && len(av) > 0 {
			v.P = compare.Float(compare.UTest(fv, av, alpha))
		}
		switch {
		case !compare.RunsCanReject(len(fv), len(av), alpha):
			v.Verdict = PolicyInconclusive
			unsure = append(unsure, fig.name)
		case float64(v.P) >= alpha:
			v.Verdict = PolicyNoDifference
		case v.Adaptive < v.Fixed:
			v.Verdict = PolicyBetter
			better = append(better, fig.name)
		default:
			v.Verdict = PolicyWorse
			worse = append(worse, fig.name)
		}
		c.Figures = append(c.Figures, v)
	}
	switch {
	case len(unsure) > 0:
		c.Verdict = PolicyInconclusive
		c.Why = fmt.Sprintf("%d fixed and %d adaptive runs: the U test cannot reject at alpha %g with fewer than %d runs a side (%s); repeat with --repeats %d or more",
			fp.Runs, ap.Runs, alpha, c.MinRuns, strings.Join(unsure, ", "), c.MinRuns)
	case len(better) > 0 && len(worse) > 0:
		c.Verdict = PolicyMixed
		c.Why = fmt.Sprintf("adaptive is better on %s and worse on %s (U test, alpha %g): a trade-off, not a win",
			strings.Join(better, ", "), strings.Join(worse, ", "), alpha)
	case len(better) > 0:
		c.Verdict = PolicyBetter
		c.Why = fmt.Sprintf("adaptive is better on %s and not significantly worse on anything (U test, alpha %g)", strings.Join(better, ", "), alpha)
	case len(worse) > 0:
		c.Verdict = PolicyWorse
		c.Why = fmt.Sprintf("adaptive is worse on %s and not significantly better on anything (U test, alpha %g)", strings.Join(worse, ", "), alpha)
	default:
		c.Verdict = PolicyNoDifference
		c.Why = fmt.Sprintf("no figure differs at alpha %g over %d+%d runs", alpha, fp.Runs, ap.Runs)
	}
	return c
}
