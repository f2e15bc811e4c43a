package machine

import (
	"bytes"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
)

// otherOrder marshals m with Go's default (random) map order until its bytes differ from
// those of not.
func otherOrder(t *testing.T, m proto.Message, not []byte) []byte {
	t.Helper()
	for range 200 {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, not) {
			return b
		}
	}
	t.Fatal("map order never changed")
	return nil
}

// metaCluster is cluster c1 with metadata in a Struct and in an Any packing one, whose bytes
// (the Any's packed by marshal, in that order) carry their maps in the order marshal gives.
func metaCluster(t *testing.T, marshal func(proto.Message) []byte) *clusterv3.Cluster {
	fields := map[string]any{}
	for i := range 16 {
		fields[fmt.Sprintf("k%d", i)] = fmt.Sprintf("v%d", i)
	}
	s, err := structpb.NewStruct(fields)
	if err != nil {
		t.Fatal(err)
	}
	c := fetest.EDSCluster("c1")
	c.Metadata = &corev3.Metadata{
		FilterMetadata:      map[string]*structpb.Struct{"istio": s},
		TypedFilterMetadata: map[string]*anypb.Any{"x": {TypeUrl: "type.googleapis.com/google.protobuf.Struct", Value: marshal(s)}},
	}
	return c
}

// TestSameResourceInOtherBytes: a cluster resent with its maps (Struct metadata, and a Struct
// packed in an Any) marshalled in another order is the resource held, as Envoy compares it
// (MessageUtil::hash): no re-warming, no EDS request, a no-op.
func TestSameResourceInOtherBytes(t *testing.T) {
	det := func(m proto.Message) []byte { return mustMarshal(t, m) }
	c1 := metaCluster(t, det)
	m := warmedMachine(t, Config{})
	s := m.OnSotw(sotwResp(t, C, "2", "n2", c1, fetest.EDSCluster("c2")), t0)
	wantReqs(t, "metadata added", s.Sotw, "EDS(1,b,[c1 c2])", "CDS(2,n2,[])")
	m.OnSotw(sotwResp(t, E, "2", "n3", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)), t0)

	held := mustMarshal(t, c1)
	var packed []byte
	c1b := metaCluster(t, func(m proto.Message) []byte {
		packed = otherOrder(t, m, det(m))
		return packed
	})
	raw := otherOrder(t, c1b, held)
	r := &discoveryv3.DiscoveryResponse{TypeUrl: C, VersionInfo: "3", Nonce: "n4", Resources: []*anypb.Any{
		{TypeUrl: C, Value: raw}, {TypeUrl: C, Value: mustMarshal(t, fetest.EDSCluster("c2"))}}}
	s = m.OnSotw(r, t0)
	wantReqs(t, "same clusters in other bytes", s.Sotw, "CDS(3,n4,[])")
	if !s.Info.NoOp || s.Applied || m.warming(tCDS, "c1") {
		t.Errorf("no-op %v, applied %v, c1 warming %v: want an identical resend", s.Info.NoOp, s.Applied, m.warming(tCDS, "c1"))
	}

	// A real change of the same size is still one.
	c1c := metaCluster(t, det)
	c1c.Metadata.FilterMetadata["istio"].Fields["k3"] = structpb.NewStringValue("w3")
	s = m.OnSotw(sotwResp(t, C, "4", "n5", c1c, fetest.EDSCluster("c2")), t0)
	wantReqs(t, "changed value", s.Sotw, "EDS(2,n3,[c1 c2])", "CDS(4,n5,[])")
	if s.Info.Changed != 1 {
		t.Errorf("changed %d, want 1", s.Info.Changed)
	}
}

// BenchmarkChangedAssignment: clients of one fleet (a shared Interner) each receive an
// endpoint change (two assignments of one size, alternately): the changed path, where bytes
// differ from the held copy's. One op is one response to one client.
func BenchmarkChangedAssignment(b *testing.B) {
	in := NewInterner()
	const clients = 64
	ms := make([]*Machine, clients)
	for i := range ms {
		m, err := New(withShellDefaults(Config{Interner: in}))
		if err != nil {
			b.Fatal(err)
		}
		m.Start(t0)
		m.OnSotw(sotwResp(b, C, "1", "a", fetest.EDSCluster("c1")), t0)
		ms[i] = m
	}
	resp := [2]*discoveryv3.DiscoveryResponse{
		sotwResp(b, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80)),
		sotwResp(b, E, "2", "c", fetest.CLA("c1", "10.0.0.2", 80)),
	}
	for _, m := range ms {
		m.OnSotw(resp[0], t0)
	}
	b.ReportAllocs()
	runtime.LockOSThread() // the thread's CPU time is the loop's: a busy machine's wall clock is not
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU(b)
	n := 0
	for i := 0; b.Loop(); i++ {
		r := resp[(i/clients+1)%2]
		if s := ms[i%clients].OnSotw(r, t0); s.Info.Changed != 1 {
			b.Fatalf("changed %d", s.Info.Changed)
		}
		n++
	}
	b.ReportMetric(float64(threadCPU(b)-cpu0)/float64(n), "cpu-ns/op")
}

// threadCPU is the calling thread's CPU time (user and system).
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
