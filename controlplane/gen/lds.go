package gen

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	originaldstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslab/xdslab/controlplane/model"
)

// Extension names (Envoy's canonical filter names).
const (
	hcmFilterName         = "envoy.filters.network.http_connection_manager"
	tcpProxyFilterName    = "envoy.filters.network.tcp_proxy"
	routerFilterName      = "envoy.filters.http.router"
	originalDstFilterName = "envoy.filters.listener.original_dst"
)

const wildcardIP = "0.0.0.0"

// ListenerName is Istio's outbound listener name "ADDRESS_PORT".
func ListenerName(addr string, port uint32) string {
	return addr + "_" + strconv.FormatUint(uint64(port), 10)
}

// sidecarListeners is the sidecar LDS generator:
//   - per port with an HTTP/HTTP2/GRPC service, "0.0.0.0_PORT": an HTTP connection manager
//     with RDS over ADS, route configuration "PORT";
//   - per TCP (or TLS, HTTPS, unknown) service port, "VIP_PORT" with a tcp_proxy to the
//     outbound cluster, or "0.0.0.0_PORT" for a service without a VIP when no HTTP service
//     uses the port (the first such service by hostname wins the port);
//   - virtualOutbound (0.0.0.0:15001, use_original_dst, PassthroughCluster) and virtualInbound
//     (0.0.0.0:15006, a filter chain per inbound port, InboundPassthroughCluster otherwise).
//
// Outbound listeners do not bind (bind_to_port false): virtualOutbound hands them connections.
func sidecarListeners(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	want := nameSet(names)
	var errs []error
	type portInfo struct {
		http     []model.ConfigKey // deps of the HTTP services on the port
		wildTCP  *model.Service    // the TCP service without a VIP that owns 0.0.0.0_PORT
		wildDeps []model.ConfigKey
	}
	ports := map[uint32]*portInfo{}
	var tcp []Resource
	taken := map[string]string{} // listener name → hostname that took it
	sc := s.ScopeFor(p)
	ix := newIndex(s, sc)
	for _, svc := range visibleServices(s, sc) {
		for _, port := range svc.Ports {
			if port.Number == VirtualOutboundPort || port.Number == VirtualInboundPort {
				errs = append(errs, fmt.Errorf("LDS: service %s port %d collides with the sidecar's %s/%s listener port; the port is not served, pick another port", svc.Hostname, port.Number, VirtualOutboundListener, VirtualInboundListener))
				continue
			}
			pi := ports[port.Number]
			if pi == nil {
				pi = &portInfo{}
				ports[port.Number] = pi
			}
			if port.Protocol.IsHTTP() {
				pi.http = append(pi.http, ServiceKey(svc))
				continue
			}
			vips := ipAddresses(svc.Addresses)
			if len(vips) == 0 {
				if pi.wildTCP == nil {
					pi.wildTCP = svc
				}
				pi.wildDeps = append(pi.wildDeps, ServiceKey(svc))
				continue
			}
			chains, def, cdeps, err := tcpRouteChains(p, ix, svc, port) // VirtualService tcp routes (tcproute.go)
			if err != nil {
				errs = append(errs, err)
			}
			for _, vip := range vips {
				name := ListenerName(vip, port.Number)
				if prev, ok := taken[name]; ok {
					errs = append(errs, fmt.Errorf("LDS: services %s and %s both use %s:%d; %s keeps it", prev, svc.Hostname, vip, port.Number, prev))
					continue
				}
				taken[name] = svc.Hostname
				if !wanted(want, name) {
					continue
				}
				l := &listenerv3.Listener{
					Name:               name,
					Address:            socketAddress(vip, port.Number),
					BindToPort:         wrapperspb.Bool(false),
					TrafficDirection:   corev3.TrafficDirection_OUTBOUND,
					FilterChains:       chains,
					DefaultFilterChain: def,
				}
				tcp = append(tcp, Resource{Name: name, Message: l, Deps: sortDeps(append([]model.ConfigKey{ServiceKey(svc)}, cdeps...))})
			}
		}
	}
	out := tcp
	for num, pi := range ports {
		name := ListenerName(wildcardIP, num)
		if !wanted(want, name) {
			continue
		}
		l := &listenerv3.Listener{
			Name:             name,
			Address:          socketAddress(wildcardIP, num),
			BindToPort:       wrapperspb.Bool(false),
			TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		}
		var deps []model.ConfigKey
		switch {
		case len(pi.http) > 0:
			l.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{
				hcmFilter(rdsHCM("outbound_"+name, strconv.FormatUint(uint64(num), 10))),
			}}}
			deps = append(pi.http, pi.wildDeps...)
		case pi.wildTCP != nil:
			port, _ := pi.wildTCP.Port(num)
			chains, def, cdeps, err := tcpRouteChains(p, ix, pi.wildTCP, port)
			if err != nil {
				errs = append(errs, err)
			}
			l.FilterChains, l.DefaultFilterChain = chains, def
			deps = append(pi.wildDeps, cdeps...)
		default:
			continue
		}
		out = append(out, Resource{Name: name, Message: l, Deps: sortDeps(deps)})
	}
	if wanted(want, VirtualOutboundListener) {
		out = append(out, Resource{Name: VirtualOutboundListener, Message: virtualOutbound()})
	}
	if wanted(want, VirtualInboundListener) {
		l, deps := virtualInbound(p, s)
		out = append(out, Resource{Name: VirtualInboundListener, Message: l, Deps: deps})
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

// ipAddresses keeps the addresses that are IPs (VIPs may also be CIDRs in a ServiceEntry;
// those get no listener of their own), normalised and de-duplicated.
func ipAddresses(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.IsUnspecified() {
			continue
		}
		if s := ip.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func virtualOutbound() *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:             VirtualOutboundListener,
		Address:          socketAddress(wildcardIP, VirtualOutboundPort),
		UseOriginalDst:   wrapperspb.Bool(true),
		TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		FilterChains: []*listenerv3.FilterChain{{
			Name:    "virtualOutbound-catchall-tcp",
			Filters: []*listenerv3.Filter{tcpProxyFilter(PassthroughCluster, PassthroughCluster)},
		}},
	}
}

