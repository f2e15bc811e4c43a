package gen

import (
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

func peerAuthConfig(ns, name string, sel map[string]string, mode securityapi.PeerAuthentication_MutualTLS_Mode, ports map[uint32]securityapi.PeerAuthentication_MutualTLS_Mode, age time.Duration) *istioconfig.Config {
	pa := &securityapi.PeerAuthentication{Mtls: &securityapi.PeerAuthentication_MutualTLS{Mode: mode}}
	if sel != nil {
		pa.Selector = &typev1beta1.WorkloadSelector{MatchLabels: sel}
	}
	for p, m := range ports {
		if pa.PortLevelMtls == nil {
			pa.PortLevelMtls = map[uint32]*securityapi.PeerAuthentication_MutualTLS{}
		}
		pa.PortLevelMtls[p] = &securityapi.PeerAuthentication_MutualTLS{Mode: m}
	}
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindPeerAuthentication, Name: name, Namespace: ns,
		CreationTimestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age)}, Spec: pa}
}

func istioMutualDR(ns, host string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "mtls-" + ns, Namespace: ns},
		Spec: &networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{
			Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL}}}}
}

// istioMutualMesh is goldenMesh with ISTIO_MUTUAL for ratings and mysql, a mesh-wide STRICT
// PeerAuthentication and a PERMISSIVE one for the default namespace.
func istioMutualMesh() *model.Snapshot {
	in := goldenInput()
	in.Configs = append(in.Configs,
		istioMutualDR("default", "ratings.default.svc.cluster.local"),
		istioMutualDR("db", "mysql.db.svc.cluster.local"),
		peerAuthConfig(RootNamespace, "default", nil, securityapi.PeerAuthentication_MutualTLS_STRICT, nil, 0),
		peerAuthConfig("default", "default", nil, securityapi.PeerAuthentication_MutualTLS_PERMISSIVE, nil, 0),
	)
	return model.NewSnapshot(1, in)
}

// TestIstioMutualGolden: DestinationRule ISTIO_MUTUAL gives a cluster the TLS transport socket
// referencing SDS default and ROOTCA; a PERMISSIVE port of virtualInbound gets an mTLS and a
// plaintext chain told apart by the TLS inspector. Everything passes deep validation. The proxy
// authenticated on the secure listener: its secrets come over ADS (TestWorkloadSecretSource).
func TestIstioMutualGolden(t *testing.T) {
	s := istioMutualMesh()
	p := sidecarProxy("10.1.0.1", "default") // a reviews endpoint: inbound port 9080
	p.Identity = "spiffe://cluster.local/ns/default/sa/reviews"
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	checkGolden(t, "istio-mutual", []string{ClusterType, ListenerType}, g)
	tls := map[string]bool{}
	for _, r := range g[ClusterType] {
		tls[r.Name] = r.Message.(*clusterv3.Cluster).GetTransportSocket() != nil
	}
	for name, want := range map[string]bool{
		"outbound|9090||ratings.default.svc.cluster.local": true, "outbound|3306||mysql.db.svc.cluster.local": true,
		"outbound|9080||reviews.default.svc.cluster.local": false, "inbound|9080||": false,
	} {
		if tls[name] != want {
			t.Errorf("cluster %s: transport socket %v, want %v", name, tls[name], want)
		}
	}
	// The proxyless family takes ISTIO_MUTUAL from grpc-go's certificate provider, never SDS,
	// and has no auto-mTLS (TestGRPCClusterTLS).
	gp := grpcProxy("default")
	rs, err := ForType(ClusterType, gp).Generate(gp, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		c := r.Message.(*clusterv3.Cluster)
		ut := &tlsv3.UpstreamTlsContext{}
		if ts := c.GetTransportSocket(); ts != nil {
			if err := ts.GetTypedConfig().UnmarshalTo(ut); err != nil {
				t.Fatalf("grpc cluster %s: %v", r.Name, err)
			}
		}
		want := r.Name == "outbound|9090||ratings.default.svc.cluster.local" || r.Name == "outbound|3306||mysql.db.svc.cluster.local"
		if got := ut.GetCommonTlsContext().GetTlsCertificateProviderInstance() != nil; got != want || len(c.GetTransportSocketMatches()) > 0 ||
			len(ut.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()) > 0 {
			t.Errorf("grpc cluster %s: certificate provider TLS %v, want %v; socket %v, matches %v", r.Name, got, want, c.GetTransportSocket(), c.GetTransportSocketMatches())
		}
	}
}

