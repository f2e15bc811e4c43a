package debounce

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Window is the debounce window a Policy sets for the pending batch.
type Window struct {
	// Quiet: the batch is pushed once no event has arrived for this long.
	Quiet time.Duration
	// MaxDelay: the batch is pushed at the latest this long after its first event.
	MaxDelay time.Duration
}

// Outcome is what a Policy learns from one finished push.
type Outcome struct {
	// Duration is push start → push finished (what the push cost the push goroutine).
	Duration time.Duration
	// Events is the number of events the push carried.
	Events int
	// Pending is the number of events that arrived while it ran and now wait (the queue
	// depth behind the push).
	Pending int
	// Window is the window the pushed batch was debounced with.
	Window Window
}

// Policy chooses the debounce window. A Core owns one Policy: it consults Window whenever it
// computes the pending batch's deadline and reports every push's Outcome to Observe when
// PushDone is called. A Policy is a pure value like the Core (no clock, no goroutine); its
// window may change only in Observe, so a batch's deadline moves only when a push finishes.
type Policy interface {
	// Name is the policy's name (a PolicyName), usable as a metric label.
	Name() PolicyName
	// Window is the window for the batch pending now.
	Window() Window
	// Observe learns from a finished push.
	Observe(Outcome)
}

// PolicyName selects a Policy.
type PolicyName string

// The policies.
const (
	// PolicyFixed: Options.MinQuiet and Options.MaxDelay throughout (today's debounce, Istio's).
	PolicyFixed PolicyName = "fixed"
	// PolicyAdaptive: the quiet window follows the recent push cost (AdaptiveOptions).
	PolicyAdaptive PolicyName = "adaptive"
)

// ParsePolicy reads a policy name (case-insensitive; empty is fixed).
func ParsePolicy(s string) (PolicyName, error) {
	switch n := PolicyName(strings.ToLower(strings.TrimSpace(s))); n {
	case "", PolicyFixed:
		return PolicyFixed, nil
	case PolicyAdaptive:
		return PolicyAdaptive, nil
	}
	return "", fmt.Errorf("debounce policy %q: use fixed or adaptive", s)
}

// AdaptiveOptions configures the adaptive policy. Zero fields take the defaults below.
//
// The quiet window is CostFactor × the exponentially weighted moving average (weight Weight
// for the newest push) of push durations, clamped to [Options.MinQuiet, MaxQuiet]. It starts
// at MinQuiet, grows while pushes are expensive and shrinks back as cheap pushes pull the
// average down. A batch is capped at AdaptiveCapFactor × the quiet window after its first
// event (never later than Options.MaxDelay): a window longer than the gaps between events
// never goes quiet, and without the cap every batch would wait for MaxDelay.
type AdaptiveOptions struct {
	// MaxQuiet is the longest quiet window; at least Options.MinQuiet, at most
	// Options.MaxDelay. Zero: DefaultAdaptiveMaxQuiet (capped at MaxDelay).
	MaxQuiet time.Duration
	// CostFactor multiplies the average push duration into the quiet window. Zero:
	// DefaultAdaptiveCostFactor.
	CostFactor float64
	// Weight is the newest push's weight in the moving average, in (0, 1]. Zero:
	// DefaultAdaptiveWeight.
	Weight float64
}

// AdaptiveCapFactor: the adaptive policy pushes a batch at the latest this many quiet
// windows after its first event (or at Options.MaxDelay, if sooner). Under a steady stream
// that bounds the push rate to about one per two windows, the duty cycle the window's cost
// factor was chosen for.
const AdaptiveCapFactor = 2

// Adaptive policy defaults.
const (
	DefaultAdaptiveMaxQuiet   = time.Second
	DefaultAdaptiveCostFactor = 4.0
	DefaultAdaptiveWeight     = 0.3
)

