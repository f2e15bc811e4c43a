// Package mcp speaks Istio's "MCP over xDS": the wire format and both ends of the protocol
// istiod uses for an `xds://` config source.
//
// A client opens a SotW ADS stream with node metadata GENERATOR=api and asks, with no resource
// names, for core/v1alpha1/MeshConfig and for every config collection by its
// group/version/Kind type URL (networking.istio.io/v1/ServiceEntry, …; Collections lists
// them). Each response is the full state of its type: a list of istio.mcp.v1alpha1.Resource
// (metadata name "namespace/name", a per-object version, labels, annotations; body an Any of
// the Istio proto, type.googleapis.com/istio.networking.v1alpha3.ServiceEntry, …). Objects
// missing from a response are deleted.
//
// The codec (Encode, Decode, ContentVersion) maps those resources to and from istioconfig.Config.
// Decode checks the envelope only (name, body type, a body that unmarshals); the client runs
// the config package's validation on top. Server (server.go) publishes a state (type URL →
// objects) to any number of streams, full state per type, with a bounded queue per stream so
// that a slow subscriber never delays the others. The client is controlplane/mcpsource.
package mcp
