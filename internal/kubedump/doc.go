// Package kubedump turns a Kubernetes cluster dump into an xdslab scenario whose topology
// reproduces it: `xdslab import` is its command.
//
// A dump is what `kubectl get svc,endpointslices,pods,serviceentries,workloadentries,
// virtualservices,destinationrules,gateways,sidecars,peerauthentications,authorizationpolicies
// -A -o yaml` prints: one `kind: List` document, or several YAML documents, in one file or many.
// Parse reads the files into objects, each with its file and line; Convert maps them onto the
// scenario's explicit mesh (topology.mesh): every Service with its ports and protocols, its ready
// endpoints counted per locality and label set (from EndpointSlices, or from the Pods its selector
// matches when the dump has no EndpointSlices), and the Istio objects the lab writes, verbatim.
// Kinds it does not model are counted and listed, never an error; a malformed dump is, with the
// file, the line and the fix. Anonymize rewrites names, hosts, label values, localities and
// addresses with keyed hashes, consistently, so that references still resolve.
//
// The package is pure: it reads bytes and returns values. cmd/xdslab reads the files and writes
// the scenario.
package kubedump
