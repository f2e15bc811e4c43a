package collect

import (
	"fmt"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
)

// This file turns what a fleet measured (fleet.Figures: the observer's and the matcher's
// counts and HDR histograms) into summary rows. The instrument knows nothing of the report:
// the names are the fleet's (fleet.Metric*), the rows and their value types are made here.

// scaleMicroseconds turns the fleet's histograms (µs) into seconds.
const scaleMicroseconds = 1e-6

// fleetCounterContains is what a per-type fleet counter holds: bytes for the byte counter,
// plain counts otherwise.
func fleetCounterContains(name string) summary.ValueType {
	if name == fleet.MetricBytes {
		return summary.Data
	}
	return summary.Default
}

// FleetMetrics returns the fleet's metrics for summary.json over a run of dur: the observer's,
// and the matcher's when expectations were registered. Take fig after the fleet's Stop (which
// samples the connected gauge while the clients still run): the gauge's value is the connected
// count at Stop, its min the lowest count sampled after the ramp, its max the highest ever. The
// full config gauge's value is the connected clients holding a full config at Stop, its max
// the clients that ever reached one.
func FleetMetrics(fig fleet.Figures, dur time.Duration) ([]summary.Metric, error) {
	out := fleetStatsMetrics(fig.Stats, fig.Connected, fig.MinConnected, dur)
	out = append(out,
		summary.NewGauge(fleet.MetricClients, summary.Default, float64(fig.Launched), 0, float64(fig.Clients), nil))
	tr, err := fleetTrends(fig.Stats)
	if err != nil {
		return nil, err
	}
	out = append(out, tr...)
	gm, err := fleetGroupMetrics(fig, dur)
	if err != nil {
		return nil, err
	}
	out = append(out, gm...)
	if fig.Match != nil {
		mm, err := matchMetrics(*fig.Match, dur)
		if err != nil {
			return nil, err
		}
		out = append(out, mm...)
	}
	return out, nil
}

// fleetStatsMetrics turns observer stats into summary counters and gauges (trends: see
// fleetTrends).
// connected and minConnected are the connected gauge's value and minimum.
func fleetStatsMetrics(st measure.FleetStats, connected, minConnected int, dur time.Duration) []summary.Metric {
	var out []summary.Metric
	out = append(out,
		summary.NewGauge(fleet.MetricConnected, summary.Default, float64(connected), float64(minConnected), float64(st.MaxConnected), nil),
		summary.NewGauge(fleet.MetricFullConfigClients, summary.Default, float64(st.FullConfigNow), 0, float64(st.FullConfig), nil),
		summary.NewCounter(fleet.MetricConnects, summary.Default, float64(st.Connects), dur, nil),
		summary.NewCounter(fleet.MetricReconnects, summary.Default, float64(st.Reconnects), dur, nil),
		summary.NewCounter(fleet.MetricConnectFailures, summary.Default, float64(st.ConnectFailuresTotal()), dur, nil),
	)
	codes := make([]string, 0, len(st.ConnectFailures))
	for c := range st.ConnectFailures {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		out = append(out, summary.NewCounter(fleet.MetricConnectFailures, summary.Default, float64(st.ConnectFailures[c]), dur, map[string]string{"code": c}))
	}
	for _, tc := range fleet.TypeCounters() {
		contains := fleetCounterContains(tc.Name)
		out = append(out, summary.NewCounter(tc.Name, contains, float64(tc.Get(st.Total)), dur, nil))
		for _, name := range st.TypeNames() {
			out = append(out, summary.NewCounter(tc.Name, contains, float64(tc.Get(st.Types[name])), dur, map[string]string{"type": name}))
		}
	}
	return out
}

