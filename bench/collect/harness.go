package collect

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
)

// Saying when the harness is the bottleneck. The fleet and the simulator measure a control
// plane with CPU of their own; when they share its cores and need a good part of them, or fall
// behind their own schedule, the latencies they report include their own delay. A run states
// both sides' CPU, the fleet's start lateness and its receive backlog (note.harness), and is
// marked (note.saturated, the gauge xdslab_harness_saturated, a banner in report.html, the
// console) when HarnessLimits says the harness was saturated.

// Metrics of the harness verdict (summary.json).
const (
	// MetricHarnessSaturated is 1 when the run is marked harness-saturated, else 0; tagged
	// reason=cpu and reason=start_lateness for each test that could be made.
	MetricHarnessSaturated = "xdslab_harness_saturated"
	// MetricHarnessCPURatio is the harness's CPU time over the control plane's, when both are
	// known and they ran on the same cores.
	MetricHarnessCPURatio = "xdslab_harness_cpu_ratio"
)

// The reasons of MetricHarnessSaturated (its tag reason).
const (
	ReasonCPU           = "cpu"
	ReasonStartLateness = "start_lateness"
)

// HarnessLimits say when a run is marked harness-saturated. Zero fields take the defaults of
// DefaultHarnessLimits.
type HarnessLimits struct {
	// MaxCPURatio: the harness used more than this fraction of the control plane's CPU time on
	// the same cores (default 0.5): at 2.0 CPU-s of harness for 1.7 of control plane, the
	// control plane waited for cores the fleet held.
	MaxCPURatio float64
	// MaxStartLatenessP99: the fleet started its clients later than scheduled by more than this
	// at the 99th percentile (default 50ms): its ramp could not keep up, so time to first
	// config and every later figure carry the harness's own lag.
	MaxStartLatenessP99 time.Duration
	// MinHarnessCPU: a harness that used less CPU than this over the whole run (default
	// 100ms) is not tested on CPU: it cannot have held the cores, and a ratio of a few profile
	// samples (10 ms each) is noise: 20 ms against 20 ms in a smoke run read as 1.00×.
	MinHarnessCPU time.Duration
}

// DefaultHarnessLimits returns the limits runs use unless told otherwise.
func DefaultHarnessLimits() HarnessLimits {
	return HarnessLimits{MaxCPURatio: 0.5, MaxStartLatenessP99: 50 * time.Millisecond, MinHarnessCPU: 100 * time.Millisecond}
}

func (l HarnessLimits) withDefaults() HarnessLimits {
	d := DefaultHarnessLimits()
	if l.MaxCPURatio <= 0 {
		l.MaxCPURatio = d.MaxCPURatio
	}
	if l.MaxStartLatenessP99 <= 0 {
		l.MaxStartLatenessP99 = d.MaxStartLatenessP99
	}
	if l.MinHarnessCPU <= 0 {
		l.MinHarnessCPU = d.MinHarnessCPU
	}
	return l
}

// HarnessCPU is what a run knows of the two sides' CPU time.
type HarnessCPU struct {
	// Harness and ControlPlane are CPU seconds; each is known when its Has* is set.
	Harness, ControlPlane       float64
	HasHarness, HasControlPlane bool
	// Shared says the two ran on the same cores, so that the ratio is a contention figure;
	// Where says where each side ran (or why that is not known).
	Shared bool
	Where  string
}

// HarnessVerdict is the assessment of a run's harness.
type HarnessVerdict struct {
	Metrics   []summary.Metric
	Note      string // the figures, for note.harness
	Saturated string // why the run is marked, for note.saturated; empty when it is not
}

