package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegisterExportsEveryName(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	// Vectors only export a series once a label value is used.
	m.XDSPushes.WithLabelValues("cds").Inc()
	m.XDSPushTime.WithLabelValues("cds").Observe(0.01)
	m.InboundUpdates.WithLabelValues(InboundEDS).Inc()
	m.PushTriggers.WithLabelValues("endpoint").Inc()
	m.PushSkipped.WithLabelValues("endpoint").Inc()
	m.TotalXDSRejects.WithLabelValues("eds").Inc()
	m.XDSExpiredNonce.WithLabelValues("eds").Inc()
	m.XDSConfigSizeBytes.WithLabelValues("cds").Observe(1234)
	m.CacheReads.WithLabelValues("cds", CacheHit).Inc()
	m.MCPConnected.WithLabelValues("127.0.0.1:15010").Set(1)
	m.ObserveDebounceWindow("adaptive", 0.25)

	want := []string{
		"pilot_xds_pushes", "pilot_proxy_convergence_time", "pilot_debounce_time",
		"pilot_pushcontext_init_seconds", "pilot_xds_push_time", "pilot_proxy_queue_time",
		"pilot_inbound_updates", "pilot_push_triggers", "pilot_total_xds_rejects",
		"pilot_xds_expired_nonce", "pilot_xds", "pilot_services", "pilot_xds_config_size_bytes",
		"xds_cache_reads", "xdslab_cp_debounce_events_per_push", "xdslab_cp_config_file_errors_total",
		"xdslab_cp_config_objects_skipped_total", "xdslab_cp_config_mass_deletes_held_total",
		"xdslab_cp_push_cycles_total", "xdslab_cp_ack_latency_seconds", "xdslab_cp_events_merged_total",
		"xdslab_cp_streams_rejected_total", "xdslab_cp_push_skipped_total",
		"xdslab_cp_mcp_rejected_total", "xdslab_cp_mcp_disconnects_total", "xdslab_cp_mcp_connected",
		"xdslab_cp_debounce_quiet_seconds",
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, n := range want {
		if !got[n] {
			t.Errorf("metric %s not exported", n)
		}
	}
	if len(mfs) != len(want) || len(m.Names()) != len(want) {
		t.Errorf("exported %d metrics, Names() has %d, want %d", len(mfs), len(m.Names()), len(want))
	}
	// Istio's label sets.
	labels := map[string][]string{"pilot_xds_pushes": {"type"}, "xds_cache_reads": {"result", "type"}, "pilot_xds": nil}
	for _, mf := range mfs {
		wantL, ok := labels[mf.GetName()]
		if !ok {
			continue
		}
		var gotL []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			gotL = append(gotL, l.GetName())
		}
		if strings.Join(gotL, ",") != strings.Join(wantL, ",") {
			t.Errorf("%s labels = %v, want %v", mf.GetName(), gotL, wantL)
		}
	}
}

func TestRegisterTwiceFailsNamingTheMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := New().Register(reg); err != nil {
		t.Fatal(err)
	}
	err := New().Register(reg)
	if err == nil || !strings.Contains(err.Error(), "pilot_services") {
		t.Fatalf("second Register: err = %v, want one naming pilot_services", err)
	}
	if err := New().Register(nil); err == nil {
		t.Fatal("nil registerer accepted")
	}
}

func TestObserveDebounce(t *testing.T) {
	tests := []struct {
		name       string
		events     []int
		wantCycles float64
		wantMerged float64
	}{
		{"one event per push", []int{1, 1, 1}, 3, 0},
		{"batches", []int{5, 1, 10}, 3, 13},
		{"none", nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			for _, n := range tc.events {
				m.ObserveDebounce(0.1, n)
			}
			if got := testutil.ToFloat64(m.PushCycles); got != tc.wantCycles {
				t.Errorf("cycles = %v, want %v", got, tc.wantCycles)
			}
			if got := testutil.ToFloat64(m.EventsMerged); got != tc.wantMerged {
				t.Errorf("merged = %v, want %v", got, tc.wantMerged)
			}
			if got := testutil.CollectAndCount(m.DebounceEventsPerPush); got != 1 {
				t.Errorf("events histogram series = %d", got)
			}
		})
	}
}

