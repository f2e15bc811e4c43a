package run

import (
	"context"
	"testing"

	"github.com/xdslab/xdslab/bench/collect"
)

// BenchmarkRunSmall runs the small scenario in-process and reports what it measured: push
// latency and convergence percentiles, and the CPU each side spent (harness overhead).
func BenchmarkRunSmall(b *testing.B) {
	sc := loadScenario(b, smallScenario)
	for b.Loop() {
		s, err := Run(context.Background(), sc, Options{CPUProfile: true})
		if err != nil {
			b.Fatal(err)
		}
		report := func(name string, tags map[string]string, key, unit string, scale float64) {
			if m, ok := s.Results.Find(name, tags); ok {
				b.ReportMetric(m.Values[key]*scale, unit)
			}
		}
		report("xdslab_push_latency_seconds", nil, "p(50)", "push-p50-ms", 1e3)
		report("xdslab_push_latency_seconds", nil, "p(99)", "push-p99-ms", 1e3)
		report("xdslab_convergence_seconds", nil, "p(99)", "convergence-p99-ms", 1e3)
		report(collect.MetricCPUSeconds, map[string]string{"side": collect.SideControlPlane}, "value", "cp-cpu-s", 1)
		report(collect.MetricCPUSeconds, map[string]string{"side": collect.SideHarness}, "value", "harness-cpu-s", 1)
		report(collect.MetricPushCycles, nil, "count", "push-cycles", 1)
	}
}
