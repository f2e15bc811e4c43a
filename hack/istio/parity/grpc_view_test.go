package parity

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestProjectGRPC: the gRPC view folds istiod's and xdslab's route configuration names, drops
// what grpc-go does not read (the listener's address, Envoy's retry conditions and host
// predicates, IP domains) and keeps the domains' ports, which grpc-go matches.
func TestProjectGRPC(t *testing.T) {
	dump := func(rdsName, retryOn string, domains []string, address bool) *Dump {
		h, err := anypb.New(&hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3},
			RouteConfigName: rdsName,
		}}})
		if err != nil {
			t.Fatal(err)
		}
		l := &listenerv3.Listener{Name: "web.app:80", ApiListener: &listenerv3.ApiListener{ApiListener: h}}
		if address {
			l.Address = &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "240.0.0.1"}}}
		}
		rp := &routev3.RetryPolicy{RetryOn: retryOn, NumRetries: wrapperspb.UInt32(2)}
		if address { // istiod's extras
			rp.HostSelectionRetryMaxAttempts = 5
		}
		r := &routev3.RouteConfiguration{Name: rdsName, VirtualHosts: []*routev3.VirtualHost{{Domains: domains, Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}, RetryPolicy: rp}},
		}}}}}
		return &Dump{Listeners: map[string]*listenerv3.Listener{l.Name: l}, Routes: map[string]*routev3.RouteConfiguration{rdsName: r}}
	}
	istio := dump("outbound|80||web.app.svc.cluster.local", "connect-failure,unavailable,cancelled", []string{"web.app:80", "240.0.0.1:80", "web.app.svc.cluster.local.:80"}, true)
	ours := dump("web.app.svc.cluster.local:80", "cancelled, unavailable", []string{"web.app:80"}, false)
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(ours)); len(ds) > 0 {
		t.Errorf("differences:\n%s", Format(ds))
	}
	// A domain without its port is a difference for grpc-go.
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(dump("web.app.svc.cluster.local:80", "cancelled,unavailable", []string{"web.app"}, false))); len(ds) == 0 {
		t.Error("a domain without its port made no difference")
	}
	// So is a retry on another gRPC status.
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(dump("web.app.svc.cluster.local:80", "internal", []string{"web.app:80"}, false))); len(ds) == 0 {
		t.Error("another retry status made no difference")
	}
}

// TestProjectGRPCServer: the gRPC view of a server listener keeps what grpc-go's xDS server
// reads (address, chain, TLS certificate providers, client certificates, HTTP filters, routes)
// and drops what it does not (names, stat prefix, an SDS secret next to a certificate
// provider instance).
func TestProjectGRPCServer(t *testing.T) {
	listener := func(statPrefix, vhName string, rootSDS, requireClient bool) *Dump {
		cv := &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{DefaultValidationContext: &tlsv3.CertificateValidationContext{
			CaCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: "default", CertificateName: "ROOTCA"},
		}}
		if rootSDS {
			cv.ValidationContextSdsSecretConfig = &tlsv3.SdsSecretConfig{Name: "ROOTCA"}
		}
		tc, err := anypb.New(&tlsv3.DownstreamTlsContext{RequireClientCertificate: wrapperspb.Bool(requireClient), CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: "default", CertificateName: "default"},
			ValidationContextType:          &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: cv},
		}})
		if err != nil {
			t.Fatal(err)
		}
		h, err := anypb.New(&hcmv3.HttpConnectionManager{StatPrefix: statPrefix, RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "inbound", VirtualHosts: []*routev3.VirtualHost{{Name: vhName, Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}},
			}}}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		const name = "xds.istio.io/grpc/lds/inbound/0.0.0.0:8080"
		l := &listenerv3.Listener{Name: name,
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}},
			FilterChains: []*listenerv3.FilterChain{{Name: "inbound-mtls",
				Filters:         []*listenerv3.Filter{{Name: "inbound-hcmmtls", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: h}}},
				TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tc}},
			}}}
		return &Dump{Listeners: map[string]*listenerv3.Listener{name: l}}
	}
	istio := listener("", "", false, true)
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(listener("inbound_grpc_mtls", "inbound", true, true))); len(ds) > 0 {
		t.Errorf("differences:\n%s", Format(ds))
	}
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(listener("", "", false, false))); len(ds) == 0 {
		t.Error("client certificates not required made no difference")
	}
}

// TestGRPCHTTPFiltersEmptyPolicy: a gRPC server's RBAC policy with neither permissions nor
// principals (istiod's for a rule it cannot generate) reads as the policy that matches nothing,
// and a policy that matches something stays as it is.
func TestGRPCHTTPFiltersEmptyPolicy(t *testing.T) {
	never := &rbacv3.Policy{
		Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_NotRule{NotRule: &rbacv3.Permission{Rule: &rbacv3.Permission_Any{Any: true}}}}},
		Principals:  []*rbacv3.Principal{{Identifier: &rbacv3.Principal_NotId{NotId: &rbacv3.Principal{Identifier: &rbacv3.Principal_Any{Any: true}}}}},
	}
	anyone := &rbacv3.Policy{
		Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_Any{Any: true}}},
		Principals:  []*rbacv3.Principal{{Identifier: &rbacv3.Principal_Any{Any: true}}},
	}
	filter := func(p *rbacv3.Policy) []*hcmv3.HttpFilter {
		a, err := anypb.New(&rbachttpv3.RBAC{Rules: &rbacv3.RBAC{Policies: map[string]*rbacv3.Policy{"ns-p-0": p}}})
		if err != nil {
			t.Fatal(err)
		}
		return []*hcmv3.HttpFilter{{Name: "envoy.filters.http.rbac", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}}
	}
	for _, tc := range []struct {
		name string
		in   *rbacv3.Policy
		want *rbacv3.Policy
	}{
		{"empty", &rbacv3.Policy{}, never},
		{"never", never, never},
		{"anyone", anyone, anyone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := &rbachttpv3.RBAC{}
			if err := grpcHTTPFilters(filter(tc.in))[0].GetTypedConfig().UnmarshalTo(got); err != nil {
				t.Fatal(err)
			}
			if p := got.GetRules().GetPolicies()["ns-p-0"]; !proto.Equal(p, tc.want) {
				t.Errorf("policy %v, want %v", p, tc.want)
			}
		})
	}
}
