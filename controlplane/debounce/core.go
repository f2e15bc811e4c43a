package debounce

import (
	"errors"
	"fmt"
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Options configures the debouncer. The zero value is valid and disables debouncing (every
// event is pushed as soon as no push is in flight); DefaultOptions gives Istio's defaults.
type Options struct {
	// MinQuiet is how long no event must arrive before a batch is pushed (Istio's
	// PILOT_DEBOUNCE_AFTER). Zero pushes each event as soon as no push is in flight.
	MinQuiet time.Duration
	// MaxDelay caps how long a batch waits after its first event, however busy the stream
	// (Istio's PILOT_DEBOUNCE_MAX). It must be at least MinQuiet.
	MaxDelay time.Duration
	// DebounceEDS debounces endpoint-only requests like any other. When false, an
	// endpoint-only request that finds no full request pending is pushed at once (Istio's
	// PILOT_ENABLE_EDS_DEBOUNCE=false).
	DebounceEDS bool
	// Policy chooses the quiet window of each batch: "" or PolicyFixed is MinQuiet
	// throughout; PolicyAdaptive follows the recent push cost between MinQuiet and
	// Adaptive.MaxQuiet (see AdaptiveOptions).
	Policy PolicyName
	// Adaptive configures PolicyAdaptive; ignored by the fixed policy.
	Adaptive AdaptiveOptions
}

// Default option values.
const (
	DefaultMinQuiet = 100 * time.Millisecond
	DefaultMaxDelay = 10 * time.Second
)

// DefaultOptions returns Istio's defaults: MinQuiet 100ms, MaxDelay 10s, endpoint-only
// requests debounced.
func DefaultOptions() Options {
	return Options{MinQuiet: DefaultMinQuiet, MaxDelay: DefaultMaxDelay, DebounceEDS: true}
}

// Validate reports every problem with the options, each saying how to fix it.
func (o Options) Validate() error {
	var errs []error
	if o.MinQuiet < 0 {
		errs = append(errs, fmt.Errorf("debounce minQuiet is %v: it must be zero (no debounce) or positive, e.g. %v", o.MinQuiet, DefaultMinQuiet))
	}
	if o.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("debounce maxDelay is %v: it must be zero or positive, e.g. %v", o.MaxDelay, DefaultMaxDelay))
	}
	if o.MinQuiet >= 0 && o.MaxDelay >= 0 && o.MaxDelay < o.MinQuiet {
		errs = append(errs, fmt.Errorf("debounce maxDelay (%v) is shorter than minQuiet (%v), so minQuiet could never take effect: set maxDelay to at least %v", o.MaxDelay, o.MinQuiet, o.MinQuiet))
	}
	switch o.Policy {
	case "", PolicyFixed:
	case PolicyAdaptive:
		errs = append(errs, o.Adaptive.validate(o.MinQuiet, o.MaxDelay)...)
	default:
		errs = append(errs, fmt.Errorf("debounce policy %q: use fixed or adaptive", o.Policy))
	}
	return errors.Join(errs...)
}

// Trigger says which condition started a push. Its values are usable as metric labels.
type Trigger string

// Push triggers.
const (
	// TriggerQuiet: no event arrived for MinQuiet.
	TriggerQuiet Trigger = "quiet"
	// TriggerMaxDelay: MaxDelay passed since the batch's first event.
	TriggerMaxDelay Trigger = "max-delay"
	// TriggerImmediate: the batch held an endpoint-only request that is not debounced
	// (DebounceEDS false).
	TriggerImmediate Trigger = "immediate"
)

// Stats describes one push cycle.
type Stats struct {
	// Start is when the push started.
	Start time.Time
	// Events is the number of events merged into the pushed request (PushRequest.Count).
	Events int
	// Delay is the debounce delay: the batch's first event reached the debouncer → push start.
	Delay time.Duration
	// Blocked is how long the batch was ready but waited for the push in flight to finish
	// (zero when it started on time).
	Blocked time.Duration
	// Trigger is the condition that made the batch ready first.
	Trigger Trigger
	// Duration is push start → push finished. Core leaves it zero (the push has not run yet);
	// the Debouncer's observer and Simulate fill it in.
	Duration time.Duration
	// Quiet is the quiet window the batch was debounced with (the Policy's at push start).
	Quiet time.Duration
}