// virtualInbound serves the proxy's own ports: one filter chain per target port (an HCM with an
// inline route to inbound|PORT|| for HTTP ports, a tcp_proxy otherwise), and a default chain to
// InboundPassthroughCluster.
func virtualInbound(p *model.Proxy, s *model.Snapshot) (*listenerv3.Listener, []model.ConfigKey) {
	ports, deps := inboundPorts(p, s)
	l := &listenerv3.Listener{
		Name:             VirtualInboundListener,
		Address:          socketAddress(wildcardIP, VirtualInboundPort),
		TrafficDirection: corev3.TrafficDirection_INBOUND,
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       originalDstFilterName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&originaldstv3.OriginalDst{})},
		}},
		DefaultFilterChain: &listenerv3.FilterChain{
			Name:    "virtualInbound-catchall",
			Filters: []*listenerv3.Filter{tcpProxyFilter(InboundPassthroughCluster, InboundPassthroughCluster)},
		},
	}
	pa := peerAuthFor(p, s)
	if len(ports) > 0 && len(pa.deps) > 0 {
		deps = sortDeps(append(deps, pa.deps...))
	}
	inspect := false
	for _, ip := range ports {
		cluster := ClusterName(Inbound, ip.target, "", "")
		fc := &listenerv3.FilterChain{
			Name:             ListenerName(wildcardIP, ip.target),
			FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(ip.target)},
		}
		if ip.protocol.IsHTTP() {
			fc.Filters = []*listenerv3.Filter{hcmFilter(inboundHCM(ip.target, cluster))}
		} else {
			fc.Filters = []*listenerv3.Filter{tcpProxyFilter(cluster, cluster)}
		}
		switch pa.port(ip.target) {
		case mtlsStrict:
			// Every connection to the port must be mTLS: a plaintext one fails the handshake.
			fc.TransportSocket = inboundMTLSSocket()
		case mtlsPermissive:
			// The TLS inspector tells mTLS from plaintext; each gets its own chain.
			inspect = true
			tlsFC := &listenerv3.FilterChain{
				Name:             fc.Name + "-mtls",
				FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(ip.target), TransportProtocol: "tls"},
				Filters:          fc.Filters,
				TransportSocket:  inboundMTLSSocket(),
			}
			fc.FilterChainMatch.TransportProtocol = "raw_buffer"
			l.FilterChains = append(l.FilterChains, tlsFC)
		}
		l.FilterChains = append(l.FilterChains, fc)
	}
	if inspect {
		l.ListenerFilters = append(l.ListenerFilters, tlsInspector())
	}
	return l, deps
}

