package fakeenvoy

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

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
func warmedMachine(t *testing.T, cfg ClientConfig) *machine {
	m := newTestMachine(t, cfg)
	m.start(t0)
	m.onSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")), t0)
	m.onSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)), t0)
	m.onSotw(sotwResp(t, L, "1", "c", fetest.RDSListener(t, "l1", 80, "r1")), t0)
	s := m.onSotw(sotwResp(t, R, "1", "d", fetest.Route("r1", "h", "c1")), t0)
	if !s.firstFull {
		t.Fatalf("initial exchange did not reach the first full config")
	}
	return m
}

func TestMachineNodeFirstOnlyAndNeverAck(t *testing.T) {
	m := newTestMachine(t, ClientConfig{NodeOnFirstOnly: true, Ack: policy.Ack{NeverAck: true}})
	first := m.start(t0)
	s := m.onSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1")), t0)
	wantReqs(t, "never ACK: only the EDS subscription goes out", s.sotw, "EDS(,,[c1])")
	if first.sotw[0].Node == nil || s.sotw[0].Node != nil || s.acked {
		t.Errorf("node on first %v, on second %v, acked %v", first.sotw[0].Node != nil, s.sotw[0].Node != nil, s.acked)
	}
	again := m.start(t0)
	if again.sotw[0].Node == nil || again.sotw[1].Node != nil {
		t.Errorf("new stream: node must be on its first request only")
	}
}

func TestMachineAckDelay(t *testing.T) {
	m := newTestMachine(t, ClientConfig{Ack: policy.Ack{Delay: dist.Constant(0.25), DisconnectAfter: 2}})
	m.start(t0)
	s := m.onSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1")), t0)
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
