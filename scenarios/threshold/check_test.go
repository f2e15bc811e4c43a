package threshold

import (
	"slices"
	"strings"
	"testing"

	"github.com/xdslab/xdslab/internal/catalog"
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
		{"bad selector", "m{x", nil, nil, []Problem{{-1, "optionally with one tag", "not closed"}}},
		{"prometheus filter", `xdslab_fleet_responses_total{type="cds"}`, nil, nil, []Problem{{-1, "write xdslab_fleet_responses_total{type:CDS}", "write tag:value"}}},
		{"prometheus filter, cp", `xdslab_cp_responses_total{type="CDS"}`, nil, nil, []Problem{{-1, "write xdslab_cp_responses_total{type:cds}", "write tag:value"}}},
		{"tag twice", "xdslab_fleet_nacks_total{type:CDS,type:EDS}", nil, nil, []Problem{{-1, "xdslab_fleet_nacks_total{type:CDS} and xdslab_fleet_nacks_total{type:EDS}", `tag "type" given twice`}}},
		{"two tags", "xdslab_push_latency_seconds{group:a,kind:scale}", []Threshold{mustParse("p(99)<1s")}, []string{"a"}, []Problem{{-1,
			"xdslab_push_latency_seconds{group:a} and xdslab_push_latency_seconds{kind:scale}", "filters on 2 tags"}}},
		{"negative", "xdslab_push_latency_seconds", []Threshold{mustParse("p(99)<-1s"), mustParse("avg>=-1ms")}, nil, []Problem{
			{0, "0 or more", "negative bound"}, {1, "0 or more", "negative bound"}}},
		{"negative plain trend", "xdslab_cp_debounce_events_per_push", []Threshold{mustParse("p(50)>-1")}, nil, []Problem{{0, "0 or more", "never below 0"}}},
		{"no unit", "xdslab_push_latency_seconds", []Threshold{mustParse("p(99)<500"), mustParse("avg<0"), mustParse("max<0.5s")}, nil, []Problem{
			{0, "write 500ms or 500s", "has no unit"}}},
		{"unknown metric", "xdslab_push_latncy_seconds", nil, nil, []Problem{{-1, `"xdslab_push_latency_seconds"`, "unknown metric"}}},
		{"no expressions", "xdslab_fleet_nacks_total", nil, nil, []Problem{{-1, "at least one expression", "no threshold expressions"}}},
		{"group", "xdslab_push_latency_seconds{group:A}", []Threshold{mustParse("p(99)<1s")}, []string{"a"}, []Problem{{-1, "case-sensitive", `tags group "a", not "A"`}}},
		{"kind churned", "xdslab_sim_events_total{kind:scale}", []Threshold{mustParse("count>0")}, nil, nil},
		{"kind not churned", "xdslab_sim_events_total{kind:endpoint-flap}", []Threshold{mustParse("count==0")}, nil, []Problem{{-1, "add churn of kind endpoint-flap", "the scenario has no endpoint-flap churn"}}},
		// A ratio is 0..1: 'rate>90' (a percentage without its %) could never pass.
		{"ratio as a percentage", "xdslab_cache_hit_ratio{type:eds}", []Threshold{mustParse("rate>90"), mustParse("rate>90%"), mustParse("rate>=1"), mustParse("rate<-0.5"), mustParse("rate>150%")}, nil, []Problem{
			{0, "write 90% or 0.9", "outside 0..1"}, {3, "from 0 to 1", "outside 0..1"}, {4, "from 0 to 1", "outside 0..1"}}},
		{"counter rate is per second", "xdslab_fleet_nacks_total", []Threshold{mustParse("rate<90")}, nil, nil},
		{"tagged only", "xdslab_cpu_seconds", []Threshold{mustParse("value<100s")}, nil, []Problem{{-1, "xdslab_cpu_seconds{side:controlplane}", "written only per side"}}},
		{"tagged only, tagged", "xdslab_phase_duration_seconds{phase:connect}", []Threshold{mustParse("value<100s")}, nil, nil},
		{"expressions", "xdslab_fleet_nacks_total", []Threshold{mustParse("count==0"), {Source: "nonsense"}, mustParse("p(99)<3ms")}, nil, []Problem{
			{1, "write AGG OP VALUE", `invalid threshold "nonsense"`},
			{2, "count", "is a counter; p(99) does not apply"},
			{2, "time unit only on a _seconds metric", "has a time unit"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.key, tc.exprs, tc.groups, []string{"scale", "endpoint-flap"}, []string{"scale"})
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

// Every metric written only per tag value is catalogued with that tag, and its example value is
// one the tag takes.
func TestTaggedOnlyCatalogued(t *testing.T) {
	for name, tv := range taggedOnly {
		m, ok := catalog.Lookup(name)
		if !ok {
			t.Errorf("%s is not catalogued", name)
			continue
		}
		d, ok := m.Tags[tv[0]]
		if !ok {
			t.Errorf("%s has no tag %s", name, tv[0])
			continue
		}
		if !slices.Contains(catalog.Values(d), tv[1]) {
			t.Errorf("%s: %s is not a value of %s", name, tv[1], tv[0])
		}
	}
}

// TestPerEvent: the trends timed per churn event, which a scenario without churn never
// measures; a kind filter is Check's to judge, and a counter's total of 0 is measured.
func TestPerEvent(t *testing.T) {
	for key, want := range map[string]bool{
		"xdslab_push_latency_seconds":                true,
		"xdslab_convergence_seconds{group:a}":        true,
		"xdslab_push_ack_latency_seconds":            true,
		"xdslab_push_received_latency_seconds":       true,
		"xdslab_push_latency_seconds{kind:scale}":    false,
		"xdslab_time_to_first_config_seconds":        false,
		"xdslab_events_missed_total":                 false,
		"xdslab_no_such_metric":                      false,
		"xdslab_push_latency_seconds{group:a,kind:x": false,
	} {
		if got := PerEvent(key); got != want {
			t.Errorf("PerEvent(%q) = %v, want %v", key, got, want)
		}
	}
}
