package collect

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
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
	shared := func(h, cp float64) HarnessCPU {
		return HarnessCPU{Harness: h, ControlPlane: cp, HasHarness: true, HasControlPlane: true, Shared: true, Where: "one process"}
	}
	const late, onTime = 0.31, 0.004
	for _, tc := range []struct {
		name      string
		cpu       HarnessCPU
		lateness  float64 // -1: no lateness metric
		limits    HarnessLimits
		saturated bool
		reasons   map[string]float64 // reason tag → gauge value; absent: no such test made
		ratio     float64            // -1: no ratio metric
		note      []string           // in note.harness
		why       []string           // in note.saturated
	}{
		{"harness above half the control plane's CPU", shared(2.05, 1.75), onTime, HarnessLimits{}, true,
			map[string]float64{ReasonCPU: 1, ReasonStartLateness: 0}, 2.05 / 1.75,
			[]string{"harness 2.05s CPU, control plane 1.75s CPU (one process): ratio 1.17 (limit 0.50)", "start lateness p99 4ms (limit 50ms)", "receive backlog p99 2ms"},
			[]string{"the harness used 1.17× the control plane's CPU on the same cores (limit 0.50×)", "do not read them as the control plane's"}},
		{"harness well below", shared(0.3, 1.0), onTime, HarnessLimits{}, false,
			map[string]float64{ReasonCPU: 0, ReasonStartLateness: 0}, 0.3, []string{"ratio 0.30"}, nil},
		{"at the limit is not above it", shared(0.5, 1.0), onTime, HarnessLimits{}, false,
			map[string]float64{ReasonCPU: 0, ReasonStartLateness: 0}, 0.5, nil, nil},
		{"a ramp that fell behind", shared(0.1, 1.0), late, HarnessLimits{}, true,
			map[string]float64{ReasonCPU: 0, ReasonStartLateness: 1}, 0.1, []string{"start lateness p99 310", "(limit 50ms)"},
			[]string{"started its clients late (start lateness p99 310", ", limit 50ms)"}},
		{"both", shared(3, 1), late, HarnessLimits{}, true,
			map[string]float64{ReasonCPU: 1, ReasonStartLateness: 1}, 3, nil, []string{"3.00×", "start lateness p99 310"}},
		{"limits of the caller", shared(2.05, 1.75), late, HarnessLimits{MaxCPURatio: 2, MaxStartLatenessP99: time.Second}, false,
			map[string]float64{ReasonCPU: 0, ReasonStartLateness: 0}, 2.05 / 1.75, []string{"(limit 2.00)", "(limit 1s)"}, nil},
		{"control plane CPU unknown", HarnessCPU{Harness: 9, HasHarness: true, Where: "no process_cpu_seconds_total"}, onTime, HarnessLimits{}, false,
			map[string]float64{ReasonStartLateness: 0}, -1,
			[]string{"harness 9s CPU, control plane CPU not available (no process_cpu_seconds_total): whether the harness took CPU from the control plane is not known"}, nil},
		{"another machine's cores", HarnessCPU{Harness: 9, ControlPlane: 1, HasHarness: true, HasControlPlane: true, Where: "elsewhere"}, onTime, HarnessLimits{}, false,
			map[string]float64{ReasonStartLateness: 0}, -1, []string{"no contention ratio (not the same cores)"}, nil},
		{"an idle control plane", shared(1, 0), onTime, HarnessLimits{}, false,
			map[string]float64{ReasonStartLateness: 0}, -1, []string{"no ratio"}, nil},
		{"too little harness CPU to judge", shared(0.02, 0.02), onTime, HarnessLimits{}, false,
			map[string]float64{ReasonStartLateness: 0}, 1,
			[]string{"ratio 1.00 (limit 0.50), not tested: the harness used under 100ms of CPU, too little to have held the cores"}, nil},
		{"little harness CPU, but enough", shared(0.1, 0.02), onTime, HarnessLimits{}, true,
			map[string]float64{ReasonCPU: 1, ReasonStartLateness: 0}, 5, nil, []string{"5.00×"}},
		{"no fleet figures", shared(0.1, 1), -1, HarnessLimits{}, false,
			map[string]float64{ReasonCPU: 0}, 0.1, []string{"fleet start lateness not available"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []summary.Metric
			if tc.lateness >= 0 {
				ms = append(ms, harnessTrend(t, fleet.MetricStartLateness, tc.lateness), harnessTrend(t, fleet.MetricReceiveBacklog, 0.002))
			}
			v := AssessHarness(ms, tc.cpu, tc.limits)
			res := summary.Results{Metrics: v.Metrics}
			all, ok := res.Find(MetricHarnessSaturated, nil)
			require.True(t, ok, "the untagged verdict is always there")
			require.Equal(t, tc.saturated, all.Values["value"] == 1)
			require.Equal(t, tc.saturated, v.Saturated != "")
			for _, reason := range []string{ReasonCPU, ReasonStartLateness} {
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
				require.Contains(t, v.Note, s)
			}
			for _, s := range tc.why {
				require.Contains(t, v.Saturated, s)
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
		tgt    Target
		usage  usageReport
		known  bool // both sides known
		shared bool
		where  string
	}{
		{"in-process, profiled", Target{Kind: "in-process", MetricsSource: "x"},
			usageReport{bySide: map[string]time.Duration{SideHarness: 2 * time.Second, SideControlPlane: time.Second}}, true, true, "split by pprof labels"},
		{"in-process, no profile", Target{Kind: "in-process", MetricsSource: "x"}, usageReport{processCPU: 3 * time.Second}, false, false, "no CPU profile"},
		{"external on this machine", Target{Kind: "external", MetricsSource: "x", Addr: "127.0.0.1:15010", Local: &yes},
			usageReport{processCPU: 2 * time.Second, targetCPU: 1, hasTargetCPU: true}, true, true, "127.0.0.1 is an address of this machine"},
		{"external elsewhere", Target{Kind: "external", MetricsSource: "x", Addr: "192.0.2.7:15010", Local: &no},
			usageReport{processCPU: 2 * time.Second, targetCPU: 1, hasTargetCPU: true}, true, false, "not an address of this machine"},
		{"external, unplaced", Target{Kind: "external", MetricsSource: "x", Addr: "istiod.invalid:15010", LocalErr: context.DeadlineExceeded},
			usageReport{processCPU: 2 * time.Second, targetCPU: 1, hasTargetCPU: true}, true, false, "could not be placed"},
		{"external without its CPU", Target{Kind: "external", MetricsSource: "x", Addr: "127.0.0.1:15010", Local: &yes},
			usageReport{processCPU: 2 * time.Second}, false, false, "no process_cpu_seconds_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runHarnessCPU(tc.tgt, tc.usage)
			require.Equal(t, tc.known, c.HasHarness && c.HasControlPlane)
			require.Equal(t, tc.shared, c.Shared)
			require.Contains(t, c.Where, tc.where)
		})
	}
}
