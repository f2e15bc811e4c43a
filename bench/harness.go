package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy"
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
	reasonCPU           = "cpu"
	reasonStartLateness = "start_lateness"
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
}

// DefaultHarnessLimits returns the limits runs use unless told otherwise.
func DefaultHarnessLimits() HarnessLimits {
	return HarnessLimits{MaxCPURatio: 0.5, MaxStartLatenessP99: 50 * time.Millisecond}
}

func (l HarnessLimits) withDefaults() HarnessLimits {
	d := DefaultHarnessLimits()
	if l.MaxCPURatio <= 0 {
		l.MaxCPURatio = d.MaxCPURatio
	}
	if l.MaxStartLatenessP99 <= 0 {
		l.MaxStartLatenessP99 = d.MaxStartLatenessP99
	}
	return l
}

// harnessCPU is what a run knows of the two sides' CPU time.
type harnessCPU struct {
	// harness and controlPlane are CPU seconds; each is known when its has* is set.
	harness, controlPlane       float64
	hasHarness, hasControlPlane bool
	// shared says the two ran on the same cores, so that the ratio is a contention figure;
	// where says where each side ran (or why that is not known).
	shared bool
	where  string
}

// harnessVerdict is the assessment of a run's harness.
type harnessVerdict struct {
	metrics   []summary.Metric
	note      string // the figures, for note.harness
	saturated string // why the run is marked, for note.saturated; empty when it is not
}

// assessHarness states the harness's figures and decides whether it was saturated: its CPU
// over the control plane's on the same cores above lim.MaxCPURatio, or the fleet's start
// lateness p99 (read from ms) above lim.MaxStartLatenessP99. A test that cannot be made (a side's
// CPU unknown, the cores not shared) is said so and marks nothing.
func assessHarness(ms []summary.Metric, cpu harnessCPU, lim HarnessLimits) harnessVerdict {
	lim = lim.withDefaults()
	res := summary.Results{Metrics: ms}
	var v harnessVerdict
	var figures, why []string
	saturated := false
	flag := func(reason string, on bool) {
		val := 0.0
		if on {
			val, saturated = 1, true
		}
		v.metrics = append(v.metrics, summary.NewGauge(MetricHarnessSaturated, summary.Default, val, 0, 1, map[string]string{"reason": reason}))
	}

	// CPU.
	cpuText := "harness CPU not available"
	if cpu.hasHarness {
		cpuText = fmt.Sprintf("harness %s CPU", summary.FormatValue(summary.Time, cpu.harness))
	}
	switch {
	case cpu.hasControlPlane:
		cpuText += fmt.Sprintf(", control plane %s CPU", summary.FormatValue(summary.Time, cpu.controlPlane))
	default:
		cpuText += ", control plane CPU not available"
	}
	cpuText += " (" + cpu.where + ")"
	switch {
	case cpu.hasHarness && cpu.hasControlPlane && cpu.shared && cpu.controlPlane > 0:
		ratio := cpu.harness / cpu.controlPlane
		v.metrics = append(v.metrics, summary.NewGauge(MetricHarnessCPURatio, summary.Default, ratio, 0, ratio, nil))
		cpuText += fmt.Sprintf(": ratio %.2f (limit %.2f)", ratio, lim.MaxCPURatio)
		over := ratio > lim.MaxCPURatio
		flag(reasonCPU, over)
		if over {
			why = append(why, fmt.Sprintf("the harness used %.2f× the control plane's CPU on the same cores (limit %.2f×)", ratio, lim.MaxCPURatio))
		}
	case cpu.hasHarness && cpu.hasControlPlane && cpu.shared:
		cpuText += ": no ratio (the control plane used no measurable CPU)"
	case cpu.hasHarness && cpu.hasControlPlane:
		cpuText += ": no contention ratio (not the same cores)"
	default:
		cpuText += ": whether the harness took CPU from the control plane is not known"
	}
	figures = append(figures, cpuText)

	// Start lateness.
	if m, ok := res.Find(fakeenvoy.MetricStartLateness, nil); ok && m.Type == summary.Trend {
		p99 := m.Values["p(99)"]
		limit := lim.MaxStartLatenessP99.Seconds()
		figures = append(figures, fmt.Sprintf("fleet start lateness p99 %s (limit %s)",
			summary.FormatValue(summary.Time, p99), summary.FormatValue(summary.Time, limit)))
		over := p99 > limit
		flag(reasonStartLateness, over)
		if over {
			why = append(why, fmt.Sprintf("the fleet started its clients late (start lateness p99 %s, limit %s)",
				summary.FormatValue(summary.Time, p99), summary.FormatValue(summary.Time, limit)))
		}
	} else {
		figures = append(figures, "fleet start lateness not available")
	}

	// Receive backlog: stated, not a test of its own (its bound depends on the scenario's
	// response sizes and rates).
	if m, ok := res.Find(fakeenvoy.MetricReceiveBacklog, nil); ok && m.Type == summary.Trend {
		figures = append(figures, fmt.Sprintf("receive backlog p99 %s, max %s",
			summary.FormatValue(summary.Time, m.Values["p(99)"]), summary.FormatValue(summary.Time, m.Values["max"])))
	} else {
		figures = append(figures, "receive backlog not available")
	}

	val := 0.0
	if saturated {
		val = 1
		v.saturated = strings.Join(why, "; ") +
			". Latencies, convergence and time to first config include the harness's own delay: do not read them as the control plane's"
	}
	v.metrics = append(v.metrics, summary.NewGauge(MetricHarnessSaturated, summary.Default, val, 0, 1, nil))
	v.note = strings.Join(figures, "; ")
	return v
}

