package fleet

import (
	"slices"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/measure"
)

// Metric names (DESIGN.md: xdslab_* series, base units, _total counters, bounded labels). The
// same names are used on /metrics and, by bench, in summary.json. Per-type series carry the
// label/tag "type" (CDS, EDS, LDS, RDS, ... see measure.TypeName); per-kind series "kind" (the
// simulator event kind); connect failures "code" (the gRPC code name). In summary.json the
// untagged entry is the total over every label value.
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

// TypeCounter is one per-type counter of the fleet: its metric name, what it counts, and how
// to read it from a type's stats.
type TypeCounter struct {
	Name, Help string
	Get        func(measure.TypeStats) uint64
}

// typeCounters lists the per-type counters, in the order reports list them.
var typeCounters = []TypeCounter{
	{MetricResponses, "xDS responses received by the fleet.", func(t measure.TypeStats) uint64 { return t.Responses }},
	{MetricResources, "Resources received in xDS responses.", func(t measure.TypeStats) uint64 { return t.Resources }},
	{MetricBytes, "Encoded resource bytes received.", func(t measure.TypeStats) uint64 { return t.Bytes }},
	{MetricNoop, "Responses in which no resource changed for the client.", func(t measure.TypeStats) uint64 { return t.NoOp }},
	{MetricNacks, "NACKs sent.", func(t measure.TypeStats) uint64 { return t.Nacks }},
	{MetricResendsAfterNack, "Responses identical to one the client had just NACKed.", func(t measure.TypeStats) uint64 { return t.ResendsAfterNack }},
	{MetricResendLoops, "Server resend loops after a NACK (client x type streaks).", func(t measure.TypeStats) uint64 { return t.ResendLoops }},
	{MetricWarmingTimeouts, "initial_fetch_timeout expiries.", func(t measure.TypeStats) uint64 { return t.WarmingTimeouts }},
}

// TypeCounters returns the fleet's per-type counters (a copy), in the order reports list them.
func TypeCounters() []TypeCounter { return slices.Clone(typeCounters) }

// Figures is everything a fleet measured, as plain counts and HDR histograms (µs): what a
// report is built from (bench turns it into summary rows).
type Figures struct {
	// Stats is the fleet-wide observer's; its FullConfigNow is the count at Stop, while the
	// clients still ran.
	Stats measure.FleetStats
	// Connected is the connected gauge's value (the count at Stop), MinConnected the lowest
	// count sampled after the ramp; Stats.MaxConnected is the highest ever.
	Connected, MinConnected int
	// Launched counts the clients the ramp started; Clients those the fleet holds (its
	// segment's, when it is a shard).
	Launched, Clients int
	// Groups holds each group's observer stats (the fleet's own for a fleet of one group);
	// GroupClients each group's clients in the fleet (its segment's, when it is a shard, as
	// Clients: the shards' summaries are summed by merge).
	Groups       map[string]measure.FleetStats
	GroupClients map[string]int
	// Match is the matcher's results, nil when no expectation was registered.
	Match *measure.MatchResults
}

// Figures returns the fleet's figures. Call it after Stop (which samples the connected and
// full config gauges while the clients still run).
func (f *Fleet) Figures() Figures {
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
	fig := Figures{Stats: st, Connected: value, MinConnected: minV, Launched: f.Launched(), Clients: len(f.clients),
		Groups: f.groupStats(), GroupClients: map[string]int{}}
	for _, g := range f.cfg.Groups {
		fig.GroupClients[g.Name] = 0 // also a group with no client in the segment
	}
	for _, fc := range f.clients {
		fig.GroupClients[fc.group]++
	}
	if f.match.Registered() > 0 {
		r := f.match.Results()
		fig.Match = &r
	}
	return fig
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
			out[i] = prometheus.NewDesc(tc.Name, tc.Help, []string{"type", "group"}, nil)
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
				ch <- prometheus.MustNewConstMetric(descTypes[i], prometheus.CounterValue, float64(tc.Get(t)), name, group)
			}
		}
		ch <- promHistogram(descTTFC, st.TimeToFirstConfig, group)
		ch <- promHistogram(descStartLate, st.StartLateness, group)
		ch <- promHistogram(descAckDelay, st.AckDelay, group)
		ch <- promHistogram(descBacklog, st.ReceiveBacklog, group)
	}
	if f.match.Registered() == 0 {
		return
	}
	r := f.match.Results()
	for k, h := range r.PushLatencyByKindGroup {
		ch <- promHistogram(descPush, h, k.Kind, k.Group)
	}
	for k, h := range r.AckLatencyByKindGroup {
		ch <- promHistogram(descPushAck, h, k.Kind, k.Group)
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
