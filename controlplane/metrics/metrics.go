package metrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names.
const (
	// LabelType is the label Istio uses for an xDS type (cds, eds, lds, rds, …), an update kind
	// or a trigger reason, depending on the metric.
	LabelType = "type"
	// LabelResult is hit or miss on xds_cache_reads.
	LabelResult = "result"
)

// Values of the type label of pilot_inbound_updates (Istio's).
const (
	InboundConfig        = "config"    // an Istio config object (VS, DR, Sidecar, Gateway) changed
	InboundEDS           = "eds"       // only endpoints changed
	InboundService       = "svc"       // a service was added or changed
	InboundServiceDelete = "svcdelete" // a service was removed
)

// Values of the result label of xds_cache_reads.
const (
	CacheHit    = "hit"
	CacheMiss   = "miss"
	CacheBypass = "bypass"
)

// Bucket layouts. Each keeps Istio's boundaries where Istio has the metric and adds finer ones.
var (
	// LatencyBuckets (seconds): 0.5 ms … 30 s, with Istio's .1 .5 1 3 5 10 20 30.
	LatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .075, .1, .25, .5, 1, 3, 5, 10, 20, 30}
	// DebounceBuckets (seconds): the debounce delay sits around minQuiet (100 ms by default)
	// and is capped by maxDelay (10 s by default), so resolution is densest there.
	DebounceBuckets = []float64{.001, .005, .01, .025, .05, .075, .1, .11, .125, .15, .2, .25, .5, 1, 2.5, 5, 10, 10.5, 15, 20, 30}
	// BuildBuckets (seconds) for pilot_pushcontext_init_seconds: 10 µs … 10 s.
	BuildBuckets = []float64{.00001, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// AckBuckets (seconds) for xdslab_cp_ack_latency_seconds: 1 ms … 30 s.
	AckBuckets = []float64{.001, .0025, .005, .0075, .01, .025, .05, .075, .1, .25, .5, .75, 1, 2.5, 5, 10, 20, 30}
	// SizeBuckets (bytes) for pilot_xds_config_size_bytes: Istio's 1, 10 kB, 1 MB, 4 MB, 10 MB,
	// 40 MB, with 100 B, 1 kB, 100 kB added.
	SizeBuckets = []float64{1, 100, 1000, 10000, 100000, 1000000, 4000000, 10000000, 40000000}
	// EventsBuckets for xdslab_cp_debounce_events_per_push.
	EventsBuckets = []float64{1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000}
)

// nativeFactor makes every histogram a native histogram as well (buckets grow by at most 10%).
const nativeFactor = 1.1

