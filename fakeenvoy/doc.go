// Package fakeenvoy is a fleet of fake Envoy ADS clients that behave like Envoy against any
// control plane (ours, Istio's, go-control-plane based ones), speaking only the public xDS
// protocol.
//
// Each client is a pure state machine (machine: no I/O, no clock reads) wrapped by a thin gRPC
// shell (Client.Run). The machine takes "stream started", "response received at t" and "timer
// fired at t" and returns the requests to send, the ACK/NACK decision, the hooks to call and the
// next deadline to arm. The shell owns the machine on one goroutine per client; a second
// goroutine only forwards Recv results, stamped with their receive time (monotonic clock): the
// kernel's arrival time of the message's last byte for a client on a plaintext connection of
// its own (package internal/rxstamp), otherwise the time the client's codec took when the
// transport handed it the message's bytes, before decoding.
//
// The machine by concern (machine.go lists its files): a wire adapter per protocol (SotW,
// Delta, proxyless gRPC) reads a response into one update and builds the requests; apply.go
// applies an update whatever carried it; rules.go holds what Envoy rejects and grpc.go what
// grpc-go rejects; warming.go is the init manager (initial fetch, warming, full config).
// Resource types are rtype values (CDS, EDS, LDS, RDS, SDS). Transcripts in testdata/machine
// (TestMachineTranscripts) script a machine event by event — streams, responses with
// abbreviated resources, time — with the requests, ACKs and NACKs each must send and when the
// client holds full config.
//
// State of the world (SotW) follows Envoy's order: CDS wildcard first; after every CDS response
// that changed something, one EDS request naming every EDS cluster, sent before the CDS ACK;
// LDS once the initial clusters have warmed (a fresh ClusterLoadAssignment each) or
// initial_fetch_timeout passed; after every LDS response that changed something, one RDS
// request naming every route config referenced by HTTP connection managers, sent before the LDS
// ACK. ACK = response version + nonce; NACK = last accepted version + nonce + error_detail
// (code 13, as Envoy). Identical resources (same bytes) are skipped: no re-warm, no request.
//
// Delta follows the same order with subscribe/unsubscribe diffs, legacy wildcard for CDS/LDS
// and initial_resource_versions on reconnect; ACK = nonce, NACK = nonce + error_detail. As in
// Envoy's Delta mux, the ACK of a response goes before the subscriptions it causes.
//
// Warming: a new or changed EDS cluster waits for a ClusterLoadAssignment, a listener for its
// route configurations, each up to the initial_fetch_timeout of the config source it names
// (eds_config, the HCM's rds.config_source; 0s waits forever, as Istio sets it; the client's
// InitialFetchTimeout, default 15s, when none is given, and for the bootstrap CDS and LDS). A
// Delta client cannot ask again for an assignment it holds: it uses that one only when the
// timeout expires (Envoy's EDS cache on FetchTimedout). While a resource warms, the copy it
// replaces stays in effect (Client.Effective); Resource is what was received.
//
// SDS (sds.go): a cluster or listener whose TLS transport socket names SDS secrets warms until
// they arrive (up to its sds_config's initial_fetch_timeout). Each secret comes from where its
// sds_config says, as with Envoy and its istio-agent: secrets on ADS are asked of the control
// plane (one SDS subscription naming every such secret, right after the CDS or LDS response);
// secrets on the agent's bootstrap cluster sds-grpc (istiod's auto-mTLS "default" and
// "ROOTCA") are served by the fleet's emulated istio-agent (agent.go: a lab CA, a real SPIFFE
// workload certificate per client, an issue delay, no network); path sources are read from
// the file. Client.Blocked and Fleet.Incomplete (blocked.go) say why a client has no full
// config: which secret from which source and why it cannot arrive, which clusters wait for
// endpoints. Group.Auth (ClientAuth) gives each client a TLS credential for its namespace.
//
// Restart (churn) makes a client a new process: no versions, resources or initial versions.
// The node goes on every request, or only on a stream's first with NodeOnFirstOnly (Istio's
// set_node_on_first_message_only); IdentityTemplate.IstioMetadata sends an Istio-sized node.
//
// A gRPC client (ClientConfig.GRPC; see grpc.go) behaves like grpc-go's xDS client instead:
// SotW with named subscriptions from its targets' API listeners down to EDS, no warming, and
// grpc-go's resource rules.
//
// NACK policies (package policy: Nack) combine a probability, every Nth response, a resource-name regexp
// and "realistic" rejection of what Envoy rejects (PGV ValidateAll failures, recursively inside
// every Any; undecodable resources; duplicate names; a Delta name both added and removed;
// listeners binding the same address; filter chains with identical matches). For CDS and LDS
// the valid resources are applied and the whole response is still NACKed, as Envoy does. policy.Ack adds Envoy's apply
// time before the ACK, a hung client that never ACKs, and disconnects after N responses.
//
// A client reports what it sees to probe.Hooks (the contract in package probe), each call with
// the client's probe.ClientInfo. The fleet (fleet*.go) runs many clients and tees their hooks
// into package measure's Observer and Matcher (and one Observer per client group); it serves
// their figures on /metrics and exports them as Figures (plain counts and HDR histograms),
// which bench turns into summary rows: the instrument does not know the report format. The
// clients also report each response's receive backlog (probe.BacklogHook: receive stamp, or
// the end of a scripted ACK delay, to the client done with it), how far the fleet is behind in
// reading what the server sent (xdslab_fleet_receive_backlog_seconds).
//
// Scale (10,000 clients in one process): a fleet gives all its clients one Interner, so clients
// that receive the same resource bytes share one decoded, validated, immutable resource (weak
// table, freed by the garbage collector once no client holds it); decoding and validation run
// once per distinct resource, not per client. Each client's codec (codec.go) reads a SotW
// response's resources straight from the transport's buffer and looks them up there, so a
// resource already interned is never copied for the client. The clients' maps of accepted
// resources per type are shared too (resset.go): a change is collected as edits and committed
// to an immutable set that every client applying the same edits to the same set adopts, with
// the follow-up names (EDS/RDS) it implies and their encoding, which SotW requests send as
// shared bytes. Each client keeps its node encoded once and sends it through its codec, which
// also avoids grpc-go's pooled marshalling buffers; the fleet's connections use grpc-go's
// default 32 KiB read/write buffers (an idle connection holds neither) and a buffer pool with
// a tier at every power of two. A client runs two goroutines: its owner and its receiver. BenchmarkFleetHeapPerClient measures a client's heap
// and CPU on a 1,000-service mesh (docs/performance.md).
//
// Beyond one process, FleetConfig.Segment {Index, Count} makes a fleet one shard of a larger
// one: it builds only the clients k with k mod Count == Index, each with the index, node, seed
// and ramp slot it has in the whole fleet, so Count shards started together are that fleet.
// The matcher's per-event results (measure.MatchResults.Events) are what a merge of shards
// combines.
//
// Each client dials its own gRPC connection, as Envoy. Group.StreamsPerConn N > 1 (or
// FleetConfig.StreamsPerConn, the default of groups that set none) makes each N consecutive
// clients of a group share one HTTP/2 connection, never with another group's: fewer sockets,
// and a lighter workload for both ends than as many Envoys (docs/scenarios.md, Connection
// layout).
package fakeenvoy
