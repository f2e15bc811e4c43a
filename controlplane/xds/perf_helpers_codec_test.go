package xds

import (
	"strings"
	"sync/atomic"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
)

// TestLeanResponseScan: the benchmarks' client codec reads the envelope of the server's own
// encoding (SotW and Delta) the same whatever buffers the message arrives in, finds a wanted
// resource by name (names of any length) and rejects a truncated message.
func TestLeanResponseScan(t *testing.T) {
	var res []*cache.Resource
	for _, name := range []string{"outbound|8080||a", "outbound|8080||" + strings.Repeat("b", 600), "outbound|8080||c"} {
		b, err := proto.Marshal(&clusterv3.Cluster{Name: name, AltStatName: strings.Repeat("s", 1000)})
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, cache.NewResource(name, gen.ClusterType, b))
	}
	tests := []struct {
		name        string
		resp        *encodedResponse
		want        string
		wantHas     bool
		wantRemoved int
		wantNames   int
	}{
		{name: "SotW, wanted name present", resp: &encodedResponse{resources: res, tail: responseTail("7", gen.ClusterType, "n1")},
			want: "outbound|8080||c", wantHas: true},
		{name: "SotW, long wanted name", resp: &encodedResponse{resources: res, tail: responseTail("7", gen.ClusterType, "n1")},
			want: "outbound|8080||" + strings.Repeat("b", 600), wantHas: true},
		{name: "SotW, wanted name absent", resp: &encodedResponse{resources: res, tail: responseTail("7", gen.ClusterType, "n1")},
			want: "outbound|8080||d"},
		{name: "Delta with removals", resp: &encodedResponse{resources: res, delta: true,
			tail: deltaTail("7", gen.ClusterType, "n1", []string{"x", "y"})}, want: "outbound|8080||a", wantHas: true, wantRemoved: 2, wantNames: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs, err := newCodec().Marshal(tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			wire := bs.Materialize()
			for _, chunk := range []int{1, 3, 100, 4096, len(wire)} {
				var data mem.BufferSlice
				for b := wire; len(b) > 0; b = b[min(chunk, len(b)):] {
					data = append(data, mem.SliceBuffer(b[:min(chunk, len(b))]))
				}
				var want atomic.Pointer[string]
				want.Store(&tt.want)
				r := &leanResponse{delta: tt.resp.delta, keepName: tt.resp.delta, want: &want}
				if err := (leanCodec{}).Unmarshal(data, r); err != nil {
					t.Fatalf("chunks of %d: %v", chunk, err)
				}
				if r.typ != 0 || r.version != "7" || r.nonce != "n1" || r.resources != 3 || r.removed != tt.wantRemoved ||
					r.hasWant != tt.wantHas || len(r.names) != tt.wantNames || r.size != len(wire) {
					t.Errorf("chunks of %d: typ %d version %q nonce %q resources %d removed %d has %v names %d size %d", chunk,
						r.typ, r.version, r.nonce, r.resources, r.removed, r.hasWant, len(r.names), r.size)
				}
			}
			r := &leanResponse{delta: tt.resp.delta, keepName: tt.resp.delta}
			if err := r.scan(mem.BufferSlice{mem.SliceBuffer(wire[:len(wire)-2])}); err == nil {
				t.Error("a truncated response scanned without an error")
			}
		})
	}
}
