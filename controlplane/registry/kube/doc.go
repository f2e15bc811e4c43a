// Package kube reads a Kubernetes cluster the way istiod's Kubernetes registry does, through
// client-go shared informers, and feeds the control plane's pipeline:
//
//   - Services and their EndpointSlices become model.Services and model.Endpoints (host
//     NAME.NAMESPACE.svc.DOMAIN), delivered as registry Updates: the Controller is a
//     registry.Registry the Aggregate merges. A change of an EndpointSlice alone updates only
//     the host's endpoints, so the push it causes stays endpoint-only (EDS).
//   - With Options.Pods, Pods and Nodes too: an endpoint pointing at a Pod (targetRef) takes
//     its labels, service account and locality (topology.istio.io/locality or istio-locality,
//     else its Node's topology labels), and its Service the service accounts of its Pods. As
//     in istiod's controller, an endpoint waits for its Pod, a Pod's deletion leaves the
//     endpoint until its slice changes, and a change of a Service's accounts is a service
//     change (a full push).
//   - Istio's config kinds (ServiceEntry, WorkloadEntry, VirtualService, DestinationRule,
//     Sidecar, Gateway, read as networking.istio.io/v1; PeerAuthentication,
//     AuthorizationPolicy and RequestAuthentication, read as security.istio.io/v1) go into the control plane's config store, from which the
//     Aggregate takes them like objects from files. Like istiod, the informers need every one
//     of those CRDs installed: until each has listed once, Synced stays open.
//
// Informer callbacks only queue what they saw; one goroutine (Run's) owns the state, converts
// and notifies, in the order the API server reported the changes.
package kube
