// Package parity is the differential test of xdslab's generators against Istio's: it fetches
// CDS, EDS, LDS and RDS over ADS from two control planes serving the same Istio YAML — Istio's
// own DiscoveryServer (istiodlab) and xdslab's — as the same proxy (a sidecar with Istio's node
// id and metadata, or an ingress gateway), projects each dump into a semantic View and diffs
// the views.
//
// A View keeps what changes traffic and drops what does not: per cluster its discovery type,
// load balancer, connect timeout, circuit breakers, outlier detection, upstream HTTP protocol,
// transport socket (or transport socket matches) with SNI, ALPN, SANs and SDS secret names, and
// its endpoints (locality, priority, weight, address, health, tlsMode); per listener its
// address, listener filters and every filter chain's match, TLS and terminating filter with its
// target (route configuration, cluster or weighted clusters); per route configuration every
// virtual host's domains and routes (match, action, weights, timeouts, retries, rewrites,
// header changes, hash policy, mirrors, faults). Istio-only telemetry (stats, metadata exchange,
// access logs, tracing, the "istio" metadata and ALPN "istio-peer-exchange") and cosmetic fields
// (stat prefixes, filter chain names) are normalized away; docs/parity.md lists each exclusion
// and why it does not change traffic.
//
// Proxyless gRPC clients (node metadata GENERATOR "grpc") are fetched as grpc-go fetches
// (FetchGRPC: named LDS, then the RDS, CDS and EDS names they lead to) and projected on what
// grpc-go's xDS client reads (ProjectGRPC).
package parity
