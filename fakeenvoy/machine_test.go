package fakeenvoy

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/internal/dist"
)

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sotwResp(t testing.TB, typeURL, version, nonce string, msgs ...proto.Message) *discoveryv3.DiscoveryResponse {
	r := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce}
	for _, m := range msgs {
		r.Resources = append(r.Resources, &anypb.Any{TypeUrl: typeURL, Value: mustMarshal(t, m)})
	}
	return r
}

func newTestMachine(t testing.TB, cfg ClientConfig) *machine {
	t.Helper()
	if cfg.Node == nil {
		cfg.Node = IdentityTemplate{}.Node(0)
	}
	cfg = cfg.withDefaults()
	nack, err := cfg.Nack.Compile()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Nack = nack
	m, err := newMachine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reqSummary renders SotW requests compactly: TYPE(version,nonce,[names],err).
func reqSummary(rs []*discoveryv3.DiscoveryRequest) []string {
	var out []string
	for _, r := range rs {
		s := typeShort(r.TypeUrl) + "(" + r.VersionInfo + "," + r.ResponseNonce + ",[" + strings.Join(r.ResourceNames, " ") + "]"
		if r.ErrorDetail != nil {
			s += ",nack"
		}
		out = append(out, s+")")
	}
	return out
}

func typeShort(url string) string {
	switch url {
	case resource.ClusterType:
		return "CDS"
	case resource.EndpointType:
		return "EDS"
	case resource.ListenerType:
		return "LDS"
	case resource.RouteType:
		return "RDS"
	case resource.SecretType:
		return "SDS"
	}
	return shortType(url)
}

func wantReqs(t *testing.T, step string, got []*discoveryv3.DiscoveryRequest, want ...string) {
	t.Helper()
	if g := reqSummary(got); !slices.Equal(g, want) {
		t.Errorf("%s: requests %q, want %q", step, g, want)
	}
}

const (
	C = resource.ClusterType
	E = resource.EndpointType
	L = resource.ListenerType
	R = resource.RouteType
)

// warmedMachine runs the initial exchange for clusters c1, c2 and listener l1 → r1.
func warmedMachine(t *testing.T, cfg ClientConfig) *machine {
	m := newTestMachine(t, cfg)
	m.start(t0)
	m.onSotw(sotwResp(t, C, "1", "a", edsCluster("c1"), edsCluster("c2")), t0)
	m.onSotw(sotwResp(t, E, "1", "b", cla("c1", "10.0.0.1", 80), cla("c2", "10.0.0.2", 80)), t0)
	m.onSotw(sotwResp(t, L, "1", "c", rdsListener(t, "l1", 80, "r1")), t0)
	s := m.onSotw(sotwResp(t, R, "1", "d", route("r1", "h", "c1")), t0)
	if !s.firstFull {
		t.Fatalf("initial exchange did not reach the first full config")
	}
	return m
}

func TestMachineSotwInitialOrder(t *testing.T) {
	m := newTestMachine(t, ClientConfig{})
	wantReqs(t, "start", m.start(t0).sotw, "CDS(,,[])")
	s := m.onSotw(sotwResp(t, C, "1", "a", edsCluster("c1"), edsCluster("c2")), t0)
	wantReqs(t, "CDS", s.sotw, "EDS(,,[c1 c2])", "CDS(1,a,[])")
	if !s.applied || !s.acked || s.info.Changed != 2 || s.info.NoOp {
		t.Errorf("CDS step %+v", s)
	}
	s = m.onSotw(sotwResp(t, E, "1", "b", cla("c1", "10.0.0.1", 80)), t0)
	wantReqs(t, "EDS c1 only: c2 still warming, no LDS", s.sotw, "EDS(1,b,[c1 c2])")
	s = m.onSotw(sotwResp(t, E, "2", "c", cla("c2", "10.0.0.2", 80)), t0)
	wantReqs(t, "EDS c2: all warm, LDS before the EDS ACK", s.sotw, "LDS(,,[])", "EDS(2,c,[c1 c2])")
	s = m.onSotw(sotwResp(t, L, "1", "d", rdsListener(t, "l1", 80, "r1", "r0")), t0)
	wantReqs(t, "LDS", s.sotw, "RDS(,,[r0 r1])", "LDS(1,d,[])")
	s = m.onSotw(sotwResp(t, R, "1", "e", route("r1", "h", "c1")), t0)
	if s.firstFull {
		t.Errorf("first full config with route r0 missing")
	}
	s = m.onSotw(sotwResp(t, R, "2", "f", route("r1", "h", "c1"), route("r0", "h", "c2"), route("zz", "h", "c2")), t0)
	wantReqs(t, "RDS", s.sotw, "RDS(2,f,[r0 r1])")
	if !s.firstFull || s.info.Changed != 1 {
		t.Errorf("RDS step %+v: want first full config, 1 changed (r1 identical, zz unrequested)", s.info)
	}
	if m.Resource(R, "zz") != nil || m.Resource(R, "r0") == nil {
		t.Errorf("view: unrequested zz held or r0 missing")
	}
}

func TestMachineSotwUpdates(t *testing.T) {
	m := warmedMachine(t, ClientConfig{})
	s := m.onSotw(sotwResp(t, C, "2", "x", edsCluster("c1"), edsCluster("c2")), t0)
	wantReqs(t, "identical CDS: no EDS request", s.sotw, "CDS(2,x,[])")
	if !s.info.NoOp || s.applied {
		t.Errorf("identical CDS %+v: want NoOp, not applied", s.info)
	}
	changed := edsCluster("c2")
	changed.ConnectTimeout.Seconds = 9
	s = m.onSotw(sotwResp(t, C, "3", "y", edsCluster("c1"), changed), t0)
	wantReqs(t, "changed c2: EDS re-request before the ACK", s.sotw, "EDS(1,b,[c1 c2])", "CDS(3,y,[])")
	if _, warming := m.init.warmC["c2"]; !warming || len(m.init.warmC) != 1 {
		t.Errorf("warming %v, want only c2", m.init.warmC)
	}
	m.onSotw(sotwResp(t, E, "2", "z", cla("c2", "10.0.0.2", 80)), t0)
	if len(m.init.warmC) != 0 {
		t.Errorf("c2 still warming after an identical but fresh assignment")
	}
	s = m.onSotw(sotwResp(t, C, "4", "w", edsCluster("c1")), t0)
	wantReqs(t, "deleted c2", s.sotw, "EDS(2,z,[c1])", "CDS(4,w,[])")
	if s.info.Removed != 1 || s.info.NoOp || m.Resource(C, "c2") != nil || m.Resource(E, "c2") != nil {
		t.Errorf("deletion: removed %d, c2 cluster %v, assignment %v", s.info.Removed, m.Resource(C, "c2"), m.Resource(E, "c2"))
	}
	s = m.onSotw(sotwResp(t, L, "2", "v"), t0)
	wantReqs(t, "all listeners deleted: RDS unsubscribed", s.sotw, "RDS(1,d,[])", "LDS(2,v,[])")
}

// TestMachineSotwUnwatched: Envoy answers a type it does not watch with the new version when
// the response is empty, else the old version and the new nonce, never an error_detail.
func TestMachineSotwUnwatched(t *testing.T) {
	cases := []struct {
		name string
		resp *discoveryv3.DiscoveryResponse
		want string
	}{
		{"LDS before subscribing, empty", sotwResp(t, L, "7", "n1"), "LDS(7,n1,[])"},
		{"LDS before subscribing, with resources", sotwResp(t, L, "7", "n1", rdsListener(t, "l", 80)), "LDS(,n1,[])"},
		{"unknown type, with resources", &discoveryv3.DiscoveryResponse{TypeUrl: "type.googleapis.com/x.Y", VersionInfo: "3", Nonce: "n2", Resources: []*anypb.Any{{TypeUrl: "type.googleapis.com/x.Y"}}}, "x.Y(,n2,[])"},
		{"unknown type, empty", &discoveryv3.DiscoveryResponse{TypeUrl: "type.googleapis.com/x.Y", VersionInfo: "3", Nonce: "n2"}, "x.Y(3,n2,[])"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(t, ClientConfig{})
			m.start(t0)
			s := m.onSotw(tc.resp, t0)
			wantReqs(t, tc.name, s.sotw, tc.want)
			if s.info.Nacked {
				t.Errorf("unwatched response NACKed")
			}
		})
	}
}