func tcpProxyFilter(statPrefix, cluster string) *listenerv3.Filter {
	return &listenerv3.Filter{
		Name: tcpProxyFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(&tcpproxyv3.TcpProxy{
			StatPrefix:       statPrefix,
			ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: cluster},
		})},
	}
}

func hcmFilter(h *hcmv3.HttpConnectionManager) *listenerv3.Filter {
	return &listenerv3.Filter{Name: hcmFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(h)}}
}

func routerFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: routerFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&routerv3.Router{})}}
}

// rdsHCM is an HTTP connection manager that fetches route configuration routeName over ADS.
func rdsHCM(statPrefix, routeName string) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: statPrefix,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: routeName,
		}},
		HttpFilters: httpFilters(),
	}
}

func inboundHCM(port uint32, cluster string) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: "inbound_" + ListenerName(wildcardIP, port),
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: cluster,
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    "inbound|http|" + strconv.FormatUint(uint64(port), 10),
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{
						ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
						Timeout:          durationpb.New(0),
					}},
				}},
			}},
		}},
		HttpFilters: httpFilters(),
	}
}

// grpcListeners is the proxyless gRPC LDS generator: an API listener "HOST:PORT" per requested
// service port (every service port on a wildcard request), whose HTTP connection manager fetches
// route configuration "HOST:PORT" over ADS. Names that match no service port are omitted.
func grpcListeners(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	sc := s.ScopeFor(p)
	var out []Resource
	add := func(svc *model.Service, port uint32) {
		name := HostPortName(svc.Hostname, port)
		out = append(out, Resource{
			Name: name,
			Message: &listenerv3.Listener{
				Name:        name,
				ApiListener: &listenerv3.ApiListener{ApiListener: toAny(grpcHCM(name))},
			},
			Deps: sortDeps([]model.ConfigKey{ServiceKey(svc)}),
		})
	}
	if wantAll(names) {
		for _, svc := range visibleServices(s, sc) {
			if svc.Resolution == model.ResolutionPassthrough {
				continue
			}
			for _, port := range svc.Ports {
				add(svc, port.Number)
			}
		}
		return out, nil
	}
	for _, name := range uniqueSorted(names) {
		svc, port, ok := lookupHostPort(s, name)
		if ok && svc.Resolution != model.ResolutionPassthrough && sc.SeesService(svc) {
			add(svc, port.Number)
		}
	}
	return out, nil
}

// lookupHostPort finds the service port a "HOST:PORT" name refers to.
func lookupHostPort(s *model.Snapshot, name string) (*model.Service, model.Port, bool) {
	host, num, err := ParseHostPort(name)
	if err != nil {
		return nil, model.Port{}, false
	}
	svc := s.Service(host)
	if svc == nil {
		return nil, model.Port{}, false
	}
	port, ok := svc.Port(num)
	return svc, port, ok
}

func uniqueSorted(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
