package compare

import (
	"fmt"
	"strings"

	"github.com/xdslab/xdslab/internal/summary"
)

// Direction says which way a metric gets worse.
type Direction int

// The directions.
const (
	// Neutral metrics (inputs such as events generated, or figures with no better side)
	// are shown but never gate.
	Neutral Direction = iota
	// HigherIsWorse: latency, CPU, bytes, NACKs, push cycles, missed events.
	HigherIsWorse
	// LowerIsWorse: cache hit ratio, events merged per push, observed rate.
	LowerIsWorse
)

func (d Direction) String() string {
	switch d {
	case HigherIsWorse:
		return "up"
	case LowerIsWorse:
		return "down"
	}
	return "none"
}

// MarshalText writes up, down or none.
func (d Direction) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDirection reads up (higher is worse), down (lower is worse) or none.
func ParseDirection(s string) (Direction, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "up", "higher":
		return HigherIsWorse, nil
	case "down", "lower":
		return LowerIsWorse, nil
	case "none", "neutral":
		return Neutral, nil
	}
	return Neutral, fmt.Errorf("direction %q: write up (higher is worse), down (lower is worse) or none", s)
}

// metricRule classifies metric names. Rules are tried in order; the first whose every
// condition holds wins. Names follow DESIGN.md's conventions, so a rule reads a name's
// meaning from its words (latency, hit_ratio, nacks, _bytes, cpu_seconds …).
type metricRule struct {
	// contains: every listed fragment must occur in the name.
	contains []string
	// typ restricts the rule to one metric type ("" any).
	typ   summary.MetricType
	dir   Direction
	exact bool // deterministic under a fixed seed: compared exactly
}

var metricRules = []metricRule{
	// Inputs of the run: the simulator's event count follows from the seed alone. Nothing
	// else is exact: push cycles, events per push, bytes and NACKs depend on where the wall
	// clock put each event against the debounce timers (four identical in-process runs of
	// quickstart made 55 to 66 push cycles; issue 30), so they are tested like any figure.
	{contains: []string{"xdslab_sim_events"}, dir: Neutral, exact: true},
	// Debounce effectiveness: more events merged per push is better.
	{contains: []string{"events_per_push"}, dir: LowerIsWorse},
	{contains: []string{"events_merged"}, dir: Neutral},
	{contains: []string{"push_cycles"}, dir: HigherIsWorse},
	{contains: []string{"hit_ratio"}, dir: LowerIsWorse},
	{contains: []string{"hit_rate"}, dir: LowerIsWorse},
	{contains: []string{"observed_rate"}, dir: LowerIsWorse},
	{contains: []string{"nack"}, dir: HigherIsWorse},
	{contains: []string{"rejects"}, dir: HigherIsWorse},
	{contains: []string{"missed"}, dir: HigherIsWorse},
	{contains: []string{"superseded"}, dir: HigherIsWorse},
	{contains: []string{"unresolved"}, dir: HigherIsWorse},
	{contains: []string{"late"}, dir: HigherIsWorse},
	{contains: []string{"error"}, dir: HigherIsWorse},
	{contains: []string{"fail"}, dir: HigherIsWorse},
	{contains: []string{"timeout"}, dir: HigherIsWorse},
	{contains: []string{"noop"}, dir: HigherIsWorse},
	{contains: []string{"resend"}, dir: HigherIsWorse},
	{contains: []string{"expired"}, dir: HigherIsWorse},
	{contains: []string{"cpu_seconds"}, dir: HigherIsWorse},
	{contains: []string{"rss"}, dir: HigherIsWorse},
	{contains: []string{"memory"}, dir: HigherIsWorse},
	{contains: []string{"bytes"}, dir: HigherIsWorse},
	{contains: []string{"pushes"}, dir: HigherIsWorse},
	{contains: []string{"responses"}, dir: HigherIsWorse},
	{contains: []string{"connected"}, dir: Neutral},
	// The fake clients' own simulated apply time: an input of the scenario, not a result.
	{contains: []string{"fleet_ack_delay"}, dir: Neutral},
	{contains: []string{"clients"}, dir: Neutral},
	{contains: []string{"services"}, dir: Neutral},
	// Every remaining duration (latency, convergence, debounce delay, push time, time to
	// first config) is worse when longer.
	{contains: []string{"_seconds"}, dir: HigherIsWorse},
	{contains: []string{"latency"}, dir: HigherIsWorse},
	{contains: []string{"_time"}, dir: HigherIsWorse},
}

// classify returns the direction and exactness of a metric from its name and type. A time
// trend is never exact: its values are wall-clock measurements.
func classify(m summary.Metric) (Direction, bool) {
	name := strings.ToLower(m.Name)
	for _, r := range metricRules {
		if r.typ != "" && r.typ != m.Type {
			continue
		}
		ok := true
		for _, c := range r.contains {
			if !strings.Contains(name, c) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		return r.dir, r.exact && m.Contains != summary.Time
	}
	if m.Contains == summary.Time {
		return HigherIsWorse, false
	}
	return Neutral, false
}

// compareStats lists the values compare reads for each metric type, in table order.
func statsOf(t summary.MetricType) []string {
	switch t {
	case summary.Trend:
		return []string{"avg", "p(50)", "p(90)", "p(99)", "p(99.9)"}
	case summary.Counter:
		return []string{"count"}
	case summary.Gauge:
		return []string{"value"}
	case summary.Rate:
		return []string{"rate"}
	}
	return nil
}

// trendQuantile returns the quantile (0..1) a trend stat reads, and false for avg, min, max.
func trendQuantile(stat string) (float64, bool) {
	switch stat {
	case "med", "p(50)":
		return 0.5, true
	case "p(90)":
		return 0.9, true
	case "p(99)":
		return 0.99, true
	case "p(99.9)":
		return 0.999, true
	}
	return 0, false
}
