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

	"github.com/xdslab/xdslab/controlplane/config/validate"
)

// Gateway TLS termination (gateway.go), as istiod builds it for an HTTPS or TLS server with
// tls.mode SIMPLE, MUTUAL, OPTIONAL_MUTUAL or ISTIO_MUTUAL.

// serverCredential is the credential a server's certificate comes from (the first of
// credentialNames, else credentialName), "" for none.
func serverCredential(t *networking.ServerTLSSettings) string {
	if ns := t.GetCredentialNames(); len(ns) > 0 {
		return ns[0]
	}
	return t.GetCredentialName()
}

// credentialSecret is the SDS reference to a credential (or its CA, NAME-cacert), by its
// scheme (validate.CredentialResource): the istio-agent's own certificate or root for exactly
// builtin:// (and builtin://-cacert), else the resource over ADS. Unlike the workload
// certificates, istiod leaves Envoy's default initial fetch timeout on the ADS ones: a missing
// secret must not hold the listener forever.
func credentialSecret(name string) *tlsv3.SdsSecretConfig {
	switch name {
	case validate.CredentialBuiltin:
		return &tlsv3.SdsSecretConfig{Name: SecretDefault, SdsConfig: agentSDSConfigSource()}
	case validate.CredentialBuiltin + validate.CredentialCASuffix:
		return &tlsv3.SdsSecretConfig{Name: SecretRootCA, SdsConfig: agentSDSConfigSource()}
	}
	return &tlsv3.SdsSecretConfig{Name: validate.CredentialResource(name), SdsConfig: adsConfigSource()}
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

// gatewayTLSSocket is the downstream TLS context of a server that terminates TLS (HTTPS, or
// protocol TLS before its tcp routes, tcp), as istiod builds it: ALPN h2 and http/1.1, led by
// "istio-peer-exchange" on a protocol TLS server with ISTIO_MUTUAL (istiod's ALPN for a
// terminating TCP server, where a sidecar client may offer only Istio's ALPNs); a client
// certificate required for MUTUAL and ISTIO_MUTUAL, asked for but optional for OPTIONAL_MUTUAL.
// Where the certificates come from depends on the server:
//   - ISTIO_MUTUAL: the gateway's own workload certificate, SDS "default", checked against the
//     mesh root "ROOTCA", both from the istio-agent (sds-grpc);
//   - a credentialName (or credentialNames): the Kubernetes secrets over ADS, or the
//     agent's own certificate for builtin:// (credentialSecret); clients are checked against
//     NAME-cacert, or caCertCredentialName, with the subjectAltNames, SPKI and hash pins;
//     SIMPLE checks only the subjectAltNames;
//   - certificate files: the istio-agent serves them as SDS "file-cert:CERT~KEY" (one per
//     tlsCertificates entry, else serverCertificate and privateKey) and clients are checked
//     against "file-root:CA" (caCertificates; "ROOTCA" without it) and the subjectAltNames.
//
// TLS versions as the server says, and its cipher suites that Envoy knows
// (serverCipherSuites), except for ISTIO_MUTUAL (istiod ignores them there).
func gatewayTLSSocket(t *networking.ServerTLSSettings, tcp bool) *corev3.TransportSocket {
	mode := t.GetMode()
	ctx := &tlsv3.CommonTlsContext{AlpnProtocols: []string{"h2", "http/1.1"}}
	if tcp && mode == networking.ServerTLSSettings_ISTIO_MUTUAL {
		ctx.AlpnProtocols = []string{"istio-peer-exchange", "h2", "http/1.1"}
	}
	require := mode == networking.ServerTLSSettings_MUTUAL || mode == networking.ServerTLSSettings_ISTIO_MUTUAL
	verify := require || mode == networking.ServerTLSSettings_OPTIONAL_MUTUAL
	switch {
	case mode == networking.ServerTLSSettings_ISTIO_MUTUAL:
		ctx.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{Name: SecretDefault, SdsConfig: agentSDSConfigSource()}}
		ctx.ValidationContextType = combinedValidation(agentValidation(t), &tlsv3.SdsSecretConfig{Name: SecretRootCA, SdsConfig: agentSDSConfigSource()})
	case serverCredential(t) != "":
		credentialTLS(ctx, t, verify)
	default:
		fileTLS(ctx, t, verify)
	}
	if mode != networking.ServerTLSSettings_ISTIO_MUTUAL {
		if v := t.GetMinProtocolVersion(); v != networking.ServerTLSSettings_TLS_AUTO {
			tlsParams(ctx).TlsMinimumProtocolVersion = tlsv3.TlsParameters_TlsProtocol(v)
		}
		if v := t.GetMaxProtocolVersion(); v != networking.ServerTLSSettings_TLS_AUTO {
			tlsParams(ctx).TlsMaximumProtocolVersion = tlsv3.TlsParameters_TlsProtocol(v)
		}
		if cs := serverCipherSuites(t.GetCipherSuites()); len(cs) > 0 {
			tlsParams(ctx).CipherSuites = cs
		}
	}
	return &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.DownstreamTlsContext{CommonTlsContext: ctx, RequireClientCertificate: wrapperspb.Bool(require)}),
	}}
}

// serverCipherSuites are a server's cipherSuites as istiod passes them to Envoy: the ones it
// knows (validate.KnownCipherSuite), each once, in the order written; none (Envoy's defaults)
// when nothing is left.
func serverCipherSuites(suites []string) []string {
	var out []string
	for _, cs := range suites {
		if validate.KnownCipherSuite(cs) && !slices.Contains(out, cs) {
			out = append(out, cs)
		}
	}
	return out
}

