package gen

import (
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// Extension names of the TLS transport socket and the TLS inspector listener filter.
const (
	tlsTransportSocketName = "envoy.transport_sockets.tls"
	rawBufferSocketName    = "envoy.transport_sockets.raw_buffer"
	tlsInspectorFilterName = "envoy.filters.listener.tls_inspector"
)

// IstioALPN is the ALPN protocol Istio's sidecars offer on in-mesh mTLS.
const IstioALPN = "istio"

// sdsConfigSource fetches secrets over the ADS stream and waits for them forever (Istio's
// SDS config sets initial_fetch_timeout 0s too): a cluster or listener that references a
// secret stays warming until it arrives.
func sdsConfigSource() *corev3.ConfigSource { return adsWaitingSource() }

// workloadSecretSource is where p's workload certificate ("default") and root ("ROOTCA") come
// from where a DestinationRule's ISTIO_MUTUAL or a PeerAuthentication asks for mTLS: over ADS
// from xdslab's SDS when p's stream authenticated an identity (the secure listener: SDS serves
// that identity's certificate), else from the istio-agent (sds-grpc), as istiod names them for
// every proxy. Over the plaintext listener xdslab's SDS serves no secret, so naming ADS there
// would keep such a cluster or listener warming for ever where istiod's warms
// (hack/istio TestCorpusWarmsOnIstioAndXdslab). Auto-mTLS always names the agent.
func workloadSecretSource(p *model.Proxy) func() *corev3.ConfigSource {
	if p != nil && p.Identity != "" {
		return sdsConfigSource
	}
	return agentSDSConfigSource
}

// SecretsKey is "ads" for a proxy whose stream authenticated an identity, "" otherwise: its
// ISTIO_MUTUAL clusters and PeerAuthentication's inbound chains fetch their secrets over ADS,
// the others' from the istio-agent (workloadSecretSource). The ADS server adds it to a proxy's
// CDS and LDS classes.
func SecretsKey(p *model.Proxy) string {
	if p != nil && p.Identity != "" {
		return "ads"
	}
	return ""
}

// TLSModeLabel is the endpoint label that says whether a workload takes Istio mTLS
// ("istio") or not ("disabled"); Istio's sidecar injector sets it on pods.
const TLSModeLabel = "security.istio.io/tlsMode"

// tlsModeIstio is the TLSModeLabel value of a workload with a sidecar.
const tlsModeIstio = "istio"

// transportSocketMatchKey is the endpoint metadata namespace Envoy matches a cluster's
// transport_socket_matches against.
const transportSocketMatchKey = "envoy.transport_socket_match"

// endpointTLSMode is an endpoint's TLS mode as Istio derives it: its TLSModeLabel when set
// (the sidecar injector labels the pods it injects); else, for a ServiceEntry endpoint or a
// WorkloadEntry, "istio" when it runs under a service account; else "disabled" (a Kubernetes
// pod without the label has no sidecar, whatever its service account).
func endpointTLSMode(ep *model.Endpoint) string {
	if m, ok := ep.Labels[TLSModeLabel]; ok {
		return m
	}
	if ep.ServiceAccount != "" && (ep.Source.Kind == istioconfig.KindWorkloadEntry || ep.Source.Kind == istioconfig.KindServiceEntry) {
		return tlsModeIstio
	}
	return "disabled"
}

// istioCommonTLS is the TLS context of ISTIO_MUTUAL and of inbound mTLS: the workload's own
// certificate (SDS "default") and validation against the mesh root (SDS "ROOTCA"), accepting
// only the peers named by sans (any when empty), with ALPN alpn.
func istioCommonTLS(src func() *corev3.ConfigSource, sans []string, alpn []string) *tlsv3.CommonTlsContext {
	vc := &tlsv3.CertificateValidationContext{}
	for _, san := range sans {
		// The untyped matcher, as istiod sends it (any SAN type; a SPIFFE id only occurs as a URI).
		vc.MatchSubjectAltNames = append(vc.MatchSubjectAltNames, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: san}})
	}
	return &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: SecretDefault, SdsConfig: src()}},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         vc,
			ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: SecretRootCA, SdsConfig: src()},
		}},
		AlpnProtocols: alpn,
	}
}

// Upstream ALPN of in-mesh mTLS: "istio" marks mesh traffic, "h2" is added for HTTP/2
// clusters (Istio's values, less its telemetry-only "istio-peer-exchange").
var (
	alpnInMesh   = []string{IstioALPN}
	alpnInMeshH2 = []string{IstioALPN, "h2"}
)

// inboundALPN is what an inbound mTLS chain offers.
var inboundALPN = []string{"h2", "http/1.1"}

// IstioSNI is Istio's SNI for in-mesh mTLS to a cluster: "outbound_.PORT_.SUBSET_.HOST".
func IstioSNI(port uint32, subset, host string) string {
	return "outbound_." + strconv.FormatUint(uint64(port), 10) + "_." + subset + "_." + host
}

// AgentSDSCluster is the bootstrap cluster of the istio-agent's SDS server next to each Envoy,
// where istiod's auto-mTLS names the secrets "default" and "ROOTCA".
const AgentSDSCluster = "sds-grpc"

