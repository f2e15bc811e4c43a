package xds

import (
	"bytes"
	"slices"
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

// TestEncodedResponseBatchRuns: resources generated together go out as one buffer per run of
// batch neighbours, and the response's bytes are those of its resources framed one by one.
func TestEncodedResponseBatchRuns(t *testing.T) {
	names := []string{"a", "b", "c"}
	values := [][]byte{[]byte("1"), []byte("22"), []byte("333")}
	batch := cache.NewResources(gen.ClusterType, names, values)
	alone := cache.NewResource("z", gen.ClusterType, []byte("9"))
	for _, tc := range []struct {
		list []*cache.Resource
		bufs int // with the tail
	}{{batch, 2}, {[]*cache.Resource{batch[0], batch[2]}, 3}, {append(slices.Clone(batch), alone), 3}} {
		for _, delta := range []bool{false, true} {
			r := response{typeURL: gen.ClusterType, version: "v", nonce: "1", resources: tc.list, delta: delta}
			enc := r.encode()
			want := []byte{}
			for _, res := range tc.list {
				want = append(want, enc.framed(res)...)
			}
			want = append(want, enc.tail...)
			if got := enc.buffers().Materialize(); !bytes.Equal(got, want) {
				t.Errorf("delta %v, %d resources: bytes differ from the resources framed one by one", delta, len(tc.list))
			}
			if n := len(enc.buffers()); !delta && n != tc.bufs {
				t.Errorf("%d resources: %d buffers, want %d", len(tc.list), n, tc.bufs)
			}
			if enc.size() != len(want) {
				t.Errorf("size %d, want %d", enc.size(), len(want))
			}
		}
	}
}