// runHarnessCPU is what this run knows of both sides' CPU: in-process, the profile's split of
// the one process; against a target, this process (the harness) and the target's
// process_cpu_seconds_total, compared only when the target runs on this machine.
func (r *run) runHarnessCPU() harnessCPU {
	u := r.usage
	if r.tgt.kind == "in-process" {
		if u.bySide == nil {
			return harnessCPU{where: "one process, and no CPU profile to split it between the sides"}
		}
		return harnessCPU{harness: u.bySide[sideHarness].Seconds(), controlPlane: u.bySide[sideControlPlane].Seconds(),
			hasHarness: true, hasControlPlane: true, shared: true,
			where: "one process, split by pprof labels, the runtime's own share in neither"}
	}
	c := harnessCPU{harness: u.processCPU.Seconds(), hasHarness: u.processCPU > 0,
		controlPlane: u.targetCPU, hasControlPlane: u.hasTargetCPU}
	host, _, err := net.SplitHostPort(r.tgt.addr)
	if err != nil {
		host = r.tgt.addr
	}
	switch {
	case !c.hasControlPlane:
		c.where = "the harness is this process; the target exports no process_cpu_seconds_total" + r.metricsHint()
	case r.tgt.local == nil:
		c.where = fmt.Sprintf("the target's host %s could not be placed: %v", host, r.tgt.localErr)
	case *r.tgt.local:
		c.shared = true
		c.where = fmt.Sprintf("the target's ADS host %s is an address of this machine, so both sides are taken to share its cores; "+
			"a target pinned to other cores, or one behind a port-forward, does not, and the ratio then overstates the contention", host)
	default:
		c.where = fmt.Sprintf("the target's ADS host %s is not an address of this machine: the sides do not share cores", host)
	}
	return c
}

// hostIsLocal reports whether host (an IP or a name) is an address of this machine: a loopback
// or unspecified address, or one of its interfaces'.
func hostIsLocal(ctx context.Context, host string) (bool, error) {
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return false, err
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	if len(ips) == 0 {
		return false, errors.New("no address")
	}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, err
	}
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true, nil
		}
		for _, a := range ifAddrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true, nil
			}
		}
	}
	return false, nil
}

// HarnessLines returns what the console prints about the harness of a summary: its figures
// (note.harness) and, when the run was marked saturated, the marker; nil when the summary says
// nothing of its harness.
func HarnessLines(s *summary.Summary) []string {
	var out []string
	if n := s.Metadata.Labels["note.harness"]; n != "" {
		out = append(out, "harness: "+n)
	}
	if n := s.Metadata.Labels["note.saturated"]; n != "" {
		out = append(out, "HARNESS SATURATED: "+n)
	}
	return out
}
