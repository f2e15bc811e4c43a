package istio_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"istio.io/istio/pilot/pkg/config/memory"
	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/adsc"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/config/schema/gvk"
	istiotest "istio.io/istio/pkg/test"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	xmodel "github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/hack/istio/istiodlab"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// mcpMesh is a small mesh with every kind the simulator writes and churn of each kind.
const mcpMesh = `
name: istio-mcp
seed: 11
duration: 4s
topology:
  namespaces: 2
  services: 12
  endpointsPerService: {dist: constant, value: 2}
  virtualServices: 0.5
  destinationRules: 0.5
  workloadEntries: true
churn:
  - {kind: endpoint-flap, rate: 5/s}
  - {kind: scale, rate: 1/s}
  - {kind: config-change, rate: 1/s, target: virtualservice}
  - {kind: service-delete, at: [2s]}
clients:
  - {name: sidecars, count: 10, xds: sotw, ramp: 100/s}
phases:
  connect: {timeout: 60s}
  drain: {timeout: 15s}
thresholds:
  xdslab_fleet_nacks_total: ['count==0']
  xdslab_events_missed_total: ['count==0']
`

var xdslabToIstio = map[istioconfig.Kind]string{
	istioconfig.KindServiceEntry: gvk.ServiceEntry.Kind, istioconfig.KindWorkloadEntry: gvk.WorkloadEntry.Kind,
	istioconfig.KindVirtualService: gvk.VirtualService.Kind, istioconfig.KindDestinationRule: gvk.DestinationRule.Kind,
	istioconfig.KindSidecar: gvk.Sidecar.Kind, istioconfig.KindGateway: gvk.Gateway.Kind,
}

// istioObjects lists what Istio's store holds, as "Kind ns/name" → spec.
func istioObjects(store model.ConfigStore) map[string]proto.Message {
	out := map[string]proto.Message{}
	for _, s := range collections.Pilot.All() {
		for _, c := range store.List(s.GroupVersionKind(), "") {
			out[fmt.Sprintf("%s %s/%s", s.Kind(), c.Namespace, c.Name)] = c.Spec.(proto.Message)
		}
	}
	return out
}

// sameObjects says how got (Istio's store) differs from the simulator's mesh, "" when it holds
// exactly those objects with equal specs.
func sameObjects(got map[string]proto.Message, want []istioconfig.Config) string {
	seen := map[string]bool{}
	var diffs []string
	for _, c := range want {
		k := fmt.Sprintf("%s %s/%s", xdslabToIstio[c.Kind], c.Namespace, c.Name)
		seen[k] = true
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+k)
		case !proto.Equal(g, c.Spec):
			diffs = append(diffs, "differs "+k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if !seen[k] {
			diffs = append(diffs, "extra "+k)
		}
	}
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("… %d in all", len(diffs)))
	}
	return strings.Join(diffs, "; ")
}