// fleetTrends turns the observer's histograms into trends: time to first config, ACK delay,
// start lateness, receive backlog, and resync when there were reconnects.
func fleetTrends(st measure.FleetStats) ([]summary.Metric, error) {
	ttfc, err := summary.NewTrend(fleet.MetricTimeToFirstConfig, summary.Time, st.TimeToFirstConfig, scaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	ack, err := summary.NewTrend(fleet.MetricAckDelay, summary.Time, st.AckDelay, scaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	late, err := summary.NewTrend(fleet.MetricStartLateness, summary.Time, st.StartLateness, scaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	backlog, err := summary.NewTrend(fleet.MetricReceiveBacklog, summary.Time, st.ReceiveBacklog, scaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	out := []summary.Metric{ttfc, ack, late, backlog}
	if st.Reconnects > 0 && st.Resync != nil {
		// Only a run with reconnects has resyncs to show (a run without has nothing to measure).
		resync, err := summary.NewTrend(fleet.MetricResync, summary.Time, st.Resync, scaleMicroseconds, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, resync)
	}
	return out, nil
}

// matchMetrics turns probe results into summary metrics: push (in effect), received and ACK
// latency trends and the convergence trend (overall and per kind, as the matcher defines them),
// and observation counters.
func matchMetrics(r measure.MatchResults, dur time.Duration) ([]summary.Metric, error) {
	var out []summary.Metric
	add := func(name string, h *hdr.Histogram, tags map[string]string) error {
		m, err := summary.NewTrend(name, summary.Time, h, scaleMicroseconds, tags)
		if err != nil {
			return err
		}
		out = append(out, m)
		return nil
	}
	if err := add(fleet.MetricPushLatency, r.PushLatencyAll, nil); err != nil {
		return nil, err
	}
	if err := add(fleet.MetricPushAckLatency, r.AckLatencyAll, nil); err != nil {
		return nil, err
	}
	if err := add(fleet.MetricPushRecvLatency, r.ReceiveLatencyAll, nil); err != nil {
		return nil, err
	}
	if err := add(fleet.MetricConvergence, r.Convergence, nil); err != nil {
		return nil, err
	}
	for _, kind := range r.Kinds() {
		if err := add(fleet.MetricPushLatency, r.PushLatency[kind], map[string]string{"kind": kind}); err != nil {
			return nil, err
		}
		if h := r.AckLatency[kind]; h != nil {
			if err := add(fleet.MetricPushAckLatency, h, map[string]string{"kind": kind}); err != nil {
				return nil, err
			}
		}
	}
	kinds := func(m map[string]*hdr.Histogram) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for _, kind := range kinds(r.ReceiveLatency) {
		if err := add(fleet.MetricPushRecvLatency, r.ReceiveLatency[kind], map[string]string{"kind": kind}); err != nil {
			return nil, err
		}
	}
	for _, kind := range kinds(r.ConvergenceByKind) {
		if err := add(fleet.MetricConvergence, r.ConvergenceByKind[kind], map[string]string{"kind": kind}); err != nil {
			return nil, err
		}
	}
	for _, g := range []struct {
		name string
		by   map[string]*hdr.Histogram
	}{{fleet.MetricPushLatency, r.PushLatencyByGroup}, {fleet.MetricPushAckLatency, r.AckLatencyByGroup},
		{fleet.MetricPushRecvLatency, r.ReceiveLatencyByGroup}, {fleet.MetricConvergence, r.ConvergenceByGroup}} {
		for _, group := range kinds(g.by) {
			if err := add(g.name, g.by[group], map[string]string{"group": group}); err != nil {
				return nil, err
			}
		}
	}
	out = append(out,
		summary.NewCounter(fleet.MetricProbeEvents, summary.Default, float64(len(r.Events)), dur, nil),
		summary.NewCounter(fleet.MetricProbesObserved, summary.Default, float64(r.Observed), dur, nil),
		summary.NewCounter(fleet.MetricProbesSuperseded, summary.Default, float64(r.Superseded), dur, nil),
		summary.NewCounter(fleet.MetricProbesHeld, summary.Default, float64(r.AlreadyHeld), dur, nil),
		summary.NewCounter(fleet.MetricProbesMissed, summary.Default, float64(r.Missed), dur, nil),
		summary.NewCounter(fleet.MetricProbesUnresolved, summary.Default, float64(r.Unresolved), dur, nil),
	)
	groups := make([]string, 0, len(r.ProbesByGroup))
	for g := range r.ProbesByGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		c, tags := r.ProbesByGroup[g], map[string]string{"group": g}
		out = append(out,
			summary.NewCounter(fleet.MetricProbesObserved, summary.Default, float64(c.Observed), dur, tags),
			summary.NewCounter(fleet.MetricProbesSuperseded, summary.Default, float64(c.Superseded), dur, tags),
			summary.NewCounter(fleet.MetricProbesHeld, summary.Default, float64(c.AlreadyHeld), dur, tags),
			summary.NewCounter(fleet.MetricProbesMissed, summary.Default, float64(c.Missed), dur, tags),
			summary.NewCounter(fleet.MetricProbesUnresolved, summary.Default, float64(c.Unresolved), dur, tags),
		)
	}
	return out, nil
}

// SummaryEvents turns the matcher's per-event results into summary events: what a merge of
// shards needs to compute convergence and missed events over the whole fleet. nodeID names
// the clients of EventResult.MissedBy (fleet.Fleet.NodeID); an index it does not know is
// written as "client N".
func SummaryEvents(r measure.MatchResults, nodeID func(int) (string, bool)) []summary.Event {
	out := make([]summary.Event, 0, len(r.Events))
	for _, e := range r.Events {
		ev := summary.Event{ID: e.EventID, Kind: e.Kind, T0: e.T0, Reached: e.Reached, Observed: e.Observed,
			AlreadyHeld: e.AlreadyHeld, Superseded: e.Superseded, Missed: e.Missed, Unresolved: e.Unresolved,
			Received: e.Received, EarlyReceives: e.EarlyReceives, Censored: e.Censored}
		for _, i := range e.MissedBy {
			id, ok := nodeID(i)
			if !ok {
				id = fmt.Sprintf("client %d", i)
			}
			ev.MissedBy = append(ev.MissedBy, id)
		}
		ev.PushLatencies = e.PushLatencies
		if ev.Measured() {
			ev.ConvergenceSeconds = e.Convergence.Seconds()
		}
		out = append(out, ev)
	}
	return out
}

// fleetGroupMetrics is every fleet figure of every group, tagged {group: name}: the full-config and
// client gauges (not the connected gauge: its value is sampled before the fleet stops, which
// only the fleet-wide gauge does), the connect and per-type counters (over the group's types),
// the reconnect counter, and the time-to-first-config, ACK delay, start lateness and receive backlog trends.
func fleetGroupMetrics(fig fleet.Figures, dur time.Duration) ([]summary.Metric, error) {
	stats := fig.Groups
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	counts := fig.GroupClients
	var out []summary.Metric
	for _, name := range names {
		st := stats[name]
		tags := map[string]string{"group": name}
		out = append(out,
			summary.NewGauge(fleet.MetricFullConfigClients, summary.Default, float64(st.FullConfig), 0, float64(st.FullConfig), tags),
			summary.NewGauge(fleet.MetricClients, summary.Default, float64(counts[name]), 0, float64(counts[name]), tags),
			summary.NewCounter(fleet.MetricConnects, summary.Default, float64(st.Connects), dur, tags),
			summary.NewCounter(fleet.MetricReconnects, summary.Default, float64(st.Reconnects), dur, tags),
			summary.NewCounter(fleet.MetricConnectFailures, summary.Default, float64(st.ConnectFailuresTotal()), dur, tags),
		)
		for _, tc := range fleet.TypeCounters() {
			out = append(out, summary.NewCounter(tc.Name, fleetCounterContains(tc.Name), float64(tc.Get(st.Total)), dur, tags))
		}
		tr, err := fleetTrends(st)
		if err != nil {
			return nil, err
		}
		for _, m := range tr {
			m.Tags = tags
			out = append(out, m)
		}
	}
	return out, nil
}

// MissedNote names the first few events some client missed, with how many of the clients in
// reach missed each and one of them (Event.MissedBy); "" when none was missed.
func MissedNote(events []summary.Event) string {
	const shown = 3
	var b strings.Builder
	n := 0
	for _, e := range events {
		if e.Missed == 0 {
			continue
		}
		if n == shown {
			b.WriteString("; …")
			break
		}
		if n > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "event %d (%s) missed by %d of %d clients", e.ID, e.Kind, e.Missed, e.Reached)
		if len(e.MissedBy) > 0 {
			fmt.Fprintf(&b, ", e.g. %s", e.MissedBy[0])
		}
		n++
	}
	return b.String()
}
