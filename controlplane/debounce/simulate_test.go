package debounce

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

// full and eds build event lists in milliseconds.
func full(times ...int) []SimEvent {
	out := make([]SimEvent, len(times))
	for i, t := range times {
		out[i] = SimEvent{At: time.Duration(t) * ms}
	}
	return out
}

func eds(times ...int) []SimEvent {
	out := full(times...)
	for i := range out {
		out[i].EndpointOnly = true
	}
	return out
}

func cat(lists ...[]SimEvent) []SimEvent {
	var out []SimEvent
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// every returns full events every step from 0 (inclusive) to end (exclusive).
func every(step, end time.Duration) []SimEvent {
	var out []SimEvent
	for t := time.Duration(0); t < end; t += step {
		out = append(out, SimEvent{At: t})
	}
	return out
}

// push is a compact expected push: "at/events/trigger[/blocked]".
type push struct {
	At      time.Duration
	Events  int
	Trigger Trigger
	Delay   time.Duration
	Blocked time.Duration
}

func (p push) String() string {
	return fmt.Sprintf("%v: %d events, %s, delay %v, blocked %v", p.At, p.Events, p.Trigger, p.Delay, p.Blocked)
}

func compact(ps []SimPush) []push {
	out := make([]push, len(ps))
	for i, p := range ps {
		out[i] = push{At: p.At, Events: p.Stats.Events, Trigger: p.Stats.Trigger, Delay: p.Stats.Delay, Blocked: p.Stats.Blocked}
	}
	return out
}

func opts(minQuiet, maxDelay time.Duration, debounceEDS bool) Options {
	return Options{MinQuiet: minQuiet, MaxDelay: maxDelay, DebounceEDS: debounceEDS}
}

// capped is the expected result of a steady stream every 50ms for 30s with MaxDelay 1s and a
// push shorter than a second: every second, the previous second's 20 events, capped.
func capped() []push {
	var out []push
	for s := 1; s <= 30; s++ {
		out = append(out, push{At: time.Duration(s) * time.Second, Events: 20, Trigger: TriggerMaxDelay, Delay: time.Second})
	}
	return out
}

func TestSimulate(t *testing.T) {
	def := DefaultOptions()
	noEDS := def
	noEDS.DebounceEDS = false
	tests := []struct {
		name   string
		opts   Options
		events []SimEvent
		dur    time.Duration
		want   []push
	}{
		{name: "no events", opts: def, want: []push{}},
		{
			name: "single event pushed after minQuiet", opts: def, events: full(0),
			want: []push{{At: 100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms}},
		},
		{
			name: "event at a non-zero time", opts: def, events: full(2500),
			want: []push{{At: 2600 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms}},
		},
		{
			name: "burst merged into one push after the last event", opts: def,
			events: full(0, 10, 20, 30, 40, 50, 60, 70, 80, 90),
			want:   []push{{At: 190 * ms, Events: 10, Trigger: TriggerQuiet, Delay: 190 * ms}},
		},
		{
			name: "simultaneous events", opts: def, events: full(5, 5, 5),
			want: []push{{At: 105 * ms, Events: 3, Trigger: TriggerQuiet, Delay: 100 * ms}},
		},
		{
			name: "two bursts separated by more than minQuiet", opts: def, events: full(0, 50, 500, 520),
			want: []push{
				{At: 150 * ms, Events: 2, Trigger: TriggerQuiet, Delay: 150 * ms},
				{At: 620 * ms, Events: 2, Trigger: TriggerQuiet, Delay: 120 * ms},
			},
		},
		{
			name: "event exactly minQuiet after the last starts the next batch", opts: def, events: full(0, 100),
			want: []push{
				{At: 100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
				{At: 200 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
			},
		},
		{
			name: "continuous stream every 50ms for 30s capped at maxDelay 1s", opts: opts(100*ms, time.Second, true),
			events: every(50*ms, 30*time.Second), want: capped(),
		},
		{
			name: "continuous stream, push of 300ms: still capped at maxDelay", opts: opts(100*ms, time.Second, true),
			events: every(50*ms, 30*time.Second), dur: 300 * ms, want: capped(),
		},
		{
			name: "continuous stream, push slower than maxDelay: pushes back to back", opts: opts(100*ms, time.Second, true),
			events: every(50*ms, 6*time.Second), dur: 1500 * ms,
			want: []push{
				{At: 1000 * ms, Events: 20, Trigger: TriggerMaxDelay, Delay: time.Second},
				// Batch from 1s is due at 2s but waits for the push to end at 2.5s.
				{At: 2500 * ms, Events: 30, Trigger: TriggerMaxDelay, Delay: 1500 * ms, Blocked: 500 * ms},
				{At: 4000 * ms, Events: 30, Trigger: TriggerMaxDelay, Delay: 1500 * ms, Blocked: 500 * ms},
				// Batch from 4s (events 4.0..5.95s) is due at 5s, waits until 5.5s.
				{At: 5500 * ms, Events: 30, Trigger: TriggerMaxDelay, Delay: 1500 * ms, Blocked: 500 * ms},
				// The last 10 events (5.5..5.95s) go quiet at 6.05s, after the push ended at 7s.
				{At: 7000 * ms, Events: 10, Trigger: TriggerQuiet, Delay: 1500 * ms, Blocked: 950 * ms},
			},
		},
		{
			name: "events during a push merge into the next, pushed when it ends", opts: def,
			events: full(0, 200, 250, 650), dur: 500 * ms,
			want: []push{
				{At: 100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
				// 200 and 250 went quiet at 350 but the push ran until 600.
				{At: 600 * ms, Events: 2, Trigger: TriggerQuiet, Delay: 400 * ms, Blocked: 250 * ms},
				// 650 went quiet at 750; the push ran until 1100.
				{At: 1100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 450 * ms, Blocked: 350 * ms},
			},
		},
		{
			name: "batch not yet quiet when the push ends keeps waiting", opts: def,
			events: full(0, 150, 180), dur: 100 * ms,
			want: []push{
				{At: 100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
				{At: 280 * ms, Events: 2, Trigger: TriggerQuiet, Delay: 130 * ms},
			},
		},
		{
			name: "endpoint-only events debounced by default", opts: def, events: eds(0, 30),
			want: []push{{At: 130 * ms, Events: 2, Trigger: TriggerQuiet, Delay: 130 * ms}},
		},
		{
			name: "endpoint-only event not debounced: pushed at once", opts: noEDS, events: eds(0, 300),
			want: []push{
				{At: 0, Events: 1, Trigger: TriggerImmediate},
				{At: 300 * ms, Events: 1, Trigger: TriggerImmediate},
			},
		},
		{
			name: "endpoint-only event rides along a pending full request", opts: noEDS,
			events: cat(full(0), eds(50)),
			want:   []push{{At: 150 * ms, Events: 2, Trigger: TriggerQuiet, Delay: 150 * ms}},
		},
		{
			name: "full request after an immediate endpoint push is debounced", opts: noEDS,
			events: cat(eds(0), full(10)), dur: 50 * ms,
			want: []push{
				{At: 0, Events: 1, Trigger: TriggerImmediate},
				{At: 110 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
			},
		},
		{
			name: "undebounced endpoint event during a push goes out when it ends", opts: noEDS,
			events: cat(full(0), eds(150)), dur: 100 * ms,
			want: []push{
				{At: 100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
				{At: 200 * ms, Events: 1, Trigger: TriggerImmediate, Delay: 50 * ms, Blocked: 50 * ms},
			},
		},
		{
			name: "full request joining a waiting endpoint event does not delay it", opts: noEDS,
			events: cat(full(0), eds(150), full(160)), dur: 100 * ms,
			want: []push{
				{At: 100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
				{At: 200 * ms, Events: 2, Trigger: TriggerImmediate, Delay: 50 * ms, Blocked: 50 * ms},
			},
		},
		{
			name: "minQuiet zero pushes each event unless a push is in flight", opts: opts(0, 0, true),
			events: full(0, 10, 20, 30), dur: 15 * ms,
			want: []push{
				{At: 0, Events: 1, Trigger: TriggerQuiet},
				{At: 15 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 5 * ms, Blocked: 5 * ms},
				// The push ending at 30ms is seen before the event at 30ms.
				{At: 30 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 10 * ms, Blocked: 10 * ms},
				{At: 45 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 15 * ms, Blocked: 15 * ms},
			},
		},
		{
			name: "maxDelay equal to minQuiet: fixed windows", opts: opts(100*ms, 100*ms, true),
			events: full(0, 60, 120, 180),
			want: []push{
				{At: 100 * ms, Events: 2, Trigger: TriggerMaxDelay, Delay: 100 * ms},
				{At: 220 * ms, Events: 2, Trigger: TriggerMaxDelay, Delay: 100 * ms},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Simulate(tt.opts, tt.events, tt.dur)
			if err != nil {
				t.Fatalf("Simulate: %v", err)
			}
			if diff := cmp.Diff(tt.want, compact(got)); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
			// Invariants: every event is in exactly one push; no push waits longer than
			// MaxDelay unless blocked by the push in flight; pushes never overlap.
			total := 0
			for i, p := range got {
				total += p.Stats.Events
				if p.Stats.Delay-p.Stats.Blocked > tt.opts.MaxDelay {
					t.Errorf("push %d: delay %v exceeds maxDelay %v + blocked %v", i, p.Stats.Delay, tt.opts.MaxDelay, p.Stats.Blocked)
				}
				if i > 0 && p.At < got[i-1].At+tt.dur {
					t.Errorf("push %d at %v starts before push %d ends (%v)", i, p.At, i-1, got[i-1].At+tt.dur)
				}
				if p.Stats.Duration != tt.dur {
					t.Errorf("push %d: duration %v, want %v", i, p.Stats.Duration, tt.dur)
				}
			}
			if total != len(tt.events) {
				t.Errorf("pushes carry %d events, want %d", total, len(tt.events))
			}
		})
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		events []SimEvent
		dur    time.Duration
		want   string
	}{
		{name: "unsorted", opts: DefaultOptions(), events: full(10, 5), want: "event 1 at 5ms comes before event 0 at 10ms"},
		{name: "negative time", opts: DefaultOptions(), events: full(-1), want: "negative time"},
		{name: "negative push duration", opts: DefaultOptions(), dur: -ms, want: "push duration is -1ms"},
		{name: "invalid options", opts: opts(time.Second, 10*ms, true), want: "maxDelay (10ms) is shorter than minQuiet (1s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Simulate(tt.opts, tt.events, tt.dur)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func BenchmarkSimulate(b *testing.B) {
	// A 10-minute run with an event every 10ms (60,000 events), default options.
	events := every(10*ms, 10*time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Simulate(DefaultOptions(), events, 50*ms); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}