// TestIstioMCPClientReadsSimulator: Istio's own MCP client (pkg/adsc in MCP mode, set up as
// istiod sets up an xds:// config source) reads the simulator's MCP sink and ends up with
// exactly the objects the simulator wrote, after the initial mesh and after all the churn.
func TestIstioMCPClientReadsSimulator(t *testing.T) {
	sc := scenarioFrom(t, mcpMesh)
	sim, err := simulator.New(run.SimConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.NewMCP(sinks.MCPOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	mc, err := adsc.New(sink.Addr(), &adsc.ADSConfig{
		InitialDiscoveryRequests: adsc.ConfigInitialRequests(),
		Config: adsc.Config{Namespace: "istio-system", Workload: "test", Meta: model.NodeMetadata{Generator: "api"}.ToStruct(),
			GrpcOpts: []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	store := memory.NewController(memory.Make(collections.Pilot))
	mc.Store = store
	if err := mc.Run(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Istio's MCP client to sync (every type answered)", mc.HasSynced)
	ctx := context.Background()
	if err := sink.Init(ctx, sim.Initial()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the initial mesh", func() bool { return sameObjects(istioObjects(store), sim.Initial()) == "" })
	events := 0
	for {
		ev, ok, err := sim.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if ev.Skip != "" {
			continue
		}
		events++
		if err := sink.Apply(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := sameObjects(istioObjects(store), sim.Current())
		if d == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d events Istio's store differs from the simulator's mesh: %s", events, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := sink.Stats(); st.NACKs != 0 {
		t.Errorf("Istio's client NACKed %d responses", st.NACKs)
	}
	t.Logf("%d objects, %d events; sink %+v", len(sim.Current()), events, sink.Stats())
}

// TestOurControlPlaneReadsIstioAPIGenerator: our control plane, with Istio's DiscoveryServer as
// its only config source (xds://, the api generator, its auth check off as Istio's own tests
// do), holds the objects Istio serves and follows a change.
func TestOurControlPlaneReadsIstioAPIGenerator(t *testing.T) {
	istiotest.SetForTest(t, &features.EnableXDSAPIGeneratorAuth, false)
	sc := scenarioFrom(t, mcpMesh)
	sim, err := simulator.New(run.SimConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ds, err := sinks.NewDir(sinks.DirOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ds.Init(ctx, sim.Initial()); err != nil {
		t.Fatal(err)
	}
	srv, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.MCP = []mcpsource.Options{{Addr: srv.Addr}}
	ours := controlplanetest.NewServer(t, opts)
	select {
	case <-ours.Synced():
	case <-time.After(30 * time.Second):
		t.Fatal("our control plane never synced from Istio's api generator")
	}
	holds := func(want []istioconfig.Config) string {
		got := map[string]proto.Message{}
		for _, c := range ours.ConfigStore().All() {
			got[fmt.Sprintf("%s %s/%s", xdslabToIstio[c.Kind], c.Namespace, c.Name)] = c.Spec
		}
		return sameObjects(got, want)
	}
	waitFor(t, "the initial mesh in our store", func() bool { return holds(sim.Initial()) == "" })
	// One event through Istio's file source and api generator into our store.
	for {
		ev, ok, err := sim.Next()
		if err != nil || !ok {
			t.Fatalf("no event: %v", err)
		}
		if ev.Skip != "" {
			continue
		}
		if err := ds.Apply(ctx, ev); err != nil {
			t.Fatal(err)
		}
		break
	}
	waitFor(t, "the first event in our store", func() bool { return holds(sim.Current()) == "" })
	services := len(sim.Current())
	if _, err := ours.WaitForSnapshot(ctx, func(s *xmodel.Snapshot) bool { return s.ServiceCount() > 0 }); err != nil {
		t.Fatal(err)
	}
	t.Logf("our control plane holds the %d objects Istio serves", services)
}

// TestRunOnIstioOverMCP runs the lab end to end with Istio's DiscoveryServer reading the
// simulator over MCP (Istio's own MCP client, as an xds:// config source): every event is
// observed by every client it should reach, 0 NACKs.
func TestRunOnIstioOverMCP(t *testing.T) {
	sc := scenarioFrom(t, mcpMesh)
	sink, err := sinks.NewMCP(sinks.MCPOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := istiodlab.Start(t, istiodlab.Options{MCP: sink.Addr(), MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := run.Run(context.Background(), sc, run.Options{Target: srv.Addr, Sink: sink, TargetMetrics: srv.MetricsAddr})
	if err != nil {
		t.Fatal(err)
	}
	val := func(name, key string) float64 {
		m, ok := s.Results.Find(name, nil)
		if !ok {
			return -1
		}
		return m.Values[key]
	}
	t.Logf("Istio over MCP: push latency p50 %.3fs p99 %.3fs; events %v, missed %v",
		val("xdslab_push_latency_seconds", "p(50)"), val("xdslab_push_latency_seconds", "p(99)"),
		val(collect.MetricSimEvents, "count"), val(collect.MetricEventsMissed, "count"))
	for _, th := range s.Results.Thresholds {
		if !th.Passed {
			t.Errorf("threshold failed: %s%s %s (value %v)", th.Metric, summary.TagString(th.Tags), th.Expression, th.Value)
		}
	}
	if val(collect.MetricSimEvents, "count") <= 0 {
		t.Error("the simulator applied no event")
	}
}

func scenarioFrom(t *testing.T, y string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.LoadBytes("istio-mcp.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
