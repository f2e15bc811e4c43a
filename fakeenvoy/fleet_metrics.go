package fakeenvoy

import (
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/internal/summary"
)

// Metric names (DESIGN.md: xdslab_* series, base units, _total counters, bounded labels). The
// same names are used in summary.json and on /metrics. Per-type series carry the label/tag
// "type" (CDS, EDS, LDS, RDS, ... see TypeName); per-kind series "kind" (the simulator event
// kind); connect failures "code" (the gRPC code name). In summary.json the untagged entry is the
// total over every label value.
const (
	MetricConnected         = "xdslab_fleet_connected"
	MetricClients           = "xdslab_fleet_clients"
	MetricFullConfigClients = "xdslab_fleet_full_config_clients"
	MetricResponses         = "xdslab_fleet_responses_total"
	MetricResources         = "xdslab_fleet_resources_received_total"
	MetricBytes             = "xdslab_fleet_bytes_received_total"
	MetricNoop              = "xdslab_fleet_noop_responses_total"
	MetricNacks             = "xdslab_fleet_nacks_total"
	MetricResendsAfterNack  = "xdslab_fleet_resends_after_nack_total"
	MetricResendLoops       = "xdslab_fleet_resend_loops_total"
	MetricWarmingTimeouts   = "xdslab_fleet_warming_timeouts_total"
	MetricConnects          = "xdslab_fleet_connects_total"
	MetricConnectFailures   = "xdslab_fleet_connect_failures_total"
	MetricReconnects        = "xdslab_fleet_reconnects_total"
	MetricResync            = "xdslab_fleet_resync_seconds"
	MetricTimeToFirstConfig = "xdslab_time_to_first_config_seconds"
	MetricAckDelay          = "xdslab_fleet_ack_delay_seconds"
	MetricStartLateness     = "xdslab_fleet_start_lateness_seconds"
	MetricReceiveBacklog    = "xdslab_fleet_receive_backlog_seconds"
	MetricPushLatency       = "xdslab_push_latency_seconds"
	MetricPushAckLatency    = "xdslab_push_ack_latency_seconds"
	MetricPushRecvLatency   = "xdslab_push_received_latency_seconds"
	MetricConvergence       = "xdslab_convergence_seconds"
	MetricProbesObserved    = "xdslab_probe_observed_total"
	MetricProbesSuperseded  = "xdslab_probe_superseded_total"
	MetricProbesHeld        = "xdslab_probe_already_held_total"
	MetricProbesMissed      = "xdslab_probe_missed_total"
	MetricProbesUnresolved  = "xdslab_probe_unresolved_total"
	MetricProbesOutstanding = "xdslab_probe_outstanding"
	MetricProbeEvents       = "xdslab_probe_events_total"
	metricScaleMicroseconds = 1e-6
)

// typeCounters lists the per-type counters: name, what it holds, and how to read it.
var typeCounters = []struct {
	name     string
	contains summary.ValueType
	help     string
	get      func(TypeStats) uint64
}{
	{MetricResponses, summary.Default, "xDS responses received by the fleet.", func(t TypeStats) uint64 { return t.Responses }},
	{MetricResources, summary.Default, "Resources received in xDS responses.", func(t TypeStats) uint64 { return t.Resources }},
	{MetricBytes, summary.Data, "Encoded resource bytes received.", func(t TypeStats) uint64 { return t.Bytes }},
	{MetricNoop, summary.Default, "Responses in which no resource changed for the client.", func(t TypeStats) uint64 { return t.NoOp }},
	{MetricNacks, summary.Default, "NACKs sent.", func(t TypeStats) uint64 { return t.Nacks }},
	{MetricResendsAfterNack, summary.Default, "Responses identical to one the client had just NACKed.", func(t TypeStats) uint64 { return t.ResendsAfterNack }},
	{MetricResendLoops, summary.Default, "Server resend loops after a NACK (client x type streaks).", func(t TypeStats) uint64 { return t.ResendLoops }},
	{MetricWarmingTimeouts, summary.Default, "initial_fetch_timeout expiries.", func(t TypeStats) uint64 { return t.WarmingTimeouts }},
}

