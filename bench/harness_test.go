package bench

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
)

// harnessTrend is a trend of one value (seconds), as the fleet writes its lateness and backlog.
func harnessTrend(t *testing.T, name string, seconds float64) summary.Metric {
	t.Helper()
	h := measure.NewLatencyHistogram()
	require.NoError(t, h.RecordValue(int64(seconds*1e6)))
	m, err := summary.NewTrend(name, summary.Time, h, 1e-6, nil)
	require.NoError(t, err)
	return m
}

func TestAssessHarness(t *testing.T) {
	shared := func(h, cp float64) harnessCPU {
		return harnessCPU{harness: h, controlPlane: cp, hasHarness: true, hasControlPlane: true, shared: true, where: "one process"}
	}
	const late, onTime = 0.31, 0.004
	for _, tc := range []struct {
		name      string
		cpu       harnessCPU
		lateness  float64 // -1: no lateness metric
		limits    HarnessLimits
		saturated bool
		reasons   map[string]float64 // reason tag → gauge value; absent: no such test made
		ratio     float64            // -1: no ratio metric
		note      []string           // in note.harness
		why       []string           // in note.saturated
	}{
		{"harness above half the control plane's CPU", shared(2.05, 1.75), onTime, HarnessLimits{}, true,
			map[string]float64{reasonCPU: 1, reasonStartLateness: 0}, 2.05 / 1.75,
			[]string{"harness 2.05s CPU, control plane 1.75s CPU (one process): ratio 1.17 (limit 0.50)", "start lateness p99 4ms (limit 50ms)", "receive backlog p99 2ms"},
			[]string{"the harness used 1.17× the control plane's CPU on the same cores (limit 0.50×)", "do not read them as the control plane's"}},
		{"harness well below", shared(0.3, 1.0), onTime, HarnessLimits{}, false,
			map[string]float64{reasonCPU: 0, reasonStartLateness: 0}, 0.3, []string{"ratio 0.30"}, nil},
		{"at the limit is not above it", shared(0.5, 1.0), onTime, HarnessLimits{}, false,
			map[string]float64{reasonCPU: 0, reasonStartLateness: 0}, 0.5, nil, nil},
		{"a ramp that fell behind", shared(0.1, 1.0), late, HarnessLimits{}, true,
			map[string]float64{reasonCPU: 0, reasonStartLateness: 1}, 0.1, []string{"start lateness p99 310", "(limit 50ms)"},
			[]string{"started its clients late (start lateness p99 310", ", limit 50ms)"}},
		{"both", shared(3, 1), late, HarnessLimits{}, true,
			map[string]float64{reasonCPU: 1, reasonStartLateness: 1}, 3, nil, []string{"3.00×", "start lateness p99 310"}},
		{"limits of the caller", shared(2.05, 1.75), late, HarnessLimits{MaxCPURatio: 2, MaxStartLatenessP99: time.Second}, false,
			map[string]float64{reasonCPU: 0, reasonStartLateness: 0}, 2.05 / 1.75, []string{"(limit 2.00)", "(limit 1s)"}, nil},
		{"control plane CPU unknown", harnessCPU{harness: 9, hasHarness: true, where: "no process_cpu_seconds_total"}, onTime, HarnessLimits{}, false,
			map[string]float64{reasonStartLateness: 0}, -1,
			[]string{"harness 9s CPU, control plane CPU not available (no process_cpu_seconds_total): whether the harness took CPU from the control plane is not known"}, nil},
		{"another machine's cores", harnessCPU{harness: 9, controlPlane: 1, hasHarness: true, hasControlPlane: true, where: "elsewhere"}, onTime, HarnessLimits{}, false,
			map[string]float64{reasonStartLateness: 0}, -1, []string{"no contention ratio (not the same cores)"}, nil},
		{"an idle control plane", shared(1, 0), onTime, HarnessLimits{}, false,
			map[string]float64{reasonStartLateness: 0}, -1, []string{"no ratio"}, nil},
		{"no fleet figures", shared(0.1, 1), -1, HarnessLimits{}, false,
			map[string]float64{reasonCPU: 0}, 0.1, []string{"fleet start lateness not available"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []summary.Metric
			if tc.lateness >= 0 {
				ms = append(ms, harnessTrend(t, fakeenvoy.MetricStartLateness, tc.lateness), harnessTrend(t, fakeenvoy.MetricReceiveBacklog, 0.002))
			}
			v := assessHarness(ms, tc.cpu, tc.limits)
			res := summary.Results{Metrics: v.metrics}
			all, ok := res.Find(MetricHarnessSaturated, nil)
			require.True(t, ok, "the untagged verdict is always there")
			require.Equal(t, tc.saturated, all.Values["value"] == 1)
			require.Equal(t, tc.saturated, v.saturated != "")
			for _, reason := range []string{reasonCPU, reasonStartLateness} {
				m, ok := res.Find(MetricHarnessSaturated, map[string]string{"reason": reason})
				want, made := tc.reasons[reason]
				require.Equalf(t, made, ok, "reason %s", reason)
				if made {
					require.Equalf(t, want, m.Values["value"], "reason %s", reason)
				}
			}
			r, ok := res.Find(MetricHarnessCPURatio, nil)
			require.Equal(t, tc.ratio >= 0, ok)
			if ok {
				require.InDelta(t, tc.ratio, r.Values["value"], 1e-9)
			}
			for _, s := range tc.note {
				require.Contains(t, v.note, s)
			}
			for _, s := range tc.why {
				require.Contains(t, v.saturated, s)
			}
			s := summary.Summary{Version: summary.Version, Results: res}
			require.NoError(t, s.Validate())
		})
	}
}

