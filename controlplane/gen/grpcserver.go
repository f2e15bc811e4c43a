package gen

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Proxyless gRPC servers (grpc-go's xds.NewGRPCServer and its peers in other languages) ask LDS
// for GRPCServerListenerPrefix + "HOST:PORT", the address they listen on: the bootstrap
// istio-agent writes for them sets that as server_listener_resource_name_template. What xdslab
// answers follows istiod's grpcgen (the rules were learned from it; the code is xdslab's):
//
//   - A listener only for a port some service of the proxy's workload targets (its endpoints
//     carry the proxy's IP); another port gets nothing, and a wildcard LDS request lists no
//     server listener.
//   - Its address is HOST:PORT of the name; one filter chain without a match.
//   - The chain is mTLS (a DownstreamTlsContext on grpc-go's certificate provider instance,
//     client certificates required) when the workload's PeerAuthentication for the port is
//     STRICT, or PERMISSIVE (also no policy at all, Istio's default) on a workload labelled
//     security.istio.io/tlsMode "istio", whose clients use mTLS; plaintext otherwise, since
//     grpc-go cannot tell the two apart on one port.
//   - Its HTTP connection manager holds an inline route configuration that accepts every RPC
//     (a NonForwardingAction route, what a gRPC server requires) and the filters RBAC DENY,
//     RBAC ALLOW, router. The RBAC rules come from the AuthorizationPolicies that select the
//     workload, built as for a sidecar's HTTP chain, except as istiod builds them for gRPC: rule
//     names "NS-NAME-i", principals and trust domains as written (no trust-domain migration,
//     repeats kept), dry-run policies enforced, AUDIT and CUSTOM
//     left out, and an ALLOW policy without rules adding nothing (so no deny-all). A filter
//     whose rules are empty is left out.

// GRPCServerListenerPrefix starts the LDS name of a proxyless gRPC server's listener, followed
// by "HOST:PORT" of the address it listens on.
const GRPCServerListenerPrefix = "xds.istio.io/grpc/lds/inbound/"

// GRPCCertProviderInstance is the certificate provider instance that proxyless gRPC TLS names
// (the bootstrap's certificate_providers key, a file_watcher plugin in istio-agent's
// bootstrap); its certificates are SecretDefault (the workload's) and SecretRootCA (the roots).
const GRPCCertProviderInstance = "default"

// grpcRBACDenyFilterName is the DENY filter's name: grpc-go needs distinct names, so istiod's
// grpcgen suffixes it; the ALLOW filter keeps httpRBACFilterName.
const grpcRBACDenyFilterName = httpRBACFilterName + ".DENY"

// grpcServerListeners answers the server listener names among names (GRPCServerListenerPrefix
// ones), omitting those that are malformed or for a port the workload does not serve.
func grpcServerListeners(p *model.Proxy, s *model.Snapshot, names []string) []Resource {
	if len(names) == 0 {
		return nil
	}
	ports, portDeps := inboundPorts(p, s)
	byTarget := map[uint32]inboundPort{}
	for _, ip := range ports {
		byTarget[ip.target] = ip
	}
	pa := peerAuthFor(p, s)
	az := authzFor(p, s)
	deps := sortDeps(append(append(append([]istioconfig.Key{}, portDeps...), pa.deps...), az.deps...))
	var out []Resource
	for _, name := range uniqueSorted(names) {
		host, port, ok := grpcServerAddress(name)
		if !ok {
			continue
		}
		if _, ok := byTarget[port]; !ok {
			continue
		}
		var chain *listenerv3.FilterChain
		if grpcServerMTLS(p, pa.port(port)) {
			chain = grpcServerChain("mtls", az, &tlsv3.DownstreamTlsContext{
				CommonTlsContext:         grpcCommonTLS(nil),
				RequireClientCertificate: wrapperspb.Bool(true),
			})
		} else {
			chain = grpcServerChain("plaintext", az, nil)
		}
		out = append(out, Resource{Name: name, Message: &listenerv3.Listener{
			Name:         name,
			Address:      socketAddress(host, port),
			FilterChains: []*listenerv3.FilterChain{chain},
		}, Deps: deps})
	}
	return out
}

// grpcServerAddress parses a server listener name into the HOST and PORT it ends with.
func grpcServerAddress(name string) (string, uint32, bool) {
	addr, ok := strings.CutPrefix(name, GRPCServerListenerPrefix)
	if !ok {
		return "", 0, false
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, false
	}
	return host, uint32(port), true
}

// grpcServerMTLS reports whether a proxyless gRPC server's port of mTLS mode m takes mTLS: for
// STRICT, and for PERMISSIVE (or no policy) on a workload labelled tlsMode "istio".
func grpcServerMTLS(p *model.Proxy, m mtlsMode) bool {
	switch m {
	case mtlsStrict:
		return true
	case mtlsPermissive, mtlsNone:
		return p.Labels[TLSModeLabel] == tlsModeIstio
	}
	return false
}

// grpcServerChain is a server listener's filter chain "inbound-KIND", with tlsCtx as its
// transport socket when not nil.
func grpcServerChain(kind string, az authzPolicies, tlsCtx *tlsv3.DownstreamTlsContext) *listenerv3.FilterChain {
	h := &hcmv3.HttpConnectionManager{
		// grpc-go reads neither the stat prefix nor the virtual host's name; Envoy's schema
		// requires both.
		StatPrefix: "inbound_grpc_" + kind,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "inbound",
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    "inbound",
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}},
				}},
			}},
		}},
		HttpFilters: append(az.grpcFilters(), routerFilter()),
	}
	fc := &listenerv3.FilterChain{
		Name: "inbound-" + kind,
		Filters: []*listenerv3.Filter{{
			Name:       "inbound-hcm" + kind,
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(h)},
		}},
	}
	if tlsCtx != nil {
		fc.TransportSocket = &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(tlsCtx)}}
	}
	return fc
}

