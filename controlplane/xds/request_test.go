package xds

import (
	"testing"

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
		var got sotwRequest
		if err := got.decode(b, false); err != nil {
			t.Fatal(err)
		}
		got.Names()
		if d := cmp.Diff(want, &got.DiscoveryRequest, protocmp.Transform()); d != "" {
			t.Errorf("lazy decode differs (-want +got):\n%s", d)
		}
		if !got.restates(got.namesHash, len(want.ResourceNames)) {
			t.Errorf("%v: request does not restate its own names", want.ResourceNames)
		}
	}
	// Order does not matter; content does.
	a, b := &sotwRequest{}, &sotwRequest{}
	ab, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"a", "b"}})
	ba, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"b", "a"}})
	_ = a.decode(ab, true)
	_ = b.decode(ba, true)
	if !a.restates(b.namesHash, b.namesCount) {
		t.Error("same names in another order hash differently")
	}
	c, star := &sotwRequest{}, &sotwRequest{}
	ac, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"a", "c"}})
	sa, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"*", "a"}})
	_ = c.decode(ac, true)
	_ = star.decode(sa, true)
	if a.restates(c.namesHash, c.namesCount) || a.restates(star.namesHash, star.namesCount) {
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
		var got sotwRequest
		gerr := got.decode(b, false)
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