// Action is what the Core asks its owner to do after each input.
type Action struct {
	// Push, when not nil, is the merged request to push now. The owner must report the end
	// of that push with Core.PushDone.
	Push *model.PushRequest
	// Stats describes the push; set only with Push.
	Stats Stats
	// Deadline is when the Core wants Tick to be called; the zero time means no timer is
	// needed (nothing pending, or a push is in flight and PushDone will re-evaluate). Each
	// Action replaces the previous deadline. An early or spurious Tick is harmless.
	Deadline time.Time
}

// Core is the debouncer's pure state machine. It reads no clock and starts no goroutine: each
// method takes the current time and returns an Action. It is not safe for concurrent use; one
// goroutine owns it.
//
// States (pending = a batch of merged events, pushing = a push in flight):
//
//	idle         nothing pending, nothing pushing.
//	             Event → collecting (Deadline armed), or pushing if the event is ready at once
//	             (MinQuiet 0, or an undebounced endpoint-only request).
//	collecting   a batch pending, nothing pushing; Deadline = min(last event + MinQuiet,
//	             first event + MaxDelay).
//	             Event → merge, Deadline moves (the max-delay part never does). (With
//	             DebounceEDS false a collecting batch is always full, so an endpoint-only
//	             request rides along with it.)
//	             Tick at/after Deadline → pushing (batch handed over, cleared); early Tick →
//	             same Deadline again. An Event that finds the batch already due (late Tick)
//	             pushes the batch first and starts a new one with the event.
//	pushing      a push in flight, nothing pending; no Deadline.
//	             Event → pushing+pending; PushDone → idle.
//	pushing+pending  a push in flight and a batch collecting behind it; no Deadline.
//	             Event → merge; PushDone → pushing (next push starts at once) if the batch's
//	             condition is already met or it holds an undebounced endpoint-only request,
//	             else collecting with its Deadline.
type Core struct {
	opts   Options
	policy Policy
	win    Window // policy.Window(), read again after each Observe
	// The push in flight: when it started, how many events it carried, with what window.
	pushStart  time.Time
	pushEvents int
	pushWin    Window

	// The pending batch; batch == nil means none.
	batch       *model.PushRequest
	first, last time.Time // when the batch's first and latest events arrived
	// immediate is set when the batch holds an undebounced endpoint-only request; immAt is
	// when that request arrived.
	immediate bool
	immAt     time.Time

	pushing bool
}

// NewCore returns a Core in the idle state, with the Policy opts select (NewPolicy).
// Invalid options (see Options.Validate) are clamped: negative durations count as zero and
// MaxDelay as at least MinQuiet.
func NewCore(opts Options) *Core {
	return NewCoreWithPolicy(opts, NewPolicy(opts))
}

// NewCoreWithPolicy returns a Core in the idle state that asks p for its window; opts gives
// only DebounceEDS. A nil p is NewPolicy(opts).
func NewCoreWithPolicy(opts Options, p Policy) *Core {
	opts.MinQuiet = max(opts.MinQuiet, 0)
	opts.MaxDelay = max(opts.MaxDelay, opts.MinQuiet)
	if p == nil {
		p = NewPolicy(opts)
	}
	return &Core{opts: opts, policy: p, win: p.Window()}
}

// Policy returns the Core's policy.
func (c *Core) Policy() Policy { return c.policy }

// Window returns the window the Core applies to the pending batch now.
func (c *Core) Window() Window { return c.win }

// Pushing reports whether a push is in flight.
func (c *Core) Pushing() bool { return c.pushing }

// Idle reports whether nothing is pending and nothing is in flight.
func (c *Core) Idle() bool { return c.batch == nil && !c.pushing }

// Event records a change request that arrived at now. A request without reasons counts as
// one event with model.ReasonUnknown. A nil request is ignored. The request is not modified.
func (c *Core) Event(req *model.PushRequest, now time.Time) Action {
	if req == nil {
		return Action{Deadline: c.deadline()}
	}
	var act Action
	// A batch whose deadline passed before this event (its Tick is late) goes out first: the
	// event belongs to the next batch.
	if !c.pushing && c.batch != nil && c.ready(now) {
		act = c.start(now)
	}
	if req.Count() == 0 {
		req = (&model.PushRequest{Reasons: map[model.TriggerReason]int{model.ReasonUnknown: 1}}).Merge(req)
	}
	undebounced := !c.opts.DebounceEDS && req.IsEndpointOnly() && (c.batch == nil || !c.batch.Full)
	if c.batch == nil {
		c.first = now
	}
	c.last = now
	c.batch = mergeInto(c.batch, req)
	if undebounced && !c.immediate {
		c.immediate, c.immAt = true, now
	}
	if act.Push == nil && !c.pushing && c.ready(now) {
		act = c.start(now)
	}
	act.Deadline = c.deadline()
	return act
}

