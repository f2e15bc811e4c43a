package catalog

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/internal/summary"
)

var update = flag.Bool("update", false, "rewrite golden files")

func trendOf(t *testing.T, name string, ms ...int64) summary.Metric {
	t.Helper()
	h := hdr.New(1, 3_600_000_000, 3)
	for _, v := range ms {
		if err := h.RecordValue(v * 1000); err != nil {
			t.Fatal(err)
		}
	}
	m, err := summary.NewTrend(name, summary.Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// headlineSummary is a quickstart-like run: every headline figure, one failed threshold.
func headlineSummary(t *testing.T) *summary.Summary {
	dur := 20 * time.Second
	lat := make([]int64, 0, 200)
	for i := int64(0); i < 200; i++ {
		lat = append(lat, 100+i*i/40) // 100ms … 1.09s
	}
	p99 := 1.08
	hit := summary.NewRate("xdslab_cache_hit_ratio", 9977, 23, nil)
	return &summary.Summary{Results: summary.Results{
		Metrics: []summary.Metric{
			trendOf(t, "xdslab_push_latency_seconds", lat...),
			trendOf(t, "xdslab_convergence_seconds", 140, 520, 700, 1070, 1720),
			trendOf(t, "xdslab_time_to_first_config_seconds", 420, 5750, 6320, 6800),
			summary.NewGauge("xdslab_fleet_full_config_clients", summary.Default, 500, 0, 500, nil),
			summary.NewGauge("xdslab_fleet_clients", summary.Default, 500, 0, 500, nil),
			summary.NewCounter("xdslab_cp_push_cycles_total", summary.Default, 69, dur, nil),
			summary.NewCounter("xdslab_sim_events_total", summary.Default, 245, dur, nil),
			summary.NewGauge("xdslab_debounce_events_per_push", summary.Default, 3.551, 0, 3.551, nil),
			hit,
			summary.NewCounter("xdslab_fleet_nacks_total", summary.Default, 2, dur, nil),
			summary.NewCounter("xdslab_fleet_responses_total", summary.Default, 34844, dur, nil),
			summary.NewCounter("xdslab_events_missed_total", summary.Default, 0, dur, nil),
			summary.NewCounter("xdslab_probe_events_total", summary.Default, 245, dur, nil),
			summary.NewGauge("xdslab_cpu_seconds", summary.Time, 4.15, 0, 4.15, map[string]string{"side": "controlplane"}),
			summary.NewGauge("xdslab_cpu_seconds", summary.Time, 5.15, 0, 5.15, map[string]string{"side": "harness"}),
			summary.NewGauge("xdslab_cpu_seconds", summary.Time, 10.698, 0, 10.698, map[string]string{"side": "process"}),
			summary.NewGauge("xdslab_harness_cpu_ratio", summary.Default, 1.241, 0, 1.241, nil),
			summary.NewGauge("xdslab_peak_rss_bytes", summary.Data, 308.5*(1<<20), 0, 308.5*(1<<20), map[string]string{"side": "process"}),
		},
		Thresholds: []summary.Threshold{
			{Metric: "xdslab_push_latency_seconds", Expression: "p(99)<1s", Value: &p99},
			{Metric: "xdslab_fleet_nacks_total", Tags: map[string]string{"type": "CDS"}, Expression: "count==0",
				Reason: "the run did not produce xdslab_fleet_nacks_total{type=\"CDS\"}"},
		},
	}}
}

func TestHeadlineGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHeadline(&buf, headlineSummary(t)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "headline.golden.txt")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if d := cmp.Diff(string(want), buf.String()); d != "" {
		t.Errorf("headline (-want +got):\n%s", d)
	}
}

// TestHeadlineGroups: with several client groups, each latency row is followed by the groups'
// own figures, side by side.
func TestHeadlineGroups(t *testing.T) {
	tagged := func(m summary.Metric, g string) summary.Metric { m.Tags = map[string]string{"group": g}; return m }
	s := &summary.Summary{Results: summary.Results{Metrics: []summary.Metric{
		trendOf(t, "xdslab_push_latency_seconds", 100, 200, 900),
		tagged(trendOf(t, "xdslab_push_latency_seconds", 100, 200), "delta"),
		tagged(trendOf(t, "xdslab_push_latency_seconds", 900), "sotw"),
	}}}
	var buf bytes.Buffer
	if err := WriteHeadline(&buf, s); err != nil {
		t.Fatal(err)
	}
	want := "  change → in effect:  p50 200.06ms   p99 900.1ms   max 900.1ms\n" +
		"    delta:             p50 100.03ms   p99 200.06ms   max 200.06ms\n" +
		"    sotw:              p50 900.1ms   p99 900.1ms   max 900.1ms\n"
	if d := cmp.Diff(want, buf.String()); d != "" {
		t.Errorf("headline (-want +got):\n%s", d)
	}
}

// TestHeadlineMissing: a run without a control plane's figures (a --target run of another
// control plane, the fleet alone) leaves those rows out instead of inventing them.
func TestHeadlineMissing(t *testing.T) {
	s := &summary.Summary{Results: summary.Results{Metrics: []summary.Metric{
		trendOf(t, "xdslab_push_latency_seconds"),
	}}}
	lines := Headline(s)
	if len(lines) != 1 || lines[0].Value != "no data (nothing observed)" {
		t.Errorf("Headline = %+v, want one no-data row", lines)
	}
}

// TestHeadlineSaturated: a run whose harness was saturated says so in the headline, beside the
// figures it taints.
func TestHeadlineSaturated(t *testing.T) {
	s := headlineSummary(t)
	s.Metadata.Labels = map[string]string{"note.saturated": "the harness used 1.19× the control plane's CPU on the same cores (limit 0.50×)"}
	var found bool
	for _, l := range Headline(s) {
		if l.Label == "harness" && l.Bad && l.Value == "SATURATED: "+s.Metadata.Labels["note.saturated"] {
			found = true
		}
	}
	if !found {
		t.Errorf("headline lacks the saturated harness: %+v", Headline(s))
	}
}
