// Package registry is the control plane's service discovery: where Services and Endpoints come
// from, and the aggregate that merges every source into the one view the snapshot is built from.
//
//   - Memory is a registry of Services and Endpoints held in memory, for tests and for
//     embedders. (The lab's in-process sink writes Istio config to config.Memory instead.)
//   - ConvertServiceEntry turns an Istio ServiceEntry (with its inline endpoints, or the
//     WorkloadEntries its workloadSelector picks) into Services and Endpoints, the way Istio's
//     serviceentry controller does: one Service per host.
//   - Aggregate merges the registries (in priority order) with the ServiceEntry-derived
//     services, serves the other Istio config kinds (VirtualService, DestinationRule, Sidecar,
//     Gateway) from the config store's immutable version that came with the change (no copy of
//     its own), and reports every change to one consumer as a typed Change: the affected
//     ConfigKeys, whether the change is Full (anything but endpoints of EDS services), and the
//     immutable View of its state right after the change. This is the control plane's one
//     account of what changed: the debouncer's EDS bypass reads Full, and the snapshot builder
//     applies the keys from the View without comparing anything else. A ServiceEntry or
//     WorkloadEntry change recomputes only the hosts it touches.
//
// Subpackage kube is a Registry fed by a Kubernetes cluster (Services and EndpointSlices, and
// Istio's config kinds into the config store) through client-go informers.
//
// A View is copy-on-write by shard (a write copies the 64th of the hosts it touches; its config
// objects are the store's version, copy-on-write the same way), so one per change is cheap and
// readers take no lock. The snapshot builder (model.BuildSnapshot) reads the View of the newest
// change in its batch (model.PushRequest.Source) and applies only the keys the batch names, so
// a snapshot holds exactly the changes its request names. A named config object is taken as the
// store held it when that change was delivered, which may already include a later write to it
// whose event is still to come (as istiod reads its config store when it builds a push
// context); that event then finds nothing changed.
package registry
