package threshold

import (
	"strings"
	"testing"
)

// Check reports each problem once, on the key (-1) or on the expression it concerns; the
// loader's tests (scenarios/malformed_test.go) pin the messages at their file positions.
func TestCheck(t *testing.T) {
	mustParse := func(src string) Threshold {
		th, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	for _, tc := range []struct {
		name   string
		key    string
		exprs  []Threshold
		groups []string
		want   []Problem // Msg and Fix are substrings
	}{
		{"fine", "xdslab_push_latency_seconds{group:a}", []Threshold{mustParse("p(99)<1s")}, []string{"a"}, nil},
		{"built in Go", "xdslab_fleet_nacks_total", []Threshold{{Source: "count==0"}}, nil, nil},
		{"bad selector", "m{x", nil, nil, []Problem{{-1, "optionally with tags", "not closed"}}},
		{"unknown metric", "xdslab_push_latncy_seconds", nil, nil, []Problem{{-1, `"xdslab_push_latency_seconds"`, "unknown metric"}}},
		{"no expressions", "xdslab_fleet_nacks_total", nil, nil, []Problem{{-1, "at least one expression", "no threshold expressions"}}},
		{"group", "xdslab_push_latency_seconds{group:A}", []Threshold{mustParse("p(99)<1s")}, []string{"a"}, []Problem{{-1, "case-sensitive", `tags group "a", not "A"`}}},
		{"expressions", "xdslab_fleet_nacks_total", []Threshold{mustParse("count==0"), {Source: "nonsense"}, mustParse("p(99)<3ms")}, nil, []Problem{
			{1, "write AGG OP VALUE", `invalid threshold "nonsense"`},
			{2, "count", "is a counter; p(99) does not apply"},
			{2, "time unit only on a _seconds metric", "has a time unit"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.key, tc.exprs, tc.groups, []string{"scale"})
			if len(got) != len(tc.want) {
				t.Fatalf("Check = %+v, want %d problems", got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Index != w.Index || !strings.Contains(g.Fix, w.Fix) || !strings.Contains(g.Msg, w.Msg) {
					t.Errorf("problem %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}
