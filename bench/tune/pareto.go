package tune

import (
	"fmt"
	"math"
	"slices"

	"github.com/xdslab/xdslab/bench/compare"
)

// paretoFrontier returns the indices of the usable points no other point dominates (another
// point dominates p when it is no worse on cost and latency and better on one), by
// increasing cost.
func paretoFrontier(points []Point, c Cost) []int {
	var idx []int
	for i, p := range points {
		if p.usable(c) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		pa, pb := points[a], points[b]
		if x, y := pa.CostValue(c), pb.CostValue(c); x != y {
			return compareFloats(x, y)
		}
		return compareFloats(pa.Latency(), pb.Latency())
	})
	// Sweep by cost: a point is on the frontier when its latency beats every cheaper one.
	var front []int
	best := math.Inf(1)
	for _, i := range idx {
		if l := points[i].Latency(); l < best {
			front = append(front, i)
			best = l
		}
	}
	return front
}

func compareFloats(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// kneePoint returns the frontier point farthest from the straight line joining the
// frontier's ends, both axes scaled to [0,1] (the point of diminishing returns); with two
// points or fewer, the one with the smallest sum of scaled cost and latency. -1 for none.
func knee(points []Point, front []int, c Cost) int {
	if len(front) == 0 {
		return -1
	}
	xs, ys := make([]float64, len(front)), make([]float64, len(front))
	for k, i := range front {
		xs[k], ys[k] = points[i].CostValue(c), points[i].Latency()
	}
	scale := func(v []float64) {
		lo, hi := slices.Min(v), slices.Max(v)
		for i := range v {
			if hi > lo {
				v[i] = (v[i] - lo) / (hi - lo)
			} else {
				v[i] = 0
			}
		}
	}
	scale(xs)
	scale(ys)
	best, bestScore := 0, math.Inf(-1)
	if len(front) <= 2 {
		for k := range front {
			if s := -(xs[k] + ys[k]); s > bestScore {
				best, bestScore = k, s
			}
		}
		return front[best]
	}
	// Distance from the chord (x0,y0)→(x1,y1); the frontier is convex towards the origin,
	// so the knee lies below the chord.
	x0, y0, x1, y1 := xs[0], ys[0], xs[len(xs)-1], ys[len(ys)-1]
	dx, dy := x1-x0, y1-y0
	norm := math.Hypot(dx, dy)
	for k := range front {
		d := (dx*(ys[k]-y0) - dy*(xs[k]-x0)) / norm
		// Below the chord is d < 0 for a chord going right and down.
		if s := -d; s > bestScore {
			best, bestScore = k, s
		}
	}
	return front[best]
}

// recommend picks the cheapest usable point that meets the scenario's latency thresholds
// (ties: lower latency). Without latency thresholds it recommends the knee.
func recommend(r *Result, haveThresholds bool) (int, string) {
	c := r.Cost
	costName := "push cycles"
	if c == CostCPU {
		costName = "control-plane CPU seconds"
	}
	if !haveThresholds {
		if r.Knee < 0 {
			return -1, "no usable point"
		}
		if r.EstimateOnly {
			return r.Knee, "estimate only (no runs) and no latency thresholds: the knee of predicted push cycles against predicted debounce delay"
		}
		return r.Knee, "the scenario has no latency thresholds: recommending the knee of the frontier"
	}
	best := -1
	for i, p := range r.Points {
		if !p.usable(c) || !p.MeetsThresholds {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := r.Points[best]
		if x, y := p.CostValue(c), b.CostValue(c); x < y || x == y && p.Latency() < b.Latency() {
			best = i
		}
	}
	if best < 0 {
		fastest := -1
		for i, p := range r.Points {
			if p.usable(c) && (fastest < 0 || p.Latency() < r.Points[fastest].Latency()) {
				fastest = i
			}
		}
		if fastest < 0 {
			return -1, "no point ran successfully"
		}
		return -1, fmt.Sprintf("no point meets the latency thresholds; the lowest p99 push latency was %s at %s",
			compare.FormatValue(r.Points[fastest].Latency(), "time"), r.Points[fastest].Label)
	}
	if r.EstimateOnly {
		return best, "estimate only (no runs): the point with the fewest predicted push cycles whose predicted debounce delay leaves room for every latency threshold; confirm it with a real run"
	}
	return best, fmt.Sprintf("the cheapest point (fewest %s) that meets every latency threshold", costName)
}

// estimateCheck compares the estimate with the measured figures at p.
func estimateCheck(p Point) *EstimateCheck {
	if p.Measured == nil {
		return nil
	}
	rel := func(pred, meas float64) compare.Float {
		if meas == 0 || math.IsNaN(meas) || math.IsNaN(pred) {
			return compare.Float(math.NaN())
		}
		return compare.Float(pred/meas - 1)
	}
	e := &EstimateCheck{Point: p.Index,
		PushCyclesPredicted: compare.Float(p.Estimate.PushCycles), PushCyclesMeasured: p.Measured.PushCycles,
		DebounceDelayPredicted: p.Estimate.DebounceDelayMean, DebounceDelayMeasured: p.Measured.DebounceDelayMean,
	}
	e.PushCyclesError = rel(float64(e.PushCyclesPredicted), float64(e.PushCyclesMeasured))
	e.DebounceDelayError = rel(float64(e.DebounceDelayPredicted), float64(e.DebounceDelayMeasured))
	return e
}
