// Package istioconfig is the leaf every part of xdslab shares for Istio config objects: the
// kinds (ServiceEntry … RequestAuthentication), an object's key and metadata, Config (metadata
// plus its istio.io/api spec), the spec registry (an empty spec per kind, the apiVersions each
// kind is served under, the structural check every stored object passes), and the spec's
// wire forms (compact protojson, a Kubernetes-style JSON or YAML document).
//
// The simulator builds meshes of these objects, its sinks write them (YAML files, the
// Kubernetes API, MCP), and the control plane's config stores hold them; none of them needs
// another's package for that. istioconfig imports only istio.io/api and protobuf.
package istioconfig