// credentialTLS sets the certificates and client validation of a server with credentials.
func credentialTLS(ctx *tlsv3.CommonTlsContext, t *networking.ServerTLSSettings, verify bool) {
	names := t.GetCredentialNames()
	if len(names) == 0 {
		names = []string{t.GetCredentialName()}
	}
	for _, n := range names {
		ctx.TlsCertificateSdsSecretConfigs = append(ctx.TlsCertificateSdsSecretConfigs, credentialSecret(n))
	}
	sans := exactMatchers(t.GetSubjectAltNames())
	if !verify {
		if len(sans) > 0 {
			ctx.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{MatchSubjectAltNames: sans}}
		}
		return
	}
	ca := names[0] + validate.CredentialCASuffix
	if c := t.GetCaCertCredentialName(); c != "" {
		ca = c
	}
	dvc := &tlsv3.CertificateValidationContext{MatchSubjectAltNames: sans,
		VerifyCertificateSpki: t.GetVerifyCertificateSpki(), VerifyCertificateHash: t.GetVerifyCertificateHash()}
	if t.GetInsecureSkipVerify().GetValue() {
		dvc.TrustChainVerification = tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
	}
	ctx.ValidationContextType = combinedValidation(dvc, credentialSecret(ca))
}

// Prefixes of the SDS names under which the istio-agent serves certificate files.
const (
	fileCertSecretPrefix = "file-cert:"
	fileRootSecretPrefix = "file-root:"
)

// fileCertSecret names the agent's secret of a certificate and key file pair, "default" (the
// workload certificate, as istiod falls back) when either path is missing.
func fileCertSecret(cert, key string) string {
	if cert == "" || key == "" {
		return SecretDefault
	}
	return fileCertSecretPrefix + cert + "~" + key
}

// fileTLS sets the certificates and client validation of a server with certificate files.
// istiod names the files' secrets on the agent with Envoy's default initial fetch timeout: a
// file the agent cannot read holds the listener 15 s, then it serves without the certificate.
func fileTLS(ctx *tlsv3.CommonTlsContext, t *networking.ServerTLSSettings, verify bool) {
	if certs := t.GetTlsCertificates(); len(certs) > 0 {
		for _, c := range certs {
			ctx.TlsCertificateSdsSecretConfigs = append(ctx.TlsCertificateSdsSecretConfigs, fileSecret(fileCertSecret(c.GetServerCertificate(), c.GetPrivateKey())))
		}
	} else {
		ctx.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{fileSecret(fileCertSecret(t.GetServerCertificate(), t.GetPrivateKey()))}
	}
	if !verify {
		return
	}
	root := SecretRootCA
	if ca := t.GetCaCertificates(); ca != "" {
		root = fileRootSecretPrefix + ca
	}
	ctx.ValidationContextType = combinedValidation(agentValidation(t), fileSecret(root))
}

// fileSecret is an SDS reference to the istio-agent: the workload secrets wait forever (as
// istiod's), the file secrets Envoy's default initial fetch timeout.
func fileSecret(name string) *tlsv3.SdsSecretConfig {
	if name == SecretDefault || name == SecretRootCA {
		return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: agentSDSConfigSource()}
	}
	src := agentSDSConfigSource()
	src.InitialFetchTimeout = nil
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: src}
}

// agentValidation is the static part of the client validation of a server whose certificates
// come from the istio-agent: the subjectAltNames, the CRL file, and insecureSkipVerify (no SPKI
// or hash pins: istiod sets those for credentials only).
func agentValidation(t *networking.ServerTLSSettings) *tlsv3.CertificateValidationContext {
	dvc := &tlsv3.CertificateValidationContext{MatchSubjectAltNames: exactMatchers(t.GetSubjectAltNames())}
	if crl := t.GetCaCrl(); crl != "" {
		dvc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: crl}}
	}
	if t.GetInsecureSkipVerify().GetValue() {
		dvc.TrustChainVerification = tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
	}
	return dvc
}

func combinedValidation(dvc *tlsv3.CertificateValidationContext, sds *tlsv3.SdsSecretConfig) *tlsv3.CommonTlsContext_CombinedValidationContext {
	return &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
		DefaultValidationContext: dvc, ValidationContextSdsSecretConfig: sds,
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

// terminatedServers are the TLS termination servers of a port whose tcp routes get filter
// chains (sniServers).
func (rp *routerPlan) terminatedServers(gp *gwPort) []gwServer {
	rp.sniServers(gp)
	return gp.terminated
}

// autoPassthroughServers are the AUTO_PASSTHROUGH servers of a port that get filter chains
// (sniServers).
func (rp *routerPlan) autoPassthroughServers(gp *gwPort) []gwServer {
	rp.sniServers(gp)
	return gp.autoPassthrough
}

// passthroughServers are the TLS passthrough servers of a port whose tls routes get filter
// chains (sniServers).
func (rp *routerPlan) passthroughServers(gp *gwPort) []gwServer {
	rp.sniServers(gp)
	return gp.passthrough
}

// sniServers sorts the HTTPS, TLS termination and TLS passthrough servers of a port, in order, into those that
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
		if !sniKind(gs.kind) {
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
		switch gs.kind {
		case kindTLS:
			gp.passthrough = append(gp.passthrough, gs)
			continue
		case kindTLSTerm:
			gp.terminated = append(gp.terminated, gs)
			continue
		case kindTLSAuto:
			gp.autoPassthrough = append(gp.autoPassthrough, gs)
			continue
		}
		routes[GatewayHTTPSRouteName(gs)] = gs
		gp.https = append(gp.https, gs)
	}
}
