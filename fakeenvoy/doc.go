// Package fakeenvoy is a fake Envoy ADS client that behaves like Envoy against any control
// plane (ours, Istio's, go-control-plane based ones), speaking only the public xDS protocol.
// Package fakeenvoy/fleet runs many of them; fakeenvoy/policy holds the NACK and ACK policies
// they are scripted with, fakeenvoy/validate what Envoy and grpc-go reject; internal/h2client
// is the gRPC transport of a client on a connection of its own and internal/rxstamp its kernel
// receive stamps.
//
// Each client is a pure state machine (package fakeenvoy/machine: no I/O, no clock reads) wrapped
// by a thin gRPC shell (Client.Run). The machine takes "stream started", "response received at t"
// and "timer fired at t" and returns the requests to send, the ACK/NACK decision, the hooks to
// call and the next deadline to arm. Each response is stamped with its receive time (monotonic
// clock): the kernel's arrival time of the message's last byte for a client on a plaintext
// connection of its own (the fleet runs those on internal/h2client, which reads the socket on
// the goroutine that receives), otherwise the time the client's codec took when the transport
// handed it the message's bytes, before decoding. The shell owns the machine on one goroutine
// per client. A client with kernel stamps reads its responses on that goroutine too, since
// their stamps do not depend on when they are read; its machine's deadline, while one is armed,
// fires on a second goroutine, and a lock keeps the two apart. Any other client has a second
// goroutine that only forwards Recv results, so that each is stamped as it arrives while the
// owner may still be busy with the one before.
//
// The machine by concern (its doc.go lists its files): a wire adapter per protocol (SotW,
// Delta, proxyless gRPC) reads a response into one update and builds the requests; apply.go
// applies an update whatever carried it; rules.go holds what Envoy rejects, with package
// validate's checks of a resource (Envoy's, and grpc-go's); warming.go is the init manager
// (initial fetch, warming, full config). Transcripts in fakeenvoy/machine/testdata
// (TestMachineTranscripts) script a machine event by event — streams, responses with
// abbreviated resources, time — with the requests, ACKs and NACKs each must send and when the
// client holds full config. This package is the shell: Client (client.go), its configuration
// (config.go), node identities (identity.go), Tee, and what it publishes of its blocker
// (blocked.go).
//
// State of the world (SotW) follows Envoy's order: CDS wildcard first; after every CDS response
// that changed something, one EDS request naming every EDS cluster, sent before the CDS ACK;
// LDS once the initial clusters have warmed (a fresh ClusterLoadAssignment each) or
// initial_fetch_timeout passed; after every LDS response that changed something, one RDS
// request naming every route config referenced by HTTP connection managers, sent before the LDS
// ACK. ACK = response version + nonce; NACK = last accepted version + nonce + error_detail
// (code 13, as Envoy). Identical resources are skipped: no re-warm, no request. Identical is
// the same bytes or, as Envoy compares them (MessageUtil::hash), the same message: a resource
// whose bytes differ from the held copy's but not its size (a control plane marshalling maps
// in a random order, as Go's default Marshal does) is compared field by field, map entries in
// any order and Anys by what they pack.
//
// Delta follows the same order with subscribe/unsubscribe diffs, legacy wildcard for CDS/LDS
// and initial_resource_versions on reconnect; ACK = nonce, NACK = nonce + error_detail. As in
// SotW (and Envoy's Delta mux, which queues the ACK once the update is applied), the
// subscriptions a response causes go before its ACK.
//
// Warming: a new or changed EDS cluster waits for a ClusterLoadAssignment, a listener for its
// route configurations, each up to the initial_fetch_timeout of the config source it names
// (eds_config, the HCM's rds.config_source, a secret's sds_config; 0s waits forever, as Istio
// sets it; when it gives none, Envoy's ConfigSource default, ClientConfig.SourceFetchTimeout,
// 15s, whatever the bootstrap says). The bootstrap CDS and LDS wait
// ClientConfig.InitialFetchTimeout (Envoy's 15s by default; Istio's bootstrap sets 0s). A
// Delta client cannot ask again for an assignment it holds: it uses that one only when the
// timeout expires (Envoy's EDS cache on FetchTimedout). While a resource warms, the copy it
// replaces stays in effect (Client.Effective); Resource is what was received.
//
// Draining (the machine's drain.go): a listener an LDS update removes or replaces drains for
// ClientConfig.ListenerDrain (Envoy's --drain-time-s: 600s by default; istio-agent passes
// 45s) with its filter chains, whose route configurations and SDS secrets on ADS (a gateway's
// credentialName secrets, kubernetes://...) stay subscribed meanwhile: the RDS and SDS
// requests an LDS change causes still name them (Delta: no unsubscribe yet), the client
// applies and ACKs what the server sends of them, and the request that leaves them out goes
// when the drain ends. A listener whose route configuration or secret never arrived took no
// traffic and goes at once. The agent's secrets (sds-grpc) are not on ADS: the client asks
// the agent for each once per process and keeps it.
//
// SDS (the machine's sds.go): a cluster or listener whose TLS transport socket names SDS secrets
// warms until they arrive (up to its sds_config's initial_fetch_timeout). Each secret comes from
// where its sds_config says, as with Envoy and its istio-agent: secrets on ADS are asked of the
// control plane (one SDS subscription naming every such secret, right after the CDS or LDS
// response); secrets on the agent's bootstrap cluster sds-grpc (istiod's auto-mTLS "default" and
// "ROOTCA") are served by the fleet's emulated istio-agent (package istioagent: a lab CA, a real
// SPIFFE workload certificate per client, an issue delay, no network); path sources are read from
// the file. Client.Blocked (machine.Blocker) and fleet.Fleet.Incomplete say why a client has no
// full config: which secret from which source and why it cannot arrive, which clusters wait for
// endpoints. fleet.Group.Auth (fleet.ClientAuth) gives each client a TLS credential for its
// namespace.
//
// Resync (probe.ResyncHook): after a reconnect, a client that held a full config holds one
// again once every type the server owes an answer on the new stream has answered and its
// configuration is complete (warmed); one observation per stream that gets there, none for a
// stream that ends first. In SotW every restated subscription is owed an answer, but for a
// wildcard type the client holds nothing of (go-control-plane sends nothing for a type that is
// empty at the version restated). In Delta a server owes nothing for the resources
// initial_resource_versions restated (go-control-plane answers CDS and LDS with no-ops, EDS and
// RDS not at all): a type is owed one only when it holds a resource without a version (applied
// from a NACKed response) or, named, subscribes to a name it does not hold. When no type is,
// the client holds its full config from the stream's start, as Envoy keeps its config across a
// reconnect: a resync of 0, reported once the stream is connected. What the server sends
// afterwards is an update like any other (it may warm).
//
// A stream counts as connected (probe.Hooks.Connected) once its response headers or its first
// response arrive; until then a failure is a connect failure, with its gRPC code. A grpc-go
// server (go-control-plane's) sends headers lazily, with its first response: a client whose
// server answers nothing yet (no snapshot for its node; in Delta, nothing owed) is not counted
// as connected, nor resynced, until it does.
//
// Restart (churn) makes a client a new process: no versions, resources or initial versions.
// The node goes on every request, or only on a stream's first with NodeOnFirstOnly (Istio's
// set_node_on_first_message_only): the first of every stream, a reconnect's and a restarted
// process's too, SotW and Delta; IdentityTemplate.IstioMetadata sends an Istio-sized node.
//
// Bootstrap profiles (bootstrap.go): a ClientConfig's zero values are plain Envoy's
// (BootstrapEnvoy: the node on every request, a 15s initial_fetch_timeout on the bootstrap CDS
// and LDS, a 600s drain). The fleet's front ends default to BootstrapIstio, what istio-agent's
// bootstrap template and command line give Envoy (set_node_on_first_message_only: true,
// initial_fetch_timeout: 0s on CDS and LDS, --drain-time-s 45s), since the fleet otherwise
// behaves as istio-agent's Envoy (its SDS secrets, its issue delay) and istiod is its first
// target: a scenario's clients[].bootstrap and xdslab fleet --bootstrap, whose profile fills
// the three settings the group or the flags do not give (Profile.Apply). A profile also says
// whose connection reaches the control plane (Profile.Window): Envoy's own, or under Istio's
// the agent's xDS proxy's gRPC connection, with its 1 MiB windows (set per fleet group).
//
// A gRPC client (ClientConfig.GRPC; see package validate's grpc.go) behaves like grpc-go's
// xDS client instead: SotW with named subscriptions from its targets' API listeners down to
// EDS, no warming, grpc-go's resource rules, the node on a stream's first request only and
// NACKs with code 3 (INVALID_ARGUMENT), as grpc-go sends them.
//
// NACK policies (policy.Nack) combine a probability, every Nth response, a resource-name
// regexp and "realistic" rejection of what Envoy rejects (PGV ValidateAll failures,
// recursively inside every Any; undecodable resources; duplicate names; a Delta name both
// added and removed; a listener taking an address another holds, its own or an additional one,
// bound or not, as Envoy compares them; filter chains with identical
// matches; what Envoy rejects building a cluster, listener or route configuration, as package
// validate's Cluster, Listener and RouteConfig list it). As in Envoy, what fails as a response is decoded (undecodable bytes, a resource's
// own PGV constraints, Delta duplicates) rejects the whole response; for CDS and LDS, what fails
// as one resource is built (what its Anys pack, a SotW duplicate's later copy, the other rules)
// leaves the other resources applied, and the response is still NACKed. policy.Ack adds Envoy's apply time before the ACK, a hung client
// that never ACKs, and disconnects after N responses.
//
// A client reports what it sees to probe.Hooks (the contract in package probe), each call with
// the client's probe.ClientInfo, and each response's receive backlog (probe.BacklogHook:
// receive stamp, or the end of a scripted ACK delay, to the client done with it). Tee calls
// several hooks in order; the fleet (package fakeenvoy/fleet) tees its clients' hooks into
// package measure's Observer and Matcher.
//
// Scale (10,000 clients in one process): a fleet gives all its clients one machine.Interner,
// so clients that receive the same resource bytes share one decoded, validated, immutable
// resource (weak table, freed by the garbage collector once no client holds it); decoding and
// validation run once per distinct resource, not per client. Each client's codec (the
// machine's codec.go) reads a SotW response's resources straight from the transport's buffer
// and looks them up there, so a resource already interned is never copied for the client. The
// clients' maps of accepted resources per type are shared too (the machine's resset.go): a
// change is collected as edits and committed to an immutable set that every client applying
// the same edits to the same set adopts, with the follow-up names (EDS/RDS) it implies and
// their encoding, which SotW requests send as shared bytes. Each client keeps its node encoded
// once and sends it through its codec, which also avoids grpc-go's pooled marshalling buffers;
// the fleet's connections use grpc-go's default 32 KiB read/write buffers (an idle connection
// holds neither) and a buffer pool with a tier at every power of two (ClientConfig.BufferPool).
// A fleet's client runs one goroutine (two while a deadline is armed); any other client two: its
// owner and its receiver. BenchmarkFleetHeapPerClient
// (package fleet) measures a client's heap and CPU on a 1,000-service mesh
// (docs/performance.md).
package fakeenvoy