// Metrics holds every control-plane metric. Create it with New and register it with Register.
// The handles are safe for concurrent use.
type Metrics struct {
	// XDSPushes counts responses sent, by xDS type (pilot_xds_pushes{type}).
	XDSPushes *prometheus.CounterVec
	// ProxyConvergenceTime: push enqueued → last response of the push sent to the proxy, like
	// Istio (pilot_proxy_convergence_time).
	ProxyConvergenceTime prometheus.Histogram
	// DebounceTime: first event of a batch → push start (pilot_debounce_time).
	DebounceTime prometheus.Histogram
	// PushContextInitSeconds: time to build one snapshot (pilot_pushcontext_init_seconds).
	PushContextInitSeconds prometheus.Histogram
	// XDSPushTime: time to generate and send one response, by type (pilot_xds_push_time{type}).
	XDSPushTime *prometheus.HistogramVec
	// ProxyQueueTime: time a proxy's push waited in the push queue (pilot_proxy_queue_time).
	ProxyQueueTime prometheus.Histogram
	// InboundUpdates counts changes reaching the pipeline, by kind: config, eds, svc,
	// svcdelete (pilot_inbound_updates{type}).
	InboundUpdates *prometheus.CounterVec
	// PushTriggers counts, by trigger reason, the events of each push once per connection it
	// is pushed to, as istiod counts them per proxy (pilot_push_triggers{type}); connections
	// whose scoped view the change does not reach are left out (see PushSkipped).
	PushTriggers *prometheus.CounterVec
	// TotalXDSRejects counts NACKs by type (pilot_total_xds_rejects{type}).
	TotalXDSRejects *prometheus.CounterVec
	// XDSExpiredNonce counts requests carrying a stale nonce, by type
	// (pilot_xds_expired_nonce{type}).
	XDSExpiredNonce *prometheus.CounterVec
	// XDSClients is the number of connected xDS clients (pilot_xds).
	XDSClients prometheus.Gauge
	// Services is the number of services in the latest snapshot (pilot_services).
	Services prometheus.Gauge
	// XDSConfigSizeBytes is the size of each response, by type (pilot_xds_config_size_bytes{type}).
	XDSConfigSizeBytes *prometheus.HistogramVec
	// CacheReads counts resource cache reads by type and result (xds_cache_reads{type,result}).
	CacheReads *prometheus.CounterVec

	// DebounceEventsPerPush is the number of events merged into each push cycle
	// (xdslab_cp_debounce_events_per_push).
	DebounceEventsPerPush prometheus.Histogram
	// ConfigFileErrors counts config files that failed to load (xdslab_cp_config_file_errors_total).
	ConfigFileErrors prometheus.Counter
	// ConfigObjectsSkipped counts config documents of kinds or apiVersions the control plane
	// does not read (xdslab_cp_config_objects_skipped_total).
	ConfigObjectsSkipped prometheus.Counter
	// ConfigMassDeletesHeld counts config directory changes held because they would delete a
	// large share of the objects at once (xdslab_cp_config_mass_deletes_held_total).
	ConfigMassDeletesHeld prometheus.Counter
	// PushCycles counts push cycles started by the debouncer (xdslab_cp_push_cycles_total).
	PushCycles prometheus.Counter
	// AckLatency: response sent → its ACK received (xdslab_cp_ack_latency_seconds).
	AckLatency prometheus.Histogram
	// EventsMerged counts events that did not get a push cycle of their own because they were
	// merged into another event's cycle: events − 1 per cycle (xdslab_cp_events_merged_total).
	// Events in = xdslab_cp_push_cycles_total + xdslab_cp_events_merged_total.
	EventsMerged prometheus.Counter
	// StreamsRejected counts xDS streams refused by admission control
	// (xdslab_cp_streams_rejected_total).
	StreamsRejected prometheus.Counter
	// PushSkipped counts, like PushTriggers, the events of each push once per connection the
	// push filter left out because the proxy's Sidecar scope and exportTo hide the change
	// (xdslab_cp_push_skipped_total{type}; istiod only logs these).
	PushSkipped *prometheus.CounterVec
	// MCPRejected counts objects and responses an MCP config source rejected (NACKed; the last
	// good version kept) (xdslab_cp_mcp_rejected_total).
	MCPRejected prometheus.Counter
	// MCPDisconnects counts MCP streams lost (xdslab_cp_mcp_disconnects_total).
	MCPDisconnects prometheus.Counter
	// MCPConnected is 1 while the MCP source of a server is connected, by server address
	// (xdslab_cp_mcp_connected{source}).
	MCPConnected *prometheus.GaugeVec
	// DebounceQuiet is the quiet window the debounce policy applied to the last push, labelled
	// by the policy (xdslab_cp_debounce_quiet_seconds{policy}): constant under the fixed
	// policy, moving with push cost under the adaptive one.
	DebounceQuiet *prometheus.GaugeVec
}

