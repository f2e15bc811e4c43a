package compare

import (
	"testing"

	"github.com/xdslab/xdslab/internal/summary"
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
		if _, err := Compare(base, nw, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/compare")
}
