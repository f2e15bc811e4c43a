package scenarios

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/scenarios/threshold"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ignoreSrc = cmpopts.IgnoreUnexported(Scenario{})

func TestBuiltinsValidate(t *testing.T) {
	names := BuiltinNames()
	want := []string{"authz-churn", "delta-vs-sotw", "eds-churn-1k", "ingress-churn", "input-paths", "nack-storm", "push-1k", "quickstart", "rollout-storm", "scale-10k"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("BuiltinNames() (-want +got):\n%s", diff)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := Builtin(name)
			if err != nil {
				t.Fatalf("Builtin(%q): %v", name, err)
			}
			if s.Name != name {
				t.Errorf("name = %q, want the file name %q", s.Name, name)
			}
			if s.Source() != "builtin:"+name {
				t.Errorf("Source() = %q", s.Source())
			}
			r, err := Resolve(name)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", name, err)
			}
			if diff := cmp.Diff(s, r, ignoreSrc); diff != "" {
				t.Errorf("Resolve differs from Builtin:\n%s", diff)
			}
		})
	}
}

func TestQuickstartIsSmall(t *testing.T) {
	s, err := Resolve("")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "quickstart" {
		t.Fatalf("default scenario is %q, want quickstart", s.Name)
	}
	// The budget: about 200 services, 500 clients, a measure phase of about 20s, the
	// whole run under a minute: ramp + measure + drain must leave room for setup.
	if s.Topology.Services != 200 || s.TotalClients() != 500 {
		t.Errorf("quickstart has %d services and %d clients, want 200 and 500", s.Topology.Services, s.TotalClients())
	}
	ramp := time.Duration(float64(s.Clients[0].Count) / s.Clients[0].Ramp.PerSecond() * float64(time.Second))
	if total := ramp + s.Duration.D() + s.Phases.Drain.Timeout.D(); total > 40*time.Second {
		t.Errorf("ramp %s + measure %s + drain %s = %s leaves too little of the minute", ramp, s.Duration, s.Phases.Drain.Timeout, total)
	}
	if len(s.Churn) == 0 {
		t.Error("quickstart has no churn")
	}
}

func TestDeltaVsSotWHasBothGroups(t *testing.T) {
	s, err := Builtin("delta-vs-sotw")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range s.Clients {
		got[c.XDS] += c.Count
	}
	if got[XDSSotW] == 0 || got[XDSSotW] != got[XDSDelta] {
		t.Errorf("clients per variant = %v, want equal non-zero sotw and delta", got)
	}
}

// A printed scenario reloads to the same scenario: YAML and JSON (summary.json embeds JSON).
func TestPrintRoundTrip(t *testing.T) {
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			s, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			y, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			back, err := LoadBytes(name+".yaml", y)
			if err != nil {
				t.Fatalf("reload printed YAML: %v\n%s", err, y)
			}
			if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
				t.Errorf("YAML round trip (-orig +reloaded):\n%s", diff)
			}
			j, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			back, err = LoadBytes(name+".json", j)
			if err != nil {
				t.Fatalf("reload JSON: %v\n%s", err, j)
			}
			if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
				t.Errorf("JSON round trip (-orig +reloaded):\n%s", diff)
			}
		})
	}
}

