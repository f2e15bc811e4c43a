// Package sinks holds the simulator.Sink implementations: where the simulator's mesh and churn go
// on their way to a control plane.
//
// The simulator (a pure core) and its Runner drive a Sink: Init with the initial objects, then
// Apply for every event in timeline order, t0 taken right after Apply returns. This package
// imports simulator for Event; simulator never imports it. cmd/xdslab and bench/run pick a sink
// from the flags or the scenario.
//
// Dir writes Istio YAML into a directory (one file per service, written atomically) that a
// file-watching control plane reads (dir.go). Kube writes it to a Kubernetes API server
// (Namespaces, Services and EndpointSlices, optionally Pods, Istio objects through
// istio.io/client-go; server-side apply, only what changed; no security.istio.io kinds;
// docs/kubernetes.md) (kube.go). MCP serves it over MCP to any number of subscribers, the
// config source a stock istiod reads with an xds:// configSource (mcp.go, docs/mcp.md).
// InProcess applies the same configs through a ConfigApplier, which our control plane's
// config.Memory implements (inprocess.go). EventLog writes the event stream as JSON lines, one
// simulator.EncodeEvent line per event, flushed at once; it is a Runner recorder, so each line
// carries t0 (eventlog.go).
package sinks