// TestRunHarnessCPU: what a run can say of both sides' CPU, by target.
func TestRunHarnessCPU(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name   string
		tgt    target
		usage  usageReport
		known  bool // both sides known
		shared bool
		where  string
	}{
		{"in-process, profiled", target{kind: "in-process"},
			usageReport{bySide: map[string]time.Duration{sideHarness: 2 * time.Second, sideControlPlane: time.Second}}, true, true, "split by pprof labels"},
		{"in-process, no profile", target{kind: "in-process"}, usageReport{processCPU: 3 * time.Second}, false, false, "no CPU profile"},
		{"external on this machine", target{kind: "external", addr: "127.0.0.1:15010", local: &yes},
			usageReport{processCPU: 2 * time.Second, targetCPU: 1, hasTargetCPU: true}, true, true, "127.0.0.1 is an address of this machine"},
		{"external elsewhere", target{kind: "external", addr: "192.0.2.7:15010", local: &no},
			usageReport{processCPU: 2 * time.Second, targetCPU: 1, hasTargetCPU: true}, true, false, "not an address of this machine"},
		{"external, unplaced", target{kind: "external", addr: "istiod.invalid:15010", localErr: context.DeadlineExceeded},
			usageReport{processCPU: 2 * time.Second, targetCPU: 1, hasTargetCPU: true}, true, false, "could not be placed"},
		{"external without its CPU", target{kind: "external", addr: "127.0.0.1:15010", local: &yes},
			usageReport{processCPU: 2 * time.Second}, false, false, "no process_cpu_seconds_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt := tc.tgt
			r := &run{tgt: &tgt, usage: tc.usage, opts: RunOptions{TargetMetrics: "x"}}
			c := r.runHarnessCPU()
			require.Equal(t, tc.known, c.hasHarness && c.hasControlPlane)
			require.Equal(t, tc.shared, c.shared)
			require.Contains(t, c.where, tc.where)
		})
	}
}

func TestHostIsLocal(t *testing.T) {
	cases := map[string]bool{"127.0.0.1": true, "::1": true, "0.0.0.0": true, "localhost": true, "192.0.2.1": false}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				cases[n.IP.String()] = true // one of this machine's own addresses
				break
			}
		}
	}
	for host, want := range cases {
		got, err := hostIsLocal(context.Background(), host)
		require.NoErrorf(t, err, "%s", host)
		require.Equalf(t, want, got, "%s", host)
	}
}

// The report's banner and the console's lines come from the summary's notes.
func TestHarnessMarkerShown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		lines  []string
	}{
		{"marked", map[string]string{"note.harness": "harness 2s CPU", "note.saturated": "the harness used 2× x"},
			[]string{"harness: harness 2s CPU", "HARNESS SATURATED: the harness used 2× x"}},
		{"not marked", map[string]string{"note.harness": "harness 0.1s CPU"}, []string{"harness: harness 0.1s CPU"}},
		{"silent", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &summary.Summary{Metadata: summary.Metadata{Labels: tc.labels}}
			require.Equal(t, tc.lines, HarnessLines(s))
			var buf bytes.Buffer
			require.NoError(t, reportTmpl.Execute(&buf, reportData{Name: "n", Harness: tc.labels["note.harness"], Saturated: tc.labels["note.saturated"]}))
			html := buf.String()
			banner := strings.Index(html, `id="harness-saturated"`)
			require.Equal(t, tc.labels["note.saturated"] != "", banner >= 0)
			if banner >= 0 {
				require.Less(t, banner, strings.Index(html, "<h1>"), "the banner opens the page")
			}
			require.Equal(t, tc.labels["note.harness"] != "", strings.Contains(html, "<p>Harness: "))
		})
	}
}