// Metrics returns the fleet's metrics for summary.json over a run of dur: the observer's, and
// the matcher's when expectations were registered. Call it after Stop (which samples the
// connected gauge while the clients still run): the gauge's value is the connected count at
// Stop, its min the lowest count sampled after the ramp, its max the highest ever. The full
// config gauge's value is the connected clients holding a full config at Stop, its max the
// clients that ever reached one.
func (f *Fleet) Metrics(dur time.Duration) ([]summary.Metric, error) {
	st := f.obs.Stats()
	f.gauge.mu.Lock()
	value, minV := st.Connected, st.Connected
	if f.gauge.hasLast {
		value, minV = f.gauge.last, f.gauge.last
	}
	if f.gauge.sampled {
		minV = min(minV, f.gauge.min)
	}
	f.gauge.mu.Unlock()
	f.full.mu.Lock()
	if f.full.hasLast {
		st.FullConfigNow = f.full.last // at Stop, while the clients still ran
	}
	f.full.mu.Unlock()
	out := FleetMetrics(st, value, minV, dur)
	out = append(out,
		summary.NewGauge(MetricClients, summary.Default, float64(f.Launched()), 0, float64(len(f.clients)), nil))
	tr, err := trends(st)
	if err != nil {
		return nil, err
	}
	out = append(out, tr...)
	gm, err := f.groupMetrics(dur)
	if err != nil {
		return nil, err
	}
	out = append(out, gm...)
	if f.match.logLen.Load() > 0 {
		mm, err := MatchMetrics(f.match.Results(), dur)
		if err != nil {
			return nil, err
		}
		out = append(out, mm...)
	}
	return out, nil
}

// FleetMetrics turns observer stats into summary counters and gauges (trends: see Metrics).
// connected and minConnected are the connected gauge's value and minimum.
func FleetMetrics(st FleetStats, connected, minConnected int, dur time.Duration) []summary.Metric {
	var out []summary.Metric
	out = append(out,
		summary.NewGauge(MetricConnected, summary.Default, float64(connected), float64(minConnected), float64(st.MaxConnected), nil),
		summary.NewGauge(MetricFullConfigClients, summary.Default, float64(st.FullConfigNow), 0, float64(st.FullConfig), nil),
		summary.NewCounter(MetricConnects, summary.Default, float64(st.Connects), dur, nil),
		summary.NewCounter(MetricReconnects, summary.Default, float64(st.Reconnects), dur, nil),
		summary.NewCounter(MetricConnectFailures, summary.Default, float64(st.ConnectFailuresTotal()), dur, nil),
	)
	codes := make([]string, 0, len(st.ConnectFailures))
	for c := range st.ConnectFailures {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		out = append(out, summary.NewCounter(MetricConnectFailures, summary.Default, float64(st.ConnectFailures[c]), dur, map[string]string{"code": c}))
	}
	for _, tc := range typeCounters {
		out = append(out, summary.NewCounter(tc.name, tc.contains, float64(tc.get(st.Total)), dur, nil))
		for _, name := range st.TypeNames() {
			out = append(out, summary.NewCounter(tc.name, tc.contains, float64(tc.get(st.Types[name])), dur, map[string]string{"type": name}))
		}
	}
	return out
}

