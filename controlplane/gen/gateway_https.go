package gen

import (
	"fmt"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// Gateway HTTPS termination (gateway.go), as istiod builds it for a server with tls.mode SIMPLE
// or MUTUAL and a credentialName.

// CredentialPrefix is the scheme istiod gives a credentialName that has none: a Kubernetes
// secret, served to gateways over SDS (ADS).
const CredentialPrefix = "kubernetes://"

// credentialCASuffix names the client CA secret that goes with a credential.
const credentialCASuffix = "-cacert"

// serverCredential is the credential a server's certificate comes from (the first of
// credentialNames, else credentialName), "" for none.
func serverCredential(t *networking.ServerTLSSettings) string {
	if ns := t.GetCredentialNames(); len(ns) > 0 {
		return ns[0]
	}
	return t.GetCredentialName()
}

// credentialResource is the SDS resource name of a credential: kubernetes://NAME unless it
// names its scheme.
func credentialResource(name string) string {
	if strings.Contains(name, "://") {
		return name
	}
	return CredentialPrefix + name
}

// credentialSecret is the SDS reference to a credential over ADS. Unlike the workload
// certificates, istiod leaves Envoy's default initial fetch timeout: a missing secret must not
// hold the listener forever.
func credentialSecret(name string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{Name: credentialResource(name), SdsConfig: adsConfigSource()}
}

// serverSNIs are the SNI names of a server's filter chain: its hosts without their namespace,
// sorted and unique; none (every name) when one is "*".
func serverSNIs(srv *networking.Server) []string {
	var out []string
	for _, h := range srv.GetHosts() {
		if _, host, ok := strings.Cut(h, "/"); ok {
			h = host
		}
		if h == "*" {
			return nil
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// gatewayTLSSocket is the downstream TLS context of an HTTPS server: ALPN h2 and http/1.1, the
// certificates of its credentials; for MUTUAL a required client certificate checked against
// the credential's CA secret (NAME-cacert, or caCertCredentialName) and the subjectAltNames,
// SPKI and hash pins; for SIMPLE only the subjectAltNames, if any. TLS versions and cipher
// suites as the server says.
func gatewayTLSSocket(t *networking.ServerTLSSettings) *corev3.TransportSocket {
	ctx := &tlsv3.CommonTlsContext{AlpnProtocols: []string{"h2", "http/1.1"}}
	names := t.GetCredentialNames()
	if len(names) == 0 {
		names = []string{t.GetCredentialName()}
	}
	for _, n := range names {
		ctx.TlsCertificateSdsSecretConfigs = append(ctx.TlsCertificateSdsSecretConfigs, credentialSecret(n))
	}
	sans := exactMatchers(t.GetSubjectAltNames())
	mutual := t.GetMode() == networking.ServerTLSSettings_MUTUAL
	if mutual {
		ca := names[0] + credentialCASuffix
		if c := t.GetCaCertCredentialName(); c != "" {
			ca = c
		}
		dvc := &tlsv3.CertificateValidationContext{MatchSubjectAltNames: sans,
			VerifyCertificateSpki: t.GetVerifyCertificateSpki(), VerifyCertificateHash: t.GetVerifyCertificateHash()}
		if t.GetInsecureSkipVerify().GetValue() {
			dvc.TrustChainVerification = tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
		}
		ctx.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{
			CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:         dvc,
				ValidationContextSdsSecretConfig: credentialSecret(ca),
			},
		}
	} else if len(sans) > 0 {
		ctx.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{MatchSubjectAltNames: sans}}
	}
	if v := t.GetMinProtocolVersion(); v != networking.ServerTLSSettings_TLS_AUTO {
		tlsParams(ctx).TlsMinimumProtocolVersion = tlsv3.TlsParameters_TlsProtocol(v)
	}
	if v := t.GetMaxProtocolVersion(); v != networking.ServerTLSSettings_TLS_AUTO {
		tlsParams(ctx).TlsMaximumProtocolVersion = tlsv3.TlsParameters_TlsProtocol(v)
	}
	if cs := t.GetCipherSuites(); len(cs) > 0 {
		tlsParams(ctx).CipherSuites = cs
	}
	return &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.DownstreamTlsContext{CommonTlsContext: ctx, RequireClientCertificate: wrapperspb.Bool(mutual)}),
	}}
}

func tlsParams(ctx *tlsv3.CommonTlsContext) *tlsv3.TlsParameters {
	if ctx.TlsParams == nil {
		ctx.TlsParams = &tlsv3.TlsParameters{}
	}
	return ctx.TlsParams
}

func exactMatchers(ss []string) []*matcherv3.StringMatcher {
	var out []*matcherv3.StringMatcher
	for _, s := range ss {
		out = append(out, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}})
	}
	return out
}

// httpsServers are the HTTPS servers of a port that get a filter chain (sniServers).
func (rp *routerPlan) httpsServers(gp *gwPort) []gwServer {
	rp.sniServers(gp)
	return gp.https
}

// passthroughServers are the TLS passthrough servers of a port whose tls routes get filter
// chains (sniServers).
func (rp *routerPlan) passthroughServers(gp *gwPort) []gwServer {
	rp.sniServers(gp)
	return gp.passthrough
}

// sniServers sorts the HTTPS and TLS passthrough servers of a port, in order, into those that
// get filter chains: a server whose SNI names overlap an earlier one's is skipped whole with
// an error (Envoy rejects two chains with the same match; istiod's gateway merge skips a TLS
// server with a host an earlier one of the port has), as is a second HTTPS server with the same
// route configuration name.
func (rp *routerPlan) sniServers(gp *gwPort) {
	if gp.httpsDone {
		return
	}
	gp.httpsDone = true
	taken := map[string]gwServer{}
	routes := map[string]gwServer{}
	for _, gs := range gp.servers {
		if gs.kind != kindHTTPS && gs.kind != kindTLS {
			continue
		}
		snis := serverSNIs(gs.srv)
		keys := snis
		if len(keys) == 0 {
			keys = []string{"*"}
		}
		dup := ""
		for _, k := range keys {
			if prev, ok := taken[k]; ok {
				dup = fmt.Sprintf("SNI %q is already served by %s", k, prev)
				break
			}
		}
		if prev, ok := routes[GatewayHTTPSRouteName(gs)]; ok && dup == "" && gs.kind == kindHTTPS {
			dup = fmt.Sprintf("route configuration %q is already %s's (give the port another name)", GatewayHTTPSRouteName(gs), prev)
		}
		if dup != "" {
			rp.errs = append(rp.errs, fmt.Errorf("%s: %s; server skipped", gs, dup))
			continue
		}
		for _, k := range keys {
			taken[k] = gs
		}
		if gs.kind == kindTLS {
			gp.passthrough = append(gp.passthrough, gs)
			continue
		}
		routes[GatewayHTTPSRouteName(gs)] = gs
		gp.https = append(gp.https, gs)
	}
}
