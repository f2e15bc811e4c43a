package istio_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/hack/istio/istiodlab"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// parity is the mesh both tests serve from Istio's DiscoveryServer: every client kind the lab
// has (SotW and Delta sidecars, routers, proxyless gRPC), realistic NACK rules, a mesh with
// VirtualServices, DestinationRules and a gateway. Sized to keep the test in tens of seconds.
const parity = `
name: istio-parity
seed: 7
duration: 8s
topology:
  namespaces: 3
  services: 30
  protocols: {http: 0.6, grpc: 0.3, tcp: 0.1}
  endpointsPerService: {dist: lognormal, median: 3, sigma: 0.5, min: 1, max: 10}
  localities: {regions: 1, zonesPerRegion: 2}
  virtualServices: 0.3
  destinationRules: 0.3
  gateways: {count: 1, hostsPerGateway: 5}
churn:
  - {kind: endpoint-flap, rate: 4/s}
  - {kind: scale, rate: 0.5/s}
  - {kind: config-change, rate: 0.5/s, target: virtualservice}
clients:
  - {name: sidecars-sotw, count: 30, xds: sotw, ramp: 100/s, nack: {realistic: true}}
  - {name: sidecars-delta, count: 20, xds: delta, ramp: 100/s, nack: {realistic: true}}
  - {name: routers, count: 4, type: router, xds: sotw, namespaces: 1, ramp: 100/s, nack: {realistic: true}}
  - {name: grpc, count: 4, xds: grpc, ramp: 100/s}
phases:
  connect: {timeout: 60s}
  drain: {timeout: 15s}
thresholds:
  xdslab_fleet_nacks_total: ['count==0']
  xdslab_events_missed_total: ['count==0']
`

func scenario(t *testing.T) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.LoadBytes("istio-parity.yaml", []byte(parity))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// secretHooks checks, as each client reaches full config, the secrets its config references:
// a sidecar or router whose clusters or listeners name the agent's secrets holds a real
// workload certificate for its own namespace from the fleet's emulated istio-agent.
type secretHooks struct {
	probe.NopHooks
	mu       sync.Mutex
	withCert int
	problems []string
}

func (h *secretHooks) FirstFullConfig(c probe.ClientInfo, _ time.Time) {
	if c.NamedOnly {
		return // proxyless gRPC: no TLS from the agent here
	}
	cl, ok := c.State.(*fakeenvoy.Client) // the secret the fleet's agent served it
	if !ok {
		h.mu.Lock()
		h.problems = append(h.problems, c.NodeID+": hooks without the client")
		h.mu.Unlock()
		return
	}
	s := cl.LocalSecret(istioagent.SecretWorkload)
	h.mu.Lock()
	defer h.mu.Unlock()
	if s == nil {
		h.problems = append(h.problems, c.NodeID+": full config without the workload certificate")
		return
	}
	blk, _ := pem.Decode([]byte(s.GetTlsCertificate().GetCertificateChain().GetInlineString()))
	if blk == nil {
		h.problems = append(h.problems, c.NodeID+": workload certificate is not PEM")
		return
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	want := "spiffe://cluster.local/ns/" + c.Namespace + "/sa/default"
	if err != nil || len(cert.URIs) != 1 || cert.URIs[0].String() != want {
		h.problems = append(h.problems, fmt.Sprintf("%s: certificate %v (err %v), want SAN %s", c.NodeID, cert, err, want))
		return
	}
	h.withCert++
}

// TestFleetReachesFullConfigOnIstio: Istio's own DiscoveryServer with its default mesh config
// (auto-mTLS on) serves the simulator's YAML from a directory through its file config source;
// every fake Envoy and gRPC client reaches full config (clusters warmed with endpoints and the
// agent's secrets, listeners with routes) with 0 NACKs. The judge is "every client holds full
// config", not a count of responses.
func TestFleetReachesFullConfigOnIstio(t *testing.T) {
	hooks := fullConfigOnIstio(t, scenario(t))
	if hooks.withCert == 0 {
		t.Error("no client's config referenced the agent's workload certificate: auto-mTLS is off or the secrets were not served by the agent")
	}
}

// TestBuiltinsReachFullConfigOnIstio: the mesh and client kinds of every built-in scenario,
// shrunk to a few clients and services, reach full config on Istio's DiscoveryServer with 0
// NACKs under Envoy's realistic rules (the built-ins' own NACK policies, which reject on
// purpose, are replaced by the realistic one).
func TestBuiltinsReachFullConfigOnIstio(t *testing.T) {
	for _, name := range scenarios.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			sc, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			shrink(sc)
			fullConfigOnIstio(t, sc)
		})
	}
}

