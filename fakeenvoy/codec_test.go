package fakeenvoy

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestCodecNode checks that a request carrying the codec's stand-in node decodes exactly as
// the plain encoding of the same request with the client's real node, that other requests are
// encoded as they are, and that Marshal leaves the request unchanged.
func TestCodecNode(t *testing.T) {
	node := IdentityTemplate{Namespaces: 3, Labels: map[string]string{"app": "a", "v": "1"}}.Node(7)
	other := IdentityTemplate{}.Node(8)
	errDetail := &status.Status{Code: 13, Message: "bad"}
	c, err := newCodec(node, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.node == node || c.node.GetId() != node.GetId() {
		t.Fatalf("stand-in %v, want a new node with id %s", c.node, node.GetId())
	}
	for _, tc := range []struct {
		name      string
		req, want proto.Message
	}{
		{"SotW with the node",
			&discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: E, VersionInfo: "3", ResponseNonce: "n", ResourceNames: []string{"a", "b"}},
			&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: E, VersionInfo: "3", ResponseNonce: "n", ResourceNames: []string{"a", "b"}}},
		{"SotW NACK with the node",
			&discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: C, ResponseNonce: "n", ErrorDetail: errDetail},
			&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: C, ResponseNonce: "n", ErrorDetail: errDetail}},
		{"SotW without node", &discoveryv3.DiscoveryRequest{TypeUrl: C, VersionInfo: "1"}, nil},
		{"SotW with another node", &discoveryv3.DiscoveryRequest{Node: other, TypeUrl: C}, nil},
		{"Delta with the node",
			&discoveryv3.DeltaDiscoveryRequest{Node: c.node, TypeUrl: E, ResourceNamesSubscribe: []string{"a"}, InitialResourceVersions: map[string]string{"a": "1"}},
			&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: E, ResourceNamesSubscribe: []string{"a"}, InitialResourceVersions: map[string]string{"a": "1"}}},
		{"Delta without node", &discoveryv3.DeltaDiscoveryRequest{TypeUrl: L, ResponseNonce: "x"}, nil},
		{"not a request", &corev3.Node{Id: "x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.req)
			want := tc.want
			if want == nil {
				want = before
			}
			out, err := c.Marshal(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got := tc.req.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(out.Materialize(), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.req, protocmp.Transform()); diff != "" {
				t.Errorf("Marshal changed the request (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCodecRoundTrip(t *testing.T) {
	want := sotwResp(t, E, "7", "n", cla("c1", "10.0.0.1", 80), cla("c2", "10.0.0.2", 80))
	out, err := (&codec{}).Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b := out.Materialize()
	for _, tc := range []struct {
		name  string
		split []int // cut points: the message arrives in several buffers
	}{
		{name: "one buffer"},
		{name: "two buffers", split: []int{len(b) / 2}},
		{name: "every few bytes", split: []int{1, 5, 17, 40, len(b) - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data mem.BufferSlice
			prev := 0
			for _, cut := range append(tc.split, len(b)) {
				data = append(data, mem.SliceBuffer(append([]byte(nil), b[prev:cut]...)))
				prev = cut
			}
			got := &discoveryv3.DiscoveryResponse{}
			if err := (&codec{}).Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
			// The decoded message must not alias the received buffers (gRPC recycles them).
			for _, buf := range data {
				clear(buf.ReadOnlyData())
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCodecRejectsNonProto(t *testing.T) {
	if _, err := (&codec{}).Marshal("text"); err == nil {
		t.Errorf("Marshal(string) succeeded")
	}
	var s string
	if err := (&codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{1})}, &s); err == nil {
		t.Errorf("Unmarshal into *string succeeded")
	}
}

func TestBufferPoolTiers(t *testing.T) {
	p := newBufferPool()
	for _, size := range []int{1, 256, 300, 32<<10 + 1, 1 << 20, 16 << 20} {
		buf := p.Get(size)
		if len(*buf) != size {
			t.Errorf("Get(%d) returned %d bytes", size, len(*buf))
		}
		// A tier at every power of two: never more than twice what was asked (from 256 B).
		if c := cap(*buf); c > 2*max(size, 256) {
			t.Errorf("Get(%d) has capacity %d, want at most %d", size, c, 2*max(size, 256))
		}
		p.Put(buf)
	}
}
