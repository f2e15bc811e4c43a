package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// TuneEstimate is the fast estimate of one grid point: the scenario's churn timeline from the
// simulator (no control plane, no clients) replayed through the debouncer's core in virtual
// time (debounce.Simulate). It predicts the push cycles and the debounce delay; it knows
// nothing of push time, clients or the network, which is what the real run adds.
type TuneEstimate struct {
	Events            int   `json:"events"`
	PushCycles        int   `json:"pushCycles"`
	EventsPerPush     Float `json:"eventsPerPush"`
	DebounceDelayMean Float `json:"debounceDelayMeanSeconds"`
	DebounceDelayP99  Float `json:"debounceDelayP99Seconds"`
	DebounceDelayMax  Float `json:"debounceDelayMaxSeconds"`
}

// tuneEstimator caches the churn timeline per simulator configuration: a sweep of debounce
// settings replays one timeline through many debouncers.
type tuneEstimator struct {
	timelines map[string][]debounce.SimEvent
}

func newTuneEstimator() *tuneEstimator {
	return &tuneEstimator{timelines: map[string][]debounce.SimEvent{}}
}

// tuneEndpointOnlyKinds are the churn kinds whose events change endpoints only (EDS pushes).
var tuneEndpointOnlyKinds = map[simulator.ChurnKind]bool{
	simulator.EndpointFlap: true, simulator.Scale: true, simulator.RollingDeploy: true, simulator.ZoneFailure: true,
}

// timeline returns the scenario's churn events in time order, skipped arrivals left out.
func (e *tuneEstimator) timeline(sc *scenarios.Scenario) ([]debounce.SimEvent, error) {
	cfg := SimConfig(sc)
	key, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if tl, ok := e.timelines[string(key)]; ok {
		return tl, nil
	}
	sim, err := simulator.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	var tl []debounce.SimEvent
	for {
		ev, ok, err := sim.Next()
		if err != nil {
			return nil, fmt.Errorf("simulator: %w", err)
		}
		if !ok {
			break
		}
		if ev.Skip != "" {
			continue
		}
		tl = append(tl, debounce.SimEvent{At: ev.Scheduled, EndpointOnly: tuneEndpointOnlyKinds[ev.Kind]})
	}
	slices.SortStableFunc(tl, func(a, b debounce.SimEvent) int { return tuneCmpFloat(float64(a.At), float64(b.At)) })
	e.timelines[string(key)] = tl
	return tl, nil
}

// estimate predicts sc's push cycles and debounce delay (pushes taking no time).
func (e *tuneEstimator) estimate(sc *scenarios.Scenario) (TuneEstimate, error) {
	tl, err := e.timeline(sc)
	if err != nil {
		return TuneEstimate{}, err
	}
	d := sc.ControlPlane.Debounce
	return tuneReplay(tl, debounce.Options{MinQuiet: d.MinQuiet.D(), MaxDelay: d.MaxDelay.D(), DebounceEDS: d.Endpoints})
}

// tuneReplay runs the timeline through the debouncer with opts.
func tuneReplay(tl []debounce.SimEvent, opts debounce.Options) (TuneEstimate, error) {
	pushes, err := debounce.Simulate(opts, tl, 0)
	if err != nil {
		return TuneEstimate{}, err
	}
	est := TuneEstimate{Events: len(tl), PushCycles: len(pushes)}
	delays := make([]float64, len(pushes))
	var sum time.Duration
	for i, p := range pushes {
		delays[i] = p.Stats.Delay.Seconds()
		sum += p.Stats.Delay
	}
	nan := Float(statMedian(nil))
	est.EventsPerPush, est.DebounceDelayMean, est.DebounceDelayP99, est.DebounceDelayMax = nan, nan, nan, nan
	if len(pushes) > 0 {
		slices.Sort(delays)
		est.EventsPerPush = Float(float64(len(tl)) / float64(len(pushes)))
		est.DebounceDelayMean = Float(sum.Seconds() / float64(len(pushes)))
		est.DebounceDelayP99 = Float(delays[min(len(delays)-1, int(0.99*float64(len(delays))))])
		est.DebounceDelayMax = Float(delays[len(delays)-1])
	}
	return est, nil
}

// EstimateTune predicts every grid point of params over sc without running anything.
func EstimateTune(sc *scenarios.Scenario, params []Param) (*TuneResult, error) {
	return Tune(context.Background(), sc, TuneOptions{Params: params, EstimateOnly: true})
}
