package fleet

import (
	"bytes"
	"context"
	"maps"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/clock"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/probe"
)

// flWait polls cond until it holds or the test's limit passes.
func flWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(fetest.WaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s", what, fetest.WaitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flBuffer is a goroutine-safe progress sink.
type flBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *flBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *flBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func flConfig(target string, n int, nack policy.Nack) Config {
	return Config{
		Target: target,
		Groups: []Group{{Name: "sidecars", Count: n, Identity: fakeenvoy.IdentityTemplate{Namespaces: 5},
			Client: fakeenvoy.ClientConfig{Nack: nack, Backoff: fakeenvoy.Backoff{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}}}},
		Ramp:             1000,
		Seed:             1,
		ProgressInterval: 20 * time.Millisecond,
		Matcher:          measure.MatcherConfig{KeepLatencies: true},
	}
}

func flSetAll(t *testing.T, s *fetest.CPServer, f *Fleet, version string, res map[resource.Type][]types.Resource) {
	t.Helper()
	for _, fc := range f.clients {
		s.Set(t, fc.c.NodeID(), version, res)
	}
}

// TestFleetEndToEnd runs 50 SotW clients against go-control-plane: all reach a full config, an
// endpoint change registered as an expectation is observed by every client in reach, and a
// config that the realistic policy rejects makes go-control-plane resend in a loop, which the
// observer detects and counts.
func TestFleetEndToEnd(t *testing.T) {
	const n = 50
	srv := fetest.NewCPServer(t)
	nack, err := policy.ParseNack("realistic")
	if err != nil {
		t.Fatal(err)
	}
	cfg := flConfig(srv.Addr, n, nack)
	progress := &flBuffer{}
	cfg.Progress = progress
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := f.Register(reg); err != nil {
		t.Fatal(err)
	}
	base := fetest.BaseResources(t)
	flSetAll(t, srv, f, "v1", base)
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	flWait(t, "every client has a full config", func() bool { return f.Progress().FullConfig == n })

	// Two events: an endpoint added to c1 (everyone), and c2's endpoint moved (ns-1 only, but
	// go-control-plane sends it to everyone: the others simply are not in reach).
	everyone, err := f.Expect(probe.Expectation{EventID: 1, Kind: "endpoint-add",
		All: []probe.Predicate{{Op: probe.EndpointPresent, Resource: "c1", Address: "10.1.0.9", Port: 8080}}})
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := f.Expect(probe.Expectation{EventID: 2, Kind: "endpoint-move", Reach: probe.Reach{Namespaces: []string{"ns-1"}},
		All: []probe.Predicate{
			{Op: probe.EndpointPresent, Resource: "c2", Address: "10.1.0.22", Port: 8080},
			{Op: probe.EndpointAbsent, Resource: "c2", Address: "10.1.0.2", Port: 8080},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	v2 := fetest.BaseResources(t)
	c1 := fetest.CLA("c1", "10.1.0.1", 8080)
	c1.Endpoints = append(c1.Endpoints, fetest.CLA("c1", "10.1.0.9", 8080).Endpoints...)
	v2[resource.EndpointType] = []types.Resource{c1, fetest.CLA("c2", "10.1.0.22", 8080)}
	flSetAll(t, srv, f, "v2", v2)
	for _, h := range []*measure.Expected{everyone, scoped} {
		if err := h.SetT0(t0); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetest.WaitLimit)
	defer cancel()
	if left, err := f.Matcher().Drain(ctx, 5*time.Millisecond); left != 0 || err != nil {
		t.Fatalf("drain: %d outstanding, %v", left, err)
	}
	res := f.Matcher().Results()
	for i, want := range []struct{ reached int }{{n}, {n / 5}} {
		e := res.Events[i]
		if e.Reached != want.reached || e.Observed != want.reached || e.Missed != 0 || e.Superseded != 0 {
			t.Errorf("event %d: reached %d observed %d missed %d superseded %d; want %d observed by all",
				e.EventID, e.Reached, e.Observed, e.Missed, e.Superseded, want.reached)
		}
		if e.Convergence <= 0 || e.MinLatency > e.Convergence || len(e.Latencies) != want.reached {
			t.Errorf("event %d: convergence %v min %v latencies %d", e.EventID, e.Convergence, e.MinLatency, len(e.Latencies))
		}
	}

	// A cluster whose TLS context (inside an Any) is invalid, for two clients: they NACK, and
	// go-control-plane v0.14.0 answers each NACK with the same response again.
	bad := fetest.BaseResources(t)
	bad[resource.ClusterType] = append(bad[resource.ClusterType], fetest.BadTLSCluster(t, "c3"))
	for _, fc := range f.clients[:2] {
		srv.Set(t, fc.c.NodeID(), "v3-bad", bad)
	}
	flWait(t, "resend loops flagged for both clients", func() bool {
		return f.Observer().Stats().Types["CDS"].ResendLoops >= 2
	})
	for _, fc := range f.clients[:2] {
		srv.Set(t, fc.c.NodeID(), "v4", base) // ends the loop
	}
	st := f.Observer().Stats()
	cds := st.Types["CDS"]
	if cds.Nacks < 2*3 || cds.ResendsAfterNack < 2*2 || cds.ResendLoops != 2 {
		t.Errorf("CDS nacks %d resends %d loops %d; want a loop for each of the 2 clients", cds.Nacks, cds.ResendsAfterNack, cds.ResendLoops)
	}
	if rpn := cds.ResponsesPerNack(); rpn <= 1 {
		t.Errorf("responses per NACK %g must exceed 1 (most clients accepted)", rpn)
	}

	// Live metrics.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{MetricConnected, MetricResponses, MetricNacks, MetricResendLoops, MetricTimeToFirstConfig, MetricPushLatency} {
		if !names[want] {
			t.Errorf("metric %s not exported; got %v", want, names)
		}
	}

	f.Stop()
	f.Stop()           // safe twice
	fig := f.Figures() // what the report is built from (bench checks the rows and their shape)
	if fig.Connected != n || fig.Stats.MaxConnected != n {
		t.Errorf("connected gauge = %d (max %d), want value and max %d", fig.Connected, fig.Stats.MaxConnected, n)
	}
	if got := fig.Stats.TimeToFirstConfig.TotalCount(); got != n {
		t.Errorf("time to first config: %d values, want %d", got, n)
	}
	for _, typ := range []string{"CDS", "EDS"} {
		if st, ok := fig.Stats.Types[typ]; !ok || st.Responses == 0 {
			t.Errorf("figures lack %s responses: %v", typ, fig.Stats.Types)
		}
	}
	if fig.Match == nil || fig.Match.Observed != n+n/5 {
		t.Errorf("observed probes = %v, want %d", fig.Match, n+n/5)
	}
	if out := progress.String(); !strings.Contains(out, "connected") {
		t.Errorf("no progress line written: %q", out)
	}
}

// TestFleetConnectFailuresRetried: a server that refuses the first streams with
// ResourceExhausted (as Istio does beyond its admission rate) and a target with nothing
// listening are counted by code, never fatal; the clients get through once the server admits.
func TestFleetConnectFailuresRetried(t *testing.T) {
	srv := fetest.NewCPServer(t)
	var mu sync.Mutex
	refuse := 6
	gate := func(srvI any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		mu.Lock()
		if refuse > 0 {
			refuse--
			mu.Unlock()
			return status.Error(codes.ResourceExhausted, "too many new streams")
		}
		mu.Unlock()
		return h(srvI, ss)
	}
	// A second listener in front of the same cache, with the admission gate.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.StreamInterceptor(gate))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, serverv3.NewServer(ctx, srv.Cache, nil))
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	f, err := New(flConfig(lis.Addr().String(), 3, policy.Nack{}))
	if err != nil {
		t.Fatal(err)
	}
	flSetAll(t, srv, f, "v1", fetest.BaseResources(t))
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	flWait(t, "all connected after being refused", func() bool { return f.Progress().FullConfig == 3 })
	f.Stop()
	if got := f.Observer().Stats().ConnectFailures["ResourceExhausted"]; got != 6 {
		t.Errorf("ResourceExhausted failures = %d, want 6", got)
	}

	// Nothing listens on a closed port: Unavailable, retried until Stop.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()
	f2, err := New(flConfig(addr, 2, policy.Nack{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := f2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	flWait(t, "repeated connect failures", func() bool { return f2.Progress().ConnectFailures >= 4 })
	f2.Stop()
	if st := f2.Observer().Stats(); st.ConnectFailures["Unavailable"] < 4 || st.Connected != 0 {
		t.Errorf("failures %v connected %d", st.ConnectFailures, st.Connected)
	}
}

// TestFleetChurnAndSharedConns: clients sharing connections reconnect periodically and keep
// observing pushes.
func TestFleetChurnAndSharedConns(t *testing.T) {
	srv := fetest.NewCPServer(t)
	cfg := flConfig(srv.Addr, 6, policy.Nack{})
	cfg.StreamsPerConn = 3
	cfg.Churn = Churn{Every: 200 * time.Millisecond, Jitter: 0.3}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.conns) != 2 {
		t.Errorf("6 clients at 3 streams per connection use %d connections, want 2", len(f.conns))
	}
	flSetAll(t, srv, f, "v1", fetest.BaseResources(t))
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	flWait(t, "clients reconnected", func() bool { return f.Observer().Stats().Connects >= 2*6 })
	h, err := f.Expect(probe.Expectation{EventID: 9, Kind: "cluster-add", T0: time.Now(),
		All: []probe.Predicate{{Op: probe.ClusterPresent, Resource: "c9"}}})
	if err != nil {
		t.Fatal(err)
	}
	_ = h
	v2 := fetest.BaseResources(t)
	v2[resource.ClusterType] = append(v2[resource.ClusterType], fetest.EDSCluster("c9"))
	v2[resource.EndpointType] = append(v2[resource.EndpointType], fetest.CLA("c9", "10.9.0.1", 80))
	flSetAll(t, srv, f, "v2", v2)
	ctx, cancel := context.WithTimeout(context.Background(), fetest.WaitLimit)
	defer cancel()
	if left, err := f.Matcher().Drain(ctx, 5*time.Millisecond); left != 0 || err != nil {
		t.Fatalf("drain under churn: %d outstanding, %v", left, err)
	}
	f.Stop()
	if st := f.Observer().Stats(); st.Connected != 0 || st.Disconnects != st.Connects {
		t.Errorf("after stop: connected %d, connects %d, disconnects %d", st.Connected, st.Connects, st.Disconnects)
	}
}

// TestFleetChurnPerGroup: a group's churn reconnects that group's clients only; a group that
// sets none takes the fleet's.
func TestFleetChurnPerGroup(t *testing.T) {
	churn := Churn{Every: 100 * time.Millisecond, Jitter: 0.2}
	tests := []struct {
		name       string
		fleet      Churn
		groups     [2]Churn // of groups "churny" and "steady"
		reconnects [2]bool
	}{
		{"one group churns", Churn{}, [2]Churn{churn, {}}, [2]bool{true, false}},
		{"no group churns", Churn{}, [2]Churn{}, [2]bool{false, false}},
		{"the fleet's churn is every group's default", churn, [2]Churn{}, [2]bool{true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fetest.NewCPServer(t)
			cfg := flConfig(srv.Addr, 3, policy.Nack{})
			g := cfg.Groups[0]
			cfg.Groups = []Group{g, g}
			cfg.Groups[0].Name, cfg.Groups[0].Churn = "churny", tc.groups[0]
			cfg.Groups[1].Name, cfg.Groups[1].Churn = "steady", tc.groups[1]
			cfg.Churn = tc.fleet
			f, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			flSetAll(t, srv, f, "v1", fetest.BaseResources(t))
			if err := f.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer f.Stop()
			flWait(t, "all connected", func() bool { return f.Progress().FullConfig >= 6 })
			time.Sleep(600 * time.Millisecond) // several churn periods
			st := f.groupStats()
			for i, name := range []string{"churny", "steady"} {
				n := st[name].Connects
				if tc.reconnects[i] && n < 2*3 {
					t.Errorf("group %s: %d connects of 3 clients, want reconnects", name, n)
				}
				if !tc.reconnects[i] && n != 3 {
					t.Errorf("group %s: %d connects of 3 clients, want 3 (no churn)", name, n)
				}
			}
		})
	}
}

// peerServer is an ADS server that answers nothing and records, per node, the client address
// its stream came from: one address per HTTP/2 connection.
type peerServer struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	addr string
	mu   sync.Mutex
	peer map[string]string // node id → client address
}

func newPeerServer(t *testing.T) *peerServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &peerServer{addr: lis.Addr().String(), peer: map[string]string{}}
	srv := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return s
}

func (s *peerServer) StreamAggregatedResources(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	req, err := st.Recv()
	if err != nil {
		return err
	}
	p, ok := peer.FromContext(st.Context())
	if !ok {
		return status.Error(codes.Internal, "no peer")
	}
	s.mu.Lock()
	s.peer[req.GetNode().GetId()] = p.Addr.String()
	s.mu.Unlock()
	for {
		if _, err := st.Recv(); err != nil {
			return err
		}
	}
}

func (s *peerServer) seen() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.peer)
}

// TestFleetStreamsPerConnPerGroup: a group with streams per connection N opens ceil(count/N)
// connections (in its segment) that no other group's client uses, and a group with 1 (set, or
// taken from the fleet's default) opens one per client, as the server sees them.
func TestFleetStreamsPerConnPerGroup(t *testing.T) {
	type group struct {
		name         string
		count, spc   int
		wantConns    int
		wantSegCount int // clients of the group in the segment
	}
	tests := []struct {
		name       string
		fleetSPC   int
		segment    Segment
		groups     []group
		wantShared int // f.conns
	}{
		{"one group shares, the other one per client", 0, Segment{},
			[]group{{"mux", 7, 3, 3, 7}, {"solo", 4, 0, 4, 4}}, 3},
		{"the fleet's default, a group sets 1", 4, Segment{},
			[]group{{"dflt", 8, 0, 2, 8}, {"solo", 3, 1, 3, 3}, {"mux", 5, 5, 1, 5}}, 3},
		{"a segment shares among its own clients", 0, Segment{Index: 0, Count: 2},
			[]group{{"mux", 10, 2, 3, 5}, {"solo", 3, 1, 2, 2}}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newPeerServer(t)
			cfg := Config{Target: srv.addr, Seed: 1, StreamsPerConn: tc.fleetSPC, Segment: tc.segment}
			total := 0
			for _, g := range tc.groups {
				cfg.Groups = append(cfg.Groups, Group{Name: g.name, Count: g.count, StreamsPerConn: g.spc,
					Identity: fakeenvoy.IdentityTemplate{Namespaces: 3}})
				total += g.wantConns
			}
			f, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Stop()
			if len(f.conns) != tc.wantShared || f.Connections() != total {
				t.Errorf("shared connections %d, connections %d; want %d, %d", len(f.conns), f.Connections(), tc.wantShared, total)
			}
			groupOf := map[string]string{} // node id → group
			for _, fc := range f.clients {
				groupOf[fc.c.NodeID()] = fc.group
			}
			if err := f.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			flWait(t, "every client's stream reached the server", func() bool { return len(srv.seen()) == f.Size() })
			addrs := map[string]map[string]int{} // group → client address → streams
			groupAt := map[string]string{}       // client address → group
			for node, addr := range srv.seen() {
				g, ok := groupOf[node]
				if !ok {
					t.Fatalf("a stream from node %q, not one of the fleet's", node)
				}
				if other, ok := groupAt[addr]; ok && other != g {
					t.Errorf("connection %s carries clients of %s and %s", addr, other, g)
				}
				groupAt[addr] = g
				if addrs[g] == nil {
					addrs[g] = map[string]int{}
				}
				addrs[g][addr]++
			}
			for _, g := range tc.groups {
				spc := g.spc
				if spc == 0 {
					spc = max(tc.fleetSPC, 1)
				}
				streams := 0
				for _, n := range addrs[g.name] {
					streams += n
					if n > spc {
						t.Errorf("group %s: %d streams on one connection", g.name, n)
					}
				}
				if len(addrs[g.name]) != g.wantConns || streams != g.wantSegCount {
					t.Errorf("group %s: %d streams over %d connections, want %d over %d", g.name, streams, len(addrs[g.name]), g.wantSegCount, g.wantConns)
				}
			}
		})
	}
}

