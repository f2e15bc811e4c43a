package simtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"google.golang.org/protobuf/proto"
	securityapi "istio.io/api/security/v1beta1"
)

// Epoch is the virtual clock's start in tests, so that t0 values are reproducible.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// SmallTopology is a mesh small enough to check exhaustively after every event.
func SmallTopology() simulator.Topology {
	return simulator.Topology{
		Namespaces:                  3,
		Services:                    12,
		Protocols:                   simulator.Protocols{HTTP: 2, GRPC: 1, TCP: 1},
		PortsPerService:             dist.Spec{Dist: "uniform", Min: 1, Max: 3},
		EndpointsPerService:         dist.Spec{Dist: "lognormal", Median: 4, Sigma: 0.5},
		Localities:                  simulator.Localities{Regions: 2, ZonesPerRegion: 2},
		Versions:                    2,
		ServiceAccountsPerNamespace: 2,
		VirtualServices:             0.4,
		DestinationRules:            0.5,
		SidecarImports:              1,
	}
}

// KindCases lists one churn entry per kind (replay is tested separately: it needs a trace).
func KindCases() []simulator.Churn {
	return []simulator.Churn{
		{Kind: simulator.EndpointFlap, Rate: 4, Down: 2 * time.Second},
		{Kind: simulator.Scale, Every: time.Second, Services: 2, Delta: dist.Spec{Dist: "uniform", Min: 1, Max: 3}},
		{Kind: simulator.RollingDeploy, Every: 5 * time.Second, Window: 3 * time.Second},
		{Kind: simulator.ServiceCreate, Every: 2 * time.Second},
		{Kind: simulator.ServiceDelete, Every: 3 * time.Second},
		{Kind: simulator.ConfigChange, Target: simulator.TargetVirtualService, Rate: 1, Services: 2},
		{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, Rate: 1},
		{Kind: simulator.ServiceAccountChange, Every: 2 * time.Second},
		{Kind: simulator.ZoneFailure, At: []time.Duration{time.Second, 10 * time.Second}, Fraction: 0.5, Down: 4 * time.Second},
	}
}

// MixedConfig runs every churn kind of KindCases on the small topology for 20s.
func MixedConfig(seed uint64) simulator.Config {
	return simulator.Config{Seed: seed, Duration: 20 * time.Second, Topology: SmallTopology(), Churn: KindCases(), MaxPredicates: 64}
}

// Drain runs the simulator to the end without a runner.
func Drain(t testing.TB, sim *simulator.Simulator) []simulator.Event {
	t.Helper()
	var out []simulator.Event
	for {
		ev, ok, err := sim.Next()
		require.NoError(t, err)
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// ApplyChurn runs the simulator to the end, applying every event it does not skip to sink as it
// goes, and returns the applied events per kind.
func ApplyChurn(t testing.TB, ctx context.Context, sim *simulator.Simulator, sink simulator.Sink) map[simulator.ChurnKind]int {
	t.Helper()
	kinds := map[simulator.ChurnKind]int{}
	for {
		ev, ok, err := sim.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return kinds
		}
		if ev.Skip != "" {
			continue
		}
		kinds[ev.Kind]++
		if err := sink.Apply(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
}

// RequireSameObjects fails t unless got holds exactly the objects of want, with equal specs and
// labels.
func RequireSameObjects(t *testing.T, want []istioconfig.Config, got Store) {
	t.Helper()
	w := NewStore(want)
	require.Len(t, got, len(w))
	for k, c := range w {
		g, ok := got[k]
		require.True(t, ok, "missing %s", k)
		require.True(t, proto.Equal(c.Spec, g.Spec), "%s differs:\nwant %v\ngot  %v", k, c.Spec, g.Spec)
		require.Equal(t, c.Labels, g.Labels, "%s labels", k)
	}
}

// Store is what a config source holds after applying events.
type Store map[istioconfig.Key]istioconfig.Config

// NewStore holds the initial objects.
func NewStore(initial []istioconfig.Config) Store {
	s := Store{}
	for _, c := range initial {
		s[c.Key()] = c
	}
	return s
}

// Apply applies the event's deletes and upserts; deleting an object that is not there fails t.
func (s Store) Apply(t testing.TB, ev simulator.Event) {
	t.Helper()
	for _, k := range ev.Deletes {
		if _, ok := s[k]; !ok {
			t.Fatalf("event %d (%s) deletes %s, which does not exist", ev.ID, ev.Kind, k)
		}
		delete(s, k)
	}
	for _, c := range ev.Upserts {
		s[c.Key()] = c
	}
}

// AuthzTopology is the small topology with four AuthorizationPolicies per namespace.
func AuthzTopology() simulator.Topology {
	t := SmallTopology()
	t.AuthorizationPolicies = simulator.AuthorizationPolicies{PerNamespace: 4}
	return t
}

// AuthzOf picks the AuthorizationPolicies out of cfgs.
func AuthzOf(cfgs []istioconfig.Config) map[istioconfig.Key]*securityapi.AuthorizationPolicy {
	out := map[istioconfig.Key]*securityapi.AuthorizationPolicy{}
	for _, c := range cfgs {
		if ap, ok := c.Spec.(*securityapi.AuthorizationPolicy); ok {
			out[c.Key()] = ap
		}
	}
	return out
}

// BenchTopology is the benchmarks' mesh: 5,000 services with 10 endpoints each in 50 namespaces.
func BenchTopology() simulator.Topology {
	t := simulator.DefaultTopology()
	t.Namespaces = 50
	t.Services = 5000
	t.EndpointsPerService = dist.Constant(10)
	t.PortsPerService = dist.Spec{Dist: "uniform", Min: 1, Max: 2}
	return t
}

// ChurnMix is the benchmarks' sustained churn: a mix of every synthetic kind.
func ChurnMix() []simulator.Churn {
	return []simulator.Churn{
		{Kind: simulator.EndpointFlap, Rate: 500, Down: time.Second},
		{Kind: simulator.Scale, Rate: 100},
		{Kind: simulator.RollingDeploy, Rate: 2, Window: 5 * time.Second},
		{Kind: simulator.ConfigChange, Target: simulator.TargetVirtualService, Rate: 20},
		{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, Rate: 20},
		{Kind: simulator.ServiceCreate, Rate: 5},
		{Kind: simulator.ServiceDelete, Rate: 5},
		{Kind: simulator.ServiceAccountChange, Rate: 5},
	}
}

// RunChurn applies events on a virtual clock until b.N events were applied.
func RunChurn(b *testing.B, cfg simulator.Config, sink simulator.Sink, recorders ...simulator.Sink) {
	b.Helper()
	sim, err := simulator.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(Epoch), Sink: sink, Recorders: recorders, OnApplied: func(simulator.Event) {
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
