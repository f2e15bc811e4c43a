// Package fleet runs many fake Envoy clients (package fakeenvoy) against one control plane, as
// the lab's instrument: groups of identical clients (Group: an identity template, a client
// configuration, an optional per-namespace credential, ClientAuth), started on a ramp, churned
// (Churn: each run lasts a random time, then the client restarts as a new Envoy process), and
// measured. New builds a fleet from Config; Start runs it, Stop ends it.
//
// The fleet tees its clients' hooks (fakeenvoy.Tee) into package measure's Observer and
// Matcher (and one Observer per client group, groups.go); it serves their figures on /metrics
// (metrics.go) and exports them as Figures (plain counts and HDR histograms), which bench
// turns into summary rows: the instrument does not know the report format. The clients also
// report each response's receive backlog, how far the fleet is behind in reading what the
// server sent (xdslab_fleet_receive_backlog_seconds). Incomplete says, per group and reason,
// why clients never reached a full config; Progress is a light view for live reporting.
//
// Scale: all the fleet's clients share one machine.Interner (package fakeenvoy/machine: decoded
// resources and accepted sets), one emulated istio-agent (istioagent.Agent: one CA, a workload certificate per
// client), and one buffer pool with a tier at every power of two (pool.go). A client on a
// plaintext connection of its own (no auth, no shared connection, the real clock, no
// Config.DialOptions) runs on the fleet's own transport, internal/h2client: one HTTP/2
// connection and stream read and written by the client's two goroutines, a 32 KiB receive
// buffer from a shared pool only while there is something to read, the kernel's receive
// time on every response, and one copy among them of a large response that reaches many alike
// (h2client.Shared: a full config pushed to the fleet). The others use grpc-go (32 KiB
// read/write buffers, the codec's clock).
// BenchmarkFleetHeapPerClient measures a client's heap and CPU on a 1,000-service mesh
// (docs/performance.md).
//
// Beyond one process, Config.Segment {Index, Count} makes a fleet one shard of a larger
// one: it builds only the clients k with k mod Count == Index, each with the index, node, seed
// and ramp slot it has in the whole fleet, so Count shards started together are that fleet.
// The matcher's per-event results (measure.MatchResults.Events) are what a merge of shards
// combines.
//
// Each client dials its own gRPC connection, as Envoy. Group.StreamsPerConn N > 1 (or
// Config.StreamsPerConn, the default of groups that set none) makes each N consecutive
// clients of a group share one HTTP/2 connection, never with another group's: fewer sockets,
// and a lighter workload for both ends than as many Envoys (docs/scenarios.md, Connection
// layout).
package fleet
