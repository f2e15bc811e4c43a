package gen

import (
	"testing"
)

func TestParseClusterName(t *testing.T) {
	tests := []struct {
		in   string
		want ClusterNameParts
		ok   bool
	}{
		{"outbound|80||a.b", ClusterNameParts{Direction: Outbound, Port: 80, Subset: "", Host: "a.b"}, true},
		{"outbound|443|v1|a.b", ClusterNameParts{Direction: Outbound, Port: 443, Subset: "v1", Host: "a.b"}, true},
		{"inbound|8080||", ClusterNameParts{Direction: Inbound, Port: 8080, Subset: "", Host: ""}, true},
		{"outbound|80||", ClusterNameParts{}, false},
		{"outbound|0||a", ClusterNameParts{}, false},
		{"outbound|65536||a", ClusterNameParts{}, false},
		{"outbound|080||a", ClusterNameParts{}, false},
		{"outbound|x||a", ClusterNameParts{}, false},
		{"sideways|80||a", ClusterNameParts{}, false},
		{"outbound|80|a", ClusterNameParts{}, false},
		{"outbound|80||a|b", ClusterNameParts{}, false},
		{"BlackHoleCluster", ClusterNameParts{}, false},
		{"outbound_.80_._.a.b", ClusterNameParts{Direction: Outbound, Port: 80, Host: "a.b", SNIDNAT: true}, true},
		{"outbound_.443_.v1_.a_.b", ClusterNameParts{Direction: Outbound, Port: 443, Subset: "v1", Host: "a_.b", SNIDNAT: true}, true},
		{"outbound_.80_._.", ClusterNameParts{}, false},
		{"outbound_.0_._.a", ClusterNameParts{}, false},
		{"outbound_.80_.a", ClusterNameParts{}, false},
	}
	for _, tt := range tests {
		got, err := ParseClusterName(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseClusterName(%q) = %+v, %v; want %+v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseClusterName(f *testing.F) {
	for _, s := range []string{"outbound|80||a.b", "inbound|1||", "outbound|65535|v1|x", "||||", "outbound|9|", "", "outbound_.80_.v1_.a.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cn, err := ParseClusterName(s)
		if err != nil {
			return
		}
		// A parsed name round-trips.
		if got := cn.String(); got != s {
			t.Fatalf("ParseClusterName(%q) = %+v, which renders as %q", s, cn, got)
		}
		// EDS on any parseable name answers with that name, never panics.
		rs, _ := endpoints(nil, edsMesh(), []string{s})
		if len(rs) != 1 || rs[0].Name != s {
			t.Fatalf("EDS for %q returned %d resources", s, len(rs))
		}
	})
}

func FuzzParseHostPort(f *testing.F) {
	for _, s := range []string{"a.b:80", ":80", "a:", "a:0", "[::1]:443", "x:65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, p, err := ParseHostPort(s)
		if err != nil {
			return
		}
		if h == "" || p == 0 || HostPortName(h, p) != s {
			t.Fatalf("ParseHostPort(%q) = %q, %d", s, h, p)
		}
	})
}
