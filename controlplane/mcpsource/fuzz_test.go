package mcpsource

import (
	"testing"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/internal/mcp"
	"github.com/xdslab/xdslab/istioconfig"
)

// FuzzStateResponse feeds a held state arbitrary responses (resource bytes split into
// resources): no panic, every upsert passes the store's validation and Istio's rules, and the
// state never holds more objects than it had plus the response's.
func FuzzStateResponse(f *testing.F) {
	good := enc(f, se("a", "a.com"), "1").Value
	f.Add(good, uint8(1), uint8(0))
	f.Add(append(append([]byte{}, good...), good...), uint8(2), uint8(0))
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x03, 'n', '/', 'a'}, uint8(1), uint8(3))
	urls := append(mcp.RequestTypeURLs(), "networking.istio.io/v1alpha3/ServiceEntry", "bogus")
	f.Fuzz(func(t *testing.T, data []byte, parts, which uint8) {
		st := NewState("xds://fuzz")
		st.Commit(st.Response(seURL, []*anypb.Any{enc(t, se("a", "a.com"), "1"), enc(t, se("b", "b.com"), "1")}))
		n := int(parts%4) + 1
		var res []*anypb.Any
		size := len(data) / n
		for i := range n {
			end := (i + 1) * size
			if i == n-1 {
				end = len(data)
			}
			res = append(res, &anypb.Any{TypeUrl: mcp.ResourceTypeURL, Value: data[i*size : end]})
		}
		r := st.Response(urls[int(which)%len(urls)], res)
		for _, c := range r.Upserts {
			if err := istioconfig.Validate(c); err != nil {
				t.Fatalf("upsert fails validation: %v", err)
			}
			if _, err := validate.Spec(c); err != nil {
				t.Fatalf("upsert fails Istio's rules: %v", err)
			}
		}
		st.Commit(r)
		if st.Len() > 2+n {
			t.Fatalf("state holds %d objects after a response of %d", st.Len(), n)
		}
	})
}
