package tune

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
	"github.com/xdslab/xdslab/simulator"
)

// Floor is the latency the debounce alone gives a scenario's events: its churn timeline (the
// simulator's scheduled times, skipped arrivals left out) replayed through the debouncer's
// core with the scenario's own debounce settings, every push taking no time. An event's floor
// is its scheduled time → the start of the push that carries it.
//
// A control plane adds its push time, the network and the clients' own delay to every event,
// so a push-latency or convergence figure below the floor's is out of reach of any control
// plane that debounces as the scenario says. The floor is per event, where push latency is per
// client and event: for events that reach the same clients alike (the built-ins' sidecars)
// the quantiles agree, and where fan-out differs by event the floor is an estimate.
type Floor struct {
	// Debounce is the setting replayed (the in-process control plane's).
	Debounce debounce.Options
	// Duration is the scenario's churn duration.
	Duration time.Duration
	// Events are the floors by event kind, each sorted ascending.
	Events map[simulator.ChurnKind][]time.Duration
	// Replayed is the number of events replayed (timed or not), Pushes the push cycles they
	// make.
	Replayed, Pushes int
}

// DebounceFloor computes sc's floor.
//
// The floor counts only the events the lab would time, as the matcher classes them: an event
// whose change a client already held when it was registered (a flap's restore pushed with its
// remove) and one whose change a later event in the same push undid (that remove) have no
// latency. Each event's predicates are read as writes to slots of the clients' state (an
// endpoint's presence, an assignment's endpoint count, a cluster's existence, …); the clients
// hold what the last push left. It stops with ctx's error when ctx ends.
func DebounceFloor(ctx context.Context, sc *scenarios.Scenario) (Floor, error) {
	var evs []floorEvent
	if err := eachEvent(ctx, run.SimConfig(sc), func(ev simulator.Event) { evs = append(evs, newFloorEvent(ev)) }); err != nil {
		return Floor{}, err
	}
	slices.SortStableFunc(evs, func(a, b floorEvent) int { return compareFloats(float64(a.at), float64(b.at)) })
	return floorOf(evs, run.ControlPlaneOptions(sc).Debounce, sc.Duration.D())
}

// floorOf replays evs (in time order) through the debouncer with opts.
func floorOf(evs []floorEvent, opts debounce.Options, duration time.Duration) (Floor, error) {
	tl := make([]debounce.SimEvent, len(evs))
	for i, e := range evs {
		tl[i] = debounce.SimEvent{At: e.at, EndpointOnly: endpointOnlyKinds[e.kind]}
	}
	pushes, err := debounce.Simulate(opts, tl, 0)
	if err != nil {
		return Floor{}, err
	}
	f := Floor{Debounce: opts, Duration: duration, Events: map[simulator.ChurnKind][]time.Duration{}, Replayed: len(evs), Pushes: len(pushes)}
	held := map[string]string{} // slot → the value the clients hold
	next := 0
	for _, p := range pushes {
		// A push carries every event pending at its start, so pushes take the timeline's
		// events in order, Stats.Events at a time.
		if next+p.Stats.Events > len(evs) {
			return Floor{}, fmt.Errorf("debounce floor: the replay pushed more events than the timeline holds (%d)", len(evs))
		}
		batch := evs[next : next+p.Stats.Events]
		next += p.Stats.Events
		after := map[string]string{}
		for _, e := range batch {
			for _, w := range e.writes {
				if _, ok := held[w.slot]; !ok {
					held[w.slot] = w.before() // the state the first change of a slot changed
				}
				after[w.slot] = w.value
			}
		}
		for _, e := range batch {
			if e.holds(held) || !e.holds(after) {
				continue // already held, or superseded within the push
			}
			f.Events[e.kind] = append(f.Events[e.kind], p.At-e.at)
		}
		for s, v := range after {
			held[s] = v
		}
	}
	if next != len(evs) {
		return Floor{}, fmt.Errorf("debounce floor: the replay pushed %d of the timeline's %d events", next, len(evs))
	}
	for _, d := range f.Events {
		slices.Sort(d)
	}
	return f, nil
}