func TestFleetConfigValidate(t *testing.T) {
	good := flConfig("127.0.0.1:1", 1, policy.Nack{})
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"ok", func(*Config) {}, ""},
		{"no target", func(c *Config) { c.Target = "" }, "target is required"},
		{"no clients", func(c *Config) { c.Groups[0].Count = 0 }, "at least one client"},
		{"negative ramp", func(c *Config) { c.Ramp = -1 }, "ramp"},
		{"jitter", func(c *Config) { c.Churn = Churn{Every: time.Second, Jitter: 1} }, "jitter"},
		{"group jitter", func(c *Config) { c.Groups[0].Churn = Churn{Every: time.Second, Jitter: 1} }, "group sidecars: fleet: churn"},
		{"duplicate group", func(c *Config) { c.Groups = append(c.Groups, c.Groups[0]) }, "duplicate group"},
		{"identity", func(c *Config) { c.Groups[0].Identity.Type = "gateway" }, "use sidecar or router"},
		{"negative streams per connection", func(c *Config) { c.StreamsPerConn = -1 }, "streams per connection -1 must be >= 0"},
		{"negative group streams per connection", func(c *Config) { c.Groups[0].StreamsPerConn = -2 }, "group sidecars: streams per connection -2 must be >= 0"},
		{"istio-agent's windows", func(c *Config) { c.Groups[0].Window, c.Groups[0].WindowUpdate = 1<<20, 1<<18 }, ""},
		{"window below HTTP/2's initial", func(c *Config) { c.Groups[0].Window = 1000 }, "group sidecars: window 1000 must be 0"},
		{"window update above the window", func(c *Config) { c.Groups[0].Window, c.Groups[0].WindowUpdate = 1<<20, 1<<21 }, "window update 2097152 must be at most the window"},
		{"negative keepalive", func(c *Config) { c.Groups[0].KeepaliveTime = -time.Second }, "keepalive -1s and its timeout 0s must be >= 0"},
		{"group target sharing", func(c *Config) { c.Groups[0].Target, c.Groups[0].StreamsPerConn = "127.0.0.1:2", 4 }, "group sidecars: 4 streams per connection: auth and a group target"},
		{"group target, the fleet's default", func(c *Config) { c.Groups[0].Target, c.StreamsPerConn = "127.0.0.1:2", 3 }, "group sidecars: 3 streams per connection"},
		{"group target, the group opts out", func(c *Config) {
			c.Groups[0].Target, c.Groups[0].StreamsPerConn, c.StreamsPerConn = "127.0.0.1:2", 1, 3
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			c.Groups = append([]Group(nil), good.Groups...)
			tc.mutate(&c)
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	f, err := New(good)
	if err != nil {
		t.Fatal(err)
	}
	f.Stop() // before Start: harmless
	if err := f.Start(context.Background()); err == nil {
		t.Error("Start after Stop succeeded")
	}
}

// flClock is a manual clock: timers fire when Advance passes their deadline.
type flClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*flTimer
}