// TestMachineNack covers the policies: the response decision, what is applied and the NACK
// contents (last accepted version, new nonce, code 13).
func TestMachineNack(t *testing.T) {
	bad := edsCluster("bad")
	bad.ConnectTimeout.Seconds = -1 // PGV: connect_timeout must be > 0
	cases := []struct {
		name       string
		policy     string
		resp       func(t *testing.T) *discoveryv3.DiscoveryResponse
		wantReqs   []string
		wantErr    string
		wantHeld   []string // clusters held after
		wantAbsent []string
	}{
		{"never accepts invalid", "never", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			return sotwResp(t, C, "2", "n", edsCluster("c1"), bad)
		}, []string{"EDS(1,b,[bad c1])", "CDS(2,n,[])"}, "", []string{"bad"}, []string{"c2"}},
		{"realistic applies valid CDS resources and NACKs", "realistic", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			return sotwResp(t, C, "2", "n", edsCluster("c1"), edsCluster("c3"), bad)
		}, []string{"EDS(1,b,[c1 c3])", "CDS(1,n,[],nack)"}, "cluster bad", []string{"c3"}, []string{"bad", "c2"}},
		{"realistic duplicate names reject everything", "realistic", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			return sotwResp(t, C, "2", "n", edsCluster("c3"), edsCluster("c3"))
		}, []string{"CDS(1,n,[],nack)"}, "duplicate cluster", []string{"c1", "c2"}, []string{"c3"}},
		{"name pattern on CDS", "name=^c3$", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			return sotwResp(t, C, "2", "n", edsCluster("c1"), edsCluster("c2"), edsCluster("c3"), edsCluster("c4"))
		}, []string{"EDS(1,b,[c1 c2 c4])", "CDS(1,n,[],nack)"}, "name matches", []string{"c4"}, []string{"c3"}},
		{"name pattern on EDS rejects the response", "name=c1", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			return sotwResp(t, E, "2", "n", cla("c1", "10.9.9.9", 1), cla("c2", "10.9.9.9", 1))
		}, []string{"EDS(1,n,[c1 c2],nack)"}, "name matches", []string{"c1", "c2"}, nil},
		{"probability 1", "p=1", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			return sotwResp(t, C, "2", "n", edsCluster("c3"))
		}, []string{"CDS(1,n,[],nack)"}, "probability", []string{"c1", "c2"}, []string{"c3"}},
		{"every 5th response (this is the 5th)", "every=5", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			return sotwResp(t, C, "2", "n", edsCluster("c3"))
		}, []string{"CDS(1,n,[],nack)"}, "every 5", []string{"c1"}, []string{"c3"}},
		{"type mismatch", "never", func(t *testing.T) *discoveryv3.DiscoveryResponse {
			r := sotwResp(t, C, "2", "n", edsCluster("c3"))
			r.Resources[0].TypeUrl = E
			return r
		}, []string{"CDS(1,n,[],nack)"}, "does not match", []string{"c1"}, []string{"c3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseNackPolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			// The policy applies from the 5th response on, after the initial exchange.
			m := warmedMachine(t, ClientConfig{})
			m.nack = p
			if p.Probability > 0 {
				m.rng = rand.New(rand.NewPCG(1, 2))
			}
			s := m.onSotw(tc.resp(t), t0)
			wantReqs(t, tc.name, s.sotw, tc.wantReqs...)
			if tc.wantErr == "" && s.info.Nacked {
				t.Errorf("NACKed: %s", s.info.Error)
			}
			if tc.wantErr != "" {
				last := s.sotw[len(s.sotw)-1]
				if !s.info.Nacked || !strings.Contains(s.info.Error, tc.wantErr) || last.ErrorDetail.GetCode() != 13 || last.ErrorDetail.GetMessage() != s.info.Error {
					t.Errorf("NACK %q / %v, want error containing %q with code 13", s.info.Error, last.ErrorDetail, tc.wantErr)
				}
			}
			typ := C
			if tc.resp(t).TypeUrl == E {
				typ = E
			}
			for _, n := range tc.wantHeld {
				if m.Resource(typ, n) == nil {
					t.Errorf("%s missing after the response", n)
				}
			}
			for _, n := range tc.wantAbsent {
				if m.Resource(typ, n) != nil {
					t.Errorf("%s held after the response", n)
				}
			}
		})
	}
}