func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: name, Help: help, Buckets: buckets,
		NativeHistogramBucketFactor: nativeFactor, NativeHistogramMaxBucketNumber: 160,
	})
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: name, Help: help, Buckets: buckets,
		NativeHistogramBucketFactor: nativeFactor, NativeHistogramMaxBucketNumber: 160,
	}, labels)
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// New creates every metric. Nothing is registered until Register.
func New() *Metrics {
	return &Metrics{
		XDSPushes:              counterVec("pilot_xds_pushes", "Pilot build and send errors for lds, rds, cds and eds.", LabelType),
		ProxyConvergenceTime:   histogram("pilot_proxy_convergence_time", "Delay in seconds between config change and a proxy receiving all required configuration.", LatencyBuckets),
		DebounceTime:           histogram("pilot_debounce_time", "Delay in seconds between the first config enters debouncing and the merged push request is pushed into the push queue.", DebounceBuckets),
		PushContextInitSeconds: histogram("pilot_pushcontext_init_seconds", "Total time in seconds Pilot takes to init pushContext.", BuildBuckets),
		XDSPushTime:            histogramVec("pilot_xds_push_time", "Total time in seconds Pilot takes to push lds, rds, cds and eds.", LatencyBuckets, LabelType),
		ProxyQueueTime:         histogram("pilot_proxy_queue_time", "Time in seconds, a proxy is in the push queue before being dequeued.", LatencyBuckets),
		InboundUpdates:         counterVec("pilot_inbound_updates", "Total number of updates received by pilot.", LabelType),
		PushTriggers:           counterVec("pilot_push_triggers", "Total number of times a push was triggered, labeled by reason for the push.", LabelType),
		TotalXDSRejects:        counterVec("pilot_total_xds_rejects", "Total number of XDS responses from pilot rejected by proxy.", LabelType),
		XDSExpiredNonce:        counterVec("pilot_xds_expired_nonce", "Total number of XDS requests with an expired nonce.", LabelType),
		XDSClients:             gauge("pilot_xds", "Number of endpoints connected to this pilot using XDS."),
		Services:               gauge("pilot_services", "Total services known to pilot."),
		XDSConfigSizeBytes:     histogramVec("pilot_xds_config_size_bytes", "Distribution of configuration sizes pushed to clients", SizeBuckets, LabelType),
		CacheReads:             counterVec("xds_cache_reads", "Total number of xds cache reads.", LabelType, LabelResult),

		DebounceEventsPerPush: histogram("xdslab_cp_debounce_events_per_push", "Number of change events merged into one push cycle by the debouncer.", EventsBuckets),
		ConfigFileErrors:      counter("xdslab_cp_config_file_errors_total", "Total number of config file loads that failed (the file's previous objects were kept)."),
		ConfigObjectsSkipped:  counter("xdslab_cp_config_objects_skipped_total", "Total number of config documents skipped because the control plane does not read their kind or apiVersion (counted once per file and document)."),
		ConfigMassDeletesHeld: counter("xdslab_cp_config_mass_deletes_held_total", "Total number of config directory changes held for a settle period because they would delete more than the guarded share of the objects at once."),
		PushCycles:            counter("xdslab_cp_push_cycles_total", "Total number of push cycles started by the debouncer."),
		AckLatency:            histogram("xdslab_cp_ack_latency_seconds", "Time in seconds from a response being sent to its ACK being received.", AckBuckets),
		EventsMerged:          counter("xdslab_cp_events_merged_total", "Total number of change events merged into another event's push cycle (events minus cycles)."),
		StreamsRejected:       counter("xdslab_cp_streams_rejected_total", "Total number of xDS streams refused by admission control."),
		MCPRejected:           counter("xdslab_cp_mcp_rejected_total", "Total number of objects and responses an MCP config source rejected (NACKed, the last good version kept)."),
		MCPDisconnects:        counter("xdslab_cp_mcp_disconnects_total", "Total number of MCP config source streams lost (the last good config kept)."),
		MCPConnected:          prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "xdslab_cp_mcp_connected", Help: "Whether the MCP config source of a server is connected (1) or not (0)."}, []string{"source"}),
		DebounceQuiet:         prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "xdslab_cp_debounce_quiet_seconds", Help: "Quiet window in seconds the debounce policy applied to the last push, labeled by policy (fixed or adaptive)."}, []string{"policy"}),
		PushSkipped:           counterVec("xdslab_cp_push_skipped_total", "Total number of push triggers not pushed to a connection because its Sidecar scope does not contain the change, labeled by reason for the push.", LabelType),
	}
}