// AssessHarness states the harness's figures and decides whether it was saturated: its CPU
// over the control plane's on the same cores above lim.MaxCPURatio, or the fleet's start
// lateness p99 (read from ms) above lim.MaxStartLatenessP99. A test that cannot be made (a side's
// CPU unknown, the cores not shared) is said so and marks nothing.
func AssessHarness(ms []summary.Metric, cpu HarnessCPU, lim HarnessLimits) HarnessVerdict {
	lim = lim.withDefaults()
	res := summary.Results{Metrics: ms}
	var v HarnessVerdict
	var figures, why []string
	saturated := false
	flag := func(reason string, on bool) {
		val := 0.0
		if on {
			val, saturated = 1, true
		}
		v.Metrics = append(v.Metrics, summary.NewGauge(MetricHarnessSaturated, summary.Default, val, 0, 1, map[string]string{"reason": reason}))
	}

	// CPU.
	cpuText := "harness CPU not available"
	if cpu.HasHarness {
		cpuText = fmt.Sprintf("harness %s CPU", summary.FormatValue(summary.Time, cpu.Harness))
	}
	switch {
	case cpu.HasControlPlane:
		cpuText += fmt.Sprintf(", control plane %s CPU", summary.FormatValue(summary.Time, cpu.ControlPlane))
	default:
		cpuText += ", control plane CPU not available"
	}
	cpuText += " (" + cpu.Where + ")"
	switch {
	case cpu.HasHarness && cpu.HasControlPlane && cpu.Shared && cpu.ControlPlane > 0:
		ratio := cpu.Harness / cpu.ControlPlane
		v.Metrics = append(v.Metrics, summary.NewGauge(MetricHarnessCPURatio, summary.Default, ratio, 0, ratio, nil))
		cpuText += fmt.Sprintf(": ratio %.2f (limit %.2f)", ratio, lim.MaxCPURatio)
		if cpu.Harness < lim.MinHarnessCPU.Seconds() {
			cpuText += fmt.Sprintf(", not tested: the harness used under %s of CPU, too little to have held the cores",
				summary.FormatValue(summary.Time, lim.MinHarnessCPU.Seconds()))
			break
		}
		over := ratio > lim.MaxCPURatio
		flag(ReasonCPU, over)
		if over {
			why = append(why, fmt.Sprintf("the harness used %.2f× the control plane's CPU on the same cores (limit %.2f×)", ratio, lim.MaxCPURatio))
		}
	case cpu.HasHarness && cpu.HasControlPlane && cpu.Shared:
		cpuText += ": no ratio (the control plane used no measurable CPU)"
	case cpu.HasHarness && cpu.HasControlPlane:
		cpuText += ": no contention ratio (not the same cores)"
	default:
		cpuText += ": whether the harness took CPU from the control plane is not known"
	}
	figures = append(figures, cpuText)

	// Start lateness.
	if m, ok := res.Find(fleet.MetricStartLateness, nil); ok && m.Type == summary.Trend {
		p99 := m.Values["p(99)"]
		limit := lim.MaxStartLatenessP99.Seconds()
		figures = append(figures, fmt.Sprintf("fleet start lateness p99 %s (limit %s)",
			summary.FormatValue(summary.Time, p99), summary.FormatValue(summary.Time, limit)))
		over := p99 > limit
		flag(ReasonStartLateness, over)
		if over {
			why = append(why, fmt.Sprintf("the fleet started its clients late (start lateness p99 %s, limit %s)",
				summary.FormatValue(summary.Time, p99), summary.FormatValue(summary.Time, limit)))
		}
	} else {
		figures = append(figures, "fleet start lateness not available")
	}

	// Receive backlog: stated, not a test of its own (its bound depends on the scenario's
	// response sizes and rates).
	if m, ok := res.Find(fleet.MetricReceiveBacklog, nil); ok && m.Type == summary.Trend {
		figures = append(figures, fmt.Sprintf("receive backlog p99 %s, max %s",
			summary.FormatValue(summary.Time, m.Values["p(99)"]), summary.FormatValue(summary.Time, m.Values["max"])))
	} else {
		figures = append(figures, "receive backlog not available")
	}

	val := 0.0
	if saturated {
		val = 1
		v.Saturated = strings.Join(why, "; ") +
			". Latencies, convergence and time to first config include the harness's own delay: do not read them as the control plane's"
	}
	v.Metrics = append(v.Metrics, summary.NewGauge(MetricHarnessSaturated, summary.Default, val, 0, 1, nil))
	v.Note = strings.Join(figures, "; ")
	return v
}

// runHarnessCPU is what a run knows of both sides' CPU: in-process, the profile's split of
// the one process; against a target, this process (the harness) and the target's
// process_cpu_seconds_total, compared only when the target runs on this machine.
func runHarnessCPU(t Target, u usageReport) HarnessCPU {
	if t.inProcess() {
		if u.bySide == nil {
			return HarnessCPU{Where: "one process, and no CPU profile to split it between the sides"}
		}
		return HarnessCPU{Harness: u.bySide[SideHarness].Seconds(), ControlPlane: u.bySide[SideControlPlane].Seconds(),
			HasHarness: true, HasControlPlane: true, Shared: true,
			Where: "one process, split by pprof labels, the runtime's own share in neither"}
	}
	c := HarnessCPU{Harness: u.processCPU.Seconds(), HasHarness: u.processCPU > 0,
		ControlPlane: u.targetCPU, HasControlPlane: u.hasTargetCPU}
	host, _, err := net.SplitHostPort(t.Addr)
	if err != nil {
		host = t.Addr
	}
	switch {
	case !c.HasControlPlane:
		c.Where = "the harness is this process; the target exports no process_cpu_seconds_total" + t.metricsHint()
	case t.Local == nil:
		c.Where = fmt.Sprintf("the target's host %s could not be placed: %v", host, t.LocalErr)
	case *t.Local:
		c.Shared = true
		c.Where = fmt.Sprintf("the target's ADS host %s is an address of this machine, so both sides are taken to share its cores; "+
			"a target pinned to other cores, or one behind a port-forward, does not, and the ratio then overstates the contention", host)
	default:
		c.Where = fmt.Sprintf("the target's ADS host %s is not an address of this machine: the sides do not share cores", host)
	}
	return c
}
