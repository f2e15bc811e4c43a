package gen

import (
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// sdsRef is where a TLS context's secret comes from, as the test reads it.
type sdsRef struct {
	name string
	// agent: from the istio-agent (sds-grpc), else over ADS; wait: initial_fetch_timeout 0s
	// (the listener waits for it forever), else Envoy's default.
	agent, wait bool
}

func readSDS(sc *tlsv3.SdsSecretConfig) sdsRef {
	if sc == nil {
		return sdsRef{}
	}
	src := sc.GetSdsConfig()
	agent := false
	for _, g := range src.GetApiConfigSource().GetGrpcServices() {
		agent = agent || g.GetEnvoyGrpc().GetClusterName() == AgentSDSCluster
	}
	return sdsRef{name: sc.GetName(), agent: agent, wait: src.GetInitialFetchTimeout() != nil && src.GetInitialFetchTimeout().AsDuration() == 0}
}

// TestGatewayTLSModes: every TLS mode that terminates at the gateway, on HTTPS and on protocol
// TLS servers, gets a filter chain with istiod's TLS context: ISTIO_MUTUAL the agent's
// workload certificate and mesh root (waiting for them), certificate files the agent's
// file-cert/file-root secrets (Envoy's default fetch timeout, as istiod: a file the agent
// cannot read must not hold the listener forever), OPTIONAL_MUTUAL a validation context
// without a required client certificate; HTTPS chains route through their own route
// configuration, TLS chains forward by their tcp route; a TLS server without a tcp route
// gets no chain.
func TestGatewayTLSModes(t *testing.T) {
	files := func(mode networking.ServerTLSSettings_TLSmode, ca string) *networking.ServerTLSSettings {
		return &networking.ServerTLSSettings{Mode: mode, ServerCertificate: "/certs/gw.crt", PrivateKey: "/certs/gw.key", CaCertificates: ca}
	}
	fileCert := sdsRef{name: "file-cert:/certs/gw.crt~/certs/gw.key", agent: true}
	fileRoot := sdsRef{name: "file-root:/certs/ca.crt", agent: true}
	workload := sdsRef{name: SecretDefault, agent: true, wait: true}
	meshRoot := sdsRef{name: SecretRootCA, agent: true, wait: true}
	tests := []struct {
		name    string
		proto   string
		tls     *networking.ServerTLSSettings
		certs   []sdsRef
		ca      sdsRef
		sans    []string
		crl     string
		require bool
		tlsMin  bool // the server's minimum TLS version is kept
	}{
		{name: "https istio mutual", proto: "HTTPS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_ISTIO_MUTUAL, SubjectAltNames: []string{"spiffe://cluster.local/ns/apps/sa/client"}, MinProtocolVersion: networking.ServerTLSSettings_TLSV1_3},
			certs: []sdsRef{workload}, ca: meshRoot, sans: []string{"spiffe://cluster.local/ns/apps/sa/client"}, require: true},
		{name: "https simple files", proto: "HTTPS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, ServerCertificate: "/certs/gw.crt", PrivateKey: "/certs/gw.key", SubjectAltNames: []string{"unused"}, MinProtocolVersion: networking.ServerTLSSettings_TLSV1_3},
			certs: []sdsRef{fileCert}, tlsMin: true},
		{name: "https mutual files", proto: "HTTPS", tls: func() *networking.ServerTLSSettings {
			t := files(networking.ServerTLSSettings_MUTUAL, "/certs/ca.crt")
			t.SubjectAltNames, t.CaCrl, t.VerifyCertificateSpki = []string{"client.example.com"}, "/certs/ca.crl", []string{"pin"}
			return t
		}(), certs: []sdsRef{fileCert}, ca: fileRoot, sans: []string{"client.example.com"}, crl: "/certs/ca.crl", require: true},
		{name: "https mutual certificate files with a CA", proto: "HTTPS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, CaCertificates: "/certs/ca.crt",
			TlsCertificates: []*networking.ServerTLSSettings_TLSCertificate{{ServerCertificate: "/certs/rsa.crt", PrivateKey: "/certs/rsa.key"}, {ServerCertificate: "/certs/ec.crt", PrivateKey: "/certs/ec.key"}}},
			certs: []sdsRef{{name: "file-cert:/certs/rsa.crt~/certs/rsa.key", agent: true}, {name: "file-cert:/certs/ec.crt~/certs/ec.key", agent: true}}, ca: fileRoot, require: true},
		{name: "https optional mutual files", proto: "HTTPS", tls: files(networking.ServerTLSSettings_OPTIONAL_MUTUAL, "/certs/ca.crt"),
			certs: []sdsRef{fileCert}, ca: fileRoot},
		{name: "https several certificate files", proto: "HTTPS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE,
			TlsCertificates: []*networking.ServerTLSSettings_TLSCertificate{{ServerCertificate: "/certs/rsa.crt", PrivateKey: "/certs/rsa.key"}, {ServerCertificate: "/certs/ec.crt", PrivateKey: "/certs/ec.key"}}},
			certs: []sdsRef{{name: "file-cert:/certs/rsa.crt~/certs/rsa.key", agent: true}, {name: "file-cert:/certs/ec.crt~/certs/ec.key", agent: true}}},
		{name: "https optional mutual credential", proto: "HTTPS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_OPTIONAL_MUTUAL, CredentialName: "kiosk", SubjectAltNames: []string{"kiosk-client"}},
			certs: []sdsRef{{name: "kubernetes://kiosk"}}, ca: sdsRef{name: "kubernetes://kiosk-cacert"}, sans: []string{"kiosk-client"}},
		{name: "tls simple credential", proto: "TLS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "db"},
			certs: []sdsRef{{name: "kubernetes://db"}}},
		{name: "tls mutual files", proto: "TLS", tls: files(networking.ServerTLSSettings_MUTUAL, "/certs/ca.crt"),
			certs: []sdsRef{fileCert}, ca: fileRoot, require: true},
		{name: "tls optional mutual credential", proto: "TLS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_OPTIONAL_MUTUAL, CredentialName: "db", CaCertCredentialName: "db-clients"},
			certs: []sdsRef{{name: "kubernetes://db"}}, ca: sdsRef{name: "kubernetes://db-clients"}},
		{name: "tls istio mutual", proto: "TLS", tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_ISTIO_MUTUAL},
			certs: []sdsRef{workload}, ca: meshRoot, require: true},
	}
	web := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := server(9443, tc.proto, "*/svc.example.com")
			srv.Tls = tc.tls
			// A second TLS server without a tcp route: no chain.
			idle := server(9443, "TLS", "*/idle.example.com")
			idle.Port.Name = "tls-idle"
			idle.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "idle"}
			vs := &networking.VirtualService{Hosts: []string{"svc.example.com"}, Gateways: []string{"istio-system/gw"}}
			if tc.proto == "HTTPS" {
				vs.Http = []*networking.HTTPRoute{{Name: "all", Route: []*networking.HTTPRouteDestination{{Destination: gwDest("web", 80, "")}}}}
			} else {
				vs.Tcp = []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: gwDest("web", 80, "")}}}}
			}
			configs := []*istioconfig.Config{gwConfig("gw", "istio-system", &networking.Gateway{Servers: []*networking.Server{srv, idle}}), vsConfig("svc", "apps", vs)}
			// Every case is a Gateway istiod (and xdslab) admits.
			if _, err := validate.Spec(configs[0]); err != nil {
				t.Fatalf("the Gateway is refused: %v", err)
			}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{web}, Configs: configs})
			p := routerProxy("istio-system", nil)
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			if got := names(g[ListenerType]); !slices.Equal(got, []string{"0.0.0.0_9443"}) {
				t.Fatalf("listeners %v, want 0.0.0.0_9443", got)
			}
			l := g[ListenerType][0].Message.(*listenerv3.Listener)
			if len(l.GetFilterChains()) != 1 {
				t.Fatalf("%d filter chains, want the routed server's only", len(l.GetFilterChains()))
			}
			fc := l.GetFilterChains()[0]
			if got := fc.GetFilterChainMatch().GetServerNames(); !slices.Equal(got, []string{"svc.example.com"}) {
				t.Errorf("server names %v", got)
			}
			last := fc.GetFilters()[len(fc.GetFilters())-1]
			if tc.proto == "HTTPS" {
				hcm := &hcmv3.HttpConnectionManager{}
				if err := last.GetTypedConfig().UnmarshalTo(hcm); err != nil {
					t.Fatalf("HTTPS chain: %v", err)
				}
				if want := "https.9443.https-9443.gw.istio-system"; hcm.GetRds().GetRouteConfigName() != want || !slices.Contains(names(g[RouteType]), want) {
					t.Errorf("route configuration %q (generated %v), want %s", hcm.GetRds().GetRouteConfigName(), names(g[RouteType]), want)
				}
			} else {
				tp := &tcpproxyv3.TcpProxy{}
				if err := last.GetTypedConfig().UnmarshalTo(tp); err != nil {
					t.Fatalf("TLS chain: %v", err)
				}
				if want := "outbound|80||web.apps.svc.cluster.local"; tp.GetCluster() != want {
					t.Errorf("tcp_proxy cluster %q, want %s", tp.GetCluster(), want)
				}
			}
			dtc := &tlsv3.DownstreamTlsContext{}
			if err := fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(dtc); err != nil {
				t.Fatal(err)
			}
			ctx := dtc.GetCommonTlsContext()
			var certs []sdsRef
			for _, sc := range ctx.GetTlsCertificateSdsSecretConfigs() {
				certs = append(certs, readSDS(sc))
			}
			if !slices.Equal(certs, tc.certs) {
				t.Errorf("certificates %+v, want %+v", certs, tc.certs)
			}
			cvc := ctx.GetCombinedValidationContext()
			if ca := readSDS(cvc.GetValidationContextSdsSecretConfig()); ca != tc.ca {
				t.Errorf("client CA %+v, want %+v", ca, tc.ca)
			}
			var sans []string
			for _, m := range cvc.GetDefaultValidationContext().GetMatchSubjectAltNames() {
				sans = append(sans, m.GetExact())
			}
			if !slices.Equal(sans, tc.sans) {
				t.Errorf("client SANs %v, want %v", sans, tc.sans)
			}
			if got := cvc.GetDefaultValidationContext().GetCrl().GetFilename(); got != tc.crl {
				t.Errorf("CRL %q, want %q", got, tc.crl)
			}
			if tc.ca.name == "" && ctx.GetValidationContextType() != nil {
				t.Errorf("validation %v, want none", ctx.GetValidationContextType())
			}
			if pins := cvc.GetDefaultValidationContext().GetVerifyCertificateSpki(); len(pins) > 0 {
				t.Errorf("SPKI pins %v: istiod sets them for credentials only", pins)
			}
			if !dtc.GetRequireClientCertificate().GetValue() == tc.require || dtc.GetRequireClientCertificate() == nil {
				t.Errorf("require_client_certificate %v, want %v", dtc.GetRequireClientCertificate(), wrapperspb.Bool(tc.require))
			}
			if got := ctx.GetTlsParams().GetTlsMinimumProtocolVersion() == tlsv3.TlsParameters_TLSv1_3; got != tc.tlsMin {
				t.Errorf("minimum TLS 1.3 %v, want %v", got, tc.tlsMin)
			}
			// istiod leads with "istio-peer-exchange" on a TCP server that terminates
			// ISTIO_MUTUAL only.
			alpn := []string{"h2", "http/1.1"}
			if tc.proto == "TLS" && tc.tls.GetMode() == networking.ServerTLSSettings_ISTIO_MUTUAL {
				alpn = []string{"istio-peer-exchange", "h2", "http/1.1"}
			}
			if !slices.Equal(ctx.GetAlpnProtocols(), alpn) {
				t.Errorf("ALPN %v, want %v", ctx.GetAlpnProtocols(), alpn)
			}
		})
	}
}
