package debounce

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/controlplane/model"
)

func adaptive(minQuiet, maxDelay, maxQuiet time.Duration, factor, weight float64) Options {
	return Options{MinQuiet: minQuiet, MaxDelay: maxDelay, DebounceEDS: true, Policy: PolicyAdaptive,
		Adaptive: AdaptiveOptions{MaxQuiet: maxQuiet, CostFactor: factor, Weight: weight}}
}

// TestAdaptivePolicyWindow: the quiet window is costFactor × the moving average of push
// durations, clamped to [minQuiet, maxQuiet]; batches are capped at twice the window, never
// later than maxDelay.
func TestAdaptivePolicyWindow(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		durations []time.Duration // one Observe each
		want      []time.Duration // the quiet window after each
	}{
		{
			name:      "weight 1 follows the last push",
			opts:      adaptive(100*ms, 10*time.Second, time.Second, 4, 1),
			durations: []time.Duration{10 * ms, 50 * ms, 100 * ms, 400 * ms, 5 * ms},
			// 40ms → floor 100ms; 200ms; 400ms; 1.6s → cap 1s; 20ms → floor.
			want: []time.Duration{100 * ms, 200 * ms, 400 * ms, time.Second, 100 * ms},
		},
		{
			name:      "moving average: the first push seeds it, later ones move it by weight",
			opts:      adaptive(10*ms, 10*time.Second, time.Second, 2, 0.5),
			durations: []time.Duration{100 * ms, 0, 0, 300 * ms},
			// avg 100 → 50 → 25 → 162.5ms; ×2.
			want: []time.Duration{200 * ms, 100 * ms, 50 * ms, 325 * ms},
		},
		{
			name:      "defaults: factor 4, weight 0.3, maxQuiet 1s",
			opts:      Options{MinQuiet: 100 * ms, MaxDelay: 10 * time.Second, Policy: PolicyAdaptive},
			durations: []time.Duration{100 * ms, 0, time.Hour},
			// 400ms; avg 70ms → 280ms; huge → 1s.
			want: []time.Duration{400 * ms, 280 * ms, time.Second},
		},
		{
			name:      "maxQuiet above maxDelay is capped at maxDelay",
			opts:      adaptive(0, 300*ms, 0, 4, 1),
			durations: []time.Duration{time.Second, 0},
			want:      []time.Duration{300 * ms, 0},
		},
		{
			name:      "negative durations count as zero",
			opts:      adaptive(20*ms, time.Second, time.Second, 4, 1),
			durations: []time.Duration{-time.Second},
			want:      []time.Duration{20 * ms},
		},
		{
			name:      "fixed never moves",
			opts:      DefaultOptions(),
			durations: []time.Duration{time.Hour, 0},
			want:      []time.Duration{100 * ms, 100 * ms},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPolicy(tt.opts)
			if want := max(tt.opts.MinQuiet, 0); p.Window().Quiet != want {
				t.Errorf("initial quiet %v, want minQuiet %v", p.Window().Quiet, want)
			}
			capOf := func(q time.Duration) time.Duration {
				if tt.opts.Policy != PolicyAdaptive {
					return tt.opts.MaxDelay
				}
				return min(tt.opts.MaxDelay, 2*q)
			}
			for i, d := range tt.durations {
				p.Observe(Outcome{Duration: d, Events: 1})
				w := p.Window()
				if w.Quiet != tt.want[i] {
					t.Errorf("after push %d (%v): quiet %v, want %v", i, d, w.Quiet, tt.want[i])
				}
				if want := capOf(tt.want[i]); w.MaxDelay != want {
					t.Errorf("after push %d: max delay %v, want %v", i, w.MaxDelay, want)
				}
			}
		})
	}
}