func trends(st FleetStats) ([]summary.Metric, error) {
	ttfc, err := summary.NewTrend(MetricTimeToFirstConfig, summary.Time, st.TimeToFirstConfig, metricScaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	ack, err := summary.NewTrend(MetricAckDelay, summary.Time, st.AckDelay, metricScaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	late, err := summary.NewTrend(MetricStartLateness, summary.Time, st.StartLateness, metricScaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	backlog, err := summary.NewTrend(MetricReceiveBacklog, summary.Time, st.ReceiveBacklog, metricScaleMicroseconds, nil)
	if err != nil {
		return nil, err
	}
	out := []summary.Metric{ttfc, ack, late, backlog}
	if st.Reconnects > 0 && st.Resync != nil {
		// Only a run with reconnects has resyncs to show (a run without has nothing to measure).
		resync, err := summary.NewTrend(MetricResync, summary.Time, st.Resync, metricScaleMicroseconds, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, resync)
	}
	return out, nil
}

// MatchMetrics turns probe results into summary metrics: push (in effect), received and ACK
// latency trends and the convergence trend (overall and per kind, as the matcher defines them),
// and observation counters.
func MatchMetrics(r MatchResults, dur time.Duration) ([]summary.Metric, error) {
	var out []summary.Metric
	add := func(name string, h *hdr.Histogram, tags map[string]string) error {
		m, err := summary.NewTrend(name, summary.Time, h, metricScaleMicroseconds, tags)
		if err != nil {
			return err
		}
		out = append(out, m)
		return nil
	}
	if err := add(MetricPushLatency, r.PushLatencyAll, nil); err != nil {
		return nil, err
	}
	if err := add(MetricPushAckLatency, r.AckLatencyAll, nil); err != nil {
		return nil, err
	}
	if err := add(MetricPushRecvLatency, r.ReceiveLatencyAll, nil); err != nil {
		return nil, err
	}
	if err := add(MetricConvergence, r.Convergence, nil); err != nil {
		return nil, err
	}
	for _, kind := range r.Kinds() {
		if err := add(MetricPushLatency, r.PushLatency[kind], map[string]string{"kind": kind}); err != nil {
			return nil, err
		}
		if h := r.AckLatency[kind]; h != nil {
			if err := add(MetricPushAckLatency, h, map[string]string{"kind": kind}); err != nil {
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
		if err := add(MetricPushRecvLatency, r.ReceiveLatency[kind], map[string]string{"kind": kind}); err != nil {
			return nil, err
		}
	}
	for _, kind := range kinds(r.ConvergenceByKind) {
		if err := add(MetricConvergence, r.ConvergenceByKind[kind], map[string]string{"kind": kind}); err != nil {
			return nil, err
		}
	}
	for _, g := range []struct {
		name string
		by   map[string]*hdr.Histogram
	}{{MetricPushLatency, r.PushLatencyByGroup}, {MetricPushAckLatency, r.AckLatencyByGroup},
		{MetricPushRecvLatency, r.ReceiveLatencyByGroup}, {MetricConvergence, r.ConvergenceByGroup}} {
		for _, group := range kinds(g.by) {
			if err := add(g.name, g.by[group], map[string]string{"group": group}); err != nil {
				return nil, err
			}
		}
	}
	out = append(out,
		summary.NewCounter(MetricProbeEvents, summary.Default, float64(len(r.Events)), dur, nil),
		summary.NewCounter(MetricProbesObserved, summary.Default, float64(r.Observed), dur, nil),
		summary.NewCounter(MetricProbesSuperseded, summary.Default, float64(r.Superseded), dur, nil),
		summary.NewCounter(MetricProbesHeld, summary.Default, float64(r.AlreadyHeld), dur, nil),
		summary.NewCounter(MetricProbesMissed, summary.Default, float64(r.Missed), dur, nil),
		summary.NewCounter(MetricProbesUnresolved, summary.Default, float64(r.Unresolved), dur, nil),
	)
	groups := make([]string, 0, len(r.ProbesByGroup))
	for g := range r.ProbesByGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		c, tags := r.ProbesByGroup[g], map[string]string{"group": g}
		out = append(out,
			summary.NewCounter(MetricProbesObserved, summary.Default, float64(c.Observed), dur, tags),
			summary.NewCounter(MetricProbesSuperseded, summary.Default, float64(c.Superseded), dur, tags),
			summary.NewCounter(MetricProbesHeld, summary.Default, float64(c.AlreadyHeld), dur, tags),
			summary.NewCounter(MetricProbesMissed, summary.Default, float64(c.Missed), dur, tags),
			summary.NewCounter(MetricProbesUnresolved, summary.Default, float64(c.Unresolved), dur, tags),
		)
	}
	return out, nil
}

// SummaryEvents turns the matcher's per-event results into summary events: what a merge of
// shards needs to compute convergence and missed events over the whole fleet.
func SummaryEvents(r MatchResults) []summary.Event {
	out := make([]summary.Event, 0, len(r.Events))
	for _, e := range r.Events {
		ev := summary.Event{ID: e.EventID, Kind: e.Kind, T0: e.T0, Reached: e.Reached, Observed: e.Observed,
			AlreadyHeld: e.AlreadyHeld, Superseded: e.Superseded, Missed: e.Missed, Unresolved: e.Unresolved,
			Received: e.Received, EarlyReceives: e.EarlyReceives, Censored: e.Censored}
		if ev.Measured() {
			ev.ConvergenceSeconds = e.Convergence.Seconds()
		}
		out = append(out, ev)
	}
	return out
}

// Register registers the fleet's live metrics (read from the observer and matcher at scrape
// time, so hooks never touch Prometheus) on reg.
func (f *Fleet) Register(reg prometheus.Registerer) error { return reg.Register(&fleetCollector{f: f}) }

// promBuckets are the histogram buckets on /metrics, in seconds (summary.json keeps the full
// HDR distribution).
var promBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

type fleetCollector struct{ f *Fleet }

var (
	// The fleet's series carry the client group (clients[].name): one series per group, which
	// sum to the fleet's figure.
	descConnected   = prometheus.NewDesc(MetricConnected, "Clients holding an ADS stream.", []string{"group"}, nil)
	descClients     = prometheus.NewDesc(MetricClients, "Clients started by the ramp.", nil, nil)
	descFullConfig  = prometheus.NewDesc(MetricFullConfigClients, "Connected clients holding a full config (their first, or again after a reconnect).", []string{"group"}, nil)
	descConnects    = prometheus.NewDesc(MetricConnects, "ADS streams established.", []string{"group"}, nil)
	descReconnects  = prometheus.NewDesc(MetricReconnects, "ADS streams established by clients that had held one before.", []string{"group"}, nil)
	descResync      = prometheus.NewDesc(MetricResync, "Per reconnect: the new stream's start to the client holding a full config again.", []string{"group"}, nil)
	descConnFail    = prometheus.NewDesc(MetricConnectFailures, "Failed connects and stream opens, by gRPC code.", []string{"code", "group"}, nil)
	descTTFC        = prometheus.NewDesc(MetricTimeToFirstConfig, "Client's scheduled start (its slot in the ramp) to first full config.", []string{"group"}, nil)
	descStartLate   = prometheus.NewDesc(MetricStartLateness, "Client's scheduled start to the fleet starting it: the harness's lag, inside time to first config.", []string{"group"}, nil)
	descAckDelay    = prometheus.NewDesc(MetricAckDelay, "Response received to ACK/NACK written.", []string{"group"}, nil)
	descBacklog     = prometheus.NewDesc(MetricReceiveBacklog, "Per response: its receive stamp (or the end of a scripted ACK delay it waited behind) to the client done with it: how far the fleet is behind in reading what the server sent.", []string{"group"}, nil)
	descPush        = prometheus.NewDesc(MetricPushLatency, "Probe t0 to the change in effect at the client (received, and warmed when it is a cluster or listener), per client.", []string{"kind", "group"}, nil)
	descPushAck     = prometheus.NewDesc(MetricPushAckLatency, "Probe t0 to the ACK of that response, per client.", []string{"kind", "group"}, nil)
	descConvergence = prometheus.NewDesc(MetricConvergence, "Per event: the largest push latency over the clients that observed it; an event some client has not observed yet counts as at least t0 to now (the matcher's one definition).", nil, nil)
	descObserved    = prometheus.NewDesc(MetricProbesObserved, "Client x event observations.", []string{"group"}, nil)
	descSuperseded  = prometheus.NewDesc(MetricProbesSuperseded, "Client x event expectations superseded: the client reached a later conflicting state without ever being in this one.", []string{"group"}, nil)
	descOutstanding = prometheus.NewDesc(MetricProbesOutstanding, "Client x event observations still awaited.", []string{"group"}, nil)
	descTypes       = func() []*prometheus.Desc {
		out := make([]*prometheus.Desc, len(typeCounters))
		for i, tc := range typeCounters {
			out[i] = prometheus.NewDesc(tc.name, tc.help, []string{"type", "group"}, nil)
		}
		return out
	}()
)

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnected, descClients, descFullConfig, descConnects, descReconnects, descResync, descConnFail,
		descTTFC, descStartLate, descAckDelay, descBacklog, descPush, descPushAck, descConvergence, descObserved, descSuperseded, descOutstanding} {
		ch <- d
	}
	for _, d := range descTypes {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.f
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(f.Launched()))
	for group, st := range f.groupStats() {
		ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, float64(st.Connected), group)
		ch <- prometheus.MustNewConstMetric(descFullConfig, prometheus.GaugeValue, float64(st.FullConfigNow), group)
		ch <- prometheus.MustNewConstMetric(descConnects, prometheus.CounterValue, float64(st.Connects), group)
		ch <- prometheus.MustNewConstMetric(descReconnects, prometheus.CounterValue, float64(st.Reconnects), group)
		if st.Resync != nil {
			ch <- promHistogram(descResync, st.Resync, group)
		}
		for code, n := range st.ConnectFailures {
			ch <- prometheus.MustNewConstMetric(descConnFail, prometheus.CounterValue, float64(n), code, group)
		}
		for i, tc := range typeCounters {
			for name, t := range st.Types {
				ch <- prometheus.MustNewConstMetric(descTypes[i], prometheus.CounterValue, float64(tc.get(t)), name, group)
			}
		}
		ch <- promHistogram(descTTFC, st.TimeToFirstConfig, group)
		ch <- promHistogram(descStartLate, st.StartLateness, group)
		ch <- promHistogram(descAckDelay, st.AckDelay, group)
		ch <- promHistogram(descBacklog, st.ReceiveBacklog, group)
	}
	if f.match.logLen.Load() == 0 {
		return
	}
	r := f.match.Results()
	for key, h := range r.pushByKindGroup {
		kind, group, _ := strings.Cut(key, "\x00")
		ch <- promHistogram(descPush, h, kind, group)
	}
	for key, h := range r.ackByKindGroup {
		kind, group, _ := strings.Cut(key, "\x00")
		ch <- promHistogram(descPushAck, h, kind, group)
	}
	ch <- promHistogram(descConvergence, r.Convergence)
	// One series per client group, which sum to the fleet's figure (a group with nothing
	// observed, superseded or awaited yet has no series).
	for group, c := range r.ProbesByGroup {
		ch <- prometheus.MustNewConstMetric(descObserved, prometheus.CounterValue, float64(c.Observed), group)
		ch <- prometheus.MustNewConstMetric(descSuperseded, prometheus.CounterValue, float64(c.Superseded), group)
		ch <- prometheus.MustNewConstMetric(descOutstanding, prometheus.GaugeValue, float64(c.Missed), group)
	}
}

// promHistogram converts an HDR histogram of µs into a Prometheus histogram in seconds. A
// value counts in the first bucket whose bound is at least the highest value equivalent to it.
func promHistogram(d *prometheus.Desc, h *hdr.Histogram, labels ...string) prometheus.Metric {
	counts := make(map[float64]uint64, len(promBuckets))
	i := 0
	var cum uint64
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		v := float64(b.To) * metricScaleMicroseconds
		for i < len(promBuckets) && promBuckets[i] < v {
			counts[promBuckets[i]] = cum
			i++
		}
		cum += uint64(b.Count)
	}
	for ; i < len(promBuckets); i++ {
		counts[promBuckets[i]] = cum
	}
	sum := h.Mean() * float64(h.TotalCount()) * metricScaleMicroseconds
	return prometheus.MustNewConstHistogram(d, uint64(h.TotalCount()), sum, counts, labels...)
}
