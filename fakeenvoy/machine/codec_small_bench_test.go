package machine

import (
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
)

// BenchmarkCodecSmallPush is what a client's Codec spends reading the response of an endpoint
// change: one ClusterLoadAssignment some client of the fleet already read (a memo hit), with
// its version, type URL and nonce, in one buffer.
func BenchmarkCodecSmallPush(b *testing.B) {
	in := NewInterner()
	resp := sotwResp(b, E, "2026-12-06T03:00:00Z/17", "a1b2c3d4e5", fetest.CLA("outbound|8080||svc-001.ns-1.svc.cluster.local", "10.0.0.1", 80))
	raw, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	data := mem.BufferSlice{mem.SliceBuffer(raw)}
	c := &Codec{interner: in, mode: checkEnvoy}
	read := func() {
		var r discoveryv3.DiscoveryResponse
		if err := c.Unmarshal(data, &r); err != nil {
			b.Fatal(err)
		}
		if res, ok := c.LastRead(); !ok || len(res.items) != 1 || r.GetNonce() != "a1b2c3d4e5" {
			b.Fatalf("read %d items (%v), nonce %q", len(res.items), ok, r.GetNonce())
		}
	}
	read()
	read() // the second read keeps the run
	b.ReportAllocs()
	for b.Loop() {
		read()
	}
}
