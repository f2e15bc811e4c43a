package simulator

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/dist"
)

func benchTopology() Topology {
	t := DefaultTopology()
	t.Namespaces = 50
	t.Services = 5000
	t.EndpointsPerService = dist.Constant(10)
	t.PortsPerService = dist.Spec{Dist: "uniform", Min: 1, Max: 2}
	return t
}

// BenchmarkTopology5k generates a 5,000-service / 50,000-endpoint mesh and renders it to Istio
// objects.
func BenchmarkTopology5k(b *testing.B) {
	cfg := Config{Seed: 1, Duration: time.Second, Topology: benchTopology()}
	var objs, eps int
	for b.Loop() {
		sim, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		objs, eps = len(sim.Initial()), 0
		for _, s := range sim.m.services {
			eps += len(s.endpoints)
		}
	}
	b.ReportMetric(float64(objs), "objects")
	b.ReportMetric(float64(eps), "endpoints")
}

// BenchmarkTopology5kWorkloadEntries is the same mesh with one WorkloadEntry per endpoint.
func BenchmarkTopology5kWorkloadEntries(b *testing.B) {
	cfg := Config{Seed: 1, Duration: time.Second, Topology: benchTopology()}
	cfg.Topology.WorkloadEntries = true
	var objs int
	for b.Loop() {
		sim, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		objs = len(sim.Initial())
	}
	b.ReportMetric(float64(objs), "objects")
}

func churnMix() []Churn {
	return []Churn{
		{Kind: EndpointFlap, Rate: 500, Down: time.Second},
		{Kind: Scale, Rate: 100},
		{Kind: RollingDeploy, Rate: 2, Window: 5 * time.Second},
		{Kind: ConfigChange, Target: TargetVirtualService, Rate: 20},
		{Kind: ConfigChange, Target: TargetDestinationRule, Rate: 20},
		{Kind: ServiceCreate, Rate: 5},
		{Kind: ServiceDelete, Rate: 5},
		{Kind: ServiceAccountChange, Rate: 5},
	}
}

// runChurn applies events on a virtual clock until b.N events were applied.
func runChurn(b *testing.B, cfg Config, sink Sink, recorders ...Sink) {
	b.Helper()
	sim, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	r, err := NewRunner(sim, RunnerOptions{Clock: NewVirtualClock(epoch), Sink: sink, Recorders: recorders, OnApplied: func(Event) {
		if n++; n == b.N {
			cancel()
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Init(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	_, err = r.Run(ctx)
	b.StopTimer()
	if err != nil && ctx.Err() == nil {
		b.Fatal(err)
	}
	if n < b.N {
		b.Fatalf("only %d events in the run, wanted %d", n, b.N)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkChurnEventLog is sustained churn (a mix of every synthetic kind) on the 5k-service
// mesh through the event-log sink: generation, expectations and JSON encoding.
func BenchmarkChurnEventLog(b *testing.B) {
	cfg := Config{Seed: 1, Duration: 24 * time.Hour, Topology: benchTopology(), Churn: churnMix()}
	el := NewEventLog(io.Discard)
	runChurn(b, cfg, el)
}

// BenchmarkChurnDirSink is the same churn written as Istio YAML files (one per service).
func BenchmarkChurnDirSink(b *testing.B) {
	cfg := Config{Seed: 1, Duration: 24 * time.Hour, Topology: benchTopology(), Churn: churnMix()}
	sink, err := NewDirSink(DirOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	runChurn(b, cfg, sink)
}