func TestMachineInitialFetchTimeouts(t *testing.T) {
	m := newTestMachine(t, ClientConfig{InitialFetchTimeout: 10 * time.Second})
	m.start(t0)
	if d := m.nextDeadline(); !d.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("deadline %v, want t0+10s", d)
	}
	if s := m.onTimer(t0.Add(9 * time.Second)); len(s.timeouts) != 0 || len(s.sotw) != 0 {
		t.Errorf("early timer fired: %+v", s)
	}
	s := m.onTimer(t0.Add(10 * time.Second))
	if !slices.Equal(s.timeouts, []string{C}) {
		t.Errorf("timeouts %v, want CDS", s.timeouts)
	}
	wantReqs(t, "CDS timed out with no clusters: LDS", s.sotw, "LDS(,,[])")

	// A late CDS response puts clusters into warming with their own deadline.
	t1 := t0.Add(20 * time.Second)
	m.onSotw(sotwResp(t, C, "1", "a", edsCluster("c1")), t1)
	s = m.onTimer(t1.Add(10 * time.Second))
	if !slices.Equal(s.timeouts, []string{L, E}) {
		t.Errorf("timeouts %v, want LDS then EDS", s.timeouts)
	}
	if len(m.init.warmC) != 0 || m.init.phase != phaseDone {
		t.Errorf("after timeouts: warming %v phase %d", m.init.warmC, m.init.phase)
	}
	if s.firstFull {
		t.Errorf("first full config reported without an assignment or listeners")
	}
}

