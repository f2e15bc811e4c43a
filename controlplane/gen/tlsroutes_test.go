package gen

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

const (
	lockerHost = "locker.vaults.svc.cluster.local"
	mirrorHost = "mirror.files.example"
	assetsHost = "assets.files.example"
)

// tlsMesh: locker, a TLS service with VIP 10.96.7.1 on 7643, and two HTTPS services without a
// VIP on 9643 (0.0.0.0_9643).
func tlsMesh(cfgs ...*istioconfig.Config) *model.Snapshot {
	return model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		{Hostname: lockerHost, Namespace: "vaults", Addresses: []string{"10.96.7.1"}, Ports: []model.Port{{Name: "tls", Number: 7643, Protocol: model.ProtocolTLS}}},
		{Hostname: mirrorHost, Namespace: "vaults", Ports: []model.Port{{Name: "https", Number: 9643, Protocol: model.ProtocolHTTPS}}},
		{Hostname: assetsHost, Namespace: "vaults", Ports: []model.Port{{Name: "https", Number: 9643, Protocol: model.ProtocolHTTPS}}},
	}, Configs: cfgs})
}

func sniMatch(sni []string, subnets ...string) *listenerv3.FilterChainMatch {
	m := &listenerv3.FilterChainMatch{ServerNames: sni}
	for _, s := range subnets {
		m.PrefixRanges = append(m.PrefixRanges, &corev3.CidrRange{AddressPrefix: s, PrefixLen: wrapperspb.UInt32(32)})
	}
	return m
}

// outboundListener generates one listener for p and checks it validates.
func outboundListener(t *testing.T, p *model.Proxy, s *model.Snapshot, name string) *listenerv3.Listener {
	t.Helper()
	rs, err := ForType(ListenerType, p).Generate(p, s, []string{name})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d listeners named %s", len(rs), name)
	}
	if _, err := validateDeep(rs[0].Message); err != nil {
		t.Fatal(err)
	}
	return rs[0].Message.(*listenerv3.Listener)
}

// The chains are what istiod's buildSidecarOutboundTLSFilterChainOpts builds for the same
// VirtualService: a chain per match that applies to the proxy, by SNI; the destination subnets
// of one match carry over to the later ones; a repeated SNI match adds nothing; what no chain
// takes passes through (the listener's default chain), and the TLS inspector reads the SNI.
func TestTLSRoutesVIP(t *testing.T) {
	vs := vsConfig("locker", "vaults", &networking.VirtualService{
		Hosts: []string{"locker", "*.locker.vaults.svc.cluster.local"},
		Tls: []*networking.TLSRoute{
			{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.locker.vaults.svc.cluster.local"}, SourceLabels: map[string]string{"app": "client"}}},
				Route: []*networking.RouteDestination{l4dest("locker", "a", 0)}},
			{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"locker.vaults.svc.cluster.local"}, DestinationSubnets: []string{"10.96.7.1"}}},
				Route: []*networking.RouteDestination{l4dest("locker", "a", 60), l4dest("locker", "b", 40)}},
			{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"b.locker.vaults.svc.cluster.local"}, Port: 7000}},
				Route: []*networking.RouteDestination{l4dest("locker", "b", 0)}},
			{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.locker.vaults.svc.cluster.local"}}, {SniHosts: []string{"z.locker.vaults.svc.cluster.local", "b.locker.vaults.svc.cluster.local"}, SourceNamespace: "app"}},
				Route: []*networking.RouteDestination{l4dest("locker", "b", 0)}},
			{Route: nil, Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"c.locker.vaults.svc.cluster.local"}}}},
		},
	})
	cluster := func(subset string) string { return ClusterName(Outbound, 7643, subset, lockerHost) }
	l := outboundListener(t, sidecarProxy("10.0.0.9", "app"), tlsMesh(vs), "10.96.7.1_7643")
	want := []*listenerv3.FilterChain{
		tcpChain(sniMatch([]string{"a.locker.vaults.svc.cluster.local"}), singleTCP(cluster("a"))),
		tcpChain(sniMatch([]string{"locker.vaults.svc.cluster.local"}, "10.96.7.1"), weightedTCP("locker.vaults",
			&tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: cluster("a"), Weight: 60},
			&tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: cluster("b"), Weight: 40})),
		tcpChain(sniMatch([]string{"b.locker.vaults.svc.cluster.local", "z.locker.vaults.svc.cluster.local"}, "10.96.7.1"), singleTCP(cluster("b"))),
	}
	if diff := cmp.Diff(want, l.GetFilterChains(), protocmp.Transform()); diff != "" {
		t.Errorf("filter chains (-istiod +ours):\n%s", diff)
	}
	if diff := cmp.Diff(passthroughChain(outboundFallback{cluster: PassthroughCluster}), l.GetDefaultFilterChain(), protocmp.Transform()); diff != "" {
		t.Errorf("default chain (-passthrough +ours):\n%s", diff)
	}
	if fs := l.GetListenerFilters(); len(fs) != 1 || fs[0].GetName() != tlsInspectorFilterName {
		t.Errorf("listener filters %v, want the TLS inspector", fs)
	}

	// Another namespace and labels: the first match and the last one's second match do not
	// apply; the repeated SNI match now does, with the subnet carried over.
	other := sidecarProxy("10.0.0.8", "elsewhere")
	other.Labels = map[string]string{"app": "batch"}
	l = outboundListener(t, other, tlsMesh(vs), "10.96.7.1_7643")
	want = []*listenerv3.FilterChain{want[1], tcpChain(sniMatch([]string{"a.locker.vaults.svc.cluster.local"}, "10.96.7.1"), singleTCP(cluster("b")))}
	if diff := cmp.Diff(want, l.GetFilterChains(), protocmp.Transform()); diff != "" {
		t.Errorf("filter chains of another proxy (-istiod +ours):\n%s", diff)
	}
	if ViewKey(ListenerType, sidecarProxy("10.0.0.9", "app"), tlsMesh(vs), true) == ViewKey(ListenerType, other, tlsMesh(vs), true) {
		t.Error("proxies the tls matches treat differently share a listener cache key")
	}

	// No match applies: the service's own chain, as before.
	vsNone := vsConfig("locker", "vaults", &networking.VirtualService{Hosts: []string{"locker"}, Tls: []*networking.TLSRoute{
		{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"locker"}, Port: 1}}, Route: []*networking.RouteDestination{l4dest("locker", "a", 0)}},
	}})
	l = outboundListener(t, other, tlsMesh(vsNone), "10.96.7.1_7643")
	if diff := cmp.Diff([]*listenerv3.FilterChain{tcpChain(nil, singleTCP(cluster("")))}, l.GetFilterChains(), protocmp.Transform()); diff != "" || l.GetDefaultFilterChain() != nil || len(l.GetListenerFilters()) != 0 {
		t.Errorf("listener without an applying tls match: %v", l)
	}
}

