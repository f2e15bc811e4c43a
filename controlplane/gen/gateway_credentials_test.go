package gen

import (
	"slices"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"
)

// serverTLSContext builds a server's downstream TLS context as a gateway HTTPS chain gets it.
func serverTLSContext(t *testing.T, tls *networking.ServerTLSSettings) *tlsv3.DownstreamTlsContext {
	t.Helper()
	dtc := &tlsv3.DownstreamTlsContext{}
	if err := gatewayTLSSocket(tls, false).GetTypedConfig().UnmarshalTo(dtc); err != nil {
		t.Fatal(err)
	}
	if err := dtc.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	return dtc
}

// TestGatewayCredentialSchemes: a credentialName's scheme decides which SDS resource the
// gateway asks for and from whom, as istiod reads it: builtin:// is the agent's own workload
// certificate (its CA the agent's root), any other builtin:// name "default" over ADS; sds://
// without a credential socket or SDS provider is the name after it, read as a credentialName;
// configmap://, kubernetes-gateway:// and kubernetes:// stay as written, invalid:// names
// collapse to the scheme, and any other name, with "://" or not, is a Kubernetes secret.
func TestGatewayCredentialSchemes(t *testing.T) {
	ads := func(name string) sdsRef { return sdsRef{name: name} }
	agentWorkload := sdsRef{name: SecretDefault, agent: true, wait: true}
	agentRoot := sdsRef{name: SecretRootCA, agent: true, wait: true}
	tests := []struct {
		name       string
		credential string
		names      []string // credentialNames instead
		caName     string   // caCertCredentialName
		certs      []sdsRef
		ca         sdsRef // the client CA of MUTUAL
	}{
		{name: "plain name", credential: "shop-cert", certs: []sdsRef{ads("kubernetes://shop-cert")}, ca: ads("kubernetes://shop-cert-cacert")},
		{name: "builtin", credential: "builtin://", certs: []sdsRef{agentWorkload}, ca: agentRoot},
		{name: "builtin with a name", credential: "builtin://shop", certs: []sdsRef{ads(SecretDefault)}, ca: ads(SecretDefault)},
		{name: "builtin among credentialNames", names: []string{"builtin://", "shop-ec"}, certs: []sdsRef{agentWorkload, ads("kubernetes://shop-ec")}, ca: agentRoot},
		{name: "builtin second among credentialNames", names: []string{"shop-rsa", "builtin://"}, certs: []sdsRef{ads("kubernetes://shop-rsa"), agentWorkload}, ca: ads("kubernetes://shop-rsa-cacert")},
		{name: "external sds", credential: "sds://shop-vault", certs: []sdsRef{ads("kubernetes://shop-vault")}, ca: ads("kubernetes://shop-vault-cacert")},
		{name: "external sds of a namespaced secret", credential: "sds://kubernetes://payments/shop", certs: []sdsRef{ads("kubernetes://payments/shop")}, ca: ads("kubernetes://payments/shop-cacert")},
		{name: "external sds of builtin", credential: "sds://builtin://", certs: []sdsRef{ads(SecretDefault)}, ca: ads(SecretDefault)},
		{name: "kubernetes scheme", credential: "kubernetes://payments/shop", certs: []sdsRef{ads("kubernetes://payments/shop")}, ca: ads("kubernetes://payments/shop-cacert")},
		{name: "configmap scheme", credential: "configmap://payments/shop", certs: []sdsRef{ads("configmap://payments/shop")}, ca: ads("configmap://payments/shop-cacert")},
		{name: "gateway api scheme", credential: "kubernetes-gateway://payments/shop", certs: []sdsRef{ads("kubernetes-gateway://payments/shop")}, ca: ads("kubernetes-gateway://payments/shop-cacert")},
		{name: "invalid scheme", credential: "invalid://anything", certs: []sdsRef{ads("invalid://")}, ca: ads("invalid://")},
		{name: "unknown scheme", credential: "vault://shop", certs: []sdsRef{ads("kubernetes://vault://shop")}, ca: ads("kubernetes://vault://shop-cacert")},
		{name: "builtin CA by name", credential: "shop-cert", caName: "builtin://-cacert", certs: []sdsRef{ads("kubernetes://shop-cert")}, ca: agentRoot},
		{name: "external sds CA by name", credential: "builtin://", caName: "sds://shop-clients", certs: []sdsRef{agentWorkload}, ca: ads("kubernetes://shop-clients")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tls := &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, CredentialName: tc.credential, CredentialNames: tc.names, CaCertCredentialName: tc.caName}
			ctx := serverTLSContext(t, tls).GetCommonTlsContext()
			var certs []sdsRef
			for _, sc := range ctx.GetTlsCertificateSdsSecretConfigs() {
				certs = append(certs, readSDS(sc))
			}
			if !slices.Equal(certs, tc.certs) {
				t.Errorf("certificates %+v, want %+v", certs, tc.certs)
			}
			if ca := readSDS(ctx.GetCombinedValidationContext().GetValidationContextSdsSecretConfig()); ca != tc.ca {
				t.Errorf("client CA %+v, want %+v", ca, tc.ca)
			}
		})
	}
}