func TestMachineNodeFirstOnlyAndNeverAck(t *testing.T) {
	m := newTestMachine(t, ClientConfig{NodeOnFirstOnly: true, Ack: AckPolicy{NeverAck: true}})
	first := m.start(t0)
	s := m.onSotw(sotwResp(t, C, "1", "a", edsCluster("c1")), t0)
	wantReqs(t, "never ACK: only the EDS subscription goes out", s.sotw, "EDS(,,[c1])")
	if first.sotw[0].Node == nil || s.sotw[0].Node != nil || s.acked {
		t.Errorf("node on first %v, on second %v, acked %v", first.sotw[0].Node != nil, s.sotw[0].Node != nil, s.acked)
	}
	again := m.start(t0)
	if again.sotw[0].Node == nil || again.sotw[1].Node != nil {
		t.Errorf("new stream: node must be on its first request only")
	}
}

func TestMachineRealisticListeners(t *testing.T) {
	m := warmedMachine(t, ClientConfig{})
	m.nack = NackPolicy{Realistic: true}
	twin := rdsListener(t, "l2", 80, "r1") // l1 binds 0.0.0.0:80 already
	other := rdsListener(t, "l3", 81, "r1")
	s := m.onSotw(sotwResp(t, L, "2", "x", rdsListener(t, "l1", 80, "r1"), twin, other), t0)
	if !s.info.Nacked || !strings.Contains(s.info.Error, "listener l2: duplicate address") || m.Resource(L, "l2") != nil || m.Resource(L, "l3") == nil {
		t.Errorf("address conflict: %+v, l2 %v l3 %v", s.info, m.Resource(L, "l2") != nil, m.Resource(L, "l3") != nil)
	}
	dup := rdsListener(t, "l4", 82, "r1", "r1")
	s = m.onSotw(sotwResp(t, L, "3", "y", rdsListener(t, "l1", 80, "r1"), other, dup), t0)
	if !s.info.Nacked || !strings.Contains(s.info.Error, "same matching rules") {
		t.Errorf("duplicate filter chain match: %+v", s.info)
	}
}

func TestMachineAckDelay(t *testing.T) {
	m := newTestMachine(t, ClientConfig{Ack: AckPolicy{Delay: dist.Constant(0.25), DisconnectAfter: 2}})
	m.start(t0)
	s := m.onSotw(sotwResp(t, C, "1", "a", edsCluster("c1")), t0)
	if s.delay != 250*time.Millisecond || s.disconnect {
		t.Errorf("delay %v disconnect %v, want 250ms and no disconnect", s.delay, s.disconnect)
	}
	if s = m.onSotw(sotwResp(t, E, "1", "b"), t0); !s.disconnect {
		t.Errorf("no disconnect after the 2nd response")
	}
	m.start(t0)
	if s = m.onSotw(sotwResp(t, E, "1", "c"), t0); s.disconnect {
		t.Errorf("DisconnectAfter must count per stream")
	}
}

func deltaResp(t testing.TB, typeURL, nonce string, removed []string, msgs ...proto.Message) *discoveryv3.DeltaDiscoveryResponse {
	r := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, Nonce: nonce, RemovedResources: removed}
	for i, m := range msgs {
		name, _ := readName(mustMarshal(t, m))
		r.Resources = append(r.Resources, &discoveryv3.Resource{Name: name, Version: nonce + "-" + string(rune('a'+i)), Resource: &anypb.Any{TypeUrl: typeURL, Value: mustMarshal(t, m)}})
	}
	return r
}