// agentSDSConfigSource fetches a secret from the istio-agent (cluster sds-grpc), waiting for it
// forever, as istiod's auto-mTLS does.
func agentSDSConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType:             corev3.ApiConfigSource_GRPC,
			TransportApiVersion: corev3.ApiVersion_V3,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: AgentSDSCluster},
			}}},
			SetNodeOnFirstMessageOnly: true,
		}},
		InitialFetchTimeout: durationpb.New(0),
		ResourceApiVersion:  corev3.ApiVersion_V3,
	}
}

// istioMutualSocket is the upstream transport socket of ISTIO_MUTUAL: SNI sni, the peer's
// SPIFFE ids sans, ALPN by protocol, secrets from src (ADS for a DestinationRule's
// ISTIO_MUTUAL, the agent for auto-mTLS).
func istioMutualSocket(src func() *corev3.ConfigSource, sni string, sans []string, h2 bool) *corev3.TransportSocket {
	alpn := alpnInMesh
	if h2 {
		alpn = alpnInMeshH2
	}
	return &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.UpstreamTlsContext{CommonTlsContext: istioCommonTLS(src, sans, alpn), Sni: sni}),
	}}
}

// autoMTLSMatches are the transport socket matches of auto-mTLS: endpoints whose metadata says
// tlsMode "istio" get mTLS (socket), the others plaintext.
func autoMTLSMatches(sh *shared, socket *corev3.TransportSocket) []*clusterv3.Cluster_TransportSocketMatch {
	return []*clusterv3.Cluster_TransportSocketMatch{
		{Name: "tlsMode-" + tlsModeIstio, Match: sh.istioMatch(), TransportSocket: socket},
		sh.plaintextMatch(),
	}
}

// inboundMTLSSocket is the downstream transport socket of an inbound mTLS filter chain: the
// peer must present a certificate signed by the mesh root for an identity of the trust domain
// td; ALPN h2 and http/1.1 are offered, as istiod does.
func inboundMTLSSocket(src func() *corev3.ConfigSource, td string) *corev3.TransportSocket {
	ctx := istioCommonTLS(src, nil, inboundALPN)
	ctx.GetCombinedValidationContext().DefaultValidationContext.MatchSubjectAltNames = []*matcherv3.StringMatcher{{
		MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "spiffe://" + td + "/"},
	}}
	return &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.DownstreamTlsContext{CommonTlsContext: ctx, RequireClientCertificate: wrapperspb.Bool(true)}),
	}}
}

func tlsInspector() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{
		Name:       tlsInspectorFilterName,
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&tlsinspectorv3.TlsInspector{})},
	}
}

// originateTLS gives a cluster whose DestinationRule says tls.mode SIMPLE or MUTUAL the TLS
// origination istiod builds for a sidecar: the DestinationRule's SNI; validation against its
// caCertificates (else the system roots), or none with insecureSkipVerify, accepting its
// subjectAltNames (else, for a ServiceEntry, the entry's); for MUTUAL the client certificate
// and key. Certificates are files the istio-agent serves as SDS secrets "file-root:PATH" and
// "file-cert:CERT~KEY" (on sds-grpc). Without an SNI, Envoy sets it from the request's host
// (auto_sni), and without SNI and SANs checks the certificate against that host too
// (auto_san_validation). A credentialName (a Kubernetes secret) is not read on a sidecar, as
// in istiod: the cluster stays plaintext.
func originateTLS(c *clusterv3.Cluster, svc *model.Service, t *networking.ClientTLSSettings, h2 bool) {
	if !originateTLSSocket(c, svc, t, h2) {
		return
	}
	autoSNI := t.GetSni() == ""
	setAutoVerify(c, h2, autoVerify{sni: autoSNI, san: autoSNI && len(t.GetSubjectAltNames()) == 0 && !t.GetInsecureSkipVerify().GetValue()})
}

// originateTLSSocket sets c's transport socket for originateTLS and reports whether it did
// (not for a credentialName, nor for MUTUAL without its certificate and key).
func originateTLSSocket(c *clusterv3.Cluster, svc *model.Service, t *networking.ClientTLSSettings, h2 bool) bool {
	if t.GetCredentialName() != "" {
		return false
	}
	if t.GetMode() == networking.ClientTLSSettings_MUTUAL && (t.GetClientCertificate() == "" || t.GetPrivateKey() == "") {
		return false // rejected by validation (istiod logs and sends no TLS)
	}
	ctx := &tlsv3.CommonTlsContext{}
	if t.GetMode() == networking.ClientTLSSettings_MUTUAL {
		ctx.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{fileSecret("file-cert:" + t.GetClientCertificate() + "~" + t.GetPrivateKey())}
	}
	sans := t.GetSubjectAltNames()
	if len(sans) == 0 && svc.Source.Kind == istioconfig.KindServiceEntry {
		sans = svc.ServiceAccounts
	}
	if t.GetInsecureSkipVerify().GetValue() {
		ctx.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{}
	} else {
		vc := &tlsv3.CertificateValidationContext{}
		for _, san := range sans {
			vc.MatchSubjectAltNames = append(vc.MatchSubjectAltNames, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: san}})
		}
		if crl := t.GetCaCrl(); crl != "" {
			vc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: crl}}
		}
		ca := t.GetCaCertificates()
		if ca == "" {
			ca = "system"
		}
		ctx.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         vc,
			ValidationContextSdsSecretConfig: fileSecret("file-root:" + ca),
		}}
	}
	if h2 {
		ctx.AlpnProtocols = []string{"h2"}
	}
	c.TransportSocket = &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.UpstreamTlsContext{CommonTlsContext: ctx, Sni: t.GetSni()}),
	}}
	return true
}
