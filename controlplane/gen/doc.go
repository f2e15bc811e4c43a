// Package gen holds the xDS generators: pure functions that turn a proxy, an immutable
// model.Snapshot and the resource names a client asked for into Envoy v3 resources (CDS, EDS,
// LDS, RDS). They do no I/O and read no clock, so the ADS server can call them from any
// connection goroutine and the marshalled-resource cache can reuse their output.
//
// Two families exist, chosen by ForType from the proxy's GENERATOR metadata:
//
//   - Sidecar (Envoy): Istio-style outbound clusters "outbound|PORT|SUBSET|HOST", inbound
//     clusters "inbound|PORT||", BlackHoleCluster, PassthroughCluster and
//     InboundPassthroughCluster; listeners "0.0.0.0_PORT" (HTTP, RDS "PORT"), "VIP_PORT" (TCP),
//     virtualOutbound (15001) and virtualInbound (15006); route configurations "PORT".
//   - Proxyless gRPC (GENERATOR=grpc): API listeners and route configurations named
//     "HOST:PORT", EDS (or LOGICAL_DNS) clusters, the same ClusterLoadAssignments.
//
// Every Resource carries the ConfigKeys it was built from (Deps) for cache invalidation, and
// CacheKey/CacheKeys give a lookup key that changes whenever any input of a resource changes,
// so marshalled bytes can be shared across clients and snapshots.
//
// Errors never drop good output: a bad VirtualService or DestinationRule costs only the routes
// or clusters it breaks; Generate returns everything else with the joined errors.
package gen
