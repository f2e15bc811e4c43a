package sotw

import (
	"strconv"
	"testing"

	"google.golang.org/grpc/mem"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"
)

func TestLazyRequestMatchesProto(t *testing.T) {
	reqs := []*discoveryv3.DiscoveryRequest{
		{},
		{TypeUrl: "t", VersionInfo: "3", ResponseNonce: "a", ResourceNames: []string{"x", "y", "x"}},
		{Node: &corev3.Node{Id: "sidecar~1.2.3.4~p.ns~ns.svc.cluster.local"}, ResourceNames: []string{""},
			ErrorDetail: &status.Status{Code: 13, Message: "bad"}},
	}
	for _, want := range reqs {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got Request
		if err := got.Decode(b, false); err != nil {
			t.Fatal(err)
		}
		got.Names()
		if d := cmp.Diff(want, &got.DiscoveryRequest, protocmp.Transform()); d != "" {
			t.Errorf("lazy decode differs (-want +got):\n%s", d)
		}
		if !got.Restates(got.namesHash, len(want.ResourceNames)) {
			t.Errorf("%v: request does not restate its own names", want.ResourceNames)
		}
	}
	// Order does not matter; content does.
	a, b := &Request{}, &Request{}
	ab, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"a", "b"}})
	ba, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"b", "a"}})
	_ = a.Decode(ab, true)
	_ = b.Decode(ba, true)
	if !a.Restates(b.namesHash, b.namesCount) {
		t.Error("same names in another order hash differently")
	}
	c, star := &Request{}, &Request{}
	ac, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"a", "c"}})
	sa, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"*", "a"}})
	_ = c.Decode(ac, true)
	_ = star.Decode(sa, true)
	if a.Restates(c.namesHash, c.namesCount) || a.Restates(star.namesHash, star.namesCount) {
		t.Error("different names (or a dropped \"*\") hash the same")
	}
}

// FuzzSotwRequestDecode: the lazy decoder accepts what proto.Unmarshal accepts and yields the
// same message; it never panics.
func FuzzSotwRequestDecode(f *testing.F) {
	for _, r := range []*discoveryv3.DiscoveryRequest{{TypeUrl: "t", ResourceNames: []string{"a", "b"}}, {Node: &corev3.Node{Id: "x"}}} {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want discoveryv3.DiscoveryRequest
		werr := proto.Unmarshal(b, &want)
		var got Request
		gerr := got.Decode(b, false)
		if werr != nil {
			return // malformed input: an error (or a lenient decode) is fine, a panic is not
		}
		if gerr != nil {
			t.Fatalf("proto accepts, lazy decode fails: %v", gerr)
		}
		got.Names()
		if d := cmp.Diff(&want, &got.DiscoveryRequest, protocmp.Transform()); d != "" {
			t.Fatalf("differs:\n%s", d)
		}
	})
}

// FuzzSotwRequestPieces: a request split into pieces anywhere (as the transport hands over a
// request larger than one buffer) decodes exactly as the same bytes in one piece.
func FuzzSotwRequestPieces(f *testing.F) {
	names := make([]string, 30)
	for i := range names {
		names[i] = "outbound|8080||svc-" + strconv.Itoa(i) + ".ns-1.svc.cluster.local"
	}
	big, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: "t", VersionInfo: "7", ResponseNonce: "k",
		Node: &corev3.Node{Id: "sidecar~1.2.3.4~p.ns~ns.svc.cluster.local"}, ResourceNames: names})
	// The first two bytes say where to cut the rest.
	f.Add(append([]byte{200, 255}, big...))
	f.Add(append([]byte{1, 7}, big...))
	small, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: "t", ResourceNames: []string{"a", "b"}})
	f.Add(append([]byte{3, 5}, small...))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		cut1, cut2, b := in[0], in[1], in[2:]
		var whole Request
		werr := whole.Decode(b, false)
		var data mem.BufferSlice
		rest := b
		for _, c := range []int{int(cut1), int(cut2)} {
			c = min(c, len(rest))
			data = append(data, mem.SliceBuffer(rest[:c]))
			rest = rest[c:]
		}
		data = append(data, mem.SliceBuffer(rest))
		var got Request
		gerr := got.DecodeBuffers(data)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("one piece: %v; in pieces: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if got.namesHash != whole.namesHash || got.namesCount != whole.namesCount || got.namesOrder != whole.namesOrder {
			t.Fatalf("names hash/count/order %x/%d/%x in pieces, %x/%d/%x whole", got.namesHash, got.namesCount, got.namesOrder,
				whole.namesHash, whole.namesCount, whole.namesOrder)
		}
		whole.Names()
		got.Names()
		if d := cmp.Diff(&whole.DiscoveryRequest, &got.DiscoveryRequest, protocmp.Transform()); d != "" {
			t.Fatalf("differs (-whole +pieces):\n%s", d)
		}
		if got.held != nil {
			t.Fatal("Names kept the transport's buffers")
		}
	})
}
