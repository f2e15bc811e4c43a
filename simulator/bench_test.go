package simulator_test

import (
	"io"
	"testing"
	"time"

	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// BenchmarkTopology5k generates a 5,000-service / 50,000-endpoint mesh and renders it to Istio
// objects.
func BenchmarkTopology5k(b *testing.B) {
	cfg := simulator.Config{Seed: 1, Duration: time.Second, Topology: simtest.BenchTopology()}
	var objs, eps int
	for b.Loop() {
		sim, err := simulator.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		objs, eps = len(sim.Initial()), sim.Endpoints()
	}
	b.ReportMetric(float64(objs), "objects")
	b.ReportMetric(float64(eps), "endpoints")
}

// BenchmarkTopology5kWorkloadEntries is the same mesh with one WorkloadEntry per endpoint.
func BenchmarkTopology5kWorkloadEntries(b *testing.B) {
	cfg := simulator.Config{Seed: 1, Duration: time.Second, Topology: simtest.BenchTopology()}
	cfg.Topology.WorkloadEntries = true
	var objs int
	for b.Loop() {
		sim, err := simulator.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		objs = len(sim.Initial())
	}
	b.ReportMetric(float64(objs), "objects")
}

// BenchmarkChurnEventLog is sustained churn (a mix of every synthetic kind) on the 5k-service
// mesh through the event-log sink: generation, expectations and JSON encoding.
func BenchmarkChurnEventLog(b *testing.B) {
	cfg := simulator.Config{Seed: 1, Duration: 24 * time.Hour, Topology: simtest.BenchTopology(), Churn: simtest.ChurnMix()}
	el := sinks.NewEventLog(io.Discard)
	simtest.RunChurn(b, cfg, el)
}
