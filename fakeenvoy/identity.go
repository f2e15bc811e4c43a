package fakeenvoy

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// IdentityTemplate builds Istio-style node identities for a fleet.
type IdentityTemplate struct {
	// Type is the Istio proxy type: "sidecar" (default) or "router" (a gateway).
	Type string
	// Namespace of every client (default "default"), unless Namespaces > 0 spreads the clients
	// round-robin over ns-0 .. ns-(Namespaces-1), NamespaceNames spreads them round-robin over
	// those names, or NamespaceCounts places them (the first placement wins, in the order
	// NamespaceCounts, NamespaceNames, Namespaces, Namespace).
	Namespace      string
	Namespaces     int
	NamespaceNames []string
	// NamespaceCounts places the group's clients by their position in it: the first Count of
	// the first entry, then the next entry's; past the last, round-robin over the entries.
	NamespaceCounts []NamespaceCount
	// groupStart is the fleet index of the group's first client (set by the fleet, see
	// WithGroupStart), which NamespaceCounts positions count from.
	groupStart int
	// ClusterID (default "Kubernetes"), IstioVersion (default "1.28.0"), Generator (omitted
	// when empty; "grpc" marks proxyless gRPC clients).
	ClusterID, IstioVersion, Generator string
	// Labels go to metadata LABELS.
	Labels map[string]string
	// IPBase is the first client address; client i gets IPBase + i. The default, 100.64.0.1
	// (shared address space), keeps fake proxies off the simulator's 10.0.0.0/8 endpoint
	// addresses: a proxy whose IP is an endpoint gets inbound config of its own, so a chance
	// collision would change what the control plane generates for it.
	IPBase string
	// IstioMetadata adds what a real Istio sidecar's node carries besides the basics (istio-
	// agent's PROXY_CONFIG, ANNOTATIONS, POD_PORTS, OWNER, ..., Envoy's extensions list and
	// client features): a node of about 5 KB instead of a few hundred bytes, so that a
	// control plane's node decoding costs what it costs against a real fleet.
	IstioMetadata bool
}

// NamespaceCount is how many of a group's clients live in one namespace.
type NamespaceCount struct {
	Namespace string
	Count     int
}

// Validate reports a template that cannot produce identities.
func (t IdentityTemplate) Validate() error {
	switch t.Type {
	case "", "sidecar", "router":
	default:
		return fmt.Errorf("identity: type %q: use sidecar or router", t.Type)
	}
	if t.Namespaces < 0 {
		return fmt.Errorf("identity: namespaces %d must be >= 0", t.Namespaces)
	}
	for _, n := range t.NamespaceNames {
		if n == "" {
			return fmt.Errorf("identity: an empty namespace name in %q", t.NamespaceNames)
		}
	}
	for _, nc := range t.NamespaceCounts {
		if nc.Namespace == "" || nc.Count < 1 {
			return fmt.Errorf("identity: namespace count %q: %d: want a name and a count >= 1", nc.Namespace, nc.Count)
		}
	}
	if t.IPBase != "" {
		a, err := netip.ParseAddr(t.IPBase)
		if err != nil || !a.Is4() {
			return fmt.Errorf("identity: ipBase %q must be an IPv4 address like 10.0.0.1", t.IPBase)
		}
	}
	return nil
}

// WithGroupStart returns the template of a group whose first client has fleet index start:
// NamespaceCounts places clients by their position from it (the fleet sets it per group).
func (t IdentityTemplate) WithGroupStart(start int) IdentityTemplate {
	t.groupStart = start
	return t
}

// NamespaceOf returns the namespace client index lives in.
func (t IdentityTemplate) NamespaceOf(index int) string {
	if len(t.NamespaceCounts) > 0 {
		pos := index - t.groupStart
		for _, nc := range t.NamespaceCounts {
			if pos < nc.Count {
				return nc.Namespace
			}
			pos -= nc.Count
		}
		return t.NamespaceCounts[pos%len(t.NamespaceCounts)].Namespace
	}
	if len(t.NamespaceNames) > 0 {
		return t.NamespaceNames[index%len(t.NamespaceNames)]
	}
	if t.Namespaces > 0 {
		return fmt.Sprintf("ns-%d", index%t.Namespaces)
	}
	if t.Namespace != "" {
		return t.Namespace
	}
	return "default"
}