func TestHistogramBuckets(t *testing.T) {
	m := New()
	m.AckLatency.Observe(0.003)
	m.PushContextInitSeconds.Observe(0.002)
	const want = `
# HELP xdslab_cp_ack_latency_seconds Time in seconds from a response being sent to its ACK being received.
# TYPE xdslab_cp_ack_latency_seconds histogram
xdslab_cp_ack_latency_seconds_bucket{le="0.001"} 0
xdslab_cp_ack_latency_seconds_bucket{le="0.0025"} 0
xdslab_cp_ack_latency_seconds_bucket{le="0.005"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.0075"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.01"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.025"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.05"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.075"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.1"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.25"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.5"} 1
xdslab_cp_ack_latency_seconds_bucket{le="0.75"} 1
xdslab_cp_ack_latency_seconds_bucket{le="1"} 1
xdslab_cp_ack_latency_seconds_bucket{le="2.5"} 1
xdslab_cp_ack_latency_seconds_bucket{le="5"} 1
xdslab_cp_ack_latency_seconds_bucket{le="10"} 1
xdslab_cp_ack_latency_seconds_bucket{le="20"} 1
xdslab_cp_ack_latency_seconds_bucket{le="30"} 1
xdslab_cp_ack_latency_seconds_bucket{le="+Inf"} 1
xdslab_cp_ack_latency_seconds_sum 0.003
xdslab_cp_ack_latency_seconds_count 1
`
	if err := testutil.CollectAndCompare(m.AckLatency, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// Every Istio boundary is kept in the latency layout, with finer ones below 100 ms.
	for _, b := range []float64{.1, .5, 1, 3, 5, 10, 20, 30} {
		found := false
		for _, x := range LatencyBuckets {
			found = found || x == b
		}
		if !found {
			t.Errorf("LatencyBuckets lacks Istio's %v", b)
		}
	}
	if n := countBelow(LatencyBuckets, .1); n < 5 {
		t.Errorf("LatencyBuckets has %d buckets below 100ms, want at least 5", n)
	}
}

func countBelow(bs []float64, x float64) int {
	n := 0
	for _, b := range bs {
		if b < x {
			n++
		}
	}
	return n
}

func TestLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := New().Register(reg); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Istio's own names break two lint rules (counters without _total, pilot_debounce_time
	// without a unit suffix); they are kept for dashboard compatibility. Our own must be clean.
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "xdslab_") {
			t.Errorf("lint %s: %s", p.Metric, p.Text)
		}
	}
}

func TestTypeLabel(t *testing.T) {
	tests := map[string]string{
		"type.googleapis.com/envoy.config.cluster.v3.Cluster":                "cds",
		"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment": "eds",
		"type.googleapis.com/envoy.config.listener.v3.Listener":              "lds",
		"type.googleapis.com/envoy.config.route.v3.RouteConfiguration":       "rds",
		"type.googleapis.com/envoy.api.v2.Cluster":                           "other",
		"": "other",
	}
	for url, want := range tests {
		if got := TypeLabel(url); got != want {
			t.Errorf("TypeLabel(%q) = %q, want %q", url, got, want)
		}
	}
}

func TestXDSRecorders(t *testing.T) {
	const cds = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	m := New()
	m.ConnectedClients(3)
	m.ConnectedClients(-1)
	m.ResponseSent(cds, 2048, 5*time.Millisecond)
	m.ResponseSent(cds, 10, time.Millisecond)
	m.Converged(time.Millisecond, 20*time.Millisecond)
	m.Rejected(cds)
	m.ExpiredNonce("type.googleapis.com/unknown")
	m.Acked(cds, 3*time.Millisecond)
	m.StreamRejected()
	m.PushTriggered("endpoint", 3)
	m.PushTriggered("endpoint", 2)
	m.PushSkippedTriggers("config", 4)
	m.CacheReadResult(cds, CacheHit)
	m.CacheReadResult(cds, CacheMiss)
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"pilot_xds", testutil.ToFloat64(m.XDSClients), 2},
		{"pilot_xds_pushes{cds}", testutil.ToFloat64(m.XDSPushes.WithLabelValues("cds")), 2},
		{"pilot_total_xds_rejects{cds}", testutil.ToFloat64(m.TotalXDSRejects.WithLabelValues("cds")), 1},
		{"pilot_xds_expired_nonce{other}", testutil.ToFloat64(m.XDSExpiredNonce.WithLabelValues("other")), 1},
		{"xdslab_cp_streams_rejected_total", testutil.ToFloat64(m.StreamsRejected), 1},
		{"pilot_push_triggers{endpoint}", testutil.ToFloat64(m.PushTriggers.WithLabelValues("endpoint")), 5},
		{"xdslab_cp_push_skipped_total{config}", testutil.ToFloat64(m.PushSkipped.WithLabelValues("config")), 4},
		{"xds_cache_reads{cds,hit}", testutil.ToFloat64(m.CacheReads.WithLabelValues("cds", CacheHit)), 1},
		{"xds_cache_reads{cds,miss}", testutil.ToFloat64(m.CacheReads.WithLabelValues("cds", CacheMiss)), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for name, c := range map[string]prometheus.Collector{"size": m.XDSConfigSizeBytes, "push time": m.XDSPushTime,
		"queue": m.ProxyQueueTime, "convergence": m.ProxyConvergenceTime, "ack": m.AckLatency} {
		if n := testutil.CollectAndCount(c); n != 1 {
			t.Errorf("%s: %d series, want 1", name, n)
		}
	}
}