// floorEvent is one timeline event: when, its kind, and what it writes to the clients' state.
type floorEvent struct {
	at     time.Duration
	kind   simulator.ChurnKind
	writes []slotWrite // its predicates (decide whether it is timed), then its rest
	own    int         // writes[:own] are its predicates
}

// slotWrite is a predicate read as a value of one slot of a client's state.
type slotWrite struct {
	slot, value string
	presence    bool // "1" or "0": before the first change the slot held the other
}

// before is the value the slot held before a first write of w: the other presence, or a
// value no write has.
func (w slotWrite) before() string {
	switch {
	case w.presence && w.value == "1":
		return "0"
	case w.presence:
		return "1"
	}
	return "\x00"
}

func newFloorEvent(ev simulator.Event) floorEvent {
	e := floorEvent{at: ev.Scheduled, kind: ev.Kind}
	for _, p := range ev.Expectation.All {
		e.writes = append(e.writes, predicateSlot(p))
	}
	e.own = len(e.writes)
	for _, p := range ev.Expectation.Rest {
		e.writes = append(e.writes, predicateSlot(p))
	}
	return e
}

// holds says whether every predicate of e holds in state.
func (e floorEvent) holds(state map[string]string) bool {
	for _, w := range e.writes[:e.own] {
		if v, ok := state[w.slot]; !ok || v != w.value {
			return false
		}
	}
	return true
}

// predicateSlot maps a predicate onto the slot it reads and the value it asks of it.
func predicateSlot(p probe.Predicate) slotWrite {
	res := p.Op.TypeURL() + "|" + p.Resource + "|"
	switch p.Op {
	case probe.EndpointPresent, probe.EndpointAbsent:
		return slotWrite{slot: res + "ep|" + p.Address + ":" + strconv.FormatUint(uint64(p.Port), 10), value: presence(p.Op == probe.EndpointPresent), presence: true}
	case probe.ClusterPresent, probe.ClusterAbsent:
		return slotWrite{slot: res + "exists", value: presence(p.Op == probe.ClusterPresent), presence: true}
	case probe.ListenerPresent, probe.ListenerAbsent:
		return slotWrite{slot: res + "exists", value: presence(p.Op == probe.ListenerPresent), presence: true}
	case probe.EndpointCount:
		return slotWrite{slot: res + "count", value: strconv.Itoa(p.Count)}
	case probe.ClusterLbPolicy:
		return slotWrite{slot: res + "lb", value: p.Value}
	case probe.ListenerRBACPolicies:
		return slotWrite{slot: res + "rbac|" + p.Value, value: strconv.Itoa(p.Count)}
	case probe.RouteTo:
		return slotWrite{slot: res + "route|" + p.Host + "|" + p.Cluster, value: strconv.FormatUint(uint64(p.Weight), 10)}
	}
	return slotWrite{slot: res + string(p.Op), value: p.Value}
}

func presence(ok bool) string {
	if ok {
		return "1"
	}
	return "0"
}

// floorMetrics are the figures the floor bounds from below: each is at least an event's push
// latency for some client.
var floorMetrics = map[string]bool{
	"xdslab_push_latency_seconds":          true,
	"xdslab_push_received_latency_seconds": true,
	"xdslab_push_ack_latency_seconds":      true,
	"xdslab_convergence_seconds":           true,
}

