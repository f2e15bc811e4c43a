// Package metrics defines every metric the control plane exports, in one file (metrics.go).
//
// New creates the handles; Register puts them on a prometheus.Registerer the caller passes in.
// There is no package-level registry and no package-level state: each Server (and each test)
// owns its own *Metrics, so tests can run in parallel and read exact values back.
//
// Names and label sets follow Istio's pilot (pilot_xds_pushes{type}, pilot_debounce_time, …) so
// dashboards written for istiod keep working; what Istio lacks is exported as xdslab_cp_*.
// Latency histograms use finer buckets than Istio's (.1, .5, 1, 3, 5, 10, 20, 30 s is too coarse
// to gate on a 100 ms regression): every Istio boundary is kept and finer ones are added below
// 100 ms. Each histogram is also a native histogram, which a Prometheus server scraping with
// the protobuf format stores at high resolution.
package metrics
