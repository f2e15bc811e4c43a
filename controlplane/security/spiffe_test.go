package security

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseSPIFFE(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Identity
		ok   bool
	}{
		{"spiffe://cluster.local/ns/default/sa/bookinfo", Identity{TrustDomain: "cluster.local", Namespace: "default", ServiceAccount: "bookinfo"}, true},
		{"spiffe://Cluster.Local/ns/a/sa/b", Identity{TrustDomain: "cluster.local", Namespace: "a", ServiceAccount: "b"}, true},
		{"http://cluster.local/ns/a/sa/b", Identity{}, false},
		{"spiffe://cluster.local/ns/a", Identity{}, false},
		{"spiffe://cluster.local/ns//sa/b", Identity{}, false},
		{"spiffe:///ns/a/sa/b", Identity{}, false},
		{"spiffe://td/sa/a/ns/b", Identity{}, false},
		{"spiffe://td/ns/a/sa/b/extra", Identity{}, false},
	} {
		got, err := ParseSPIFFE(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSPIFFE(%q) = %+v, %v; want %+v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseSPIFFE checks that the parser never panics and that every accepted id round-trips.
func FuzzParseSPIFFE(f *testing.F) {
	f.Add("spiffe://cluster.local/ns/default/sa/x")
	f.Add("spiffe://a/ns/b/sa/c/")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseSPIFFE(s)
		if err != nil {
			return
		}
		back, err := ParseSPIFFE(id.String())
		if err != nil || back != id {
			t.Fatalf("%q parsed to %+v, which re-parses to %+v, %v", s, id, back, err)
		}
	})
}