// inboundModes returns the filter chains of virtualInbound for destination port 9080, each as
// "TRANSPORT" or "TRANSPORT+mtls" (it terminates mTLS), sorted.
func inboundModes(t *testing.T, p *model.Proxy, s *model.Snapshot) []string {
	t.Helper()
	rs, err := ForType(ListenerType, p).Generate(p, s, []string{VirtualInboundListener})
	if err != nil || len(rs) != 1 {
		t.Fatalf("virtualInbound: %v (%d resources)", err, len(rs))
	}
	l := rs[0].Message.(*listenerv3.Listener)
	var out []string
	for _, fc := range l.GetFilterChains() {
		if fc.GetFilterChainMatch().GetDestinationPort().GetValue() != 9080 {
			continue
		}
		m := fc.GetFilterChainMatch().GetTransportProtocol()
		if fc.GetTransportSocket() != nil {
			m += "+mtls"
		}
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// TestPeerAuthResolution: mesh, namespace, workload and port-level policies, UNSET
// inheritance, the oldest of two workload policies, and no policy at all (PERMISSIVE, Istio's
// default): STRICT takes only mTLS, PERMISSIVE mTLS and plaintext, DISABLE only plaintext.
func TestPeerAuthResolution(t *testing.T) {
	const (
		unset      = securityapi.PeerAuthentication_MutualTLS_UNSET
		disable    = securityapi.PeerAuthentication_MutualTLS_DISABLE
		permissive = securityapi.PeerAuthentication_MutualTLS_PERMISSIVE
		strict     = securityapi.PeerAuthentication_MutualTLS_STRICT
	)
	var (
		strictChains     = []string{"tls+mtls"}
		permissiveChains = []string{"raw_buffer", "tls+mtls"}
		plainChains      = []string{"raw_buffer"}
	)
	client := map[string]string{"app": "client"}
	for _, tc := range []struct {
		name string
		pas  []*istioconfig.Config
		want []string
	}{
		{"none", nil, permissiveChains},
		{"mesh strict", []*istioconfig.Config{peerAuthConfig(RootNamespace, "default", nil, strict, nil, 0)}, strictChains},
		{"mesh unset is permissive", []*istioconfig.Config{peerAuthConfig(RootNamespace, "default", nil, unset, nil, 0)}, permissiveChains},
		{"mesh permissive", []*istioconfig.Config{peerAuthConfig(RootNamespace, "default", nil, permissive, nil, 0)}, permissiveChains},
		{"namespace disables mesh strict", []*istioconfig.Config{
			peerAuthConfig(RootNamespace, "default", nil, strict, nil, 0), peerAuthConfig("default", "default", nil, disable, nil, 0)},
			plainChains},
		{"other namespace does not apply", []*istioconfig.Config{peerAuthConfig("other", "default", nil, strict, nil, 0)}, permissiveChains},
		{"workload unset inherits namespace strict", []*istioconfig.Config{
			peerAuthConfig("default", "default", nil, strict, nil, 0), peerAuthConfig("default", "w", client, unset, nil, 0)},
			strictChains},
		{"selector not matching", []*istioconfig.Config{peerAuthConfig("default", "w", map[string]string{"app": "x"}, strict, nil, 0)}, permissiveChains},
		{"port level overrides", []*istioconfig.Config{
			peerAuthConfig("default", "w", client, strict, map[uint32]securityapi.PeerAuthentication_MutualTLS_Mode{9080: disable}, 0)},
			plainChains},
		{"oldest workload policy wins", []*istioconfig.Config{
			peerAuthConfig("default", "a-new", client, disable, nil, 0), peerAuthConfig("default", "z-old", client, strict, nil, time.Hour)},
			strictChains},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := goldenInput()
			in.Configs = append(in.Configs, tc.pas...)
			p := sidecarProxy("10.1.0.1", "default")
			got := inboundModes(t, p, model.NewSnapshot(1, in))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("port 9080 chains (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPeerAuthRootNamespaceSelector: a PeerAuthentication with a selector in the root
// namespace is no workload policy (istiod ignores it), for a workload of the root namespace
// too: the namespace-level mode applies. Found by hack/istio/parity
// (testdata/mesh/authnorder.yaml: clients kept mTLS to such an endpoint in istiod, not in
// xdslab).
func TestPeerAuthRootNamespaceSelector(t *testing.T) {
	in := goldenInput()
	in.Configs = append(in.Configs,
		peerAuthConfig(RootNamespace, "sys", map[string]string{"app": "sys"}, securityapi.PeerAuthentication_MutualTLS_DISABLE,
			map[uint32]securityapi.PeerAuthentication_MutualTLS_Mode{8080: securityapi.PeerAuthentication_MutualTLS_DISABLE}, 0),
		peerAuthConfig(RootNamespace, "mesh", nil, securityapi.PeerAuthentication_MutualTLS_STRICT, nil, 0),
	)
	s := model.NewSnapshot(1, in)
	for _, ns := range []string{RootNamespace, "default"} {
		pa := peerAuthFor(&model.Proxy{Namespace: ns, Labels: map[string]string{"app": "sys"}}, s)
		if pa.port(8080) != mtlsStrict || pa.port(80) != mtlsStrict {
			t.Errorf("workload of %s: mode %v/%v, want the mesh-wide STRICT", ns, pa.port(8080), pa.port(80))
		}
	}
	if m := newWorkloadMTLS(s).mode(RootNamespace, &model.Endpoint{Labels: map[string]string{"app": "sys"}}, 8080); m != mtlsStrict {
		t.Errorf("endpoint of the root namespace: mode %v, want STRICT", m)
	}
}

// TestPeerAuthUntargetedPorts: a port-level mode for a port no inbound service port targets
// gets passthrough chains of its own (destination port, that mode, to
// InboundPassthroughCluster), as istiod builds them; an UNSET port takes the workload's mode
// and a targeted port none. Found by hack/istio/parity (testdata/mesh/security.yaml: xdslab
// left such a port to the workload's STRICT catch-all chains).
func TestPeerAuthUntargetedPorts(t *testing.T) {
	const (
		unset      = securityapi.PeerAuthentication_MutualTLS_UNSET
		disable    = securityapi.PeerAuthentication_MutualTLS_DISABLE
		permissive = securityapi.PeerAuthentication_MutualTLS_PERMISSIVE
		strict     = securityapi.PeerAuthentication_MutualTLS_STRICT
	)
	in := goldenInput()
	in.Configs = append(in.Configs, peerAuthConfig("default", "w", map[string]string{"app": "client"}, strict,
		map[uint32]securityapi.PeerAuthentication_MutualTLS_Mode{7070: disable, 7071: permissive, 7072: strict, 7073: unset, 9080: disable}, 0))
	s := model.NewSnapshot(1, in)
	p := sidecarProxy("10.1.0.1", "default") // a reviews endpoint: inbound port 9080
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var l *listenerv3.Listener
	for _, r := range g[ListenerType] {
		if r.Name == VirtualInboundListener {
			l = r.Message.(*listenerv3.Listener)
		}
	}
	if l == nil {
		t.Fatal("no virtualInbound")
	}
	got := map[uint32][]string{}
	for _, fc := range l.GetFilterChains() {
		port := fc.GetFilterChainMatch().GetDestinationPort().GetValue()
		if port == 0 || port == VirtualInboundPort {
			continue
		}
		c := fc.GetFilterChainMatch().GetTransportProtocol()
		if fc.GetTransportSocket() != nil {
			c += "+mtls"
		}
		if len(fc.GetFilterChainMatch().GetApplicationProtocols()) > 0 {
			c += "+alpn"
		}
		f := fc.GetFilters()[len(fc.GetFilters())-1]
		c += " " + f.GetName()
		if port != 9080 && !strings.Contains(f.GetTypedConfig().String(), InboundPassthroughCluster) {
			t.Errorf("port %d chain %s: not to %s", port, c, InboundPassthroughCluster)
		}
		got[port] = append(got[port], c)
	}
	for _, cs := range got {
		slices.Sort(cs)
	}
	const hcm, tcp = " envoy.filters.network.http_connection_manager", " envoy.filters.network.tcp_proxy"
	strictPass := []string{"tls+mtls" + tcp, "tls+mtls+alpn" + hcm}
	want := map[uint32][]string{
		7070: {"raw_buffer" + tcp, "raw_buffer+alpn" + hcm},
		7071: {"raw_buffer" + tcp, "raw_buffer+alpn" + hcm, "tls" + tcp, "tls+mtls+alpn" + hcm, "tls+mtls+alpn" + tcp},
		7072: strictPass,
		7073: strictPass,
		9080: {"raw_buffer" + hcm}, // the service's own chain, in the port's mode
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("virtualInbound chains by destination port (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(l.GetListenerFilters(), func(f *listenerv3.ListenerFilter) bool { return f.GetName() == httpInspectorFilterName }) {
		t.Error("no http_inspector for the plaintext HTTP chains of ports 7070 and 7071")
	}
}

// TestWorkloadSecretSource: where a DestinationRule's ISTIO_MUTUAL and a PeerAuthentication ask
// for mTLS, the workload certificate and root come over ADS from xdslab's SDS for a proxy whose
// stream authenticated an identity, and from the istio-agent (sds-grpc) for any other, as istiod
// names them for every proxy (xdslab's SDS serves no secret on the plaintext listener: naming ADS
// there kept those clusters and listeners warming for ever). Auto-mTLS names the agent for both.
func TestWorkloadSecretSource(t *testing.T) {
	s := istioMutualMesh()
	for _, tc := range []struct {
		name, identity, want string
	}{
		{"plaintext stream", "", AgentSDSCluster},
		{"authenticated stream", "spiffe://cluster.local/ns/default/sa/reviews", "ads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sidecarProxy("10.1.0.1", "default")
			p.Identity = tc.identity
			if got, want := SecretsKey(p), map[bool]string{true: "ads", false: ""}[tc.identity != ""]; got != want {
				t.Errorf("SecretsKey = %q, want %q", got, want)
			}
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			source := func(sc *tlsv3.SdsSecretConfig) string {
				if sc.GetSdsConfig().GetAds() != nil {
					return "ads"
				}
				return sc.GetSdsConfig().GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName()
			}
			check := func(what string, ctx *tlsv3.CommonTlsContext, want string) {
				t.Helper()
				for _, sc := range append(slices.Clone(ctx.GetTlsCertificateSdsSecretConfigs()), ctx.GetCombinedValidationContext().GetValidationContextSdsSecretConfig()) {
					if got := source(sc); got != want {
						t.Errorf("%s: secret %s from %q, want %q", what, sc.GetName(), got, want)
					}
				}
			}
			seen := 0
			for _, r := range g[ClusterType] {
				c := r.Message.(*clusterv3.Cluster)
				ut := &tlsv3.UpstreamTlsContext{}
				if ts := c.GetTransportSocket(); ts != nil && ts.GetTypedConfig().UnmarshalTo(ut) == nil && ut.GetCommonTlsContext() != nil {
					check(r.Name, ut.GetCommonTlsContext(), tc.want) // the rule's ISTIO_MUTUAL
					seen++
				}
				for _, m := range c.GetTransportSocketMatches() {
					if m.GetTransportSocket().GetTypedConfig().UnmarshalTo(ut) == nil && ut.GetCommonTlsContext() != nil {
						check(r.Name+" (auto-mTLS)", ut.GetCommonTlsContext(), AgentSDSCluster)
					}
				}
			}
			for _, r := range g[ListenerType] {
				for _, fc := range r.Message.(*listenerv3.Listener).GetFilterChains() {
					dt := &tlsv3.DownstreamTlsContext{}
					if ts := fc.GetTransportSocket(); ts != nil && ts.GetTypedConfig().UnmarshalTo(dt) == nil && dt.GetCommonTlsContext() != nil {
						check(r.Name+" "+fc.GetName(), dt.GetCommonTlsContext(), tc.want) // the PeerAuthentication's mTLS
						seen++
					}
				}
			}
			if seen == 0 {
				t.Fatal("no ISTIO_MUTUAL cluster or mTLS chain generated")
			}
		})
	}
}
