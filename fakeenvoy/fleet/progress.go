package fleet

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Progress is a light view of the fleet for live reporting.
type Progress struct {
	Launched, Clients int
	Connected         int
	// FullConfig counts the connected clients holding a full config now (FleetStats.FullConfigNow);
	// FullConfigEver those that ever reached their first (FleetStats.FullConfig).
	FullConfig, FullConfigEver uint64
	Responses, Nacks           uint64
	ConnectFailures            uint64
	// FailureText holds one error text per gRPC code that failed a connect (see
	// FleetStats.ConnectFailureText); nil when none failed.
	FailureText map[string]string
	// ResponsesPerSec is the response rate since the previous Progress taken by the reporter.
	ResponsesPerSec float64
}

func (p Progress) String() string {
	return fmt.Sprintf("fleet: %d/%d started, %d connected, %d full config, %d responses (%.0f/s), %d NACKs, %d connect failures",
		p.Launched, p.Clients, p.Connected, p.FullConfig, p.Responses, p.ResponsesPerSec, p.Nacks, p.ConnectFailures)
}

// GroupSizes returns the number of clients of each group in this fleet (of its segment only,
// when it is a shard); a group with none is absent.
func (f *Fleet) GroupSizes() map[string]int {
	out := map[string]int{}
	for _, fc := range f.clients {
		out[fc.group]++
	}
	return out
}

// Progress returns the fleet's counters now (cheap: no histogram is merged).
func (f *Fleet) Progress() Progress {
	l := f.obs.Live()
	return Progress{Launched: f.Launched(), Clients: len(f.clients), Connected: l.Connected,
		FullConfig: l.FullConfigNow, FullConfigEver: l.FullConfig, Responses: l.Responses, Nacks: l.Nacks,
		ConnectFailures: l.ConnectFailures, FailureText: l.FailureText}
}

// NewFailures returns a line for each code in p.FailureText not yet in seen, sorted, and
// adds those codes to seen: a live reporter prints what the first failure of each kind said
// (a refused connection, a handshake timeout, admission control) once.
func (p Progress) NewFailures(seen map[string]bool) []string {
	var out []string
	for code, text := range p.FailureText {
		if !seen[code] {
			seen[code] = true
			out = append(out, fmt.Sprintf("first connect failure with code %s: %s", code, text))
		}
	}
	sort.Strings(out)
	return out
}

// report writes progress every interval and samples the connected gauge once the ramp is done.
func (f *Fleet) report(ctx context.Context) {
	defer f.wg.Done()
	t := f.clock.NewTimer(f.cfg.ProgressInterval)
	defer t.Stop()
	last, lastAt := uint64(0), f.clock.Now()
	seen := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			if f.cfg.Progress != nil && f.cfg.ProgressTTY {
				fmt.Fprintln(f.cfg.Progress)
			}
			return
		case <-t.C():
		}
		now := f.clock.Now()
		p := f.Progress()
		if dt := now.Sub(lastAt).Seconds(); dt > 0 {
			p.ResponsesPerSec = float64(p.Responses-last) / dt
		}
		last, lastAt = p.Responses, now
		f.gauge.sample(p.Connected, f.rampDone.Load())
		f.full.sample(int(p.FullConfig), f.rampDone.Load())
		if f.cfg.Progress != nil {
			stamp := now.UTC().Format(time.TimeOnly)
			for _, l := range p.NewFailures(seen) {
				if f.cfg.ProgressTTY {
					fmt.Fprintf(f.cfg.Progress, "\r\x1b[K%s fleet: %s\n", stamp, l)
				} else {
					fmt.Fprintf(f.cfg.Progress, "%s fleet: %s\n", stamp, l)
				}
			}
			if f.cfg.ProgressTTY {
				fmt.Fprintf(f.cfg.Progress, "\r\x1b[K%s", p)
			} else {
				fmt.Fprintf(f.cfg.Progress, "%s %s\n", stamp, p)
			}
		}
		t.Reset(f.cfg.ProgressInterval)
	}
}
