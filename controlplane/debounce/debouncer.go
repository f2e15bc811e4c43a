package debounce

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/clock"
)

// PushFunc runs one push cycle (build the snapshot, enqueue the proxies) and returns when it
// is finished. The Debouncer calls it on a goroutine of its own, never two at a time, so it
// keeps receiving and merging events while a push runs. ctx is the one given to Run: a push
// should give up when it is cancelled.
type PushFunc func(ctx context.Context, req *model.PushRequest)

// Config configures a Debouncer.
type Config struct {
	Options Options
	// Clock is the time source; nil means clock.Real().
	Clock clock.Clock
	// Push runs a push cycle. Required.
	Push PushFunc
	// Observe, if set, receives the Stats of each push once it finished (Duration filled
	// in). It runs on the Debouncer's goroutine and must not block: record metrics and return.
	Observe func(Stats)
}

// Debouncer runs a Core on one goroutine (the one that calls Run), fed from a channel of
// requests, with one timer from its Clock.
type Debouncer struct {
	cfg Config
}

// New checks cfg and returns a Debouncer.
func New(cfg Config) (*Debouncer, error) {
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	if cfg.Push == nil {
		return nil, errors.New("debounce: Config.Push is nil: pass the function that runs a push")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	return &Debouncer{cfg: cfg}, nil
}

// Run debounces the requests received from in until ctx is done or in is closed, and returns
// after the push it started (if any) has returned; it never leaves a goroutine behind.
//
//   - ctx done: Run returns ctx.Err(). Pending events are dropped (the control plane is
//     stopping); the push in flight sees ctx cancelled.
//   - in closed (or nil): the pending batch is still pushed when it is due, then Run returns
//     nil.
//
// Each call to Run has its own state; one Debouncer may be run again after Run returned.
func (d *Debouncer) Run(ctx context.Context, in <-chan *model.PushRequest) error {
	var (
		core = NewCore(d.cfg.Options)
		clk  = d.cfg.Clock
		wg   sync.WaitGroup
		done = make(chan struct{}, 1) // at most one push in flight
		cur  Stats                    // the push in flight

		timer  clock.Timer
		timerC <-chan time.Time // nil while the timer is not armed
		armed  time.Time        // when the armed timer fires
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		wg.Wait()
	}()

	apply := func(act Action, now time.Time) {
		if act.Push != nil {
			cur = act.Stats
			req := act.Push
			wg.Go(func() {
				d.cfg.Push(ctx, req)
				done <- struct{}{}
			})
		}
		switch {
		case act.Deadline.IsZero():
			if timerC != nil {
				timer.Stop()
				timerC, armed = nil, time.Time{}
			}
		// A timer that fires earlier than the new deadline is kept: Tick re-arms it. This keeps
		// a steady stream of events from resetting the timer on every event.
		case timerC == nil || act.Deadline.Before(armed):
			wait := act.Deadline.Sub(now)
			if timer == nil {
				timer = clk.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timerC, armed = timer.C(), act.Deadline
		}
	}

	for in != nil || !core.Idle() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case req, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			now := clk.Now()
			apply(core.Event(req, now), now)
		case <-timerC:
			timerC, armed = nil, time.Time{}
			now := clk.Now()
			apply(core.Tick(now), now)
		case <-done:
			now := clk.Now()
			st := cur
			st.Duration = now.Sub(st.Start)
			if d.cfg.Observe != nil {
				d.cfg.Observe(st)
			}
			apply(core.PushDone(now), now)
		}
	}
	return nil
}
