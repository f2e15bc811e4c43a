// Package xds is the control plane's ADS server: it accepts Envoy and proxyless gRPC streams,
// keeps per-connection, per-type protocol state (subscription, nonce, versions sent, acked and
// nacked), answers requests and pushes snapshots.
//
// A stream's protocol state is a session (session.go), a pure core: SotW or Delta requests,
// push turns and flow-control ticks go in; effects come out (responses to write, notes that
// become metrics and log records, the flow-control timer's next deadline, the syncz status).
// It has no goroutines, no clock and no gRPC; the transcripts in testdata/session script it
// input by input, one or more streams on the Server's shared-subscription path, and pin the
// rules below. What a stream's client holds of a type, and what it was last sent, is the
// type's holdings (holdings.go). Its shell (conn.go) is the stream's one owner
// goroutine (the gRPC handler), which feeds the session and performs its effects; a receive
// goroutine only forwards requests to it. The owner serves requests before pushes, at most
// maxRequestStreak in a row.
// Pushes come from Server.Push: every connection whose scoped view (model.Scope: its Sidecar
// and exportTo) the change reaches, before or after it, is enqueued in the push queue (one
// pending, merged request per connection; see pushfilter.go, istiod's ProxyNeedsPush) and a bounded set of workers hands each connection its turn;
// the worker waits until the connection has generated its responses and written its clusters
// and assignments, so the throttle bounds concurrent generation; the listeners and routes
// (cached bytes, the route often the largest response) are written after the worker is let go,
// in order on the same stream. A connection that closed is dropped from the queue whenever it is met
// (by Push after enqueueing, by the worker after its turn), so none stays pinned there.
//
// Protocol rules (SotW):
//   - a request whose response_nonce is not the latest sent for its type is ignored (counted as
//     an expired nonce); an empty nonce starts or restarts a subscription;
//   - a NACK is a request with error_detail: it is logged at warning level with the client's
//     error and counted (pilot_total_xds_rejects{type}) once per nonce, even when the nonce is
//     stale; the rejected version, error and count are kept and the same content is never
//     re-sent (only a later change sends a new version);
//   - an empty resource_names on CDS/LDS is the wildcard only while the stream has never named
//     a resource of the type; after names it unsubscribes from everything;
//   - CDS/LDS responses carry every subscribed resource (wildcard: all); EDS/RDS responses carry
//     only what changed or was newly subscribed;
//   - resources whose bytes the client already holds are not re-sent, except that a cluster
//     that changed is always followed by its ClusterLoadAssignment (Envoy keeps a changed
//     cluster warming until it gets one);
//   - with flow control on, a type whose last response is not yet acked holds newer pushes,
//     merged, until the ACK/NACK or a timeout; while a push's CDS is held its LDS/RDS are held
//     too and follow the released CDS (make-before-break: no route to a cluster the client
//     has not received).
//
// Delta differs: subscription changes are honoured even on a stale nonce; the first request's
// initial_resource_versions are not re-sent while unchanged; a name subscribed again on a later
// request is always sent (the client may have dropped its copy); under a wildcard,
// unsubscribing a name is answered with that name in resources (it exists) or
// removed_resources (it does not), and it stays covered by the wildcard.
//
// Admission: a new stream takes a token from a bucket (Options.AdmissionRate per second, up to
// AdmissionBurst at once); when none is left it waits for the next one up to
// Options.AdmissionWait, and only a stream whose token would come later is refused with
// ResourceExhausted, so a reconnect burst is spread out rather than bounced.
//
// SDS (sds.go): with Options.Secrets, a stream authenticated by the secure listener's
// interceptor carries its identity (model.Proxy.Identity, set from the stream context, never
// from the node) and gets that identity's "default" and "ROOTCA" secrets over ADS; secrets
// bypass the shared cache and are built per response. A stream with no verified identity (the
// plaintext listener) gets empty SDS responses. PushSecrets pushes rotated certificates to the
// streams of their identities; only changed secrets are re-sent.
//
// Resources are marshalled once and shared through controlplane/cache; responses are encoded by
// concatenating the cached bytes (see codec.go), so a push to many clients does not marshal per
// client. What a stream keeps is shared too (package controlplane/xds/sotw): a SotW request's
// names are hashed by the codec, not decoded (sotw.Request), and its subscription is an
// interned sotw.NameSet (found from the request's hash and bytes, without decoding the names);
// the answer to a whole subscription is built once per push state per class and shared by
// every stream subscribed to the same names (pushState.sharedAnswer, sharedanswer.go), SotW
// CDS/LDS remember the shared list they sent, and a named SotW subscription its last whole
// answer plus what went out since (holdings). A named
// ClusterLoadAssignment changes only with its service, endpoints and (subsets, locality load
// balancing) configs (Server.genOf), so a full push that names no DestinationRule diffs EDS only
// for the hosts it names. Where locality load balancing makes an assignment the proxy's, it is
// cached per (cluster, gen.LocalityClass): proxies of one locality share it, and every other
// assignment stays shared by all. A push compares the list a class of streams holds with the new one once per push
// state (listdiff.go), keeping only pairs asked for twice, never a stream's own list.
package xds
