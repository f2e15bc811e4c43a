package xds

import (
	"bytes"
	"strconv"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
)

// TestEncodedResponseBuffers: however the resources are packed into buffers (small ones copied
// into chunks, large ones shared), the bytes are the resources' framings in order then the
// tail, and they decode as the DiscoveryResponse (SotW and Delta); chunks never exceed
// packChunk and large resources are not copied.
func TestEncodedResponseBuffers(t *testing.T) {
	sizes := []int{10, 100, 100, packBelow - 10, packBelow, 5000, 200, packChunk, 100}
	for _, n := range []int{0, 1, 60, 200} { // many small ones
		for range n {
			sizes = append(sizes, 120)
		}
	}
	var res []*cache.Resource
	for i, n := range sizes {
		res = append(res, cache.NewResource("r"+strconv.Itoa(i), gen.ClusterType, bytes.Repeat([]byte{byte(i)}, n)))
	}
	for _, delta := range []bool{false, true} {
		r := &encodedResponse{resources: res, tail: responseTail("7", gen.ClusterType, "n"), delta: delta}
		bs := r.buffers(mem.DefaultBufferPool())
		var want []byte
		for _, x := range res {
			want = append(want, r.framed(x)...)
		}
		want = append(want, r.tail...)
		if got := bs.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("delta=%v: bytes differ (%d vs %d)", delta, len(got), len(want))
		}
		if bs.Len() != r.size() {
			t.Errorf("size() %d, buffers %d", r.size(), bs.Len())
		}
		for _, b := range bs[:len(bs)-1] { // the last one is the tail
			d := b.ReadOnlyData()
			isShared := false
			for _, x := range res {
				if f := r.framed(x); len(f) >= packBelow && len(d) == len(f) && &d[0] == &f[0] {
					isShared = true
				}
			}
			if !isShared && len(d) > packChunk {
				t.Errorf("a packed chunk of %d bytes", len(d))
			}
		}
		if len(bs) > len(res)/8 {
			t.Errorf("%d buffers for %d resources: small ones were not packed", len(bs), len(res))
		}
		shared := false
		for _, b := range bs {
			if d := b.ReadOnlyData(); len(d) > 0 && &d[0] == &r.framed(res[5])[0] {
				shared = true
			}
		}
		if !shared {
			t.Error("a large resource was copied instead of shared")
		}
		if delta {
			var m discoveryv3.DeltaDiscoveryResponse
			if err := proto.Unmarshal(bs.Materialize(), &m); err != nil || len(m.Resources) != len(res) || m.Nonce != "n" {
				t.Errorf("delta decode: %v, %d resources", err, len(m.Resources))
			}
		} else {
			var m discoveryv3.DiscoveryResponse
			if err := proto.Unmarshal(bs.Materialize(), &m); err != nil || len(m.Resources) != len(res) || m.VersionInfo != "7" {
				t.Errorf("sotw decode: %v, %d resources", err, len(m.Resources))
			}
		}
		bs.Free()
	}
}