// On 0.0.0.0_9643 (HTTPS services without a VIP), a VirtualService for both hosts builds its
// chains for the first service; the second service's are the same and left out (istiod keeps
// the first of two chains with one match), and neither keeps its own SNI chain.
func TestTLSRoutesWildcardListener(t *testing.T) {
	p := sidecarProxy("10.0.0.9", "app")
	base := outboundListener(t, p, tlsMesh(), "0.0.0.0_9643")
	if len(base.GetFilterChains()) != 2 {
		t.Fatalf("without VirtualService: %d chains, want one per host", len(base.GetFilterChains()))
	}
	vs := vsConfig("files", "vaults", &networking.VirtualService{
		Hosts: []string{mirrorHost, assetsHost},
		Tls: []*networking.TLSRoute{
			{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{mirrorHost}}}, Route: []*networking.RouteDestination{l4dest(assetsHost, "", 0)}},
			{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{assetsHost}, DestinationSubnets: []string{"10.70.0.9"}}}, Route: []*networking.RouteDestination{l4dest(mirrorHost, "", 0)}},
		},
	})
	l := outboundListener(t, p, tlsMesh(vs), "0.0.0.0_9643")
	want := []*listenerv3.FilterChain{
		tcpChain(sniMatch([]string{mirrorHost}), singleTCP(ClusterName(Outbound, 9643, "", assetsHost))),
		tcpChain(sniMatch([]string{assetsHost}, "10.70.0.9"), singleTCP(ClusterName(Outbound, 9643, "", mirrorHost))),
	}
	if diff := cmp.Diff(want, l.GetFilterChains(), protocmp.Transform()); diff != "" {
		t.Errorf("filter chains (-istiod +ours):\n%s", diff)
	}
	if diff := cmp.Diff(passthroughChain(outboundFallback{cluster: PassthroughCluster}), l.GetDefaultFilterChain(), protocmp.Transform()); diff != "" {
		t.Errorf("default chain (-passthrough +ours):\n%s", diff)
	}
}

// A TLS service whose addresses are CIDRs (with or without an IP as well) is one service per
// address to istiod: on 0.0.0.0_PORT each CIDR gets the host's chains matching its prefix as
// well as SNI, from tls routes or, without any, the host's own name.
func TestTLSCIDRChains(t *testing.T) {
	const netHost, mixHost = "vaultnet.example", "ledgernet.example"
	vs := vsConfig("vaultnet", "vaults", &networking.VirtualService{
		Hosts: []string{netHost},
		Tls: []*networking.TLSRoute{{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{netHost}}},
			Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: netHost, Port: &networking.PortSelector{Number: 7743}}}}}},
	})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		{Hostname: netHost, Namespace: "vaults", Addresses: []string{"10.91.0.0/16", "10.92.4.0/24"}, Ports: []model.Port{{Name: "tls", Number: 7743, Protocol: model.ProtocolTLS}}},
		{Hostname: mixHost, Namespace: "vaults", Addresses: []string{"240.0.14.7", "10.95.0.0/16"}, Ports: []model.Port{{Name: "tls", Number: 7743, Protocol: model.ProtocolTLS}}},
	}, Configs: []*istioconfig.Config{vs}})
	l := outboundListener(t, sidecarProxy("10.0.0.9", "app"), s, "0.0.0.0_7743")
	prefixed := func(sni, pfx string, bits uint32) *listenerv3.FilterChainMatch {
		return &listenerv3.FilterChainMatch{ServerNames: []string{sni}, PrefixRanges: []*corev3.CidrRange{{AddressPrefix: pfx, PrefixLen: wrapperspb.UInt32(bits)}}}
	}
	var got []*listenerv3.FilterChainMatch
	for _, c := range l.GetFilterChains() {
		got = append(got, c.GetFilterChainMatch())
	}
	want := []*listenerv3.FilterChainMatch{
		prefixed(mixHost, "10.95.0.0", 16),
		prefixed(netHost, "10.91.0.0", 16),
		prefixed(netHost, "10.92.4.0", 24),
	}
	sortMatches := cmpopts.SortSlices(func(a, b *listenerv3.FilterChainMatch) bool { return l4MatchKey(a) < l4MatchKey(b) })
	if d := cmp.Diff(want, got, protocmp.Transform(), sortMatches); d != "" {
		t.Errorf("0.0.0.0_7743 chain matches (-want +got):\n%s", d)
	}
}
