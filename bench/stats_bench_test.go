package bench

import (
	"testing"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
)

// BenchmarkCompareHistograms compares two single runs whose push latency histograms hold
// 20 000 observations each (the histogram U test at its sample cap).
func BenchmarkCompareHistograms(b *testing.B) {
	mk := func(draw uint64) *summary.Summary {
		s := baseSynth(draw)
		s.n = 20000
		sum := synthSummary(b, s)
		sum.Results.Metrics[2].Values["count"] = 1e6 // events: no effective-size cap
		return sum
	}
	base, nw := NewSide("b", mk(1)), NewSide("n", mk(2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Compare(base, nw, DefaultCompareOptions()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/compare")
}

// BenchmarkTuneEstimate is the fast estimate of one grid point of quickstart (the timeline
// is cached across points, so this is the debouncer replay).
func BenchmarkTuneEstimate(b *testing.B) {
	sc, err := scenarioForBench()
	if err != nil {
		b.Fatal(err)
	}
	est := newTuneEstimator()
	if _, err := est.estimate(sc); err != nil { // builds the timeline once
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := est.estimate(sc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/point")
}

// BenchmarkTuneTimeline is the cost of generating quickstart's churn timeline from its seed.
func BenchmarkTuneTimeline(b *testing.B) {
	sc, err := scenarioForBench()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := newTuneEstimator().timeline(sc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/timeline")
}

func scenarioForBench() (*scenarios.Scenario, error) { return scenarios.Builtin("quickstart") }
