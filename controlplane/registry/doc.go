// Package registry is the control plane's service discovery: where Services and Endpoints come
// from, and the aggregate that merges every source into the one view the snapshot is built from.
//
//   - Memory is a registry of Services and Endpoints held in memory, for tests and for
//     embedders. (The lab's in-process sink writes Istio config to config.Memory instead.)
//   - ConvertServiceEntry turns an Istio ServiceEntry (with its inline endpoints, or the
//     WorkloadEntries its workloadSelector picks) into Services and Endpoints, the way Istio's
//     serviceentry controller does: one Service per host.
//   - Aggregate merges the registries (in priority order) with the ServiceEntry-derived
//     services, mirrors the other Istio config kinds (VirtualService, DestinationRule, Sidecar,
//     Gateway), and reports every change to one consumer as a typed Change: the affected
//     ConfigKeys and whether only endpoints changed. A ServiceEntry or WorkloadEntry change
//     recomputes only the hosts it touches.
//
// Subpackage kube is a Registry fed by a Kubernetes cluster (Services and EndpointSlices, and
// Istio's config kinds into the config store) through client-go informers.
//
// The snapshot builder (model.BuildSnapshot) reads the aggregate through Aggregate.Read, under
// one read lock, so a snapshot always sees one consistent state.
package registry