// grpcFilters are a proxyless gRPC server's RBAC filters, DENY then ALLOW, each left out when
// it has no rule. A rule xdslab cannot generate (an ALLOW rule naming a claim key istiod cannot
// split, say) keeps its name with a policy that matches nothing, as istiod's grpcgen keeps it
// with an empty policy, which grpc-go matches with nothing: so an ALLOW policy whose rules all
// fail still denies every request, rather than leaving the server without an ALLOW filter.
// (matchNothing rather than istiod's empty policy, which Envoy's schema rejects.)
func (a authzPolicies) grpcFilters() []*hcmv3.HttpFilter {
	a.keepTrustDomain = true
	var out []*hcmv3.HttpFilter
	for _, g := range []struct {
		name   string
		ps     []*istioconfig.Config
		action rbacv3.RBAC_Action
	}{{grpcRBACDenyFilterName, a.deny, rbacv3.RBAC_DENY}, {httpRBACFilterName, a.allow, rbacv3.RBAC_ALLOW}} {
		rules := &rbacv3.RBAC{Action: g.action, Policies: map[string]*rbacv3.Policy{}}
		for _, c := range g.ps {
			for i, r := range apSpec(c).GetRules() {
				if r == nil {
					continue
				}
				pol := a.rulePolicy(c.Namespace, r, false, g.action)
				if pol == nil {
					pol = matchNothing()
				}
				rules.Policies[fmt.Sprintf("%s-%s-%d", c.Namespace, c.Name, i)] = pol
			}
		}
		if len(rules.Policies) == 0 {
			continue
		}
		out = append(out, &hcmv3.HttpFilter{Name: g.name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&rbachttpv3.RBAC{Rules: rules})}})
	}
	return out
}

