package xds

import (
	"bytes"
	"strconv"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
)

// TestEncodedResponseBuffers: a response's buffers are the resources' cached framings
// themselves (never copies: a response waiting for a slow client holds no bytes of its own), in
// order, then the tail, and they decode as the DiscoveryResponse (SotW and Delta).
func TestEncodedResponseBuffers(t *testing.T) {
	var res []*cache.Resource
	for i, n := range []int{10, 100, 300, 5000, 20000, 1} {
		res = append(res, cache.NewResource("r"+strconv.Itoa(i), gen.ClusterType, bytes.Repeat([]byte{byte(i)}, n)))
	}
	for _, delta := range []bool{false, true} {
		r := &encodedResponse{resources: res, tail: responseTail("7", gen.ClusterType, "n"), delta: delta}
		bs := r.buffers()
		if len(bs) != len(res)+1 {
			t.Fatalf("delta=%v: %d buffers for %d resources and a tail", delta, len(bs), len(res))
		}
		for i, x := range res {
			d, f := bs[i].ReadOnlyData(), r.framed(x)
			if len(d) != len(f) || &d[0] != &f[0] {
				t.Errorf("delta=%v: resource %d is not the cached framing itself", delta, i)
			}
		}
		if bs.Len() != r.size() {
			t.Errorf("size() %d, buffers %d", r.size(), bs.Len())
		}
		b := bs.Materialize()
		if delta {
			var m discoveryv3.DeltaDiscoveryResponse
			if err := proto.Unmarshal(b, &m); err != nil || len(m.Resources) != len(res) || m.Nonce != "n" {
				t.Errorf("delta decode: %v, %d resources", err, len(m.Resources))
			}
		} else {
			var m discoveryv3.DiscoveryResponse
			if err := proto.Unmarshal(b, &m); err != nil || len(m.Resources) != len(res) || m.VersionInfo != "7" {
				t.Errorf("sotw decode: %v, %d resources", err, len(m.Resources))
			}
		}
	}
}
