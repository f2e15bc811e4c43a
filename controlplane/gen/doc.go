// Package gen holds the xDS generators: pure functions that turn a proxy, an immutable
// model.Snapshot and the resource names a client asked for into Envoy v3 resources (CDS, EDS,
// LDS, RDS). They do no I/O and read no clock, so the ADS server can call them from any
// connection goroutine, and the marshalled-resource cache can reuse their output.
//
// # Use
//
//	g := gen.ForType(typeURL, proxy)            // nil for a type URL not served here
//	rs, err := g.Generate(proxy, snap, names)   // names nil or "*" = wildcard
//	// rs is sorted by name and valid even when err != nil (err joins every problem found:
//	// one bad VirtualService costs only its own routes)
//	b, _ := gen.Marshal(rs[i].Message)          // vtprotobuf when built with -tags vtprotobuf
//
// Generated messages may share immutable sub-messages: never modify one.
//
// SDSSecrets (sds.go) builds Istio's SDS secrets "default" (the workload certificate) and
// "ROOTCA" (the trusted root) from PEM; the ADS server serves them over ADS to authenticated
// streams (SecretType, never cached: Cacheable).
//
// # mTLS (tls.go, peerauth.go)
//
// Auto-mTLS, as istiod: an endpoint whose tlsMode is "istio" (its security.istio.io/tlsMode
// label; else a ServiceEntry or WorkloadEntry endpoint with a service account) carries the
// metadata envoy.transport_socket_match {tlsMode: istio}, unless its workload's
// PeerAuthentication disables the port; every outbound cluster of a mesh-internal service whose
// namespace (or mesh) PeerAuthentication is not DISABLE and that no DestinationRule gives tls
// settings gets transport_socket_matches: mTLS (SDS "default"/"ROOTCA" on the istio-agent's
// sds-grpc, SANs the service accounts, SNI "outbound_.PORT_.SUBSET_.HOST", ALPN "istio"[, "h2"])
// for those endpoints, plaintext for others. A DestinationRule's ISTIO_MUTUAL (also port-level or
// subset) is a plain transport socket with its secrets over ADS (xdslab's SDS) for a proxy whose
// stream authenticated, from the agent (sds-grpc, as istiod) for any other; DISABLE keeps
// plaintext. Proxyless gRPC clusters stay plaintext (grpc-go takes no SDS). PeerAuthentication
// (security.istio.io) picks the inbound mode of each of the proxy's ports: mesh-wide
// (RootNamespace), then namespace, then a workload policy whose selector matches the proxy's
// labels, then its portLevelMtls; UNSET inherits, no policy means PERMISSIVE. virtualInbound
// has istiod's chains per port and mode (STRICT: mTLS; PERMISSIVE: mTLS by ALPN, plain TLS for
// TCP, plaintext; DISABLE: plaintext), catch-all chains to InboundPassthroughCluster, and a
// BlackHole chain for 15006 itself. SIMPLE and MUTUAL originate TLS (originateTLS): SNI, CA
// and client certificate as the agent's file secrets, auto SNI/SAN validation without an SNI.
//
// # Authorization (authz.go)
//
// AuthorizationPolicy becomes istiod's RBAC filters on every virtualInbound chain of a sidecar
// (not the BlackHole one) and on every chain of a router's listeners: envoy.filters.http.rbac
// first in an HCM's filters, or envoy.filters.network.rbac before a tcp_proxy; one filter per
// CUSTOM provider (a DENY of its rules, as istiod for a provider its mesh config lacks; on
// HTTP chains before jwt_authn), then one per action, AUDIT (LOG), DENY, ALLOW;
// dry-run policies as shadow rules; rule i of NAME in NS named "ns[NS]-policy[NAME]-rule[i]";
// an ALLOW without rules matches nothing. Policies of the root namespace and the proxy's apply
// when their selector matches its labels (model.AuthorizationPolicySelects; never with a
// targetRef; a proxyless gRPC server's listener carries them as istiod's grpcgen builds them,
// grpcserver.go). HTTP-only conditions on a TCP chain, and
// the conditions xdslab does not generate anywhere (path templates, experimental keys), drop an
// ALLOW rule and are left out of a DENY or AUDIT rule.
//
// # Request authentication (jwt.go)
//
// RequestAuthentication becomes istiod's envoy.filters.http.jwt_authn filter, first in the
// HCMs that carry RBAC (before it): the JWT rules of every object that selects the proxy
// (model.RequestAuthenticationSelects) pooled, ordered by issuer, named origins-i, each
// required as "it or no token" so AuthorizationPolicy decides; the payload goes to dynamic
// metadata "payload", which the RBAC request.auth matchers read. Inline jwks are inlined; a
// jwksUri alone becomes remote_jwks through outbound|PORT||HOST; an issuer alone gets a key no
// token verifies against.
//
// # Families and names (Istio's conventions)
//
// ForType picks the family from the proxy's GENERATOR metadata and node type.
//
// Sidecar (Envoy):
//   - clusters "outbound|PORT||HOST" per service port and "outbound|PORT|SUBSET|HOST" per
//     DestinationRule subset (EDS over ADS, service_name = cluster name; STRICT_DNS, or
//     LOGICAL_DNS for DNS_ROUND_ROBIN, with inline endpoints for DNS services; ORIGINAL_DST
//     for passthrough ones; envoy.clusters.dynamic_forward_proxy, without subsets, for the
//     wildcard hosts of DYNAMIC_DNS ServiceEntries, whose HTTP connection managers and TLS
//     chains get the dynamic forward proxy filters: dfp.go),
//     "inbound|PORT||" per port of the proxy's own services (services with an endpoint at the
//     proxy's IP; ORIGINAL_DST bound to 127.0.0.6, with the service's DestinationRule
//     connection pool) or per ingress port of its Sidecar (sidecaringress.go: STATIC to the
//     defaultEndpoint, ORIGINAL_DST without one), BlackHoleCluster, PassthroughCluster, InboundPassthroughCluster
//     (no circuit breaking, upstream HTTP in the downstream's protocol);
//   - listeners "0.0.0.0_PORT" (HTTP/HTTP2/GRPC ports: HTTP inspector, a chain for plaintext
//     HTTP with an HTTP connection manager, RDS "PORT", and a passthrough default chain),
//     "VIP_PORT" (TCP ports: tcp_proxy, or the VirtualServices' tcp routes as istiod builds
//     them: destination-subnet chains, a catch-all, weighted clusters; tcproute.go),
//     "0.0.0.0_PORT" for a VIP-less TCP service (a prefix_ranges chain per CIDR service,
//     passthrough for the rest), "IP_PORT" per endpoint of a headless Kubernetes Service or of a NONE ServiceEntry without addresses with a workloadSelector, virtualOutbound (15001) and virtualInbound (15006), each with
//     a BlackHole chain for its own port; every HTTP connection manager runs the fault and CORS
//     filters, then the router;
//   - route configurations "PORT" with a virtual host "HOST:PORT" per service (FQDN, short
//     names for the proxy's namespace, VIPs, each with and without ":PORT") and "allow_any" last
//     ("block_all", a 502, under a Sidecar's REGISTRY_ONLY). The catch-alls of virtualOutbound
//     and of each 0.0.0.0_PORT listener, and allow_any, follow the Sidecar's
//     outboundTrafficPolicy as istiod's: PassthroughCluster, BlackHoleCluster (REGISTRY_ONLY)
//     or the egressProxy's cluster (outbound.go).
//     Routes carry what istiod's route.TranslateRoute puts there (routefeatures.go): header
//     operations (route and destination level), mirrors, fault per-route config, URI rewrites
//     for every match type, redirects, CORS (not for proxyless gRPC, which has no CORS filter),
//     DestinationRule consistent-hash policies and istiod's retry policy (previous_hosts, 5 host
//     re-picks, retriable status codes). A root VirtualService's delegate routes are the
//     delegate's, merged with them as istiod merges them (model.MergeDelegates, read through
//     Snapshot.VirtualServices). Its tls routes give a TLS or HTTPS port chains by SNI
//     (tlsroutes.go).
//
// Router (node type "router", a gateway; gateway.go): from the Gateways whose selector matches
// the router's labels and the VirtualServices bound to them (gateways "ns/name", a bare name in
// the VS's namespace, legacy "name.ns"; exported to the gateway's namespace), never sidecar
// listeners: "0.0.0.0_PORT" per server port (HTTP: RDS "http.PORT" with a virtual host
// "HOST:PORT" per exposed VS host; TLS PASSTHROUGH: TLS inspector and an SNI filter chain per
// tls route; TCP: the first matching tcp route; HTTPS terminating TLS (SIMPLE, MUTUAL,
// OPTIONAL_MUTUAL, ISTIO_MUTUAL; a credentialName's "kubernetes://NAME" over ADS, certificate
// files as the agent's "file-cert:"/"file-root:" secrets, or the agent's "default"/"ROOTCA"):
// a filter chain per server with RDS "https.PORT.PORTNAME.GATEWAY.NS"; protocol TLS
// terminating TLS: a filter chain per server with its first matching tcp route;
// gateway_https.go; AUTO_PASSTHROUGH: a chain per port and subset of each service the hosts
// cover, by SNI "outbound_.PORT_.SUBSET_.HOST", to the SNI-DNAT cluster of that name,
// gateway_autopassthrough.go), and only the clusters those routes reference plus
// BlackHoleCluster.
//
// Proxyless gRPC (GENERATOR=grpc), as istiod's grpcgen (docs/parity.md, "Proxyless gRPC"): API
// listeners named as asked, "HOST:PORT" or a short name of the proxy's namespace, for every
// port the proxy's Sidecar imports; route configurations "FQDN:PORT" built as a sidecar's for
// the port and reduced to the service's virtual host (none for a port that is not HTTP), with
// istiod's retry policies, redirects and direct responses but no CORS; outbound EDS clusters
// (passthrough services too) or LOGICAL_DNS ones for DNS services, with only the max_requests
// circuit breaker and no outlier detection; the same ClusterLoadAssignments.
//
// # Caching
//
// Generators do not cache. The ADS server caches marshalled resources keyed by (type, class,
// name) and stamped with a snapshot generation (controlplane/xds); KeyScope gives the proxy
// attributes a generator reads and ViewKey the proxy's view of the mesh (for listeners also which
// source-conditioned tcp and tls matches select the proxy), so the server can share bytes
// among proxies of one class.
//
// # Scope
//
// Every generator builds only what the proxy's model.Scope sees (Snapshot.ScopeFor: the Sidecar
// that applies, egress hosts, exportTo of services, VirtualServices and DestinationRules): a
// port's outbound listeners and route configuration from the egress listener that holds the
// port (Scope.Egress, then Scope.CatchAll), clusters from every egress listener.
// Inbound clusters and listeners are not scoped, except by the Sidecar's ingress listeners and
// inboundConnectionPool (sidecaringress.go); HTTP, TCP and sniffed egress ports with a bind
// address or captureMode NONE get BIND_PORT listeners (egressbind.go). A named EDS request is answered for any name;
// the wildcard EDS list is scoped. Each
// Resource also lists the ConfigKeys it was built from (Deps; services as ServiceKey, their
// endpoints as EndpointKey), recorded in the golden files so a change in what a resource reads
// shows up in review.
//
// # Selection rules
//
// One DestinationRule applies per host, as istiod picks it (destrule.go: the proxy's namespace,
// then the service's, then the root namespace, the most specific host in each, rules of one
// namespace merged);
// VirtualServices are read in istiod's order (private to the proxy's namespace, exported to it,
// public; each by creation time, name, namespace): a sidecar takes the HTTP routes of the first
// one for the host (an exact host over a wildcard, the most specific wildcard first) and the
// tcp routes of every one, a gateway the HTTP routes of every one bound to it, in that order;
// all among those the proxy's scope admits (a VirtualService exported to it and imported by its
// Sidecar; DestinationRules as destrule.go chooses them). Proxies with the same view share
// outbound clusters; assignments are shared by all, except where locality load balancing
// applies.
//
// # Locality load balancing (locality.go)
//
// As istiod with its default mesh config: where a DestinationRule's policy (port and subset
// merged) has outlier detection, the assignment's localities get priorities against the
// proxy's locality (ProxyLocality: topology labels, else its workload in the registry, else
// its node): 0 same subzone, 1 same zone, 2 same region, 3 elsewhere, compacted; failover
// (region to region) and failoverPriority (labels) refine it; distribute reweights localities
// with or without outlier detection; enabled: false turns it off. A zoneAwareLbSetting takes
// precedence: with or without outlier detection, failoverPriority then the region alone (the
// proxy's, the failover target, the others), and the cluster's zone_aware_lb_config
// (routing_enabled 0 % and no ranking for enabled: false). DNS clusters' inlined endpoints
// too. Such an assignment is the proxy's: LocalityClass names what it reads of the
// proxy, LocalityDependent the hosts it concerns, so the ADS server caches one assignment per
// (cluster, locality class) and keeps every other one shared.
package gen