// validate reports the adaptive options' problems given the fixed window they adapt within.
func (a AdaptiveOptions) validate(minQuiet, maxDelay time.Duration) []error {
	var errs []error
	if a.MaxQuiet < 0 {
		errs = append(errs, fmt.Errorf("debounce adaptive maxQuiet is %v: it must be positive (or zero for %v), e.g. %v", a.MaxQuiet, DefaultAdaptiveMaxQuiet, DefaultAdaptiveMaxQuiet))
	} else if a.MaxQuiet > 0 && a.MaxQuiet < minQuiet {
		errs = append(errs, fmt.Errorf("debounce adaptive maxQuiet (%v) is shorter than minQuiet (%v): set it to at least %v", a.MaxQuiet, minQuiet, minQuiet))
	} else if a.MaxQuiet > 0 && maxDelay >= 0 && a.MaxQuiet > maxDelay {
		errs = append(errs, fmt.Errorf("debounce adaptive maxQuiet (%v) is longer than maxDelay (%v), which would cut every longer window short: set it to at most %v", a.MaxQuiet, maxDelay, maxDelay))
	}
	if a.CostFactor < 0 || math.IsNaN(a.CostFactor) || math.IsInf(a.CostFactor, 0) {
		errs = append(errs, fmt.Errorf("debounce adaptive costFactor is %v: it must be a positive number (or zero for %v), e.g. %v", a.CostFactor, DefaultAdaptiveCostFactor, DefaultAdaptiveCostFactor))
	}
	if a.Weight < 0 || a.Weight > 1 || math.IsNaN(a.Weight) {
		errs = append(errs, fmt.Errorf("debounce adaptive weight is %v: it must lie in (0, 1] (or zero for %v)", a.Weight, DefaultAdaptiveWeight))
	}
	return errs
}

// NewPolicy returns the policy opts select, clamped like NewCore clamps (invalid values
// count as the nearest valid ones; Options.Validate reports them).
func NewPolicy(opts Options) Policy {
	minQuiet := max(opts.MinQuiet, 0)
	maxDelay := max(opts.MaxDelay, minQuiet)
	w := Window{Quiet: minQuiet, MaxDelay: maxDelay}
	if opts.Policy != PolicyAdaptive {
		return &fixedPolicy{w: w}
	}
	a := opts.Adaptive
	if a.MaxQuiet <= 0 {
		a.MaxQuiet = DefaultAdaptiveMaxQuiet
	}
	a.MaxQuiet = min(max(a.MaxQuiet, minQuiet), maxDelay)
	if !(a.CostFactor > 0) || math.IsInf(a.CostFactor, 0) {
		a.CostFactor = DefaultAdaptiveCostFactor
	}
	if !(a.Weight > 0) || a.Weight > 1 {
		a.Weight = DefaultAdaptiveWeight
	}
	p := &adaptivePolicy{opts: a, min: w}
	p.set(minQuiet)
	return p
}

// fixedPolicy is today's debounce: one window for every batch.
type fixedPolicy struct{ w Window }

func (p *fixedPolicy) Name() PolicyName { return PolicyFixed }
func (p *fixedPolicy) Window() Window   { return p.w }
func (p *fixedPolicy) Observe(Outcome)  {}

// adaptivePolicy grows the quiet window with the recent push cost (see AdaptiveOptions).
type adaptivePolicy struct {
	opts   AdaptiveOptions
	min    Window // the floor: Options.MinQuiet and MaxDelay
	avg    float64
	pushes int
	w      Window
}

func (p *adaptivePolicy) Name() PolicyName { return PolicyAdaptive }
func (p *adaptivePolicy) Window() Window   { return p.w }

func (p *adaptivePolicy) Observe(o Outcome) {
	d := float64(max(o.Duration, 0))
	if p.pushes == 0 {
		p.avg = d
	} else {
		p.avg += p.opts.Weight * (d - p.avg)
	}
	p.pushes++
	q := p.opts.CostFactor * p.avg
	switch {
	case q >= float64(p.opts.MaxQuiet):
		p.set(p.opts.MaxQuiet)
	case q <= float64(p.min.Quiet):
		p.set(p.min.Quiet)
	default:
		p.set(time.Duration(q))
	}
}

// set makes q the quiet window and caps batches at AdaptiveCapFactor × q (at most MaxDelay).
func (p *adaptivePolicy) set(q time.Duration) {
	p.w = Window{Quiet: q, MaxDelay: min(p.min.MaxDelay, AdaptiveCapFactor*q)}
}