// TestCoreAdaptiveSteps: the window a batch waits for is the one the policy holds after the
// last push finished; a batch that collected behind a slow push is judged by the grown window.
func TestCoreAdaptiveSteps(t *testing.T) {
	runSteps(t, adaptive(100*ms, 10*time.Second, time.Second, 4, 1), []step{
		{"full", 0, "-", 100},
		{"tick", 100, "push 1 quiet", -1},
		{"full", 150, "-", -1},
		// The push took 100ms: the window is now 400ms, from the pending event at 150ms.
		{"done", 200, "-", 550},
		{"full", 300, "-", 700},
		{"tick", 700, "push 2 quiet", -1},
		// A cheap push (10ms → 40ms) brings it back to the 100ms floor.
		{"done", 710, "-", -1},
		{"full", 800, "-", 900},
		{"tick", 900, "push 1 quiet", -1},
		// A 3s push: 12s clamps to maxQuiet 1s (cap 2s), which the event behind it has waited
		// out already, so it goes at once.
		{"full", 1000, "-", -1},
		{"done", 3900, "push 1 quiet", -1},
		{"full", 3950, "-", -1},
		// A 60ms push: 240ms.
		{"done", 3960, "-", 4190},
		{"tick", 4190, "push 1 quiet", -1},
	})
}

// TestCoreReportsWindow: Stats.Quiet is the window the batch was debounced with, and the
// policy sees every push's outcome, queue depth included.
func TestCoreReportsWindow(t *testing.T) {
	rec := &recordingPolicy{Policy: NewPolicy(adaptive(100*ms, 10*time.Second, time.Second, 4, 1))}
	c := NewCoreWithPolicy(DefaultOptions(), rec)
	full := &model.PushRequest{Full: true}
	act := c.Event(full, at(0))
	act = c.Tick(act.Deadline)
	if act.Push == nil || act.Stats.Quiet != 100*ms {
		t.Fatalf("first push %+v, want one with quiet 100ms", act.Stats)
	}
	c.Event(full, at(120))
	c.Event(full, at(130))
	act = c.PushDone(at(200)) // 100ms → 400ms
	act = c.Tick(act.Deadline)
	if act.Push == nil || act.Stats.Quiet != 400*ms || act.Stats.Start != at(530) {
		t.Fatalf("second push %+v, want one at 530ms with quiet 400ms", act.Stats)
	}
	c.PushDone(at(540))
	want := []Outcome{
		{Duration: 100 * ms, Events: 1, Pending: 2, Window: Window{Quiet: 100 * ms, MaxDelay: 200 * ms}},
		{Duration: 10 * ms, Events: 2, Pending: 0, Window: Window{Quiet: 400 * ms, MaxDelay: 800 * ms}},
	}
	if diff := cmp.Diff(want, rec.seen); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if c.Window().Quiet != 100*ms || c.Policy().Name() != PolicyAdaptive {
		t.Errorf("window %v policy %s, want 100ms adaptive", c.Window(), c.Policy().Name())
	}
}

type recordingPolicy struct {
	Policy
	seen []Outcome
}

func (r *recordingPolicy) Observe(o Outcome) {
	r.seen = append(r.seen, o)
	r.Policy.Observe(o)
}

