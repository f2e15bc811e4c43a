package catalog

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/xdslab/xdslab/internal/summary"
)

// The headline: the figures a run is read by, first in the console and at the top of
// report.html, before the full list. Where the summary holds two names for one figure, the
// headline takes one and says which:
//
//   - change → in effect is xdslab_push_latency_seconds (received and, for a cluster or
//     listener, warmed: what a request through the proxy sees); xdslab_push_received_latency_seconds
//     (receipt only) equals it when nothing warms.
//   - time to full config is xdslab_time_to_first_config_seconds.
//   - events per push is xdslab_debounce_events_per_push (inbound events ÷ push cycles, exact);
//     xdslab_cp_debounce_events_per_push is the control plane's histogram of it, known only
//     as buckets.

// Headline metric names.
const (
	HeadPushLatency   = "xdslab_push_latency_seconds"
	HeadConvergence   = "xdslab_convergence_seconds"
	HeadFullConfig    = "xdslab_time_to_first_config_seconds"
	HeadPushCycles    = "xdslab_cp_push_cycles_total"
	HeadEventsPerPush = "xdslab_debounce_events_per_push"
	HeadCacheHit      = "xdslab_cache_hit_ratio"
	HeadNacks         = "xdslab_fleet_nacks_total"
	HeadMissed        = "xdslab_events_missed_total"
)

// Line is one row of the headline: what it is, the figure, and the metric it comes from.
type Line struct {
	Label  string
	Value  string
	Metric string
	// Bad marks a figure that is wrong on its face (a missed event, a NACK, a failed
	// threshold): the report shows it in red.
	Bad bool
}