// Values returns the floor's aggregates of the events of kind (every kind when empty), keyed
// as a threshold reads them (avg, min, max, med, p(N) for the percentiles asked), and how many
// events they cover.
func (f Floor) Values(kind string, percentiles []float64) (map[string]float64, int) {
	var all []time.Duration
	for k, d := range f.Events {
		if kind == "" || string(k) == kind {
			all = append(all, d...)
		}
	}
	if len(all) == 0 {
		return nil, 0
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	at := func(p float64) float64 {
		// Nearest rank, as the HDR histograms read a percentile.
		i := int(math.Ceil(p/100*float64(len(all)))) - 1
		return all[min(max(i, 0), len(all)-1)].Seconds()
	}
	v := map[string]float64{
		"avg": sum.Seconds() / float64(len(all)),
		"min": all[0].Seconds(),
		"max": all[len(all)-1].Seconds(),
		"med": at(50),
	}
	for _, p := range percentiles {
		v[threshold.Threshold{Agg: "p", Percentile: p}.Key()] = at(p)
	}
	return v, len(all)
}

// FloorProblem is a threshold the debounce floor alone fails.
type FloorProblem struct {
	// Metric is the threshold's selector, Threshold its expression.
	Metric    string
	Threshold threshold.Threshold
	// Floor is the floor's value of what the threshold reads, Events how many events it covers.
	Floor  float64
	Events int
}

// Problems lists sc's latency thresholds (upper bounds on push latency or convergence, all
// groups or one, all kinds or one) that the floor itself fails, by selector then expression.
func (f Floor) Problems(sc *scenarios.Scenario) []FloorProblem {
	sels := make([]string, 0, len(sc.Thresholds))
	for sel := range sc.Thresholds {
		sels = append(sels, sel)
	}
	sort.Strings(sels)
	var out []FloorProblem
	for _, sel := range sels {
		if !floorMetrics[threshold.MetricName(sel)] {
			continue
		}
		kind, ok := "", true
		for k, v := range threshold.MetricTags(sel) {
			switch k {
			case "kind":
				kind = v
			case "group": // the debounce delays every group alike
			default:
				ok = false
			}
		}
		if !ok {
			continue
		}
		for _, th := range sc.Thresholds[sel] {
			if th.Op != "<" && th.Op != "<=" {
				continue
			}
			vals, n := f.Values(kind, []float64{th.Percentile})
			if n == 0 {
				continue
			}
			if pass, err := th.Eval(vals); err == nil && !pass {
				out = append(out, FloorProblem{Metric: sel, Threshold: th, Floor: vals[th.Key()], Events: n})
			}
		}
	}
	return out
}

// Explain says why p is out of reach and what would bring it within reach, as a validate
// warning: the threshold, the floor and the setting behind it, the fix.
func (f Floor) Explain(p FloorProblem) string {
	d := f.Debounce
	policy := string(d.Policy)
	if policy == "" {
		policy = string(debounce.PolicyFixed)
	}
	rate := float64(f.Replayed) / f.Duration.Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "thresholds.%s: %s is below what the debounce alone gives (controlPlane.debounce: minQuiet %v, maxDelay %v, %s policy): ",
		p.Metric, p.Threshold.Source, d.MinQuiet, d.MaxDelay, policy)
	fmt.Fprintf(&b, "with pushes taking no time, %s is %s over the %d timed events it reads (%d events at %.1f/s, %d push cycles)",
		p.Threshold.Key(), formatSeconds(p.Floor), p.Events, f.Replayed, rate, f.Pushes)
	if d.MinQuiet > 0 && rate > 0 && policy == string(debounce.PolicyFixed) {
		// Poisson arrivals: the mean wait for a gap of minQuiet without events.
		q := d.MinQuiet.Seconds()
		fmt.Fprintf(&b, ", and a gap of minQuiet without events comes about every %s", formatSeconds((math.Exp(rate*q)-1)/rate+q))
	}
	fmt.Fprintf(&b, "; expect it to fail against any control plane that debounces so. Fix: a bound above %s plus the control plane's push time, a shorter minQuiet or maxDelay (xdslab tune estimates each), or slower churn", formatSeconds(p.Floor))
	return b.String()
}

// formatSeconds writes s seconds as a duration rounded to what matters.
func formatSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.String()
}