// TestSimulateAdaptive: events 150ms apart, pushes of 100ms. The fixed 100ms window pushes
// every event alone; the adaptive one learns from the first push that pushes cost 100ms,
// widens to 400ms, which the stream never leaves quiet, and so merges it into batches capped
// at 800ms (twice the window) rather than at maxDelay.
func TestSimulateAdaptive(t *testing.T) {
	events := every(150*ms, 3*time.Second)
	fixed, err := Simulate(opts(100*ms, time.Second, true), events, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) != len(events) {
		t.Errorf("fixed: %d pushes for %d events, want one each", len(fixed), len(events))
	}
	ad, err := Simulate(adaptive(100*ms, time.Second, time.Second, 4, 1), events, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	ad10, err := Simulate(adaptive(100*ms, 10*time.Second, time.Second, 4, 1), events, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(compact(ad), compact(ad10)); diff != "" {
		t.Errorf("maxDelay 1s and 10s differ; the cap should decide (-1s +10s):\n%s", diff)
	}
	want := []push{
		{At: 100 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 100 * ms},
		// Events from 150ms on: each 150ms gap is below the 400ms window, so the batch runs
		// to the cap, 800ms after its first event.
		{At: 950 * ms, Events: 6, Trigger: TriggerMaxDelay, Delay: 800 * ms},
		{At: 1850 * ms, Events: 6, Trigger: TriggerMaxDelay, Delay: 800 * ms},
		{At: 2750 * ms, Events: 6, Trigger: TriggerMaxDelay, Delay: 800 * ms},
		// The last event (2.85s) goes quiet 400ms later.
		{At: 3250 * ms, Events: 1, Trigger: TriggerQuiet, Delay: 400 * ms},
	}
	if diff := cmp.Diff(want, compact(ad)); diff != "" {
		t.Errorf("adaptive pushes (-want +got):\n%s", diff)
	}
	for i, p := range ad {
		if wantQ := map[bool]time.Duration{true: 100 * ms, false: 400 * ms}[i == 0]; p.Stats.Quiet != wantQ {
			t.Errorf("push %d quiet %v, want %v", i, p.Stats.Quiet, wantQ)
		}
	}
}

// TestDebouncerAdaptive: the runner with the adaptive policy on a synctest clock does what
// Simulate predicts (the runner measures push durations; the policy learns from them).
func TestDebouncerAdaptive(t *testing.T) {
	o := adaptive(100*ms, time.Second, time.Second, 4, 0.5)
	events := cat(full(0, 30, 260, 300, 340, 380, 900, 1700), eds(1710, 1720, 2600))
	const dur = 70 * ms
	want, err := Simulate(o, events, dur)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		var got []Stats
		d, err := New(Config{
			Options: o,
			Push:    func(context.Context, *model.PushRequest) { time.Sleep(dur) },
			Observe: func(s Stats) { got = append(got, s) },
		})
		if err != nil {
			t.Fatal(err)
		}
		in := make(chan *model.PushRequest)
		errc := make(chan error, 1)
		start := time.Now()
		go func() { errc <- d.Run(context.Background(), in) }()
		for _, ev := range events {
			time.Sleep(time.Until(start.Add(ev.At)))
			in <- simRequest(ev)
		}
		close(in)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("runner pushed %d times, Simulate %d", len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.Start.Sub(start) != w.At || g.Events != w.Stats.Events || g.Quiet != w.Stats.Quiet ||
				g.Trigger != w.Stats.Trigger || g.Duration != dur {
				t.Errorf("push %d: runner %v+%v %d events quiet %v %s, Simulate %v %d events quiet %v %s",
					i, g.Start.Sub(start), g.Duration, g.Events, g.Quiet, g.Trigger, w.At, w.Stats.Events, w.Stats.Quiet, w.Stats.Trigger)
			}
		}
		// The 70ms pushes widen the window to 280ms.
		if last := got[len(got)-1].Quiet; last != 280*ms {
			t.Errorf("last window %v, want 280ms", last)
		}
	})
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]PolicyName{"": PolicyFixed, "fixed": PolicyFixed, " Adaptive ": PolicyAdaptive} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePolicy("ewma"); err == nil || !strings.Contains(err.Error(), "use fixed or adaptive") {
		t.Errorf("ParsePolicy(ewma) error %v", err)
	}
}