// Headline returns the headline rows of s. A figure the run did not produce is left out; a
// trend that observed nothing says "no data".
func Headline(s *summary.Summary) []Line {
	r := s.Results
	var out []Line
	find := func(name string, tags map[string]string) (summary.Metric, bool) { return r.Find(name, tags) }
	// groups are the client groups the run split its figures by; with two or more, each
	// latency row is followed by one row per group (delta-vs-sotw: SotW and Delta side by side).
	var groups []string
	for _, m := range r.Metrics {
		if g := m.Tags["group"]; g != "" && m.Name == HeadPushLatency && len(m.Tags) == 1 {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	trend := func(label, name string) {
		m, ok := find(name, nil)
		if !ok {
			return
		}
		out = append(out, Line{Label: label, Value: trendFigures(m), Metric: name})
		if len(groups) < 2 {
			return
		}
		for _, g := range groups {
			tags := map[string]string{"group": g}
			if gm, ok := find(name, tags); ok {
				out = append(out, Line{Label: "  " + g, Value: trendFigures(gm), Metric: name + summary.TagString(tags)})
			}
		}
	}
	trend("change → in effect", HeadPushLatency)
	trend("convergence", HeadConvergence)
	if m, ok := find(HeadFullConfig, nil); ok {
		v := trendFigures(m)
		full, okF := find("xdslab_fleet_full_config_clients", nil)
		all, okA := find("xdslab_fleet_clients", nil)
		if okF && okA {
			v += fmt.Sprintf("   %s of %s clients", num(full.Values["value"]), num(all.Values["value"]))
		}
		out = append(out, Line{Label: "time to full config", Value: v, Metric: HeadFullConfig})
	}
	if m, ok := find(HeadPushCycles, nil); ok {
		v := num(m.Values["count"]) + " push cycles"
		if ev, ok := find("xdslab_sim_events_total", nil); ok {
			v += " for " + num(ev.Values["count"]) + " events"
		}
		if epp, ok := find(HeadEventsPerPush, nil); ok {
			v += fmt.Sprintf(": %s events per push", num(epp.Values["value"]))
		}
		out = append(out, Line{Label: "push cycles", Value: v, Metric: HeadPushCycles + ", " + HeadEventsPerPush})
	}
	if m, ok := find(HeadCacheHit, nil); ok {
		out = append(out, Line{Label: "cache hit ratio", Value: fmt.Sprintf("%.2f%% of %s reads", 100*m.Values["rate"], num(m.Values["passes"]+m.Values["fails"])), Metric: HeadCacheHit})
	}
	if m, ok := find(HeadNacks, nil); ok {
		n := m.Values["count"]
		v := num(n)
		if resp, ok := find("xdslab_fleet_responses_total", nil); ok {
			v += " of " + num(resp.Values["count"]) + " responses"
		}
		out = append(out, Line{Label: "NACKs", Value: v, Metric: HeadNacks, Bad: n > 0})
	}
	if m, ok := find(HeadMissed, nil); ok {
		n := m.Values["count"]
		v := num(n)
		if ev, ok := find("xdslab_probe_events_total", nil); ok {
			v += " of " + num(ev.Values["count"]) + " events"
		}
		if u, ok := find("xdslab_events_unmeasured_total", nil); ok && u.Values["count"] > 0 {
			v += fmt.Sprintf(", %s unmeasured", num(u.Values["count"]))
		}
		out = append(out, Line{Label: "missed events", Value: v, Metric: HeadMissed, Bad: n > 0})
	}
	if v := sides(r, "xdslab_cpu_seconds"); v != "" {
		if ratio, ok := find("xdslab_harness_cpu_ratio", nil); ok {
			v += fmt.Sprintf("   harness/control plane %.2f", ratio.Values["value"])
		}
		out = append(out, Line{Label: "CPU", Value: v, Metric: "xdslab_cpu_seconds{side}"})
	}
	if v := sides(r, "xdslab_peak_rss_bytes"); v != "" {
		out = append(out, Line{Label: "peak RSS", Value: v, Metric: "xdslab_peak_rss_bytes{side}"})
	}
	if why := s.Metadata.Labels["note.saturated"]; why != "" {
		// The run's own verdict on its harness: every latency above includes the harness's delay.
		out = append(out, Line{Label: "harness", Value: "SATURATED: " + why, Metric: "xdslab_harness_saturated", Bad: true})
	}
	if n := len(r.Thresholds); n > 0 {
		passed := 0
		for _, t := range r.Thresholds {
			if t.Passed {
				passed++
			}
		}
		out = append(out, Line{Label: "thresholds", Value: fmt.Sprintf("%d of %d passed", passed, n), Bad: passed < n})
		for _, t := range r.Thresholds {
			mark := "✓"
			if !t.Passed {
				mark = "✗"
			}
			out = append(out, Line{Value: fmt.Sprintf("%s %s%s %s: %s", mark, t.Metric, summary.TagString(t.Tags), t.Expression, summary.ThresholdMeasured(r, t)), Bad: !t.Passed})
		}
	}
	return out
}

// WriteHeadline writes the headline as aligned text.
func WriteHeadline(w io.Writer, s *summary.Summary) error {
	lines := Headline(s)
	if len(lines) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		label := l.Label
		if label != "" {
			label += ":"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", label, l.Value)
	}
	return tw.Flush()
}

// trendFigures is "p50 … p99 … max …" of a trend, or why there is none.
func trendFigures(m summary.Metric) string {
	if m.NoData() && m.Buckets == nil {
		return "no data (nothing observed)"
	}
	f := func(k string) string {
		if b, ok := m.Bounded(k); ok {
			return summary.FormatBound(m.Contains, b)
		}
		v, ok := m.Values[k]
		if !ok && k == "p(50)" {
			v, ok = m.Values["med"]
		}
		if !ok {
			return "—"
		}
		return summary.FormatValue(m.Contains, v)
	}
	return fmt.Sprintf("p50 %s   p99 %s   max %s", f("p(50)"), f("p(99)"), f("max"))
}

// sides lists a per-side gauge: "control plane 4.15s   harness 5.15s" (process and runtime
// only when neither side is split out).
func sides(r summary.Results, name string) string {
	var parts []string
	for _, sd := range []struct{ tag, label string }{{"controlplane", "control plane"}, {"harness", "harness"}} {
		if m, ok := r.Find(name, map[string]string{"side": sd.tag}); ok {
			parts = append(parts, sd.label+" "+summary.FormatValue(m.Contains, m.Values["value"]))
		}
	}
	if m, ok := r.Find(name, map[string]string{"side": "process"}); ok {
		label := "process"
		if len(parts) > 0 {
			label = "whole process"
		}
		parts = append(parts, label+" "+summary.FormatValue(m.Contains, m.Values["value"]))
	}
	return strings.Join(parts, "   ")
}

func num(x float64) string { return summary.FormatValue(summary.Default, x) }
