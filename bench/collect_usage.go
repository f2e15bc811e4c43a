package bench

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
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

// processUsage is the process's CPU time and peak RSS at one moment.
type processUsage struct {
	cpu    time.Duration
	maxRSS int64 // bytes
	ok     bool
}

func readUsage() processUsage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return processUsage{}
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return processUsage{cpu: cpu, maxRSS: ru.Maxrss * 1024, ok: true} // Linux reports KiB
}

// profile is a running CPU profile (or none).
type profile struct {
	buf     *bytes.Buffer
	data    []byte // the stopped profile (gzipped pprof), for cpu.pprof
	running bool
	err     error
}

// startProfile starts a CPU profile when wanted; a profile already running elsewhere in the
// process (a test's -cpuprofile) leaves the run without one.
func startProfile(want bool) *profile {
	p := &profile{}
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

// stop stops the profile and returns CPU time by side (nil without a profile). Safe to call
// more than once.
func (p *profile) stop() map[string]time.Duration {
	if !p.running {
		return nil
	}
	p.running = false
	pprof.StopCPUProfile()
	p.data = p.buf.Bytes()
	bySide, err := cpuByLabel(p.data, sideLabel)
	if err != nil {
		p.err = err
		return nil
	}
	return bySide
}

// cpuByLabel sums a (gzipped) pprof CPU profile's cpu/nanoseconds samples by the value of the
// label key; samples without it count under "runtime".
func cpuByLabel(data []byte, key string) (map[string]time.Duration, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	type label struct{ key, str int64 }
	type smp struct {
		values []int64
		labels []label
	}
	var (
		strs        []string
		sampleTypes []int64 // string index of each value's type
		samples     []smp
	)
	parseInts := func(b []byte, typ protowire.Type, out *[]int64) error {
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			for len(v) > 0 {
				x, m := protowire.ConsumeVarint(v)
				if m < 0 {
					return protowire.ParseError(m)
				}
				*out = append(*out, int64(x))
				v = v[m:]
			}
			return nil
		}
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		*out = append(*out, int64(x))
		return nil
	}
	// each walks the fields of message b.
	each := func(b []byte, f func(num protowire.Number, typ protowire.Type, field []byte) error) error {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := f(num, typ, b[:m]); err != nil {
				return err
			}
			b = b[m:]
		}
		return nil
	}
	err := each(data, func(num protowire.Number, typ protowire.Type, field []byte) error {
		switch num {
		case 1: // sample_type
			v, _ := protowire.ConsumeBytes(field)
			return each(v, func(num protowire.Number, typ protowire.Type, f []byte) error {
				if num == 1 {
					x, _ := protowire.ConsumeVarint(f)
					sampleTypes = append(sampleTypes, int64(x))
				}
				return nil
			})
		case 2: // sample
			v, _ := protowire.ConsumeBytes(field)
			var s smp
			err := each(v, func(num protowire.Number, typ protowire.Type, f []byte) error {
				switch num {
				case 2:
					return parseInts(f, typ, &s.values)
				case 3:
					lv, _ := protowire.ConsumeBytes(f)
					var l label
					err := each(lv, func(num protowire.Number, typ protowire.Type, g []byte) error {
						x, _ := protowire.ConsumeVarint(g)
						switch num {
						case 1:
							l.key = int64(x)
						case 2:
							l.str = int64(x)
						}
						return nil
					})
					s.labels = append(s.labels, l)
					return err
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 6: // string_table
			v, _ := protowire.ConsumeBytes(field)
			strs = append(strs, string(v))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	str := func(i int64) string {
		if i >= 0 && int(i) < len(strs) {
			return strs[i]
		}
		return ""
	}
	cpuIdx := -1
	for i, t := range sampleTypes {
		if str(t) == "cpu" {
			cpuIdx = i
		}
	}
	if cpuIdx < 0 {
		return nil, errors.New("cpu profile: no cpu sample type")
	}
	out := map[string]time.Duration{}
	for _, s := range samples {
		if cpuIdx >= len(s.values) {
			continue
		}
		side := "runtime"
		for _, l := range s.labels {
			if str(l.key) == key {
				side = str(l.str)
			}
		}
		out[side] += time.Duration(s.values[cpuIdx])
	}
	return out, nil
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

func usageBetween(a, b processUsage, bySide map[string]time.Duration, cpA, cpB cpSample, kind string) usageReport {
	u := usageReport{bySide: bySide}
	if a.ok && b.ok {
		u.processCPU = b.cpu - a.cpu
		u.peakRSS = b.maxRSS
	}
	switch {
	case kind != "in-process":
		if cpA.hasCPU && cpB.hasCPU {
			u.targetCPU, u.hasTargetCPU = cpB.cpu-cpA.cpu, true
		}
		if cpB.hasRSS {
			u.targetRSS, u.hasTargetRSS = cpB.rss, true
		}
		u.note = "the harness is this process; the control plane's CPU is its process_cpu_seconds_total over the run and its peak RSS the largest process_resident_memory_bytes sampled every 0.5s"
		if !u.hasTargetCPU {
			u.note = "the harness is this process; the control plane's CPU and memory are not available (no process_* metrics at --target-metrics)"
		}
	case bySide != nil:
		u.note = "one process: CPU split by pprof labels on each side's goroutines (unlabelled runtime work such as GC shown apart); peak RSS is the whole process's"
	default:
		u.note = "one process: CPU and peak RSS are for the control plane and the harness together (no CPU profile to split them)"
	}
	return u
}
