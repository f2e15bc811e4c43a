package machine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/measure"
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

// withShellDefaults applies what the client shell (fakeenvoy.ClientConfig) defaults: a node,
// Envoy's 15s initial_fetch_timeout.
func withShellDefaults(cfg Config) Config {
	if cfg.Node == nil {
		cfg.Node = fetest.Node("default", 0)
	}
	if cfg.InitialFetchTimeout == 0 {
		cfg.InitialFetchTimeout = 15 * time.Second
	}
	return cfg
}

func newTestMachine(t testing.TB, cfg Config) *Machine {
	t.Helper()
	cfg = withShellDefaults(cfg)
	nack, err := cfg.Nack.Compile()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Nack = nack
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reqSummary renders SotW requests compactly: TYPE(version,nonce,[names],err).
func reqSummary(rs []*discoveryv3.DiscoveryRequest) []string {
	var out []string
	for _, r := range rs {
		s := measure.TypeName(r.TypeUrl) + "(" + r.VersionInfo + "," + r.ResponseNonce + ",[" + strings.Join(r.ResourceNames, " ") + "]"
		if r.ErrorDetail != nil {
			s += ",nack"
		}
		out = append(out, s+")")
	}
	return out
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
func warmedMachine(t *testing.T, cfg Config) *Machine {
	m := newTestMachine(t, cfg)
	m.Start(t0)
	m.OnSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")), t0)
	m.OnSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)), t0)
	m.OnSotw(sotwResp(t, L, "1", "c", fetest.RDSListener(t, "l1", 80, "r1")), t0)
	s := m.OnSotw(sotwResp(t, R, "1", "d", fetest.Route("r1", "h", "c1")), t0)
	if !s.FirstFull {
		t.Fatalf("initial exchange did not reach the first full config")
	}
	return m
}

func TestMachineNodeFirstOnlyAndNeverAck(t *testing.T) {
	m := newTestMachine(t, Config{NodeOnFirstOnly: true, Ack: policy.Ack{NeverAck: true}})
	first := m.Start(t0)
	s := m.OnSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1")), t0)
	wantReqs(t, "never ACK: only the EDS subscription goes out", s.Sotw, "EDS(,,[c1])")
	if first.Sotw[0].Node == nil || s.Sotw[0].Node != nil || s.Acked {
		t.Errorf("node on first %v, on second %v, acked %v", first.Sotw[0].Node != nil, s.Sotw[0].Node != nil, s.Acked)
	}
	again := m.Start(t0)
	if again.Sotw[0].Node == nil || again.Sotw[1].Node != nil {
		t.Errorf("new stream: node must be on its first request only")
	}
}

func TestMachineAckDelay(t *testing.T) {
	m := newTestMachine(t, Config{Ack: policy.Ack{Delay: dist.Constant(0.25), DisconnectAfter: 2}})
	m.Start(t0)
	s := m.OnSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1")), t0)
	if s.Delay != 250*time.Millisecond || s.Disconnect {
		t.Errorf("delay %v disconnect %v, want 250ms and no disconnect", s.Delay, s.Disconnect)
	}
	if s = m.OnSotw(sotwResp(t, E, "1", "b"), t0); !s.Disconnect {
		t.Errorf("no disconnect after the 2nd response")
	}
	m.Start(t0)
	if s = m.OnSotw(sotwResp(t, E, "1", "c"), t0); s.Disconnect {
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

func TestReadNameAndDiff(t *testing.T) {
	for _, m := range []proto.Message{fetest.EDSCluster("a|b"), fetest.CLA("a|b", "1.1.1.1", 1), fetest.RDSListener(t, "a|b", 1), fetest.Route("a|b", "h", "c")} {
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

func TestEdsClusterName(t *testing.T) {
	c := fetest.EDSCluster("a")
	c.EdsClusterConfig.ServiceName = "svc-a"
	_, refs, err := decode(tCDS, mustMarshal(t, c), checkEnvoy)
	if err != nil || len(refs) != 1 || refs[0] != "svc-a" {
		t.Errorf("refs %v err %v, want [svc-a]", refs, err)
	}
	st := &clusterv3.Cluster{Name: "s", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	if _, refs, _ := decode(tCDS, mustMarshal(t, st), checkNone); len(refs) != 0 {
		t.Errorf("static cluster refs %v, want none", refs)
	}
}

// BenchmarkMachineHeap reports the heap one warmed SotW state machine retains (2 clusters, 2
// assignments, 1 listener, 1 route config, node included), the part of a fleet client's
// memory this package controls.
func BenchmarkMachineHeap(b *testing.B) {
	resp := []*discoveryv3.DiscoveryResponse{
		sotwResp(b, C, "1", "a", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")),
		sotwResp(b, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)),
		sotwResp(b, L, "1", "c", fetest.RDSListener(b, "l1", 80, "r1")),
		sotwResp(b, R, "1", "d", fetest.Route("r1", "h", "c1")),
	}
	const n = 1000
	b.ReportAllocs()
	var perClient float64
	for b.Loop() {
		ms := make([]*Machine, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range ms {
			ms[i] = newTestMachine(b, Config{Node: fetest.Node("default", i)})
			ms[i].Start(t0)
			for _, r := range resp {
				ms[i].OnSotw(r, t0)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perClient = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(ms)
	}
	b.ReportMetric(perClient, "heapB/client")
}

// TestRemovedSorted: removedSorted is diffSorted's removed, for random sorted lists with and
// without duplicates in common, and nothing for the same list.
func TestRemovedSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	list := func() []string {
		var l []string
		for range rng.IntN(12) {
			l = append(l, fmt.Sprintf("n%02d", rng.IntN(20)))
		}
		slices.Sort(l)
		return slices.Compact(l)
	}
	for i := range 2000 {
		a, b := list(), list()
		_, want := diffSorted(a, b)
		if got := removedSorted(a, b); !slices.Equal(got, want) {
			t.Fatalf("case %d: removedSorted(%v, %v) = %v, want %v", i, a, b, got, want)
		}
	}
	same := []string{"a", "b"}
	if got := removedSorted(same, same); got != nil {
		t.Errorf("the same list: removed %v", got)
	}
}

// TestFirstAndFresh: a type's first response is First whether or not it is accepted, and
// Fresh until one is accepted; a later response is neither.
func TestFirstAndFresh(t *testing.T) {
	m := newTestMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	m.Start(t0)
	bad := &clusterv3.Cluster{Name: "bad", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}}
	bad.ConnectTimeout = &durationpb.Duration{Seconds: -1} // PGV: rejects the whole response
	s := m.OnSotw(sotwResp(t, C, "1", "a", bad), t0)
	if !s.Info.Nacked || !s.Info.First || !s.Info.Fresh {
		t.Fatalf("rejected first response: nacked %v first %v fresh %v, want all true", s.Info.Nacked, s.Info.First, s.Info.Fresh)
	}
	s = m.OnSotw(sotwResp(t, C, "2", "b", fetest.EDSCluster("c1")), t0)
	if s.Info.Nacked || s.Info.First || !s.Info.Fresh {
		t.Errorf("second response: nacked %v first %v fresh %v, want an accepted, fresh, not first one", s.Info.Nacked, s.Info.First, s.Info.Fresh)
	}
	s = m.OnSotw(sotwResp(t, C, "3", "c", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")), t0)
	if s.Info.First || s.Info.Fresh {
		t.Errorf("third response: first %v fresh %v, want neither", s.Info.First, s.Info.Fresh)
	}
}