// named lists every metric with its name, in the order they are declared.
func (m *Metrics) named() []struct {
	name string
	c    prometheus.Collector
} {
	type nc = struct {
		name string
		c    prometheus.Collector
	}
	return []nc{
		{"pilot_xds_pushes", m.XDSPushes},
		{"pilot_proxy_convergence_time", m.ProxyConvergenceTime},
		{"pilot_debounce_time", m.DebounceTime},
		{"pilot_pushcontext_init_seconds", m.PushContextInitSeconds},
		{"pilot_xds_push_time", m.XDSPushTime},
		{"pilot_proxy_queue_time", m.ProxyQueueTime},
		{"pilot_inbound_updates", m.InboundUpdates},
		{"pilot_push_triggers", m.PushTriggers},
		{"pilot_total_xds_rejects", m.TotalXDSRejects},
		{"pilot_xds_expired_nonce", m.XDSExpiredNonce},
		{"pilot_xds", m.XDSClients},
		{"pilot_services", m.Services},
		{"pilot_xds_config_size_bytes", m.XDSConfigSizeBytes},
		{"xds_cache_reads", m.CacheReads},
		{"xdslab_cp_debounce_events_per_push", m.DebounceEventsPerPush},
		{"xdslab_cp_config_file_errors_total", m.ConfigFileErrors},
		{"xdslab_cp_config_objects_skipped_total", m.ConfigObjectsSkipped},
		{"xdslab_cp_config_mass_deletes_held_total", m.ConfigMassDeletesHeld},
		{"xdslab_cp_push_cycles_total", m.PushCycles},
		{"xdslab_cp_ack_latency_seconds", m.AckLatency},
		{"xdslab_cp_events_merged_total", m.EventsMerged},
		{"xdslab_cp_streams_rejected_total", m.StreamsRejected},
		{"xdslab_cp_push_skipped_total", m.PushSkipped},
		{"xdslab_cp_mcp_rejected_total", m.MCPRejected},
		{"xdslab_cp_mcp_disconnects_total", m.MCPDisconnects},
		{"xdslab_cp_mcp_connected", m.MCPConnected},
		{"xdslab_cp_debounce_quiet_seconds", m.DebounceQuiet},
	}
}

// Names returns the name of every metric, in the order they are declared.
func (m *Metrics) Names() []string {
	var out []string
	for _, n := range m.named() {
		out = append(out, n.name)
	}
	return out
}

// Collectors returns every metric, in the order they are declared.
func (m *Metrics) Collectors() []prometheus.Collector {
	var out []prometheus.Collector
	for _, n := range m.named() {
		out = append(out, n.c)
	}
	return out
}

// Register registers every metric on r. It reports every metric that failed (for example
// because another Metrics is already registered on r) and registers the rest.
func (m *Metrics) Register(r prometheus.Registerer) error {
	if r == nil {
		return errors.New("metrics: nil Registerer: pass prometheus.NewRegistry() or prometheus.DefaultRegisterer")
	}
	var errs []error
	for _, n := range m.named() {
		if err := r.Register(n.c); err != nil {
			errs = append(errs, fmt.Errorf("register metric %s: %w", n.name, err))
		}
	}
	return errors.Join(errs...)
}

// ObserveDebounceWindow records the quiet window (seconds) policy applied to a push.
func (m *Metrics) ObserveDebounceWindow(policy string, quietSeconds float64) {
	m.DebounceQuiet.WithLabelValues(policy).Set(quietSeconds)
}

// ObserveDebounce records one push cycle of the debouncer: its debounce delay (seconds) and
// the number of events merged into it.
func (m *Metrics) ObserveDebounce(delaySeconds float64, events int) {
	m.DebounceTime.Observe(delaySeconds)
	m.DebounceEventsPerPush.Observe(float64(events))
	m.PushCycles.Inc()
	if events > 1 {
		m.EventsMerged.Add(float64(events - 1))
	}
}

