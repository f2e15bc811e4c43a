package gen

import (
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGatewayHTTPS: HTTPS servers terminating TLS with a credentialName get one filter chain
// each on the port's listener (SNI names, the credential's SDS secrets, MUTUAL's client CA and
// SANs), and each its own route configuration named as istiod names it, holding the routes of
// the VirtualServices that server exposes; an overlapping server is skipped with an error.
func TestGatewayHTTPS(t *testing.T) {
	shop := server(443, "HTTPS", "apps/shop.example.com", "apps/www.example.com", "apps/shop.example.com")
	shop.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "shop-cert",
		MinProtocolVersion: networking.ServerTLSSettings_TLSV1_2}
	partner := server(443, "HTTPS", "*/api.partner.example.com")
	partner.Port.Name = "https-partner"
	partner.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, CredentialName: "partner-cert",
		SubjectAltNames: []string{"spiffe://partner/client"}}
	ca := server(443, "HTTPS", "ca.example.com")
	ca.Port.Name = "https-ca"
	ca.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, CredentialNames: []string{"rsa", "ecdsa"}, CaCertCredentialName: "clients"}
	dup := server(443, "HTTPS", "www.example.com")
	dup.Port.Name = "https-dup"
	dup.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "other"}
	gw := gwConfig("gw", "istio-system", &networking.Gateway{Servers: []*networking.Server{shop, partner, ca, dup}})
	web := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	configs := []*istioconfig.Config{gw,
		vsConfig("shop", "apps", &networking.VirtualService{Hosts: []string{"shop.example.com", "www.example.com"}, Gateways: []string{"istio-system/gw"},
			Http: []*networking.HTTPRoute{{Name: "all", Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web", 80, "")}}}}}),
		vsConfig("partner", "apps", &networking.VirtualService{Hosts: []string{"api.partner.example.com"}, Gateways: []string{"istio-system/gw"},
			Http: []*networking.HTTPRoute{{Name: "v1", Match: []*networking.HTTPMatchRequest{{Port: 443}},
				Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web", 80, "")}}}}}),
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web}, Configs: configs})
	p := routerProxy("istio-system", nil)
	g, err := generateAll(t, p, s)
	if err == nil || !strings.Contains(err.Error(), `Gateway istio-system/gw servers[3]: SNI "www.example.com" is already served by Gateway istio-system/gw servers[0]; server skipped`) {
		t.Errorf("error %v, want the overlapping server named", err)
	}
	// Once per generator call (the listener and route generators both look at the servers).
	if _, err := ForType(RouteType, p).Generate(p, s, nil); err == nil || strings.Count(err.Error(), "servers[3]") != 1 {
		t.Errorf("RDS error %v, want the overlap reported once", err)
	}
	checkResources(t, p, g)
	if got := names(g[ListenerType]); !slices.Equal(got, []string{"0.0.0.0_443"}) {
		t.Fatalf("listeners %v", got)
	}
	wantRoutes := []string{"https.443.https-443.gw.istio-system", "https.443.https-ca.gw.istio-system", "https.443.https-partner.gw.istio-system"}
	if got := names(g[RouteType]); !slices.Equal(got, wantRoutes) {
		t.Fatalf("route configurations %v, want %v", got, wantRoutes)
	}
	l := g[ListenerType][0].Message.(*listenerv3.Listener)
	if len(l.GetListenerFilters()) != 1 || l.GetListenerFilters()[0].GetName() != tlsInspectorFilterName {
		t.Errorf("listener filters %v, want the TLS inspector", l.GetListenerFilters())
	}
	type chain struct {
		snis                []string
		route               string
		certs               []string
		ca                  string
		sans                []string
		requireClient, tls2 bool
	}
	var got []chain
	for _, fc := range l.GetFilterChains() {
		c := chain{snis: fc.GetFilterChainMatch().GetServerNames()}
		dtc := &tlsv3.DownstreamTlsContext{}
		if err := fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(dtc); err != nil {
			t.Fatalf("chain %v: %v", c.snis, err)
		}
		for _, sc := range dtc.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
			c.certs = append(c.certs, sc.GetName())
			if sc.GetSdsConfig().GetAds() == nil || sc.GetSdsConfig().GetInitialFetchTimeout() != nil {
				t.Errorf("secret %s: sds_config %v, want ADS with Envoy's default fetch timeout", sc.GetName(), sc.GetSdsConfig())
			}
		}
		cvc := dtc.GetCommonTlsContext().GetCombinedValidationContext()
		c.ca = cvc.GetValidationContextSdsSecretConfig().GetName()
		for _, m := range cvc.GetDefaultValidationContext().GetMatchSubjectAltNames() {
			c.sans = append(c.sans, m.GetExact())
		}
		c.requireClient = dtc.GetRequireClientCertificate().GetValue()
		c.tls2 = dtc.GetCommonTlsContext().GetTlsParams().GetTlsMinimumProtocolVersion() == tlsv3.TlsParameters_TLSv1_2
		hcm := &hcmv3.HttpConnectionManager{}
		if err := fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
			t.Fatal(err)
		}
		c.route = hcm.GetRds().GetRouteConfigName()
		if !hcm.GetUseRemoteAddress().GetValue() {
			t.Errorf("chain %v: not the gateway's HTTP connection manager", c.snis)
		}
		got = append(got, c)
	}
	want := []chain{
		{snis: []string{"shop.example.com", "www.example.com"}, route: wantRoutes[0], certs: []string{"kubernetes://shop-cert"}, tls2: true},
		{snis: []string{"api.partner.example.com"}, route: wantRoutes[2], certs: []string{"kubernetes://partner-cert"},
			ca: "kubernetes://partner-cert-cacert", sans: []string{"spiffe://partner/client"}, requireClient: true},
		{snis: []string{"ca.example.com"}, route: wantRoutes[1], certs: []string{"kubernetes://rsa", "kubernetes://ecdsa"}, ca: "kubernetes://clients", requireClient: true},
	}
	if len(got) != len(want) {
		t.Fatalf("%d chains, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		w, c := want[i], got[i]
		if !slices.Equal(c.snis, w.snis) || c.route != w.route || !slices.Equal(c.certs, w.certs) || c.ca != w.ca ||
			!slices.Equal(c.sans, w.sans) || c.requireClient != w.requireClient || c.tls2 != w.tls2 {
			t.Errorf("chain %d:\n got %+v\nwant %+v", i, c, w)
		}
	}
	// Each server's routes: the VirtualServices it exposes, matches on its port kept.
	// The VirtualService's two hosts share one virtual host (istiod's collapseDuplicateRoutes).
	if vh := vhostByName(routeConfig(t, g[RouteType], wantRoutes[0]), "shop.example.com:443"); vh == nil || !slices.Equal(routeNamesOf(vh), []string{"all"}) ||
		!slices.Equal(vh.GetDomains(), []string{"shop.example.com", "shop.example.com:443", "www.example.com", "www.example.com:443"}) {
		t.Errorf("shop server's virtual host %v", vh)
	}
	if vh := vhostByName(routeConfig(t, g[RouteType], wantRoutes[2]), "api.partner.example.com:443"); vh == nil || !slices.Equal(routeNamesOf(vh), []string{"v1"}) {
		t.Errorf("partner server's virtual host %v", vh)
	}
	if rc := routeConfig(t, g[RouteType], wantRoutes[1]); rc.GetVirtualHosts()[0].GetDomains()[0] != "*" {
		t.Errorf("a server no VirtualService binds to: %v, want the 404 virtual host", rc.GetVirtualHosts())
	}
	if got := names(g[ClusterType]); !slices.Contains(got, "outbound|80||web.apps.svc.cluster.local") {
		t.Errorf("clusters %v lack the routes' destination", got)
	}
}

// TestSDSSkipsCredentials: a gateway credential is answered with nothing (no secret store),
// without an error; the workload secrets are still served.
func TestSDSSkipsCredentials(t *testing.T) {
	m := SDSMaterial{CertChainPEM: []byte("c"), PrivateKeyPEM: []byte("k"), RootCAPEM: []byte("r")}
	secs, err := SDSSecrets(m, []string{"kubernetes://shop-cert", SecretDefault, "kubernetes://shop-cert-cacert"})
	if err != nil || len(secs) != 1 || secs[0].GetName() != SecretDefault {
		t.Fatalf("SDSSecrets = %v, %v; want only %q", secs, err, SecretDefault)
	}
}

// TestGatewayHTTPSBesideTLSPassthrough: HTTPS and TLS passthrough servers share a port, as in
// istiod: one listener whose chains SNI picks, the HTTPS ones terminating TLS with their route
// configuration, the passthrough ones forwarding by the tls routes; a server with a host an
// earlier server of the port has is skipped whole, as istiod's gateway merge skips it.
func TestGatewayHTTPSBesideTLSPassthrough(t *testing.T) {
	shop := server(443, "HTTPS", "*/shop.example.com")
	shop.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "shop-cert"}
	term := createdAt(gwConfig("term", "istio-system", &networking.Gateway{Servers: []*networking.Server{shop}}), 1)
	pass := gwConfig("pass", "istio-system", &networking.Gateway{Servers: []*networking.Server{passthrough443("*/*.pass.example.com")}})
	// First by name, but newer than term: istiod merges Gateways oldest first.
	dup := createdAt(gwConfig("adup", "istio-system", &networking.Gateway{Servers: []*networking.Server{passthrough443("*/b.pass.example.com", "*/shop.example.com")}}), 2)
	web := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "tls", Number: 8443, Protocol: model.ProtocolTLS}}}
	tlsRoute := func(sni string) *networking.TLSRoute {
		return &networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{sni}}},
			Route: []*networking.RouteDestination{{Destination: gwDest("web.apps.svc.cluster.local", 8443, "")}}}
	}
	configs := []*istioconfig.Config{term, pass, dup,
		vsConfig("shop", "apps", &networking.VirtualService{Hosts: []string{"shop.example.com"}, Gateways: []string{"istio-system/term"},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web.apps.svc.cluster.local", 80, "")}}}}}),
		vsConfig("pass", "apps", &networking.VirtualService{Hosts: []string{"*.pass.example.com", "shop.example.com"}, Gateways: []string{"istio-system/pass", "istio-system/adup"},
			Tls: []*networking.TLSRoute{tlsRoute("a.pass.example.com"), tlsRoute("b.pass.example.com"), tlsRoute("shop.example.com")}}),
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web}, Configs: configs})
	p := routerProxy("istio-system", nil)
	g, err := generateAll(t, p, s)
	if err == nil || !strings.Contains(err.Error(), `Gateway istio-system/adup servers[0]: SNI "shop.example.com" is already served by Gateway istio-system/term servers[0]; server skipped`) || strings.Contains(err.Error(), "another port") {
		t.Errorf("error %v, want only the passthrough server with the HTTPS server's host skipped", err)
	}
	checkResources(t, p, g)
	if got := names(g[ListenerType]); !slices.Equal(got, []string{"0.0.0.0_443"}) {
		t.Fatalf("listeners %v", got)
	}
	l := g[ListenerType][0].Message.(*listenerv3.Listener)
	var chains []string
	for _, fc := range l.GetFilterChains() {
		chains = append(chains, strings.Join(fc.GetFilterChainMatch().GetServerNames(), ",")+" "+fc.GetFilters()[len(fc.GetFilters())-1].GetName())
	}
	slices.Sort(chains)
	want := []string{"a.pass.example.com " + tcpProxyFilterName, "b.pass.example.com " + tcpProxyFilterName, "shop.example.com " + hcmFilterName}
	if !slices.Equal(chains, want) {
		t.Errorf("chains %q, want %q", chains, want)
	}
	if got := names(g[RouteType]); !slices.Equal(got, []string{"https.443.https-443.term.istio-system"}) {
		t.Errorf("route configurations %v", got)
	}
}
