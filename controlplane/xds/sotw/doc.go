// Package sotw is what the ADS server (controlplane/xds) makes of a State-of-the-World
// subscription's resource names, so that an ACK restating a thousand names costs neither their
// decoding nor a thousand strings per stream.
//
// A Request (request.go) is a DiscoveryRequest whose resource_names are not decoded: the
// server's gRPC codec scans the other fields where the transport left the bytes, and only hashes
// the names (an order-independent sum and an order-dependent fingerprint) and counts them. The
// session compares that hash with the subscription's (Request.Restates) and decodes the names
// (Request.Names) only when it changed.
//
// A NameSet (nameset.go) is the immutable set of names a SotW stream subscribes to for one type,
// interned in NameSets across the server's streams: the streams that subscribe to the same names
// (every sidecar of a namespace names the same EDS clusters) share one set, one sorted list and
// one index by host, and the server answers each set once per push state for a class of
// proxies, keyed by NameSet.ID. NameSets.Lookup finds a request's set from its hash and size
// and checks it name by name on the wire bytes, once per order of names; a later request in a
// known order is recognised from its fingerprints alone. A set no stream holds any more is
// dropped by the garbage collector.
//
// Both are pure: no goroutines, no clock, no gRPC beyond the transport's buffers a Request
// references until Names or Release. The session (controlplane/xds/session.go) owns the
// protocol rules; this package only says which names a request carries.
package sotw