// Tick is the timer firing at now. It starts the pending batch's push if it is due.
func (c *Core) Tick(now time.Time) Action {
	var act Action
	if !c.pushing && c.batch != nil && c.ready(now) {
		act = c.start(now)
	}
	act.Deadline = c.deadline()
	return act
}

// PushDone reports that the push in flight finished at now. The next batch starts at once if
// it is already due.
//
// The Policy learns the push's Outcome first, so a batch that collected behind the push is
// judged by the new window.
func (c *Core) PushDone(now time.Time) Action {
	if c.pushing {
		c.policy.Observe(Outcome{Duration: max(now.Sub(c.pushStart), 0), Events: c.pushEvents,
			Pending: c.batch.Count(), Window: c.pushWin})
		c.win = c.policy.Window()
	}
	c.pushing = false
	return c.Tick(now)
}

// due returns when the pending batch becomes ready and which condition makes it so.
func (c *Core) due() (time.Time, Trigger) {
	at, trig := c.last.Add(c.win.Quiet), TriggerQuiet
	if capped := c.first.Add(c.win.MaxDelay); capped.Before(at) {
		at, trig = capped, TriggerMaxDelay
	}
	if c.immediate && !c.immAt.After(at) {
		at, trig = c.immAt, TriggerImmediate
	}
	return at, trig
}

func (c *Core) ready(now time.Time) bool {
	at, _ := c.due()
	return !now.Before(at)
}

func (c *Core) deadline() time.Time {
	if c.pushing || c.batch == nil {
		return time.Time{}
	}
	at, _ := c.due()
	return at
}

// start hands the pending batch over as a push at now.
func (c *Core) start(now time.Time) Action {
	at, trig := c.due()
	act := Action{
		Push: c.batch,
		Stats: Stats{
			Start:   now,
			Events:  c.batch.Count(),
			Delay:   max(now.Sub(c.first), 0),
			Blocked: max(now.Sub(at), 0),
			Trigger: trig,
			Quiet:   c.win.Quiet,
		},
	}
	c.pushStart, c.pushEvents, c.pushWin = now, act.Stats.Events, c.win
	c.batch, c.immediate = nil, false
	c.first, c.last, c.immAt = time.Time{}, time.Time{}, time.Time{}
	c.pushing = true
	return act
}

// mergeInto merges req into batch the way model.PushRequest.Merge does, but in place, so a
// batch of n events costs O(n) instead of O(n²) map copies. batch is nil or a request this
// Core built itself (never a caller's request); req is not modified.
func mergeInto(batch, req *model.PushRequest) *model.PushRequest {
	if batch == nil {
		batch = &model.PushRequest{Reasons: make(map[model.TriggerReason]int, len(req.Reasons))}
		// A full request with no configs means "everything"; remember that with a nil map.
		if !req.Full || len(req.ConfigsUpdated) > 0 {
			batch.ConfigsUpdated = make(map[istioconfig.Key]struct{}, len(req.ConfigsUpdated))
		}
		batch.Full = req.Full
	} else {
		everything := (batch.Full && batch.ConfigsUpdated == nil) || (req.Full && len(req.ConfigsUpdated) == 0)
		batch.Full = batch.Full || req.Full
		if everything {
			batch.ConfigsUpdated = nil
		}
	}
	if batch.ConfigsUpdated != nil {
		for k := range req.ConfigsUpdated {
			batch.ConfigsUpdated[k] = struct{}{}
		}
	}
	for r, n := range req.Reasons {
		batch.Reasons[r] += n
	}
	if batch.Start.IsZero() || (!req.Start.IsZero() && req.Start.Before(batch.Start)) {
		batch.Start = req.Start
	}
	if req.Source != nil {
		batch.Source = req.Source
	}
	batch.Initial = batch.Initial || req.Initial
	return batch
}