type flTimer struct {
	c     *flClock
	ch    chan time.Time
	due   time.Time
	armed bool
}

func (c *flClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *flClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &flTimer{c: c, ch: make(chan time.Time, 1), due: c.now.Add(d), armed: true}
	c.timers = append(c.timers, t)
	c.fireLocked()
	return t
}

func (c *flClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.fireLocked()
}

func (c *flClock) fireLocked() {
	for _, t := range c.timers {
		if t.armed && !t.due.After(c.now) {
			t.armed = false
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
}

func (t *flTimer) C() <-chan time.Time { return t.ch }

func (t *flTimer) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.armed = false
}

func (t *flTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.due, t.armed = t.c.now.Add(d), true
	t.c.fireLocked()
}

// TestFleetRampPacing: client i starts at began + i/ramp, on the injected clock.
func TestFleetRampPacing(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()
	clock := &flClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := flConfig(addr, 5, policy.Nack{})
	cfg.Ramp = 10 // one client per 100ms
	cfg.Clock = clock
	cfg.ProgressInterval = time.Hour
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	for _, step := range []struct {
		advance  time.Duration
		launched int
	}{{0, 1}, {99 * time.Millisecond, 1}, {time.Millisecond, 2}, {250 * time.Millisecond, 4}, {time.Second, 5}} {
		clock.Advance(step.advance)
		if step.launched < 5 {
			// The next client is due later on the manual clock: wait for the expected count,
			// then make sure no more were started.
			flWait(t, "ramp", func() bool { return f.Launched() >= step.launched })
			time.Sleep(20 * time.Millisecond)
		} else {
			flWait(t, "ramp end", func() bool { return f.Launched() == 5 })
		}
		if got := f.Launched(); got != step.launched {
			t.Fatalf("after advancing to %s: %d clients started, want %d", clock.Now().Sub(f.Began()), got, step.launched)
		}
	}
	// Clients 2 and 3 (due at 200 and 300ms) started at 350ms, client 4 (due at 400ms) at
	// 1350ms: their lateness is counted, and their time to first config would count from 200,
	// 300 and 400ms.
	late := f.Observer().Stats().StartLateness
	if late.TotalCount() != 5 || !late.ValuesAreEquivalent(late.Max(), 950000) || late.Min() > 1 {
		t.Errorf("start lateness: %d clients, min %dµs, max %dµs; want 5, ~0 and 950000µs", late.TotalCount(), late.Min(), late.Max())
	}
	if got := late.ValueAtQuantile(70); !late.ValuesAreEquivalent(got, 150000) {
		t.Errorf("start lateness p70 %dµs, want 150000µs (client 2)", got)
	}
}
