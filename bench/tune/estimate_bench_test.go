package tune

import (
	"context"
	"testing"

	"github.com/xdslab/xdslab/scenarios"
)

// BenchmarkTuneEstimate is the fast estimate of one grid point of quickstart (the timeline
// is cached across points, so this is the debouncer replay).
func BenchmarkTuneEstimate(b *testing.B) {
	sc, err := scenarioForBench()
	if err != nil {
		b.Fatal(err)
	}
	est := newEstimator(context.Background())
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
		if _, err := newEstimator(context.Background()).timeline(sc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/timeline")
}

func scenarioForBench() (*scenarios.Scenario, error) { return scenarios.Builtin("quickstart") }
