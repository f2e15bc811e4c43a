// Package mcpsource is the control plane's MCP-over-xDS config source (`xds://host:port`), the
// client side of what istiod does for an `xds://` entry of its configSources: one SotW ADS
// stream with node metadata GENERATOR=api, a request with no resource names for
// core/v1alpha1/MeshConfig and for every Istio config collection (internal/mcp lists them),
// each response taken as the full state of its type. Objects of the kinds xdslab uses go into
// the control plane's config store; the others are acknowledged and ignored, as istiod ignores
// kinds it does not watch.
//
// The pure core (State.Response) turns one response into upserts, deletes and rejections
// against what the source holds: an object is written only when its version changed (or, when
// the server sets no versions, when its content changed); an object missing from a response is
// deleted. Run is the I/O shell: it dials, subscribes, applies each response to the store in
// one batch, answers ACK or NACK, and reconnects with exponential backoff and jitter.
//
// Where it differs from istiod (pkg/adsc), on purpose (docs/mcp.md has the table):
//   - An invalid object (bad envelope, body of the wrong type, a name used twice, a spec that
//     breaks Istio's validation rules) is rejected: the response is NACKed with an error that
//     names each object and the rule it breaks, the object keeps its last good version (or stays
//     absent), the other objects of the response are applied, and the rejection is logged and
//     counted. istiod ACKs: an object that does not decode is dropped (its previous version
//     deleted), one that breaks validation is stored as is.
//   - A server that cannot be reached at startup is retried (readiness waits); istiod does not
//     start. A lost stream keeps the last good config (logged, counted, Connected drops to 0)
//     and is reopened with backoff.
//
// Synced is closed once every requested collection has been answered at least once.
package mcpsource