// Node returns the identity of client index: id type~IP~pod-index.ns~ns.svc.cluster.local and
// Istio's node metadata. An invalid template still yields a node (with defaults); call
// Validate first to report it.
func (t IdentityTemplate) Node(index int) *corev3.Node {
	typ := t.Type
	if typ == "" {
		typ = "sidecar"
	}
	ns := t.NamespaceOf(index)
	ip := ipAt(t.IPBase, index)
	pod := fmt.Sprintf("pod-%d", index)
	if typ == "router" {
		pod = fmt.Sprintf("gateway-%d", index)
	}
	clusterID := orDefault(t.ClusterID, "Kubernetes")
	version := orDefault(t.IstioVersion, "1.28.0")

	labels := make(map[string]*structpb.Value, len(t.Labels))
	keys := make([]string, 0, len(t.Labels))
	for k := range t.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		labels[k] = structpb.NewStringValue(t.Labels[k])
	}
	fields := map[string]*structpb.Value{
		"NAMESPACE":         structpb.NewStringValue(ns),
		"CLUSTER_ID":        structpb.NewStringValue(clusterID),
		"ISTIO_VERSION":     structpb.NewStringValue(version),
		"INTERCEPTION_MODE": structpb.NewStringValue("REDIRECT"),
		"NAME":              structpb.NewStringValue(pod),
		"INSTANCE_IPS":      structpb.NewStringValue(ip),
		"LABELS":            structpb.NewStructValue(&structpb.Struct{Fields: labels}),
	}
	if t.Generator != "" {
		fields["GENERATOR"] = structpb.NewStringValue(t.Generator)
	}
	n := &corev3.Node{
		Id:            fmt.Sprintf("%s~%s~%s.%s~%s.svc.cluster.local", typ, ip, pod, ns, ns),
		Cluster:       typ + "." + ns,
		Metadata:      &structpb.Struct{Fields: fields},
		UserAgentName: "envoy",
	}
	if t.IstioMetadata {
		istioSized(n, fields, index, ns, version)
	}
	return n
}

