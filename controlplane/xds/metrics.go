package xds

import (
	"time"

	"github.com/xdslab/xdslab/controlplane/cache"
)

// Metrics receives the server's measurements; the controlplane package maps them onto its
// Prometheus metrics (pilot_* and xdslab_cp_*). Calls come from many goroutines.
type Metrics interface {
	// ConnectedClients adds delta to pilot_xds.
	ConnectedClients(delta int)
	// ResponseSent counts pilot_xds_pushes{type} and observes pilot_xds_config_size_bytes{type}
	// and pilot_xds_push_time{type} (push start → response written).
	ResponseSent(typeURL string, bytes int, pushTime time.Duration)
	// Converged observes pilot_proxy_convergence_time (enqueued → last response of the push
	// written) and pilot_proxy_queue_time (enqueued → dequeued).
	Converged(queueTime, convergence time.Duration)
	// Rejected counts pilot_total_xds_rejects{type}.
	Rejected(typeURL string)
	// ExpiredNonce counts pilot_xds_expired_nonce{type}.
	ExpiredNonce(typeURL string)
	// Acked observes xdslab_cp_ack_latency_seconds (response written → ACK or NACK received).
	Acked(typeURL string, latency time.Duration)
	// StreamRejected counts streams refused by admission control.
	StreamRejected()
	// PushTriggered adds n to pilot_push_triggers{type=reason}: the events of that reason in
	// a push, once per connection pushed.
	PushTriggered(reason string, n int)
	// PushSkipped adds n to xdslab_cp_push_skipped_total{type=reason}: the same count for the
	// connections a push left out because their scoped view does not contain the change.
	PushSkipped(reason string, n int)
	cache.Counter
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

func (NopMetrics) ConnectedClients(int)                    {}
func (NopMetrics) ResponseSent(string, int, time.Duration) {}
func (NopMetrics) Converged(time.Duration, time.Duration)  {}
func (NopMetrics) Rejected(string)                         {}
func (NopMetrics) ExpiredNonce(string)                     {}
func (NopMetrics) Acked(string, time.Duration)             {}
func (NopMetrics) StreamRejected()                         {}
func (NopMetrics) PushTriggered(string, int)               {}
func (NopMetrics) PushSkipped(string, int)                 {}
func (NopMetrics) CacheRead(string, cache.Result)          {}