func TestMachineDelta(t *testing.T) {
	m := newTestMachine(t, ClientConfig{Delta: true, Nack: NackPolicy{Realistic: true}})
	s := m.start(t0)
	if len(s.delta) != 1 || s.delta[0].TypeUrl != C || len(s.delta[0].ResourceNamesSubscribe) != 0 {
		t.Fatalf("first request %v, want CDS legacy wildcard", s.delta)
	}
	s = m.onDelta(deltaResp(t, C, "n1", nil, edsCluster("c1"), edsCluster("c2")), t0)
	if len(s.delta) != 2 || s.delta[0].ResponseNonce != "n1" || !slices.Equal(s.delta[1].ResourceNamesSubscribe, []string{"c1", "c2"}) || s.delta[1].ResponseNonce != "" {
		t.Fatalf("after CDS: %v, want the ACK then the EDS subscribe (Envoy's Delta mux: ACKs first)", s.delta)
	}
	s = m.onDelta(deltaResp(t, C, "n2", []string{"c2"}, edsCluster("c2")), t0)
	if !s.info.Nacked || !strings.Contains(s.info.Error, "both added and removed") || len(s.delta) != 1 || s.delta[0].ErrorDetail == nil || s.delta[0].ResponseNonce != "n2" {
		t.Errorf("added+removed: %+v %v", s.info, s.delta)
	}
	if m.types[tCDS].res["c2"].version != "n1-b" {
		t.Errorf("version changed on a NACK: %q", m.types[tCDS].res["c2"].version)
	}
	s = m.onDelta(deltaResp(t, C, "n3", []string{"c2", "nope"}), t0)
	if s.info.Removed != 2 || s.info.NoOp || m.Resource(C, "c2") != nil || len(s.delta) != 2 || !slices.Equal(s.delta[1].ResourceNamesUnsubscribe, []string{"c2"}) {
		t.Errorf("removal: %+v %v", s.info, s.delta)
	}
	s = m.onDelta(deltaResp(t, "type.googleapis.com/x.Y", "n4", nil), t0)
	if len(s.delta) != 0 {
		t.Errorf("unwatched Delta type answered: %v", s.delta)
	}
	again := m.start(t0)
	if len(again.delta) != 2 || again.delta[0].InitialResourceVersions["c1"] != "n1-a" || !slices.Equal(again.delta[1].ResourceNamesSubscribe, []string{"c1"}) {
		t.Errorf("reconnect: %v", again.delta)
	}
}

func TestReadNameAndDiff(t *testing.T) {
	for _, m := range []proto.Message{edsCluster("a|b"), cla("a|b", "1.1.1.1", 1), rdsListener(t, "a|b", 1), route("a|b", "h", "c")} {
		if n, ok := readName(mustMarshal(t, m)); !ok || n != "a|b" {
			t.Errorf("readName(%T) = %q %v", m, n, ok)
		}
	}
	if _, ok := readName([]byte{0x0a, 0x05, 'a'}); ok {
		t.Errorf("truncated bytes decoded")
	}
	add, rem := diffSorted([]string{"a", "c", "d"}, []string{"b", "c", "e"})
	if !slices.Equal(add, []string{"b", "e"}) || !slices.Equal(rem, []string{"a", "d"}) {
		t.Errorf("diff: +%v -%v", add, rem)
	}
}

// BenchmarkMachineHeap reports the heap one warmed SotW state machine retains (2 clusters, 2
// assignments, 1 listener, 1 route config, node included), the part of a fleet client's
// memory this package controls.
func BenchmarkMachineHeap(b *testing.B) {
	resp := []*discoveryv3.DiscoveryResponse{
		sotwResp(b, C, "1", "a", edsCluster("c1"), edsCluster("c2")),
		sotwResp(b, E, "1", "b", cla("c1", "10.0.0.1", 80), cla("c2", "10.0.0.2", 80)),
		sotwResp(b, L, "1", "c", rdsListener(b, "l1", 80, "r1")),
		sotwResp(b, R, "1", "d", route("r1", "h", "c1")),
	}
	const n = 1000
	b.ReportAllocs()
	var perClient float64
	for b.Loop() {
		ms := make([]*machine, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range ms {
			ms[i] = newTestMachine(b, ClientConfig{Node: IdentityTemplate{}.Node(i)})
			ms[i].start(t0)
			for _, r := range resp {
				ms[i].onSotw(r, t0)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perClient = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(ms)
	}
	b.ReportMetric(perClient, "heapB/client")
}
