package collect

import (
	"bytes"
	"runtime/pprof"
	"time"

	"github.com/xdslab/xdslab/internal/pprofcpu"
	"github.com/xdslab/xdslab/internal/procstat"
)

// CPU and memory of the two sides of a run (DESIGN.md "harness overhead").
//
// In-process, the control plane and the harness (simulator and fleet) share one process. The
// runner labels their goroutines with pprof labels (xdslab_side=controlplane on everything the
// control plane starts, including the gRPC server's stream goroutines; xdslab_side=harness on
// the run and the fleet), and a CPU profile taken over the run is summed by label. Samples with
// no label (the Go runtime's own goroutines: GC workers, the scavenger) are reported as
// "runtime". Peak RSS cannot be split: it is the process's. Against an external target the
// control plane's CPU seconds and resident memory come from its process_* metrics when it
// exports them.

// ProcessUsage is the process's CPU time and peak RSS at one moment.
type ProcessUsage struct {
	cpu    time.Duration
	maxRSS int64 // bytes
	ok     bool
}

// CPU is the process's CPU time (user and system) at that moment.
func (u ProcessUsage) CPU() time.Duration { return u.cpu }

// ReadUsage reads this process's CPU time and peak RSS.
func ReadUsage() ProcessUsage {
	cpu, rss, ok := procstat.Read()
	return ProcessUsage{cpu: cpu, maxRSS: rss, ok: ok}
}

// Profile is a running CPU profile (or none).
type Profile struct {
	buf     *bytes.Buffer
	data    []byte // the stopped profile (gzipped pprof), for cpu.pprof
	running bool
	err     error
}

// StartProfile starts a CPU profile when wanted; a profile already running elsewhere in the
// process (a test's -cpuprofile) leaves the run without one.
func StartProfile(want bool) *Profile {
	p := &Profile{}
	if !want {
		return p
	}
	p.buf = &bytes.Buffer{}
	if err := pprof.StartCPUProfile(p.buf); err != nil {
		p.err = err
		return p
	}
	p.running = true
	return p
}

// Stop stops the profile and returns CPU time by side (nil without a profile). Safe to call
// more than once.
func (p *Profile) Stop() map[string]time.Duration {
	if !p.running {
		return nil
	}
	p.running = false
	pprof.StopCPUProfile()
	p.data = p.buf.Bytes()
	bySide, err := pprofcpu.ByLabel(p.data, SideLabel)
	if err != nil {
		p.err = err
		return nil
	}
	return bySide
}

// usageReport is what the summary reports about CPU and memory.
type usageReport struct {
	// processCPU is the whole process's CPU time over the run.
	processCPU time.Duration
	peakRSS    int64
	// bySide splits the profiled CPU time (in-process with a profile); nil otherwise.
	bySide map[string]time.Duration
	// targetCPU and targetRSS are an external control plane's, from its metrics.
	targetCPU    float64
	hasTargetCPU bool
	targetRSS    float64
	hasTargetRSS bool
	note         string
}

// usageBetween is the CPU and memory between two samples of this process (a, b) and of an
// external control plane (cpA, cpB, with cpMid any sample taken in between: a restart shows as
// a counter that went down between any two of them).
func usageBetween(a, b ProcessUsage, bySide map[string]time.Duration, cpA, cpB CPSample, kind string, cpMid ...CPSample) usageReport {
	u := usageReport{bySide: bySide}
	if a.ok && b.ok {
		u.processCPU = b.cpu - a.cpu
		u.peakRSS = b.maxRSS
	}
	switch {
	case kind != "in-process":
		restart := restartNote(append(append([]CPSample{cpA}, cpMid...), cpB)...)
		if cpA.hasCPU && cpB.hasCPU && restart == "" {
			u.targetCPU, u.hasTargetCPU = cpB.cpu-cpA.cpu, true
		}
		if cpB.hasRSS {
			u.targetRSS, u.hasTargetRSS = cpB.rss, true
		}
		u.note = "the harness is this process; the control plane's CPU is its process_cpu_seconds_total over the run and its peak RSS the largest process_resident_memory_bytes sampled every 0.5s"
		switch {
		case restart != "" && cpA.hasCPU && cpB.hasCPU:
			u.note = "the harness is this process; the control plane's CPU left out: " + restart + "; its peak RSS is the largest process_resident_memory_bytes sampled every 0.5s"
			if !u.hasTargetRSS {
				u.note = "the harness is this process; the control plane's CPU left out: " + restart
			}
		case !cpA.ok && cpB.hasCPU:
			u.note = "the harness is this process; the control plane's CPU is not available: its metrics could not be read when the run started"
		case !u.hasTargetCPU:
			u.note = "the harness is this process; the control plane's CPU and memory are not available (no process_* metrics at --target-metrics)"
		}
	case bySide != nil:
		u.note = "one process: CPU split by pprof labels on each side's goroutines (unlabelled runtime work such as GC shown apart); peak RSS is the whole process's"
	default:
		u.note = "one process: CPU and peak RSS are for the control plane and the harness together (no CPU profile to split them)"
	}
	return u
}

// Data is the stopped profile (gzipped pprof; nil before Stop, or without a profile).
func (p *Profile) Data() []byte { return p.data }

// Err says why there is no profile when one was wanted (nil otherwise).
func (p *Profile) Err() error { return p.err }