func TestValidatePolicy(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{name: "adaptive defaults", opts: adaptive(100*ms, 10*time.Second, 0, 0, 0)},
		{name: "adaptive set", opts: adaptive(10*ms, 10*time.Second, time.Second, 2, 0.5)},
		{name: "unknown policy", opts: Options{Policy: "ewma"}, want: []string{`policy "ewma": use fixed or adaptive`}},
		{name: "maxQuiet below minQuiet", opts: adaptive(100*ms, time.Second, 50*ms, 4, 1), want: []string{"maxQuiet (50ms) is shorter than minQuiet (100ms)"}},
		{name: "maxQuiet above maxDelay", opts: adaptive(100*ms, time.Second, 2*time.Second, 4, 1), want: []string{"set it to at most 1s"}},
		{name: "negative maxQuiet", opts: adaptive(100*ms, time.Second, -ms, 4, 1), want: []string{"maxQuiet is -1ms"}},
		{name: "bad factor and weight", opts: adaptive(100*ms, time.Second, 0, -1, 1.5), want: []string{"costFactor is -1", "weight is 1.5"}},
		{name: "NaN factor", opts: adaptive(100*ms, time.Second, 0, math.NaN(), 0), want: []string{"costFactor is NaN"}},
		// The fixed policy ignores the adaptive options.
		{name: "fixed ignores adaptive", opts: Options{MinQuiet: ms, MaxDelay: ms, Adaptive: AdaptiveOptions{Weight: 7}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", tt.opts)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// FuzzAdaptive replays arbitrary event streams with arbitrary push durations through the
// adaptive policy and checks its invariants: every window lies in [minQuiet, maxQuiet], a
// quiet-triggered push waited at least its own window, none waited past maxDelay (beyond
// the time it was blocked), and every event is pushed once. It also feeds the policy name
// parser the fuzzed text.
func FuzzAdaptive(f *testing.F) {
	f.Add([]byte{0, 10, 10, 10, 200}, uint16(100), uint16(1000), uint16(500), uint16(50), uint8(40), uint8(30), "adaptive")
	f.Add([]byte{50, 50, 50, 50, 50, 50, 50, 50, 50, 50}, uint16(0), uint16(300), uint16(0), uint16(400), uint8(0), uint8(255), "fixed")
	f.Fuzz(func(t *testing.T, gaps []byte, minQuiet, maxDelay, maxQuiet, pushDur uint16, factor, weight uint8, name string) {
		if p, err := ParsePolicy(name); err == nil && p != PolicyFixed && p != PolicyAdaptive {
			t.Fatalf("ParsePolicy(%q) = %q", name, p)
		}
		o := adaptive(time.Duration(minQuiet)*ms, time.Duration(max(minQuiet, maxDelay))*ms,
			time.Duration(maxQuiet)*ms, float64(factor)/10, float64(weight)/255)
		if o.Validate() != nil {
			// Out-of-range options are clamped by NewCore; Simulate refuses them.
			o.Adaptive.MaxQuiet = min(max(o.Adaptive.MaxQuiet, o.MinQuiet), o.MaxDelay)
		}
		events := make([]SimEvent, len(gaps))
		var at time.Duration
		for i, g := range gaps {
			at += time.Duration(g&0x7f) * ms
			events[i] = SimEvent{At: at, EndpointOnly: g&0x80 != 0}
		}
		pushes, err := Simulate(o, events, time.Duration(pushDur)*ms)
		if err != nil {
			t.Fatalf("Simulate(%+v): %v", o, err)
		}
		hi := o.Adaptive.MaxQuiet
		if hi == 0 {
			hi = min(DefaultAdaptiveMaxQuiet, o.MaxDelay)
		}
		hi = max(hi, o.MinQuiet)
		total := 0
		for i, p := range pushes {
			st := p.Stats
			total += st.Events
			if st.Quiet < o.MinQuiet || st.Quiet > hi {
				t.Fatalf("push %d: quiet %v outside [%v, %v]", i, st.Quiet, o.MinQuiet, hi)
			}
			if st.Delay-st.Blocked > o.MaxDelay {
				t.Fatalf("push %d: delay %v minus blocked %v exceeds maxDelay %v", i, st.Delay, st.Blocked, o.MaxDelay)
			}
			if st.Trigger == TriggerQuiet && st.Delay-st.Blocked < st.Quiet {
				t.Fatalf("push %d: quiet trigger after %v, less than its window %v", i, st.Delay-st.Blocked, st.Quiet)
			}
		}
		if total != len(events) {
			t.Fatalf("pushes carry %d events, want %d", total, len(events))
		}
	})
}
