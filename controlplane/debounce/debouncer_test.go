package debounce

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/clock"
)

// fakeClock is a manual clock. Timers fire only from Advance/advanceTo, with Go 1.23 timer
// semantics (Reset and Stop discard an unreceived value).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	ch chan time.Time
	at time.Time
	on bool
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	t.Reset(d)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.drain()
	t.at, t.on = t.c.now.Add(d), true
	if d <= 0 {
		t.fire()
	}
}

func (t *fakeTimer) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.drain()
	t.on = false
}

func (t *fakeTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}

func (t *fakeTimer) fire() {
	t.on = false
	t.ch <- t.c.now // cap 1 and drained on re-arm: never blocks
}

// next returns the earliest armed timer's time.
func (c *fakeClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	found := false
	for _, t := range c.timers {
		if t.on && (!found || t.at.Before(first)) {
			first, found = t.at, true
		}
	}
	return first, found
}

// fireDue moves the clock to at and fires every timer due by then.
func (c *fakeClock) fireDue(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = at
	for _, t := range c.timers {
		if t.on && !t.at.After(at) {
			t.fire()
		}
	}
}

// advanceTo moves the clock to target one timer at a time, letting every goroutine of the
// bubble react (synctest.Wait) after each firing, like real time would.
func (c *fakeClock) advanceTo(target time.Time) {
	for {
		synctest.Wait()
		at, ok := c.next()
		if !ok || at.After(target) {
			break
		}
		c.fireDue(at)
	}
	c.fireDue(target)
	synctest.Wait()
}

type recorded struct {
	mu     sync.Mutex
	starts []time.Time
	reqs   []*model.PushRequest
	stats  []Stats
}

func TestDebouncerMatchesSimulate(t *testing.T) {
	noEDS := DefaultOptions()
	noEDS.DebounceEDS = false
	tests := []struct {
		name   string
		opts   Options
		events []SimEvent
		dur    time.Duration
	}{
		{name: "single event", opts: DefaultOptions(), events: full(0)},
		{name: "burst", opts: DefaultOptions(), events: full(0, 10, 20, 30, 40, 50, 60, 70, 80, 90)},
		{name: "two bursts", opts: DefaultOptions(), events: full(0, 50, 500, 520), dur: 20 * ms},
		{name: "stream capped at maxDelay", opts: opts(100*ms, time.Second, true), events: every(50*ms, 5*time.Second), dur: 300 * ms},
		{name: "push slower than maxDelay", opts: opts(100*ms, time.Second, true), events: every(50*ms, 5*time.Second), dur: 1500 * ms},
		{name: "merge while in flight", opts: DefaultOptions(), events: full(0, 200, 250, 650), dur: 500 * ms},
		{name: "endpoint not debounced", opts: noEDS, events: cat(eds(0), full(10), eds(20), eds(400)), dur: 50 * ms},
		{name: "no debounce", opts: Options{}, events: full(0, 10, 20, 30), dur: 15 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Simulate(tt.opts, tt.events, tt.dur)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				clock := newFakeClock(simEpoch)
				rec := &recorded{}
				d, err := New(Config{
					Options: tt.opts,
					Clock:   clock,
					Push: func(ctx context.Context, req *model.PushRequest) {
						rec.mu.Lock()
						rec.starts = append(rec.starts, clock.Now())
						rec.reqs = append(rec.reqs, req)
						rec.mu.Unlock()
						// The push takes tt.dur of fake time.
						timer := clock.NewTimer(tt.dur)
						defer timer.Stop()
						select {
						case <-timer.C():
						case <-ctx.Done():
						}
					},
					Observe: func(s Stats) { rec.stats = append(rec.stats, s) }, // runner goroutine only
				})
				if err != nil {
					t.Fatal(err)
				}
				in := make(chan *model.PushRequest)
				errc := make(chan error, 1)
				go func() { errc <- d.Run(context.Background(), in) }()
				for _, ev := range tt.events {
					now := simEpoch.Add(ev.At)
					clock.advanceTo(now)
					r := simRequest(ev)
					r.Start = now
					in <- r
				}
				close(in)
				clock.advanceTo(simEpoch.Add(time.Minute))
				select {
				case err := <-errc:
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
				default:
					t.Fatal("Run did not return after its input was closed and drained")
				}
				wantStats := make([]Stats, len(want))
				for i, p := range want {
					wantStats[i] = p.Stats
				}
				if diff := cmp.Diff(wantStats, rec.stats); diff != "" {
					t.Errorf("observed stats differ from Simulate (-simulate +runner):\n%s", diff)
				}
				total := 0
				for i, r := range rec.reqs {
					total += r.Count()
					if i < len(want) && !rec.starts[i].Equal(want[i].Stats.Start) {
						t.Errorf("push %d started at %v, want %v", i, rec.starts[i].Sub(simEpoch), want[i].At)
					}
				}
				if total != len(tt.events) {
					t.Errorf("pushes carried %d events, want %d", total, len(tt.events))
				}
			})
		})
	}
}

func TestDebouncerStopsOnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := newFakeClock(simEpoch)
		ctx, cancel := context.WithCancel(context.Background())
		pushing := make(chan struct{})
		var sawCancel bool
		d, err := New(Config{
			Options: DefaultOptions(),
			Clock:   clock,
			Push: func(ctx context.Context, req *model.PushRequest) {
				close(pushing)
				<-ctx.Done()
				sawCancel = true
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		in := make(chan *model.PushRequest)
		errc := make(chan error, 1)
		go func() { errc <- d.Run(ctx, in) }()
		in <- &model.PushRequest{Full: true}
		clock.advanceTo(simEpoch.Add(100 * ms))
		<-pushing
		in <- &model.PushRequest{Full: true} // pending behind the push; dropped on stop
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
		if !sawCancel {
			t.Error("Run returned before the push in flight returned")
		}
	})
}

func TestDebouncerIdleStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		d, err := New(Config{Options: DefaultOptions(), Push: func(context.Context, *model.PushRequest) { t.Error("unexpected push") }})
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- d.Run(ctx, make(chan *model.PushRequest)) }()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	})
}

// TestDebouncerRealClock runs the real clock inside a synctest bubble, where time is virtual,
// so the debounce delay is exact.
func TestDebouncerRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []Stats
		d, err := New(Config{
			Options: Options{MinQuiet: 100 * ms, MaxDelay: 400 * ms, DebounceEDS: true},
			Push:    func(context.Context, *model.PushRequest) { time.Sleep(40 * ms) },
			Observe: func(s Stats) { got = append(got, s) },
		})
		if err != nil {
			t.Fatal(err)
		}
		in := make(chan *model.PushRequest)
		errc := make(chan error, 1)
		go func() { errc <- d.Run(context.Background(), in) }()
		// Every 70ms from 0 to 630ms: the first batch is capped at 400ms (events 0..350ms),
		// the second goes quiet at 730ms (events 420..630ms).
		for range 10 {
			in <- &model.PushRequest{Full: true}
			time.Sleep(70 * ms)
		}
		close(in)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		want := []struct {
			events  int
			delay   time.Duration
			trigger Trigger
		}{{6, 400 * ms, TriggerMaxDelay}, {4, 310 * ms, TriggerQuiet}}
		if len(got) != len(want) {
			t.Fatalf("got %d pushes %+v, want %d", len(got), got, len(want))
		}
		for i, w := range want {
			if got[i].Events != w.events || got[i].Delay != w.delay || got[i].Trigger != w.trigger || got[i].Duration != 40*ms {
				t.Errorf("push %d: %+v, want %d events, delay %v, %s, duration 40ms", i, got[i], w.events, w.delay, w.trigger)
			}
		}
	})
}

func TestNewErrors(t *testing.T) {
	push := func(context.Context, *model.PushRequest) {}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "no push func", cfg: Config{Options: DefaultOptions()}, want: "Config.Push is nil"},
		{name: "bad options", cfg: Config{Options: opts(-ms, time.Second, true), Push: push}, want: "minQuiet is -1ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