// istioSized fills n with the rest of what an Istio sidecar's node holds, in the shapes istio-
// agent and Envoy send (values are plausible stand-ins; only their shape and size matter).
func istioSized(n *corev3.Node, fields map[string]*structpb.Value, index int, ns, version string) {
	str := structpb.NewStringValue
	app := fmt.Sprintf("app-%d", index%50)
	strct := func(kv map[string]any) *structpb.Value {
		v, err := structpb.NewStruct(kv)
		if err != nil {
			return structpb.NewNullValue() // only non-JSON Go values fail; these are literals
		}
		return structpb.NewStructValue(v)
	}
	fields["ANNOTATIONS"] = strct(map[string]any{
		"kubectl.kubernetes.io/default-container":      app,
		"kubectl.kubernetes.io/default-logs-container": app,
		"prometheus.io/path":                           "/stats/prometheus",
		"prometheus.io/port":                           "15020",
		"prometheus.io/scrape":                         "true",
		"istio.io/rev":                                 "default",
		"kubernetes.io/config.seen":                    "2026-01-01T00:00:00.000000000Z",
		"kubernetes.io/config.source":                  "api",
		"sidecar.istio.io/status": `{"initContainers":["istio-init"],"containers":["istio-proxy"],` +
			`"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data",` +
			`"istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`,
	})
	fields["APP_CONTAINERS"] = str(app)
	fields["ENVOY_PROMETHEUS_PORT"] = structpb.NewNumberValue(15090)
	fields["ENVOY_STATUS_PORT"] = structpb.NewNumberValue(15021)
	fields["ISTIO_PROXY_SHA"] = str("9c5d3c8a1b7e4f20a6d1e0b3c2f4a5d6e7f8091a")
	fields["MESH_ID"] = str("cluster.local")
	fields["NODE_NAME"] = str(fmt.Sprintf("node-%d", index%100))
	fields["OWNER"] = str(fmt.Sprintf("kubernetes://apis/apps/v1/namespaces/%s/deployments/%s", ns, app))
	fields["PILOT_SAN"] = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{str("istiod.istio-system.svc")}})
	fields["POD_PORTS"] = str(`[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"grpc","containerPort":9090,"protocol":"TCP"}]`)
	fields["SERVICE_ACCOUNT"] = str(app)
	fields["WORKLOAD_NAME"] = str(app)
	fields["PLATFORM_METADATA"] = strct(map[string]any{})
	fields["PROXY_CONFIG"] = strct(map[string]any{
		"binaryPath":                      "/usr/local/bin/envoy",
		"concurrency":                     2,
		"configPath":                      "./etc/istio/proxy",
		"controlPlaneAuthPolicy":          "MUTUAL_TLS",
		"discoveryAddress":                "istiod.istio-system.svc:15012",
		"drainDuration":                   "45s",
		"proxyAdminPort":                  15000,
		"serviceCluster":                  "istio-proxy",
		"statNameLength":                  189,
		"statusPort":                      15020,
		"terminationDrainDuration":        "5s",
		"tracing":                         map[string]any{"zipkin": map[string]any{"address": "zipkin.istio-system:9411"}},
		"holdApplicationUntilProxyStarts": false,
		"proxyMetadata":                   map[string]any{"ISTIO_META_DNS_CAPTURE": "true", "ISTIO_META_DNS_AUTO_ALLOCATE": "true"},
	})
	if l := fields["LABELS"].GetStructValue(); l != nil {
		for k, v := range map[string]string{
			"app": app, "version": "v1", "pod-template-hash": "7d9f8c6b5d",
			"security.istio.io/tlsMode": "istio", "service.istio.io/canonical-name": app,
			"service.istio.io/canonical-revision": "v1",
		} {
			if _, ok := l.Fields[k]; !ok {
				l.Fields[k] = str(v)
			}
		}
	}
	n.Locality = &corev3.Locality{Region: "region-0", Zone: fmt.Sprintf("zone-%d", index%3)}
	n.UserAgentVersionType = &corev3.Node_UserAgentBuildVersion{UserAgentBuildVersion: &corev3.BuildVersion{
		Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{
			"revision.status": str("Clean"), "build.type": str("RELEASE"), "ssl.version": str("BoringSSL"),
			"revision.sha": str("9c5d3c8a1b7e4f20a6d1e0b3c2f4a5d6e7f8091a"), "istio.version": str(version)}},
	}}
	n.ClientFeatures = []string{"envoy.lb.does_not_support_overprovisioning", "envoy.lrs.supports_send_all_clusters",
		"envoy.config.require-any-fields-contain-struct", "xds.config.resource-ttl", "xds.config.supports-resource-ttl"}
	for _, cat := range envoyExtensions {
		for _, name := range cat.names {
			n.Extensions = append(n.Extensions, &corev3.Extension{Name: name, Category: cat.category})
		}
	}
}