// TestGatewayCipherSuites: a server's cipherSuites reach Envoy as istiod passes them: names
// Envoy does not know are left out (Envoy would reject the listener), a repeated name once,
// expressions led by an operator as written; nothing left means Envoy's defaults, with the
// TLS versions still the server's. ISTIO_MUTUAL ignores them all.
func TestGatewayCipherSuites(t *testing.T) {
	tests := []struct {
		name   string
		mode   networking.ServerTLSSettings_TLSmode
		suites []string
		min    networking.ServerTLSSettings_TLSProtocol
		want   []string
		params bool // a tls_params block at all
	}{
		{name: "known", suites: []string{"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"}, want: []string{"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"}, params: true},
		{name: "unknown left out", suites: []string{"TLS_AES_256_GCM_SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "RC4-MD5"}, want: []string{"ECDHE-ECDSA-CHACHA20-POLY1305"}, params: true},
		{name: "repeated once", suites: []string{"AES128-SHA", "AES256-SHA", "AES128-SHA"}, want: []string{"AES128-SHA", "AES256-SHA"}, params: true},
		{name: "expressions and ALL kept", suites: []string{"[ECDHE-RSA-AES128-GCM-SHA256|ECDHE-RSA-CHACHA20-POLY1305]", "-AES128-SHA", "ALL"}, want: []string{"[ECDHE-RSA-AES128-GCM-SHA256|ECDHE-RSA-CHACHA20-POLY1305]", "-AES128-SHA", "ALL"}, params: true},
		{name: "none known", suites: []string{"TLS_CHACHA20_POLY1305_SHA256"}},
		{name: "none known with a version", suites: []string{"made-up"}, min: networking.ServerTLSSettings_TLSV1_3, params: true},
		{name: "optional mutual", mode: networking.ServerTLSSettings_OPTIONAL_MUTUAL, suites: []string{"made-up", "AES256-GCM-SHA384"}, want: []string{"AES256-GCM-SHA384"}, params: true},
		{name: "istio mutual ignores them", mode: networking.ServerTLSSettings_ISTIO_MUTUAL, suites: []string{"AES256-GCM-SHA384"}, min: networking.ServerTLSSettings_TLSV1_3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mode := tc.mode
			if mode == networking.ServerTLSSettings_PASSTHROUGH {
				mode = networking.ServerTLSSettings_SIMPLE
			}
			tls := &networking.ServerTLSSettings{Mode: mode, CipherSuites: tc.suites, MinProtocolVersion: tc.min}
			if mode != networking.ServerTLSSettings_ISTIO_MUTUAL {
				tls.CredentialName = "shop-cert"
			}
			p := serverTLSContext(t, tls).GetCommonTlsContext().GetTlsParams()
			if (p != nil) != tc.params {
				t.Fatalf("tls_params %v, want one: %v", p, tc.params)
			}
			if !slices.Equal(p.GetCipherSuites(), tc.want) {
				t.Errorf("cipher suites %q, want %q", p.GetCipherSuites(), tc.want)
			}
			if tc.params && int32(p.GetTlsMinimumProtocolVersion()) != int32(tc.min) {
				t.Errorf("minimum version %v, want %v", p.GetTlsMinimumProtocolVersion(), tc.min)
			}
		})
	}
}
