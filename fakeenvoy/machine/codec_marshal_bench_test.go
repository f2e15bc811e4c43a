package machine

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
)

// BenchmarkCodecMarshalAck is what a client's Codec spends encoding one SotW ACK: the client's
// node and, for EDS, the 200 cluster names of a shared set (as every fleet client's EDS ACK).
func BenchmarkCodecMarshalAck(b *testing.B) {
	in := NewInterner()
	ed := newEdits(nil, 0)
	for i := range 200 {
		name := fmt.Sprintf("outbound|8080||svc-%03d.ns-%d.svc.cluster.local", i, i%5)
		raw := mustMarshal(b, fetest.EDSCluster(name))
		d, err := in.decode(tCDS, checkNone, maphash.Bytes(hashSeed, raw), name, raw)
		if err != nil {
			b.Fatal(err)
		}
		ed.put(d.name, entry{d: d})
	}
	set := in.applyEdits(tCDS, nil, ed, true)
	c, err := newCodec(fetest.Node("ns-1", 1), nil)
	if err != nil {
		b.Fatal(err)
	}
	c.interner = in
	for _, bc := range []struct {
		name  string
		names []string
		typ   string
	}{{"eds", set.refs, E}, {"cds", nil, C}} {
		b.Run(bc.name, func(b *testing.B) {
			req := &discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: bc.typ, VersionInfo: "2026-12-06T03:00:00Z/17", ResponseNonce: "a1b2c3d4e5", ResourceNames: bc.names}
			b.ReportAllocs()
			for b.Loop() {
				out, err := c.Marshal(req)
				if err != nil {
					b.Fatal(err)
				}
				out.Free()
			}
		})
	}
	runtime.KeepAlive(set)
}
