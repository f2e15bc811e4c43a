package gen

import (
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// Extension names of the TLS transport socket and the TLS inspector listener filter.
const (
	tlsTransportSocketName = "envoy.transport_sockets.tls"
	tlsInspectorFilterName = "envoy.filters.listener.tls_inspector"
)

// IstioALPN is the ALPN protocol Istio's sidecars offer on in-mesh mTLS.
const IstioALPN = "istio"

// sdsConfigSource fetches secrets over the ADS stream and waits for them forever (Istio's
// SDS config sets initial_fetch_timeout 0s too): a cluster or listener that references a
// secret stays warming until it arrives.
func sdsConfigSource() *corev3.ConfigSource {
	cs := adsConfigSource()
	cs.InitialFetchTimeout = durationpb.New(0)
	return cs
}

// istioCommonTLS is the TLS context of ISTIO_MUTUAL and of inbound mTLS: the workload's own
// certificate (SDS "default") and validation against the mesh root (SDS "ROOTCA").
func istioCommonTLS() *tlsv3.CommonTlsContext {
	return &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: SecretDefault, SdsConfig: sdsConfigSource()}},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         &tlsv3.CertificateValidationContext{},
			ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: SecretRootCA, SdsConfig: sdsConfigSource()},
		}},
		AlpnProtocols: []string{IstioALPN},
	}
}

// istioMutualSocket is the upstream transport socket of a cluster whose DestinationRule asks
// for ISTIO_MUTUAL, with Istio's SNI "outbound_.PORT_.SUBSET_.HOST".
func istioMutualSocket(port uint32, subset, host string) *corev3.TransportSocket {
	sni := "outbound_." + strconv.FormatUint(uint64(port), 10) + "_." + subset + "_." + host
	return &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.UpstreamTlsContext{CommonTlsContext: istioCommonTLS(), Sni: sni}),
	}}
}

// inboundMTLSSocket is the downstream transport socket of an inbound filter chain under
// STRICT or PERMISSIVE: the peer must present a certificate signed by the mesh root.
func inboundMTLSSocket() *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: tlsTransportSocketName, ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: toAny(&tlsv3.DownstreamTlsContext{CommonTlsContext: istioCommonTLS(), RequireClientCertificate: wrapperspb.Bool(true)}),
	}}
}

func tlsInspector() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{
		Name:       tlsInspectorFilterName,
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&tlsinspectorv3.TlsInspector{})},
	}
}

// clientTLS returns the effective client TLS settings of a traffic policy for port: the
// port-level settings' tls when set, else the policy's.
func clientTLS(tp *networking.TrafficPolicy, port uint32) *networking.ClientTLSSettings {
	if tp == nil {
		return nil
	}
	out := tp.GetTls()
	for _, pl := range tp.GetPortLevelSettings() {
		if pl.GetPort().GetNumber() == port && pl.GetTls() != nil {
			out = pl.GetTls()
		}
	}
	return out
}