func TestDefaultsApply(t *testing.T) {
	s, err := LoadBytes("min.yaml", []byte("name: tiny\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Name = "tiny"
	want.Complete()
	if diff := cmp.Diff(want, s, ignoreSrc); diff != "" {
		t.Errorf("a scenario with only a name is not the defaults (-want +got):\n%s", diff)
	}
	if s.Seed != 1 || s.Duration.D() != 30*time.Second || s.ControlPlane.Debounce.MinQuiet.D() != 100*time.Millisecond {
		t.Errorf("documented defaults changed: seed %d duration %s minQuiet %s", s.Seed, s.Duration, s.ControlPlane.Debounce.MinQuiet)
	}
}

func TestOverlayAndKindDefaults(t *testing.T) {
	src := `
name: overlay
controlPlane: {debounce: {minQuiet: 1s}}
topology: {protocols: {tcp: 2, http: 2}}
churn:
  - {kind: rolling-deploy, every: 30s}
  - {kind: scale, rate: 1/m}
  - {kind: config-change, at: [1s, 2s]}
  - {kind: zone-failure, at: [5s]}
clients:
  - {count: 3, ackDelay: 5ms}
  - {name: gw, type: router, ackDelay: {dist: exp, mean: 0.01}, node: {istioVersion: "1.29.1", labels: {app: gw, "version": v2}}}
`
	s, err := LoadBytes("overlay.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cp := s.ControlPlane.Debounce
	if cp.MinQuiet.D() != time.Second || cp.MaxDelay.D() != 10*time.Second || !cp.Endpoints {
		t.Errorf("debounce overlay = %+v, want minQuiet 1s with the other defaults kept", cp)
	}
	if p := s.Topology.Protocols; p != (Protocols{HTTP: 0.5, TCP: 0.5}) {
		t.Errorf("protocols = %+v, want a written mix to replace the default and be normalised", p)
	}
	c := s.Churn
	if c[0].Services != 1 || c[0].Window.D() != 10*time.Second {
		t.Errorf("rolling-deploy defaults = %d services window %s", c[0].Services, c[0].Window)
	}
	if c[1].Delta == nil || c[1].Delta.Dist != "uniform" || c[1].Rate.PerSecond() != 1.0/60 {
		t.Errorf("scale = %+v, want default delta and rate 1/60 per second", c[1])
	}
	if c[2].Target != TargetVirtualService || c[3].Fraction != 0.5 || c[2].Services != 1 || c[0].Down != 0 {
		t.Errorf("config-change target %q, zone-failure fraction %g", c[2].Target, c[3].Fraction)
	}
	g := s.Clients
	if g[0].Name != "group-1" || g[0].Count != 3 || g[0].XDS != XDSSotW || g[0].Bootstrap != BootstrapIstio ||
		!g[0].NodeOnFirstOnly || g[0].InitialFetchTimeout.D() != 0 || g[0].ListenerDrain.D() != 45*time.Second {
		t.Errorf("client group defaults = %+v", g[0])
	}
	if g[0].AckDelay.Dist != "constant" || g[0].AckDelay.Value != 0.005 {
		t.Errorf("ackDelay shorthand 5ms = %+v, want constant 0.005s", g[0].AckDelay)
	}
	if g[0].Node.ClusterID != "Kubernetes" || g[1].Node.ClusterID != "Kubernetes" || g[1].Node.IstioVersion != "1.29.1" ||
		g[1].Node.Labels["app"] != "gw" || g[1].Node.Labels["version"] != "v2" || len(g[1].Node.Labels) != 2 {
		t.Errorf("node templates = %+v, %+v", g[0].Node, g[1].Node)
	}
	if g[1].Count != 100 || g[1].AckDelay.Mean != 0.01 || g[1].Type != TypeRouter {
		t.Errorf("second group = %+v", g[1])
	}
}

// clients[].streamsPerConnection: 1 by default, per group, counted by Connections, shown by
// Summary, kept by a printed scenario and settable with Set.
func TestStreamsPerConnection(t *testing.T) {
	tests := []struct {
		name    string
		clients string
		want    []int // per group
		conns   int
		summary string // "" when no group shares
	}{
		{"default", "[{count: 10}]", []int{1}, 10, ""},
		{"explicit 1", "[{count: 10, streamsPerConnection: 1}]", []int{1}, 10, ""},
		{"multiplexed", "[{count: 250, streamsPerConnection: 100}]", []int{100}, 3, "250 × sotw sidecar, ramp 200/s, ack delay 0s, 100 streams per connection"},
		{"per group", "[{name: mux, count: 7, streamsPerConnection: 3}, {name: solo, count: 4}]", []int{3, 1}, 3 + 4, "mux: 7 × sotw sidecar, ramp 200/s, ack delay 0s, 3 streams per connection"},
		{"more than the group", "[{count: 5, streamsPerConnection: 64}]", []int{64}, 1, "64 streams per connection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadBytes("spc.yaml", []byte("name: spc\nclients: "+tc.clients+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, c := range s.Clients {
				got = append(got, c.StreamsPerConnection)
			}
			if !slices.Equal(got, tc.want) || s.Connections() != tc.conns {
				t.Errorf("streamsPerConnection %v, connections %d; want %v, %d", got, s.Connections(), tc.want, tc.conns)
			}
			if sum := s.Summary(); (tc.summary == "") != !strings.Contains(sum, "streams per connection") || !strings.Contains(sum, tc.summary) {
				t.Errorf("summary, want %q:\n%s", tc.summary, sum)
			}
			y, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			back, err := LoadBytes("printed.yaml", y)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
				t.Errorf("printed and reloaded (-want +got):\n%s", diff)
			}
		})
	}
	s, err := LoadBytes("spc.yaml", []byte("name: spc\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("clients[0].streamsPerConnection", "50"); err != nil || s.Clients[0].StreamsPerConnection != 50 {
		t.Errorf("Set 50: %v, got %d", err, s.Clients[0].StreamsPerConnection)
	}
	var e *Error
	if err := s.Set("clients[0].streamsPerConnection", "0"); !errors.As(err, &e) || e.Path != "clients[0].streamsPerConnection" || !strings.Contains(e.Msg, "must be >= 1") {
		t.Errorf("Set 0 = %v, want a clients[0].streamsPerConnection error", err)
	}
}

func TestResolveFileAndUnknownName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(path, []byte("name: mine\nchurn: [{kind: replay, file: trace.jsonl}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Resolve(path)
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || !strings.Contains(e.Msg, "replay trace") {
		t.Fatalf("missing replay trace: err = %v, want an error at line 2", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Churn[0].File != filepath.Join(dir, "trace.jsonl") || s.Source() != path {
		t.Errorf("replay file %q, source %q", s.Churn[0].File, s.Source())
	}

	_, err = Resolve("quickstrat")
	if !errors.As(err, &e) || !strings.Contains(e.Fix, `did you mean "quickstart"`) {
		t.Errorf("Resolve(quickstrat) = %v, want a did-you-mean", err)
	}
	_, err = Resolve(filepath.Join(dir, "nope.yaml"))
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "cannot read") {
		t.Errorf("Resolve(missing file) = %v", err)
	}
}

// The sink key: kube with its client settings, a kubeconfig relative to the scenario file,
// and the default (dir) when the key is absent.
func TestSinkKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kube.yaml")
	if err := os.WriteFile(path, []byte("name: kube\nsink: {kind: kube, kubeconfig: kind.kubeconfig, qps: -1, burst: 0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Sink{Kind: SinkKube, Kubeconfig: filepath.Join(dir, "kind.kubeconfig"), QPS: -1, Burst: 0, Listen: "127.0.0.1:0"}
	if s.Sink != want {
		t.Errorf("sink = %+v, want %+v", s.Sink, want)
	}
	if sum := s.Summary(); !strings.Contains(sum, "sink: kube (with --target), kubeconfig "+want.Kubeconfig+", qps -1, burst 0") {
		t.Errorf("summary lacks the sink:\n%s", sum)
	}
	for _, tc := range []struct{ src, kubeconfig string }{
		{"name: x\nsink: {kind: kube}\n", ""},
		{"name: x\nsink: {kind: kube, kubeconfig: /etc/k.yaml}\n", "/etc/k.yaml"},
		{"name: x\nsink: {kind: kube, kubeconfig: rel.yaml}\n", "rel.yaml"}, // LoadBytes: the working directory
	} {
		s, err := LoadBytes("x.yaml", []byte(tc.src))
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if s.Sink.Kind != SinkKube || s.Sink.Kubeconfig != tc.kubeconfig || s.Sink.QPS != 50 || s.Sink.Burst != 100 {
			t.Errorf("%q: sink = %+v", tc.src, s.Sink)
		}
	}
	s, err = LoadBytes("x.yaml", []byte("name: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Sink != Defaults().Sink || s.Sink.Kind != SinkDir {
		t.Errorf("default sink = %+v", s.Sink)
	}
	// Built in Go: a kube setting left on a dir sink is reported (no position to go by).
	g := Defaults()
	g.Name = "in-go"
	g.Sink.QPS = 5
	g.Complete()
	var e *Error
	if err := g.Validate(); !errors.As(err, &e) || e.Path != "sink.qps" {
		t.Errorf("Validate of a dir sink with qps 5 = %v, want a sink.qps error", err)
	}
}

func TestSummaryMentionsEverySection(t *testing.T) {
	s, err := Builtin("nack-storm")
	if err != nil {
		t.Fatal(err)
	}
	sum := s.Summary()
	for _, want := range []string{"scenario nack-storm", "seed 11", "minQuiet 50ms", "flow control on",
		"300 services", "config-change 1/s (target destinationrule)", "clients: 600 in 3 group(s)",
		"hung: 100 × sotw sidecar", "never ACK", "nack every 5 realistic", "xdslab_fleet_nacks_total: count>0"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

func TestBuiltInGo(t *testing.T) {
	s := Defaults()
	s.Name = "in-go"
	s.Clients = []Client{DefaultClient()}
	s.Thresholds = map[string][]threshold.Threshold{"xdslab_push_latency_seconds": {{Source: "p(99)<250ms"}}}
	s.Complete()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ok, err := s.Thresholds["xdslab_push_latency_seconds"][0].Eval(map[string]float64{"p(99)": 0.2})
	if err != nil || !ok {
		t.Errorf("Eval after Complete = %v, %v", ok, err)
	}
	s.Thresholds["xdslab_fleet_nacks_total"] = []threshold.Threshold{{Source: "nonsense"}}
	s.Complete()
	err = s.Validate()
	var e *Error
	if !errors.As(err, &e) || e.Path != "thresholds.xdslab_fleet_nacks_total[0]" || e.Line != 0 || e.File != "" {
		t.Errorf("Validate of a Go-built scenario = %#v", e)
	}
}

// BenchmarkLoad measures loading (parse, decode, complete, validate) the largest built-in.
func BenchmarkLoad(b *testing.B) {
	data, err := BuiltinSource("scale-10k")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBytes("scale-10k.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/load")
}
