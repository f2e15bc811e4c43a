package catalog

import (
	"strings"
	"testing"

	"github.com/xdslab/xdslab/internal/summary"
)

func TestCheck(t *testing.T) {
	good := []summary.Metric{
		summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 0, 0, map[string]string{"type": "CDS"}),
		summary.NewCounter("xdslab_sim_events_total", summary.Default, 3, 0, map[string]string{"kind": "scale"}),
		summary.NewGauge("xdslab_connect_incomplete_clients", summary.Default, 0, 0, 1, map[string]string{"group": "sidecars"}),
	}
	if errs := Check(good, []string{"sidecars"}, []string{"scale"}); len(errs) != 0 {
		t.Errorf("Check(good) = %v", errs)
	}
	for _, tc := range []struct {
		m    summary.Metric
		want string
	}{
		{summary.NewCounter("xdslab_fleet_nackz_total", summary.Default, 0, 0, nil), "not in the metric catalogue"},
		{summary.NewGauge("xdslab_fleet_nacks_total", summary.Default, 0, 0, 0, nil), "the catalogue says a counter"},
		{summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 0, 0, map[string]string{"type": "cds"}), `type="cds" is not one of CDS`},
		{summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 0, 0, map[string]string{"shard": "1"}), `tag "shard" is not catalogued`},
		{summary.NewGauge("xdslab_connect_incomplete_clients", summary.Default, 0, 0, 1, map[string]string{"group": "mux"}), `group="mux" is not one of sidecars`},
	} {
		errs := Check([]summary.Metric{tc.m}, []string{"sidecars"}, nil)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("Check(%s) = %v, want one error containing %q", tc.m.Key(), errs, tc.want)
		}
	}
}

func TestAggregations(t *testing.T) {
	m, ok := Lookup("xdslab_cache_hit_ratio")
	if !ok || m.HasAggregation("value") || !m.HasAggregation("rate") {
		t.Errorf("cache hit ratio: %+v, want a rate with rate and no value", m)
	}
	if m, _ := Lookup("xdslab_push_latency_seconds"); !m.HasAggregation("p") || m.HasAggregation("count") {
		t.Errorf("push latency aggregations wrong: %v", Aggregations(m.Type, m.Bounded))
	}
	names := Names()
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			t.Errorf("%s catalogued twice", names[i])
		}
	}
}