// TypeLabel maps an xDS type URL to the short type Istio uses as the label value of
// pilot_xds_pushes, pilot_total_xds_rejects, … (cds, eds, lds, rds, sds, ecds, nds); an unknown
// URL maps to "other" so that label values stay bounded.
func TypeLabel(typeURL string) string {
	switch typeURL {
	case "type.googleapis.com/envoy.config.cluster.v3.Cluster":
		return "cds"
	case "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment":
		return "eds"
	case "type.googleapis.com/envoy.config.listener.v3.Listener":
		return "lds"
	case "type.googleapis.com/envoy.config.route.v3.RouteConfiguration":
		return "rds"
	case "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret":
		return "sds"
	case "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig":
		return "ecds"
	case "type.googleapis.com/istio.networking.nds.v1.NameTable":
		return "nds"
	}
	return "other"
}

// The methods below record the ADS server's measurements; type URLs become Istio's short type
// labels (TypeLabel). They have the shapes of the xds package's Metrics interface, so the
// server that wires the two only adapts the cache read result type.

// ConnectedClients adds delta to pilot_xds.
func (m *Metrics) ConnectedClients(delta int) { m.XDSClients.Add(float64(delta)) }

// ResponseSent counts a response in pilot_xds_pushes{type} and observes its size
// (pilot_xds_config_size_bytes{type}) and push time (pilot_xds_push_time{type}).
func (m *Metrics) ResponseSent(typeURL string, bytes int, pushTime time.Duration) {
	t := TypeLabel(typeURL)
	m.XDSPushes.WithLabelValues(t).Inc()
	m.XDSConfigSizeBytes.WithLabelValues(t).Observe(float64(bytes))
	m.XDSPushTime.WithLabelValues(t).Observe(pushTime.Seconds())
}

// Converged observes pilot_proxy_queue_time and pilot_proxy_convergence_time of one proxy push.
func (m *Metrics) Converged(queueTime, convergence time.Duration) {
	m.ProxyQueueTime.Observe(queueTime.Seconds())
	m.ProxyConvergenceTime.Observe(convergence.Seconds())
}

// Rejected counts a NACK in pilot_total_xds_rejects{type}.
func (m *Metrics) Rejected(typeURL string) {
	m.TotalXDSRejects.WithLabelValues(TypeLabel(typeURL)).Inc()
}

// ExpiredNonce counts a stale nonce in pilot_xds_expired_nonce{type}.
func (m *Metrics) ExpiredNonce(typeURL string) {
	m.XDSExpiredNonce.WithLabelValues(TypeLabel(typeURL)).Inc()
}

// Acked observes xdslab_cp_ack_latency_seconds (response sent → its ACK or NACK).
func (m *Metrics) Acked(_ string, latency time.Duration) { m.AckLatency.Observe(latency.Seconds()) }

// StreamRejected counts a stream refused by admission control.
func (m *Metrics) StreamRejected() { m.StreamsRejected.Inc() }

// PushTriggered adds n to pilot_push_triggers{type=reason}.
func (m *Metrics) PushTriggered(reason string, n int) {
	m.PushTriggers.WithLabelValues(reason).Add(float64(n))
}

// PushSkipped adds n to xdslab_cp_push_skipped_total{type=reason}.
func (m *Metrics) PushSkippedTriggers(reason string, n int) {
	m.PushSkipped.WithLabelValues(reason).Add(float64(n))
}

// CacheReadResult counts a resource cache read in xds_cache_reads{type,result} (result: hit,
// miss, or bypass for reads that skip the cache).
func (m *Metrics) CacheReadResult(typeURL, result string) {
	m.CacheReads.WithLabelValues(TypeLabel(typeURL), result).Inc()
}

// CacheReadResults counts n reads with one result at once.
func (m *Metrics) CacheReadResults(typeURL, result string, n int) {
	m.CacheReads.WithLabelValues(TypeLabel(typeURL), result).Add(float64(n))
}
