package validate

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
)

// Proxyless gRPC clients (ClientConfig.GRPC) follow grpc-go's xDS client instead of Envoy:
//
//   - Requests. SotW only; every type is a named subscription. The client asks LDS for its
//     targets' "host:port" API listeners, then RDS for the route configurations they name,
//     then CDS for the clusters those routes send to, then EDS for the EDS clusters' service
//     names. There is no Envoy init manager and no warming: a resource is in effect when
//     accepted, and the client holds a full config once every target resolves down to its
//     assignments.
//   - Rejections. grpc-go validates each resource as it unmarshals it (its xdsresource package
//     is internal, so it cannot be called from here); GRPC states the same rules in
//     this package's words, each citing the grpc-go function it mirrors (google.golang.org/grpc
//     internal/xds/xdsclient/xdsresource, v1.85). Like grpc-go, the client applies the valid
//     resources of a response and NACKs it when any resource is invalid.
//   - Use. grpc-go ignores a locality whose load_balancing_weight is unset or 0
//     (parseEDSRespProto: "Ignoring locality ... with weight 0"); the assignment the client
//     holds is the one it uses, without those localities, so an endpoint only in them is
//     absent for the probes, as it is for a real gRPC client's traffic.

// GRPC reports what grpc-go's xDS client rejects in resource msg, a CDS, EDS, LDS or RDS
// resource (kind names its type in the error for any other).
func GRPC(kind string, msg proto.Message) error {
	switch v := msg.(type) {
	case *clusterv3.Cluster:
		return grpcCluster(v)
	case *endpointv3.ClusterLoadAssignment:
		return grpcAssignment(v)
	case *listenerv3.Listener:
		_, err := APIListener(v)
		return err
	case *routev3.RouteConfiguration:
		return grpcRoutes(v)
	}
	return fmt.Errorf("unexpected %s resource %T", kind, msg)
}

// grpcAssignment mirrors parseEDSRespProto and parseEndpoints (unmarshal_eds.go).
func grpcAssignment(cla *endpointv3.ClusterLoadAssignment) error {
	if cla.GetClusterName() == "" {
		return errors.New("empty resource name in endpoints resource") // unmarshalEndpointsResource
	}
	type lkey struct {
		priority             uint32
		region, zone, subzon string
	}
	seenLoc := map[lkey]bool{}
	sums := map[uint32]uint64{}
	priorities := map[uint32]bool{}
	addrs := map[string]bool{}
	for _, le := range cla.GetEndpoints() {
		l := le.GetLocality()
		if l == nil {
			// parseEDSRespProto: "EDS response contains a locality without ID".
			return errors.New("EDS response contains a locality without ID (LocalityLbEndpoints.locality unset)")
		}
		w := le.GetLoadBalancingWeight().GetValue()
		if w == 0 {
			continue // ignored, not rejected (see GRPCInUse)
		}
		p := le.GetPriority()
		if sums[p] += uint64(w); sums[p] > math.MaxUint32 {
			return fmt.Errorf("sum of weights of localities at the same priority %d exceeded maximal value", p)
		}
		k := lkey{p, l.GetRegion(), l.GetZone(), l.GetSubZone()}
		if seenLoc[k] {
			return fmt.Errorf("duplicate locality %s/%s/%s with the same priority %d", k.region, k.zone, k.subzon, p)
		}
		seenLoc[k] = true
		priorities[p] = true
		// parseEndpoints: explicit zero weights, weight overflow, duplicate addresses.
		var total uint64
		for _, lb := range le.GetLbEndpoints() {
			weight := uint64(1)
			if lw := lb.GetLoadBalancingWeight(); lw != nil {
				if lw.GetValue() == 0 {
					return errors.New("EDS response contains an endpoint with zero weight")
				}
				weight = uint64(lw.GetValue())
			}
			if total += weight; total > math.MaxUint32 {
				return fmt.Errorf("sum of weights of endpoints in the same locality exceeds maximum value %d", uint64(math.MaxUint32))
			}
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			a := net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
			if addrs[a] {
				return fmt.Errorf("duplicate endpoint with the same address %s", a)
			}
			addrs[a] = true
		}
	}
	// parseEDSRespProto: priorities must run 0..n-1 without a gap.
	for i := range uint32(len(priorities)) {
		if !priorities[i] {
			return fmt.Errorf("priority %d missing (with different priorities received)", i)
		}
	}
	return nil
}

