package parity

import (
	"net"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	// Every extension either side may put in a typed_config, so Anys unpack.
	// (Istio registers every extension it generates.)
	_ "istio.io/istio/pkg/config/xds"
)

// cosmetic lists, per message type, the fields that do not change where or how traffic flows:
// names that are keys of the view already, stat prefixes, access logs, tracing, Istio's own
// metadata, and the request-id and server-name headers. docs/parity.md says why for each.
var cosmetic = map[protoreflect.FullName][]protoreflect.Name{
	"envoy.config.cluster.v3.Cluster": {"metadata", "filters", "alt_stat_name", "track_cluster_stats", "cleanup_interval",
		"dns_refresh_rate", "dns_jitter", "respect_dns_ttl", "typed_dns_resolver_config"},
	"envoy.config.listener.v3.Listener": {"name", "access_log", "metadata", "stat_prefix", "listener_filters_timeout",
		"continue_on_listener_filters_timeout", "max_connections_to_accept_per_socket_event"},
	"envoy.config.listener.v3.FilterChain":                            {"name", "metadata", "transport_socket_connect_timeout"},
	"envoy.config.listener.v3.ListenerFilter":                         {"filter_disabled"},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext":      {"tls_params"},
	"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector": {"initial_read_buffer_size"},
	"envoy.config.route.v3.RouteConfiguration":                        {"name", "max_direct_response_body_size_bytes", "validate_clusters", "ignore_port_in_host_matching"},
	"envoy.config.route.v3.VirtualHost":                               {"name", "include_request_attempt_count"},
	"envoy.config.route.v3.Route":                                     {"name", "decorator", "metadata"},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy":          {"stat_prefix", "access_log", "access_log_options"},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager": {
		"stat_prefix", "access_log", "access_log_options", "tracing", "generate_request_id", "server_name",
		"preserve_external_request_id", "request_id_extension",
	},
}

// telemetryFilters are Istio's telemetry filters (network and HTTP): they observe traffic and
// never route or refuse it.
var telemetryFilters = []string{
	"istio.metadata_exchange", "istio.stats", "envoy.filters.http.grpc_stats", "istio.alpn",
	"envoy.filters.network.metadata_exchange", "envoy.filters.http.peer_metadata", "envoy.filters.network.peer_metadata",
	"istio.peer_metadata",
}

// noopWithoutConfig are HTTP filters that do nothing unless a route configures them (their
// per-route config is compared).
var noopWithoutConfig = []string{"envoy.filters.http.fault", "envoy.filters.http.cors"}

func emptyAny(a *anypb.Any) bool { return a == nil || len(a.GetValue()) == 0 }

// keptMetadata are the filter metadata namespaces that change traffic: the transport socket
// an endpoint gets, and subset load balancing.
var keptMetadata = []string{"envoy.transport_socket_match", "envoy.lb"}

// normalize removes, in place, everything in m that this package classes as cosmetic or
// telemetry, descending into typed_config Anys.
func normalize(m proto.Message) { walk(m.ProtoReflect(), false) }

// normalizeServerTLS is normalize for a gateway's listener: the tls_params of its downstream
// TLS contexts are kept. There they come from the Gateway server's own minProtocolVersion,
// maxProtocolVersion and cipherSuites on both sides, and decide which clients can connect;
// the cosmetic tls_params are the defaults istiod spells out on a sidecar's mesh mTLS.
func normalizeServerTLS(m proto.Message) { walk(m.ProtoReflect(), true) }

