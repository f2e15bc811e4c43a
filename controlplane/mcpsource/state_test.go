package mcpsource

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
	mcpapi "istio.io/api/mcp/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/internal/mcp"
	"github.com/xdslab/xdslab/istioconfig"
)

const seURL = "networking.istio.io/v1/ServiceEntry"

func se(name, host string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Namespace: "ns", Name: name},
		Spec: &networking.ServiceEntry{Hosts: []string{host}, Ports: []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}},
			Resolution: networking.ServiceEntry_STATIC}}
}

func enc(t testing.TB, c *istioconfig.Config, version string) *anypb.Any {
	t.Helper()
	a, err := mcp.Encode(c, version)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func names(cs []*istioconfig.Config) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

func keys(ks []istioconfig.Key) string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Name)
	}
	return strings.Join(out, ",")
}

// TestStateResponse walks one State through a sequence of responses (each row builds on the
// previous rows' committed state).
func TestStateResponse(t *testing.T) {
	badSpec := se("bad", "") // no hosts: Istio's validation rejects it
	undecodable := func() *anypb.Any {
		a, _ := anypb.New(&mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/a"},
			Body: &anypb.Any{TypeUrl: "type.googleapis.com/istio.networking.v1alpha3.ServiceEntry", Value: []byte{0xff}}})
		return a
	}()
	steps := []struct {
		name             string
		url              string
		res              []*anypb.Any
		upserts, deletes string
		rejected         []string
		ignored          int
	}{
		{name: "initial", url: seURL, res: []*anypb.Any{enc(t, se("a", "a.com"), "1"), enc(t, se("b", "b.com"), "1")}, upserts: "a,b"},
		{name: "same versions: nothing", url: seURL, res: []*anypb.Any{enc(t, se("a", "a.com"), "1"), enc(t, se("b", "b.com"), "1")}},
		{name: "new version updates, missing deletes", url: seURL, res: []*anypb.Any{enc(t, se("a", "a2.com"), "2")}, upserts: "a", deletes: "b"},
		{name: "older type version accepted", url: "networking.istio.io/v1alpha3/ServiceEntry", res: []*anypb.Any{enc(t, se("a", "a2.com"), "2"), enc(t, se("c", "c.com"), "1")}, upserts: "c"},
		{name: "invalid spec keeps the last good", url: seURL, res: []*anypb.Any{enc(t, se("a", ""), "3"), enc(t, se("c", "c.com"), "1"), enc(t, badSpec, "1")},
			rejected: []string{"ns/a", "ns/bad"}},
		{name: "undecodable body keeps the last good", url: seURL, res: []*anypb.Any{undecodable, enc(t, se("c", "c.com"), "1")}, rejected: []string{"ns/a: body does not decode"}},
		{name: "duplicate name: neither copy applied", url: seURL, res: []*anypb.Any{enc(t, se("a", "x.com"), "9"), enc(t, se("a", "y.com"), "9"), enc(t, se("c", "c.com"), "1")},
			rejected: []string{"ns/a: name appears 2 times"}},
		{name: "no versions: content decides", url: seURL, res: []*anypb.Any{enc(t, se("a", "a2.com"), ""), enc(t, se("c", "c2.com"), "")}, upserts: "c"},
		{name: "unknown type", url: "example.com/v1/Thing", res: []*anypb.Any{enc(t, se("z", "z.com"), "1")}, rejected: []string{"unknown type URL"}},
		{name: "kind not used", url: "networking.istio.io/v1alpha3/EnvoyFilter", res: []*anypb.Any{enc(t, se("z", "z.com"), "1")}, ignored: 1},
		{name: "empty deletes all", url: seURL, deletes: "a,c"},
	}
	st := NewState("xds://test")
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := st.Response(s.url, s.res)
			if got := names(r.Upserts); got != s.upserts {
				t.Errorf("upserts %q, want %q", got, s.upserts)
			}
			if got := keys(r.Deletes); got != s.deletes {
				t.Errorf("deletes %q, want %q", got, s.deletes)
			}
			if r.Ignored != s.ignored {
				t.Errorf("ignored %d, want %d", r.Ignored, s.ignored)
			}
			if len(r.Rejected) != len(s.rejected) {
				t.Fatalf("rejected %v, want %v", r.Rejected, s.rejected)
			}
			for i, want := range s.rejected {
				if !strings.Contains(r.Rejected[i].Error(), want) || !strings.Contains(r.Rejected[i].Error(), s.url) {
					t.Errorf("rejection %d = %v, want type %s and %q", i, r.Rejected[i], s.url, want)
				}
			}
			for _, c := range r.Upserts {
				if c.Source != "xds://test" {
					t.Errorf("source %q", c.Source)
				}
			}
			st.Commit(r)
		})
	}
}

func TestBackoff(t *testing.T) {
	for n := range 10 {
		d := backoff(DefaultBackoffBase, DefaultBackoffMax, n)
		full := min(DefaultBackoffBase<<n, DefaultBackoffMax)
		if d < full/2 || d > full {
			t.Errorf("attempt %d: %v outside [%v, %v]", n, d, full/2, full)
		}
	}
}

func TestParseURL(t *testing.T) {
	o, err := ParseURL("xds://127.0.0.1:15010?caFile=/tmp/ca.pem&serverName=istiod")
	if err != nil || o.Addr != "127.0.0.1:15010" || o.CAFile != "/tmp/ca.pem" || o.ServerName != "istiod" {
		t.Errorf("got %+v %v", o, err)
	}
	for _, bad := range []string{"xds://host", "fs:///tmp", "xds://h:1/path", "xds://h:1?bogus=1", "::"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
