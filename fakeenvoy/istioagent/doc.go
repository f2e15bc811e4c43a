// Package istioagent is the emulated istio-agent a fleet of fake Envoys (package fakeenvoy)
// shares: the SDS server beside each Envoy that serves it its workload certificate and the
// mesh root, and reads file-based secrets. The client's state machine asks it for every secret
// whose sds_config is the agent's bootstrap cluster (SDSCluster) or a path. A leaf beside
// internal/pki.
//
// A real Envoy in an Istio mesh never asks the control plane for its own workload certificate:
// istiod names the SDS secrets "default" and "ROOTCA" on the "sds-grpc" config source, the
// istio-agent's SDS server on a Unix socket next to Envoy. The Agent stands in for that agent,
// inside the fleet and without network traffic: it serves each client the workload certificate
// of its identity (namespace and service account; one per identity, shared by its clients and
// issued again at half its lifetime) and the root from a lab CA, after a configurable issue
// delay, and reads file-based secrets from their paths. Which secrets it serves is decided by
// their config source (see fakeenvoy/machine's sds.go); secrets on ADS are still asked of the
// control plane.
package istioagent
