package gen

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestTLSOrigination: DestinationRule tls SIMPLE and MUTUAL originate TLS as istiod does (SNI,
// CA and client certificate as the agent's file secrets, SANs, auto SNI and SAN validation
// when the rule names neither); credentialName and DISABLE leave the cluster plaintext.
// Everything passes deep validation.
func TestTLSOrigination(t *testing.T) {
	const host = "origin.example.com"
	for _, tc := range []struct {
		name             string
		tls              *networking.ClientTLSSettings
		socket           bool
		cert, root, sni  string
		sans             int
		autoSNI, autoSAN bool
	}{
		{"simple with sni", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, Sni: host}, true, "", "file-root:system", host, 0, false, false},
		{"simple without sni", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, CaCertificates: "/ca.pem"}, true, "", "file-root:/ca.pem", "", 0, true, true},
		{"mutual with sans", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL, ClientCertificate: "/c.pem", PrivateKey: "/k.pem", SubjectAltNames: []string{host}},
			true, "file-cert:/c.pem~/k.pem", "file-root:system", "", 1, true, false},
		{"insecure skip verify", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, Sni: host, InsecureSkipVerify: wrapperspb.Bool(true)}, true, "", "", host, 0, false, false},
		{"credential name", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, CredentialName: "origin-cred"}, false, "", "", "", 0, false, false},
		{"disable", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}, false, "", "", "", 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &model.Service{Hostname: host, Namespace: "app", Resolution: model.ResolutionDNS, MeshExternal: true,
				Ports: []model.Port{{Name: "http", Number: 8443, Protocol: model.ProtocolHTTP}}, Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "app", Name: "origin"}}
			in := model.SnapshotInput{
				Services:  []*model.Service{svc},
				Endpoints: map[string][]*model.Endpoint{host: {dnsHostEndpoint(svc)}},
				Configs: []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "origin", Namespace: "app"},
					Spec: &networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{Tls: tc.tls}}}},
			}
			p := sidecarProxy("10.9.0.1", "app")
			g, err := generateAll(t, p, model.NewSnapshot(1, in))
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var c *clusterv3.Cluster
			for _, r := range g[ClusterType] {
				if r.Name == ClusterName(Outbound, 8443, "", host) {
					c = r.Message.(*clusterv3.Cluster)
				}
			}
			if (c.GetTransportSocket() != nil) != tc.socket || len(c.GetTransportSocketMatches()) != 0 {
				t.Fatalf("transport socket %v, matches %d; want socket %v and no matches", c.GetTransportSocket(), len(c.GetTransportSocketMatches()), tc.socket)
			}
			if !tc.socket {
				return
			}
			u := &tlsv3.UpstreamTlsContext{}
			if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(u); err != nil {
				t.Fatal(err)
			}
			ctx := u.GetCommonTlsContext()
			cert := ""
			if s := ctx.GetTlsCertificateSdsSecretConfigs(); len(s) == 1 {
				cert = s[0].GetName()
			}
			root := ctx.GetCombinedValidationContext().GetValidationContextSdsSecretConfig().GetName()
			sans := len(ctx.GetCombinedValidationContext().GetDefaultValidationContext().GetMatchSubjectAltNames())
			if u.GetSni() != tc.sni || cert != tc.cert || root != tc.root || sans != tc.sans {
				t.Errorf("sni %q cert %q root %q sans %d, want %q %q %q %d", u.GetSni(), cert, root, sans, tc.sni, tc.cert, tc.root, tc.sans)
			}
			// The agent's file secrets keep Envoy's default initial fetch timeout (15 s), as
			// istiod leaves it: a file the agent cannot read holds the cluster that long, not
			// for ever.
			for _, sc := range append(slices.Clone(ctx.GetTlsCertificateSdsSecretConfigs()), ctx.GetCombinedValidationContext().GetValidationContextSdsSecretConfig()) {
				if sc == nil {
					continue
				}
				if src := sc.GetSdsConfig(); src.GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName() != AgentSDSCluster || src.GetInitialFetchTimeout() != nil {
					t.Errorf("secret %s: source %v, want the agent's sds-grpc without initial_fetch_timeout", sc.GetName(), src)
				}
			}
			opts := &upstreamhttpv3.HttpProtocolOptions{}
			if a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]; a != nil {
				if err := a.UnmarshalTo(opts); err != nil {
					t.Fatal(err)
				}
			}
			if got := opts.GetUpstreamHttpProtocolOptions(); got.GetAutoSni() != tc.autoSNI || got.GetAutoSanValidation() != tc.autoSAN {
				t.Errorf("auto_sni %v auto_san_validation %v, want %v %v", got.GetAutoSni(), got.GetAutoSanValidation(), tc.autoSNI, tc.autoSAN)
			}
		})
	}
}