// grpcCommonTLS is proxyless gRPC's TLS context: the workload certificate and the roots from
// certificate provider instance GRPCCertProviderInstance, in the current fields and in the
// deprecated ones older gRPC libraries read (as istiod sends both), accepting only the peers
// named by sans (any when empty). Envoy's schema requires a combined validation context to name
// an SDS secret as well: xdslab adds the roots' (SecretRootCA over ADS), which istiod leaves
// out and gRPC libraries do not read (grpc-go's and grpc-java's parsers take only certificate
// provider instances from a combined validation context).
func grpcCommonTLS(sans []string) *tlsv3.CommonTlsContext {
	vc := &tlsv3.CertificateValidationContext{
		CaCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: GRPCCertProviderInstance, CertificateName: SecretRootCA},
	}
	for _, san := range sans {
		vc.MatchSubjectAltNames = append(vc.MatchSubjectAltNames, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: san}})
	}
	return &tlsv3.CommonTlsContext{
		TlsCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: GRPCCertProviderInstance, CertificateName: SecretDefault},
		//nolint:staticcheck // deprecated, still read by older gRPC libraries
		TlsCertificateCertificateProviderInstance: &tlsv3.CommonTlsContext_CertificateProviderInstance{InstanceName: GRPCCertProviderInstance, CertificateName: SecretDefault},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         vc,
			ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: SecretRootCA, SdsConfig: adsConfigSource()},
			//nolint:staticcheck // deprecated, still read by older gRPC libraries
			ValidationContextCertificateProviderInstance: &tlsv3.CommonTlsContext_CertificateProviderInstance{InstanceName: GRPCCertProviderInstance, CertificateName: SecretRootCA},
		}},
	}
}

// applyGRPCUpstreamTLS gives a proxyless gRPC cluster its TLS as istiod's grpcgen does: only a
// DestinationRule's ISTIO_MUTUAL, as a TLS transport socket on grpc-go's certificate provider
// instance that accepts the service's accounts (the rule's subjectAltNames and sni are not
// read). grpc-go has no auto-mTLS, and istiod sends nothing for SIMPLE or MUTUAL: those
// clusters stay plaintext.
func applyGRPCUpstreamTLS(c *clusterv3.Cluster, svc *model.Service, pol policy) {
	if pol.tls.GetMode() != networking.ClientTLSSettings_ISTIO_MUTUAL {
		return
	}
	c.TransportSocket = &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.UpstreamTlsContext{CommonTlsContext: grpcCommonTLS(svc.ServiceAccounts)}),
	}}
}

type endpointIPsKey struct{}

// endpointIPs is the set of the snapshot's endpoint addresses, computed once per snapshot.
func endpointIPs(s *model.Snapshot) map[string]bool {
	return s.Derived(endpointIPsKey{}, func() any {
		out := map[string]bool{}
		for _, svc := range s.Services() {
			for _, ep := range s.Endpoints(svc.Hostname) {
				out[ep.Address] = true
			}
		}
		return out
	}).(map[string]bool)
}

// GRPCServerKey names what a proxyless gRPC proxy's server listeners (names with
// GRPCServerListenerPrefix) read beside its view (ViewKey) and namespace (KeyScope): its IP
// (the ports its workload serves) and labels (its PeerAuthentication, AuthorizationPolicies
// and tlsMode), "" for a proxy that is no endpoint (it serves no port, and gets no server
// listener) or not a gRPC one. Its client listeners and its wildcard listener list read
// neither, and are shared with other gRPC proxies of its view.
func GRPCServerKey(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || !p.IsGRPC() {
		return ""
	}
	ips := endpointIPs(s)
	if !slices.ContainsFunc(p.IPAddresses, func(ip string) bool { return ips[ip] }) {
		return ""
	}
	var b strings.Builder
	b.WriteString(strings.Join(p.IPAddresses, "+"))
	for _, k := range sortedKeys(p.Labels) {
		b.WriteString("|" + k + "=" + p.Labels[k])
	}
	return b.String()
}