// envoyExtensions is a sample of the extensions an Istio proxy build reports, by category.
var envoyExtensions = []struct {
	category string
	names    []string
}{
	{"envoy.filters.http", []string{"envoy.filters.http.router", "envoy.filters.http.fault", "envoy.filters.http.cors",
		"envoy.filters.http.grpc_stats", "envoy.filters.http.grpc_web", "envoy.filters.http.health_check",
		"envoy.filters.http.local_ratelimit", "envoy.filters.http.ratelimit", "envoy.filters.http.rbac",
		"envoy.filters.http.jwt_authn", "envoy.filters.http.ext_authz", "envoy.filters.http.lua",
		"envoy.filters.http.wasm", "envoy.filters.http.compressor", "envoy.filters.http.decompressor",
		"envoy.filters.http.header_to_metadata", "envoy.filters.http.buffer", "envoy.filters.http.csrf",
		"istio.alpn", "istio.metadata_exchange", "istio.stats", "envoy.filters.http.grpc_json_transcoder"}},
	{"envoy.filters.network", []string{"envoy.filters.network.http_connection_manager", "envoy.filters.network.tcp_proxy",
		"envoy.filters.network.rbac", "envoy.filters.network.ext_authz", "envoy.filters.network.local_ratelimit",
		"envoy.filters.network.mongo_proxy", "envoy.filters.network.redis_proxy", "envoy.filters.network.mysql_proxy",
		"envoy.filters.network.sni_cluster", "envoy.filters.network.wasm", "istio.metadata_exchange", "istio.stats"}},
	{"envoy.filters.listener", []string{"envoy.filters.listener.tls_inspector", "envoy.filters.listener.http_inspector",
		"envoy.filters.listener.original_dst", "envoy.filters.listener.original_src", "envoy.filters.listener.proxy_protocol"}},
	{"envoy.transport_sockets.upstream", []string{"envoy.transport_sockets.tls", "envoy.transport_sockets.raw_buffer",
		"envoy.transport_sockets.tcp_stats", "envoy.transport_sockets.internal_upstream", "envoy.transport_sockets.upstream_proxy_protocol"}},
	{"envoy.transport_sockets.downstream", []string{"envoy.transport_sockets.tls", "envoy.transport_sockets.raw_buffer",
		"envoy.transport_sockets.tcp_stats"}},
	{"envoy.access_loggers", []string{"envoy.access_loggers.file", "envoy.access_loggers.http_grpc",
		"envoy.access_loggers.open_telemetry", "envoy.access_loggers.stderr", "envoy.access_loggers.stdout",
		"envoy.access_loggers.tcp_grpc", "envoy.access_loggers.wasm"}},
	{"envoy.tracers", []string{"envoy.tracers.zipkin", "envoy.tracers.opentelemetry", "envoy.tracers.datadog",
		"envoy.tracers.skywalking", "envoy.tracers.dynamic_ot"}},
	{"envoy.clusters", []string{"envoy.cluster.eds", "envoy.cluster.static", "envoy.cluster.strict_dns",
		"envoy.cluster.logical_dns", "envoy.cluster.original_dst", "envoy.clusters.aggregate", "envoy.clusters.dynamic_forward_proxy"}},
	{"envoy.load_balancing_policies", []string{"envoy.load_balancing_policies.round_robin",
		"envoy.load_balancing_policies.least_request", "envoy.load_balancing_policies.random",
		"envoy.load_balancing_policies.ring_hash", "envoy.load_balancing_policies.maglev",
		"envoy.load_balancing_policies.cluster_provided", "envoy.load_balancing_policies.client_side_weighted_round_robin"}},
	{"envoy.stats_sinks", []string{"envoy.stat_sinks.metrics_service", "envoy.stat_sinks.statsd",
		"envoy.stat_sinks.dog_statsd", "envoy.stat_sinks.hystrix", "envoy.stat_sinks.wasm", "envoy.stat_sinks.open_telemetry"}},
	{"envoy.resolvers", []string{"envoy.ip"}},
	{"envoy.health_checkers", []string{"envoy.health_checkers.redis", "envoy.health_checkers.grpc",
		"envoy.health_checkers.http", "envoy.health_checkers.tcp"}},
	{"envoy.matching.http.input", []string{"envoy.matching.inputs.request_headers", "envoy.matching.inputs.response_headers",
		"envoy.matching.inputs.query_params", "envoy.matching.inputs.destination_ip", "envoy.matching.inputs.source_ip"}},
	{"envoy.upstreams", []string{"envoy.upstreams.http.generic", "envoy.upstreams.http.http", "envoy.upstreams.http.tcp",
		"envoy.upstreams.tcp.generic"}},
	{"envoy.wasm.runtime", []string{"envoy.wasm.runtime.null", "envoy.wasm.runtime.v8"}},
}

func ipAt(base string, index int) string {
	a, err := netip.ParseAddr(base)
	if err != nil || !a.Is4() {
		a = netip.AddrFrom4([4]byte{100, 64, 0, 1})
	}
	b := a.As4()
	v := binary.BigEndian.Uint32(b[:]) + uint32(index)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
