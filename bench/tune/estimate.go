package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/xdslab/xdslab/bench/compare"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// Estimate is the fast estimate of one grid point: the scenario's churn timeline from the
// simulator (no control plane, no clients) replayed through the debouncer's core in virtual
// time (debounce.Simulate). It predicts the push cycles and the debounce delay; it knows
// nothing of push time, clients or the network, which is what the real run adds.
type Estimate struct {
	Events            int           `json:"events"`
	PushCycles        int           `json:"pushCycles"`
	EventsPerPush     compare.Float `json:"eventsPerPush"`
	DebounceDelayMean compare.Float `json:"debounceDelayMeanSeconds"`
	DebounceDelayP99  compare.Float `json:"debounceDelayP99Seconds"`
	DebounceDelayMax  compare.Float `json:"debounceDelayMaxSeconds"`
}

// estimator caches the churn timeline per simulator configuration: a sweep of debounce
// settings replays one timeline through many debouncers.
type estimator struct {
	ctx       context.Context // ends a long timeline's making
	timelines map[string][]debounce.SimEvent
}

func newEstimator(ctx context.Context) *estimator {
	return &estimator{ctx: ctx, timelines: map[string][]debounce.SimEvent{}}
}

// endpointOnlyKinds are the churn kinds whose events change endpoints only (EDS pushes).
var endpointOnlyKinds = map[simulator.ChurnKind]bool{
	simulator.EndpointFlap: true, simulator.Scale: true, simulator.RollingDeploy: true, simulator.ZoneFailure: true,
}

// timeline returns the scenario's churn events in time order, skipped arrivals left out.
func (e *estimator) timeline(sc *scenarios.Scenario) ([]debounce.SimEvent, error) {
	cfg := run.SimConfig(sc)
	key, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if tl, ok := e.timelines[string(key)]; ok {
		return tl, nil
	}
	var tl []debounce.SimEvent
	err = eachEvent(e.ctx, cfg, func(ev simulator.Event) {
		tl = append(tl, debounce.SimEvent{At: ev.Scheduled, EndpointOnly: endpointOnlyKinds[ev.Kind]})
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(tl, func(a, b debounce.SimEvent) int { return compareFloats(float64(a.At), float64(b.At)) })
	e.timelines[string(key)] = tl
	return tl, nil
}

// maxTimelineEvents bounds the events eachEvent makes: rate × duration of a scenario's churn
// can schedule billions (a probe's 1e9/s for 3 s kept validate busy for minutes), and an
// estimate or floor of that many would not finish; a run of them would not either.
const maxTimelineEvents = 2_000_000

// eachEvent calls f with each churn event the simulator configured by cfg schedules, skipped
// arrivals left out, in the order it makes them. It stops with an error when ctx ends or
// past maxTimelineEvents.
func eachEvent(ctx context.Context, cfg simulator.Config, f func(simulator.Event)) error {
	sim, err := simulator.New(cfg)
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if n >= maxTimelineEvents {
			return fmt.Errorf("the churn schedules more than %d events (rate × duration): too many to replay; lower the churn's rate or the duration", maxTimelineEvents)
		}
		ev, ok, err := sim.Next()
		if err != nil {
			return fmt.Errorf("simulator: %w", err)
		}
		if !ok {
			return nil
		}
		if ev.Skip == "" {
			f(ev)
		}
	}
}

// estimate predicts sc's push cycles and debounce delay (pushes taking no time).
func (e *estimator) estimate(sc *scenarios.Scenario) (Estimate, error) {
	tl, err := e.timeline(sc)
	if err != nil {
		return Estimate{}, err
	}
	d := sc.ControlPlane.Debounce
	return replay(tl, debounce.Options{MinQuiet: d.MinQuiet.D(), MaxDelay: d.MaxDelay.D(), DebounceEDS: d.Endpoints})
}

// replay runs the timeline through the debouncer with opts.
func replay(tl []debounce.SimEvent, opts debounce.Options) (Estimate, error) {
	pushes, err := debounce.Simulate(opts, tl, 0)
	if err != nil {
		return Estimate{}, err
	}
	est := Estimate{Events: len(tl), PushCycles: len(pushes)}
	delays := make([]float64, len(pushes))
	var sum time.Duration
	for i, p := range pushes {
		delays[i] = p.Stats.Delay.Seconds()
		sum += p.Stats.Delay
	}
	nan := compare.Float(compare.Median(nil))
	est.EventsPerPush, est.DebounceDelayMean, est.DebounceDelayP99, est.DebounceDelayMax = nan, nan, nan, nan
	if len(pushes) > 0 {
		slices.Sort(delays)
		est.EventsPerPush = compare.Float(float64(len(tl)) / float64(len(pushes)))
		est.DebounceDelayMean = compare.Float(sum.Seconds() / float64(len(pushes)))
		est.DebounceDelayP99 = compare.Float(delays[min(len(delays)-1, int(0.99*float64(len(delays))))])
		est.DebounceDelayMax = compare.Float(delays[len(delays)-1])
	}
	return est, nil
}