// shrink keeps a scenario's shape (its topology features and client kinds) at a size that
// costs seconds: at most 40 services, 6 clients a group, no connection sharing or auth.
func shrink(sc *scenarios.Scenario) {
	sc.Topology.Services = min(sc.Topology.Services, 40)
	for i := range sc.Clients {
		c := &sc.Clients[i]
		c.Count = min(c.Count, 6)
		c.Nack = scenarios.Nack{Realistic: c.XDS != scenarios.XDSGRPC}
		c.Auth = scenarios.Auth{}
		c.StreamsPerConnection = 1
	}
}

// writeInitialMesh writes sc's initial mesh into dir as the dir sink does and returns the
// simulator that made it.
func writeInitialMesh(t *testing.T, sc *scenarios.Scenario, dir string) *simulator.Simulator {
	t.Helper()
	sim, err := simulator.New(run.SimConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.NewDir(sinks.DirOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Init(context.Background(), sim.Initial()); err != nil {
		t.Fatal(err)
	}
	return sim
}

// fullConfigOnIstio serves sc's initial mesh from Istio's DiscoveryServer and runs its fleet
// until every client holds full config (at most 60 s): it fails the test naming why the others
// do not, and on any NACK.
func fullConfigOnIstio(t *testing.T, sc *scenarios.Scenario) *secretHooks {
	t.Helper()
	dir := t.TempDir()
	sim := writeInitialMesh(t, sc, dir)
	srv, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := run.FleetConfig(sc, srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	run.FillGRPCTargets(&cfg, sim.Initial())
	hooks := &secretHooks{}
	cfg.Hooks = hooks
	fl, err := fleet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	if err := fl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fl.Stop()
	n := uint64(fl.Size())
	deadline := time.Now().Add(60 * time.Second)
	for fl.Progress().FullConfig < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	st := fl.Observer().Stats()
	t.Logf("Istio DiscoveryServer: %d/%d clients at full config after %s; responses %d, NACKs %d, with the agent's certificate %d",
		st.FullConfig, n, time.Since(start).Round(time.Millisecond), st.Total.Responses, st.Total.Nacks, hooks.withCert)
	if got := fl.Progress().FullConfig; got < n {
		var lines []string
		for _, g := range fl.Incomplete() {
			lines = append(lines, fmt.Sprintf("  %s: %d clients: %s (e.g. %s)", g.Group, g.Clients, g.Reason, strings.Join(g.Examples, "; ")))
		}
		t.Fatalf("%d of %d clients have no full config after 60s:\n%s", n-got, n, strings.Join(lines, "\n"))
	}
	if st.Total.Nacks != 0 {
		t.Errorf("%d NACKs from clients of Istio's config: %v", st.Total.Nacks, st.Types)
	}
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	for _, p := range hooks.problems {
		t.Error(p)
	}
	return hooks
}

// TestRunOnIstio runs the lab end to end against Istio's DiscoveryServer, as a user would with
// `xdslab run --target --sink-dir`: the simulator writes the mesh and its churn into the
// directory Istio watches; every client reaches full config, every event is observed by every
// client it should reach, 0 NACKs, and the summary holds per-event records.
func TestRunOnIstio(t *testing.T) {
	sc := scenario(t)
	dir := t.TempDir()
	srv, err := istiodlab.Start(t, istiodlab.Options{Dir: dir, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := run.Run(context.Background(), sc, run.Options{Target: srv.Addr, SinkDir: dir, TargetMetrics: srv.MetricsAddr})
	if err != nil {
		t.Fatal(err)
	}
	val := func(name, key string, tags map[string]string) float64 {
		m, ok := s.Results.Find(name, tags)
		if !ok {
			return -1
		}
		return m.Values[key]
	}
	clients := float64(0)
	for _, c := range sc.Clients {
		clients += float64(c.Count)
	}
	full := val(fleet.MetricFullConfigClients, "value", nil)
	t.Logf("full config %v/%v; time to first config p50 %.3fs p99 %.3fs; push latency p50 %.3fs p99 %.3fs; events %v, missed %v; NACKs %v",
		full, clients, val(fleet.MetricTimeToFirstConfig, "p(50)", nil), val(fleet.MetricTimeToFirstConfig, "p(99)", nil),
		val("xdslab_push_latency_seconds", "p(50)", nil), val("xdslab_push_latency_seconds", "p(99)", nil),
		val(collect.MetricSimEvents, "count", nil), val(collect.MetricEventsMissed, "count", nil), val("xdslab_fleet_nacks_total", "count", nil))
	for _, th := range s.Results.Thresholds {
		if !th.Passed {
			t.Errorf("threshold failed: %s%s %s (value %v)", th.Metric, summary.TagString(th.Tags), th.Expression, th.Value)
		}
	}
	if full != clients {
		t.Errorf("%v of %v clients reached full config", full, clients)
	}
	if val(collect.MetricSimEvents, "count", nil) <= 0 {
		t.Error("the simulator applied no event")
	}
	// Per-event records, as an in-process run writes them: t0, reach and convergence.
	measured := 0
	for _, e := range s.Results.Events {
		if e.T0.IsZero() || !e.Complete() {
			t.Errorf("event %d (%s): t0 %v, complete %v", e.ID, e.Kind, e.T0, e.Complete())
		}
		if e.Measured() && e.ConvergenceSeconds > 0 {
			measured++
		}
	}
	if len(s.Results.Events) == 0 || measured == 0 {
		t.Errorf("summary holds %d event records, %d with a convergence", len(s.Results.Events), measured)
	}
}

// churnBoth is one mesh served to SotW and Delta sidecars side by side under every churn a
// mesh sees: endpoint flaps, scale, services created and deleted, VirtualService and
// DestinationRule changes.
const churnBoth = `
name: istio-delta-vs-sotw
seed: 11
duration: 6s
topology:
  namespaces: 2
  services: 20
  protocols: {http: 0.7, grpc: 0.2, tcp: 0.1}
  endpointsPerService: {dist: lognormal, median: 3, sigma: 0.5, min: 1, max: 8}
  virtualServices: 0.3
  destinationRules: 0.3
churn:
  - {kind: endpoint-flap, rate: 4/s}
  - {kind: scale, rate: 0.5/s}
  - {kind: service-create, rate: 0.5/s}
  - {kind: service-delete, rate: 0.5/s}
  - {kind: config-change, rate: 0.5/s, target: virtualservice}
  - {kind: config-change, rate: 0.5/s, target: destinationrule}
clients:
  - {name: sotw, count: 12, xds: sotw, ramp: 100/s, nack: {realistic: true}}
  - {name: delta, count: 12, xds: delta, ramp: 100/s, nack: {realistic: true}}
phases:
  connect: {timeout: 60s}
  drain: {timeout: 15s}
thresholds:
  xdslab_fleet_nacks_total: ['count==0']
  xdslab_events_missed_total: ['count==0']
`

// TestDeltaAndSotwUnderChurnOnIstio: Delta and SotW sidecars of the same mesh, on Istio's
// DiscoveryServer and on xdslab's control plane, both reach and keep full config under churn
// that adds and deletes services, with 0 NACKs and every event observed by every client it
// reaches.
func TestDeltaAndSotwUnderChurnOnIstio(t *testing.T) {
	t.Run("istio", func(t *testing.T) {
		dir := t.TempDir()
		srv, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		deltaAndSotwUnderChurn(t, run.Options{Target: srv.Addr, SinkDir: dir})
	})
	t.Run("xdslab", func(t *testing.T) { deltaAndSotwUnderChurn(t, run.Options{}) })
}

func deltaAndSotwUnderChurn(t *testing.T, opts run.Options) {
	sc, err := scenarios.LoadBytes("istio-delta-vs-sotw.yaml", []byte(churnBoth))
	if err != nil {
		t.Fatal(err)
	}
	s, err := run.Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range s.Results.Thresholds {
		if !th.Passed {
			t.Errorf("threshold failed: %s%s %s (value %v)", th.Metric, summary.TagString(th.Tags), th.Expression, th.Value)
		}
	}
	kinds := map[string]float64{}
	for _, e := range s.Results.Events {
		kinds[string(e.Kind)]++
		if e.T0.IsZero() || !e.Complete() {
			t.Errorf("event %d (%s): t0 %v, reached %d, observed %d, missed %d by %v, unresolved %d", e.ID, e.Kind, e.T0,
				e.Reached, e.Observed, e.Missed, e.MissedBy, e.Unresolved)
		}
	}
	for _, k := range []string{"service-create", "service-delete", "endpoint-flap"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event ran (events %v)", k, kinds)
		}
	}
	for _, g := range []string{"sotw", "delta"} {
		tags := map[string]string{"group": g}
		get := func(name, key string) float64 {
			m, ok := s.Results.Find(name, tags)
			if !ok {
				return -1
			}
			return m.Values[key]
		}
		full, n := get(fleet.MetricFullConfigClients, "value"), get(fleet.MetricClients, "value")
		t.Logf("%s: full config %v/%v, responses %v, NACKs %v, reconnects %v, time to first config p99 %.3fs", g, full, n,
			get("xdslab_fleet_responses_total", "count"), get("xdslab_fleet_nacks_total", "count"), get(fleet.MetricReconnects, "count"),
			get(fleet.MetricTimeToFirstConfig, "p(99)"))
		if full != n || n <= 0 {
			t.Errorf("%s: %v of %v clients at full config", g, full, n)
		}
	}
	t.Logf("events by kind: %v", kinds)
}