func walk(m protoreflect.Message, serverTLS bool) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		if err != nil {
			return // unknown type: left as bytes, still compared
		}
		walk(inner.ProtoReflect(), serverTLS)
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner)
		if err == nil {
			a.Value = b
		}
		return
	}
	var keptParams *tlsv3.TlsParameters
	if x, ok := m.Interface().(*tlsv3.DownstreamTlsContext); ok && serverTLS {
		keptParams = x.GetCommonTlsContext().GetTlsParams()
	}
	for _, f := range cosmetic[m.Descriptor().FullName()] {
		if fd := m.Descriptor().Fields().ByName(f); fd != nil {
			m.Clear(fd)
		}
	}
	switch x := m.Interface().(type) {
	case *corev3.Metadata:
		for k := range x.FilterMetadata {
			if !slices.Contains(keptMetadata, k) {
				delete(x.FilterMetadata, k)
			}
		}
		x.TypedFilterMetadata = nil
	case *listenerv3.FilterChain:
		x.Filters = slices.DeleteFunc(x.Filters, func(f *listenerv3.Filter) bool { return slices.Contains(telemetryFilters, f.GetName()) })
	case *endpointv3.LbEndpoint:
		if x.HealthStatus == corev3.HealthStatus_HEALTHY {
			x.HealthStatus = corev3.HealthStatus_UNKNOWN // both mean "send traffic"
		}
	case *routev3.RouteMatch:
		if x.GetCaseSensitive().GetValue() {
			x.CaseSensitive = nil // true is the default
		}
		// Every header and query parameter matcher must match: their order is not semantic,
		// and istiod emits them in the random order of its maps.
		slices.SortFunc(x.Headers, func(a, b *routev3.HeaderMatcher) int { return strings.Compare(text(a), text(b)) })
		slices.SortFunc(x.QueryParameters, func(a, b *routev3.QueryParameterMatcher) int { return strings.Compare(text(a), text(b)) })
		// So are JWT claim matchers (header matches on @request.auth.claims…).
		slices.SortFunc(x.DynamicMetadata, func(a, b *matcherv3.MetadataMatcher) int { return strings.Compare(text(a), text(b)) })
	case *routev3.RedirectAction:
		if _, ok := x.PathRewriteSpecifier.(*routev3.RedirectAction_PathRedirect); ok && x.GetPathRedirect() == "" {
			x.PathRewriteSpecifier = nil // Envoy keeps the request's path for an empty one too
		}
	case *routev3.VirtualHost:
		// With ignore_port_in_host_matching (Istio) "host" matches "host:80"; without it
		// (xdslab) both are listed. Compare the host names.
		var ds []string
		for _, d := range x.Domains {
			if h, _, err := net.SplitHostPort(d); err == nil && !strings.HasPrefix(d, "[") {
				d = h
			}
			ds = append(ds, strings.TrimSuffix(d, "."))
		}
		slices.Sort(ds)
		x.Domains = slices.Compact(ds)
	case *hcmv3.HttpConnectionManager:
		x.HttpFilters = slices.DeleteFunc(x.HttpFilters, func(f *hcmv3.HttpFilter) bool {
			return slices.Contains(telemetryFilters, f.GetName()) || (slices.Contains(noopWithoutConfig, f.GetName()) && emptyAny(f.GetTypedConfig()))
		})
		if !x.GetUseRemoteAddress().GetValue() {
			x.UseRemoteAddress = nil
		}
		if x.PathWithEscapedSlashesAction == hcmv3.HttpConnectionManager_KEEP_UNCHANGED {
			x.PathWithEscapedSlashesAction = hcmv3.HttpConnectionManager_IMPLEMENTATION_SPECIFIC_DEFAULT
		}
		if x.HttpProtocolOptions != nil && proto.Size(x.HttpProtocolOptions) == 0 {
			x.HttpProtocolOptions = nil
		}
	case *clusterv3.Cluster:
		if x.CommonLbConfig != nil && proto.Size(x.CommonLbConfig) == 0 {
			x.CommonLbConfig = nil // all defaults
		}
	case *tlsv3.CommonTlsContext:
		x.AlpnProtocols = slices.DeleteFunc(x.AlpnProtocols, func(p string) bool { return p == "istio-peer-exchange" })
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				walk(l.Get(i).Message(), serverTLS)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				walk(mv.Message(), serverTLS)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			walk(v.Message(), serverTLS)
		}
		return true
	})
	if keptParams != nil {
		m.Interface().(*tlsv3.DownstreamTlsContext).CommonTlsContext.TlsParams = keptParams
	}
	// Drop empty metadata left behind.
	if md := m.Descriptor().Fields().ByName("metadata"); md != nil && md.Message() != nil && md.Message().FullName() == "envoy.config.core.v3.Metadata" && m.Has(md) {
		if x, ok := m.Get(md).Message().Interface().(*corev3.Metadata); ok && len(x.FilterMetadata) == 0 && len(x.TypedFilterMetadata) == 0 {
			m.Clear(md)
		}
	}
}