// GRPCInUse returns the assignment as grpc-go uses it: localities without weight dropped.
func GRPCInUse(cla *endpointv3.ClusterLoadAssignment) *endpointv3.ClusterLoadAssignment {
	if !slices.ContainsFunc(cla.GetEndpoints(), func(le *endpointv3.LocalityLbEndpoints) bool {
		return le.GetLoadBalancingWeight().GetValue() == 0
	}) {
		return cla
	}
	out := proto.CloneOf(cla)
	out.Endpoints = slices.DeleteFunc(out.Endpoints, func(le *endpointv3.LocalityLbEndpoints) bool {
		return le.GetLoadBalancingWeight().GetValue() == 0
	})
	return out
}

// grpcCluster mirrors validateClusterAndConstructClusterUpdate (unmarshal_cds.go).
func grpcCluster(c *clusterv3.Cluster) error {
	if c.GetName() == "" {
		return errors.New("empty resource name in Cluster resource")
	}
	switch c.GetLbPolicy() {
	case clusterv3.Cluster_ROUND_ROBIN:
	case clusterv3.Cluster_RING_HASH:
		if h := c.GetRingHashLbConfig().GetHashFunction(); h != clusterv3.Cluster_RingHashLbConfig_XX_HASH {
			return fmt.Errorf("unsupported ring_hash hash function %v", h)
		}
	case clusterv3.Cluster_LEAST_REQUEST:
		if n := c.GetLeastRequestLbConfig().GetChoiceCount(); n != nil && n.GetValue() < 2 {
			return fmt.Errorf("Cluster_LeastRequestLbConfig.ChoiceCount must be >= 2, got: %d", n.GetValue())
		}
	default:
		if c.GetLoadBalancingPolicy() == nil {
			return fmt.Errorf("unexpected lbPolicy %v", c.GetLbPolicy())
		}
	}
	// securityConfigFromCluster: no transport_socket_matches; a transport socket must be TLS.
	if len(c.GetTransportSocketMatches()) > 0 {
		return errors.New("unsupported transport_socket_matches field is non-empty")
	}
	if ts := c.GetTransportSocket(); ts != nil && ts.GetName() != "envoy.transport_sockets.tls" &&
		ts.GetName() != "envoy.transport_sockets.http_11_proxy" {
		return fmt.Errorf("transport_socket field has unexpected name: %s", ts.GetName())
	}
	switch {
	case c.GetType() == clusterv3.Cluster_EDS:
		src := c.GetEdsClusterConfig().GetEdsConfig()
		if src.GetAds() == nil && src.GetSelf() == nil {
			return errors.New("CDS's EDS config source is not ADS or Self")
		}
	case c.GetType() == clusterv3.Cluster_LOGICAL_DNS:
		// dnsHostNameFromCluster: exactly one locality with exactly one endpoint.
		eps := c.GetLoadAssignment().GetEndpoints()
		if len(eps) != 1 {
			return fmt.Errorf("load_assignment for LOGICAL_DNS cluster must have exactly one locality, got %d", len(eps))
		}
		if len(eps[0].GetLbEndpoints()) != 1 {
			return fmt.Errorf("locality for LOGICAL_DNS cluster must have exactly one endpoint, got %d", len(eps[0].GetLbEndpoints()))
		}
		sa := eps[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		if sa.GetAddress() == "" || sa.GetPortValue() == 0 {
			return errors.New("host or port for endpoint for LOGICAL_DNS cluster not set")
		}
	case c.GetClusterType().GetName() == "envoy.clusters.aggregate":
	default:
		return fmt.Errorf("unsupported cluster type (%v, %v)", c.GetType(), c.GetClusterType())
	}
	return nil
}

// APIListener mirrors processClientSideListener (unmarshal_lds.go): the listener must
// carry an HTTP connection manager as api_listener, routes by ADS RDS or inline, and HTTP
// filters ending with the router. It returns the RDS route config name ("" when inline).
func APIListener(l *listenerv3.Listener) (string, error) {
	if l.GetName() == "" {
		return "", errors.New("empty resource name in listener resource")
	}
	a := l.GetApiListener().GetApiListener()
	if a.GetTypeUrl() != HCMType {
		return "", fmt.Errorf("unexpected http connection manager resource type: %q", a.GetTypeUrl())
	}
	hcm := &hcmv3.HttpConnectionManager{}
	if err := a.UnmarshalTo(hcm); err != nil {
		return "", fmt.Errorf("failed to unmarshal api_listener: %v", err)
	}
	if hcm.GetXffNumTrustedHops() != 0 {
		return "", errors.New("xff_num_trusted_hops must be unset or zero")
	}
	if len(hcm.GetOriginalIpDetectionExtensions()) != 0 {
		return "", errors.New("original_ip_detection_extensions must be empty")
	}
	name := ""
	switch rs := hcm.GetRouteSpecifier().(type) {
	case *hcmv3.HttpConnectionManager_Rds:
		src := rs.Rds.GetConfigSource()
		if src.GetAds() == nil && src.GetSelf() == nil {
			return "", errors.New("LDS's RDS configSource is not ADS or Self")
		}
		if name = rs.Rds.GetRouteConfigName(); name == "" {
			return "", errors.New("empty route_config_name")
		}
	case *hcmv3.HttpConnectionManager_RouteConfig:
		if err := grpcRoutes(rs.RouteConfig); err != nil {
			return "", fmt.Errorf("failed to parse inline RDS resp: %v", err)
		}
	case nil:
		return "", errors.New("no RouteSpecifier")
	default:
		return "", fmt.Errorf("unsupported type %T for RouteSpecifier", rs)
	}
	// processHTTPFilters: a non-empty list, names unique, the router last and only last.
	fs := hcm.GetHttpFilters()
	if len(fs) == 0 {
		return "", errors.New("http filters list is empty")
	}
	seen := map[string]bool{}
	for i, f := range fs {
		if f.GetName() == "" {
			return "", errors.New("filter missing name field")
		}
		if seen[f.GetName()] {
			return "", fmt.Errorf("duplicate filter name %q", f.GetName())
		}
		seen[f.GetName()] = true
		router := f.GetTypedConfig().GetTypeUrl() == routerType
		if router && i != len(fs)-1 {
			return "", fmt.Errorf("http filter %q is a terminal filter but it is not last in the filter chain", f.GetName())
		}
		if !router && i == len(fs)-1 {
			return "", fmt.Errorf("http filter %q is not a terminal filter", f.GetName())
		}
	}
	return name, nil
}

// HCMType is the type URL of the HTTP connection manager.
const HCMType = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

const routerType = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"

// grpcRoutes mirrors generateRDSUpdateFromRouteConfiguration and routesProtoToSlice
// (unmarshal_rds.go) for what proxyless control planes send: retry policies grpc-go can run,
// and routes that name a cluster or weighted clusters with a positive total.
func grpcRoutes(rc *routev3.RouteConfiguration) error {
	if rc.GetName() == "" {
		return errors.New("empty resource name in route config resource")
	}
	retry := func(p *routev3.RetryPolicy) error {
		if p == nil {
			return nil
		}
		if n := p.GetNumRetries(); n != nil && n.GetValue() == 0 {
			return errors.New("retry_policy.num_retries = 0; must be >= 1")
		}
		if b := p.GetRetryBackOff(); b != nil {
			if bi := b.GetBaseInterval(); bi != nil && bi.AsDuration() <= 0 {
				return errors.New("retry_policy.base_interval must be > 0")
			}
			if mi := b.GetMaxInterval(); mi != nil && mi.AsDuration() <= 0 {
				return errors.New("retry_policy.max_interval must be > 0")
			}
		}
		return nil
	}
	for _, vh := range rc.GetVirtualHosts() {
		if err := retry(vh.GetRetryPolicy()); err != nil {
			return fmt.Errorf("virtual host %s: %v", vh.GetName(), err)
		}
		for _, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			if ra == nil {
				continue // non-forwarding actions are kept by grpc-go and fail RPCs, not the update
			}
			if err := retry(ra.GetRetryPolicy()); err != nil {
				return fmt.Errorf("received route is invalid: %v", err)
			}
			if wc := ra.GetWeightedClusters(); wc != nil {
				var total uint64
				for _, c := range wc.GetClusters() {
					total += uint64(c.GetWeight().GetValue())
				}
				if total == 0 {
					return errors.New("received route is invalid: totalWeight is 0 in WeightedClusters")
				}
			}
		}
	}
	return nil
}

// RouteClusters lists the clusters rc's routes send to, sorted and unique.
func RouteClusters(rc *routev3.RouteConfiguration) []string {
	var out []string
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			if c := ra.GetCluster(); c != "" {
				out = append(out, c)
			}
			for _, wc := range ra.GetWeightedClusters().GetClusters() {
				if wc.GetWeight().GetValue() > 0 {
					out = append(out, wc.GetName())
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
