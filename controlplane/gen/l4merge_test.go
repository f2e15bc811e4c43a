package gen

import (
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestL4RoutesOfSharedAndCIDRListeners: found by the third stream of hack/istio/parity's
// random meshes (testdata/mesh/found.yaml sections 16 and 17). A tcp route of a service
// whose address is a CIDR takes that CIDR's chain on 0.0.0.0_PORT (istiod builds the
// service's tcp chains with the CIDR as their destination), and the hosts of one
// ServiceEntry sharing a VIP share its listener as istiod merges their TCP listeners: each
// host's tls route chains join the first host's chains, and a host whose catch-all chain is
// the only one takes the default chain from a passthrough.
func TestL4RoutesOfSharedAndCIDRListeners(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tlsPort := []model.Port{{Name: "tls", Number: 9443, Protocol: model.ProtocolTLS}}
	tcpPort := []model.Port{{Name: "tcp", Number: 7100, Protocol: model.ProtocolTCP}}
	shared := func(host string) *model.Service {
		return &model.Service{Hostname: host, Namespace: "app", Addresses: []string{"240.1.0.9"}, Resolution: model.ResolutionStatic, Ports: tlsPort, CreationTime: t0}
	}
	cidr := &model.Service{Hostname: "range.internal", Namespace: "app", Addresses: []string{"10.70.0.0/24"}, Resolution: model.ResolutionPassthrough, Ports: tcpPort, CreationTime: t0}
	other := &model.Service{Hostname: "sink.internal", Namespace: "app", Addresses: []string{"240.1.0.10"}, Resolution: model.ResolutionStatic, Ports: tcpPort, CreationTime: t0}
	tlsRoute := func(sni, to string) *istioconfig.Config {
		return vsConfig("tls-"+sni, "app", &networking.VirtualService{Hosts: []string{sni}, Tls: []*networking.TLSRoute{{
			Match: []*networking.TLSMatchAttributes{{SniHosts: []string{sni}}},
			Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: to, Port: &networking.PortSelector{Number: 9443}}}},
		}}})
	}
	registryOnly := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "app"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}},
			OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_REGISTRY_ONLY}}}
	tests := []struct {
		name     string
		svcs     []*model.Service
		vss      []*istioconfig.Config
		listener string
		want     []string // "match -> clusters" per chain, the default chain as "default -> ..."
	}{
		{"second host's tls route joins the first host's listener", []*model.Service{shared("one.internal"), shared("two.internal")},
			[]*istioconfig.Config{tlsRoute("two.internal", "one.internal")}, "240.1.0.9_9443",
			[]string{"default -> outbound|9443||one.internal", "sni two.internal -> outbound|9443||one.internal"}},
		{"second host's catch-all replaces the passthrough default", []*model.Service{shared("one.internal"), shared("two.internal")},
			[]*istioconfig.Config{tlsRoute("one.internal", "two.internal")}, "240.1.0.9_9443",
			[]string{"default -> outbound|9443||two.internal", "sni one.internal -> outbound|9443||two.internal"}},
		{"both hosts' tls routes: the merged listener's default is the passthrough", []*model.Service{shared("one.internal"), shared("two.internal")},
			[]*istioconfig.Config{tlsRoute("one.internal", "one.internal"), tlsRoute("two.internal", "two.internal")}, "240.1.0.9_9443",
			[]string{"default -> PassthroughCluster", "sni one.internal -> outbound|9443||one.internal", "sni two.internal -> outbound|9443||two.internal"}},
		{"both hosts' tls routes under REGISTRY_ONLY: the merged listener's default is the black hole", []*model.Service{shared("one.internal"), shared("two.internal")},
			[]*istioconfig.Config{tlsRoute("one.internal", "one.internal"), tlsRoute("two.internal", "two.internal"), registryOnly}, "240.1.0.9_9443",
			[]string{"default -> BlackHoleCluster", "sni one.internal -> outbound|9443||one.internal", "sni two.internal -> outbound|9443||two.internal"}},
		{"no routes: the first host keeps the listener", []*model.Service{shared("one.internal"), shared("two.internal")},
			nil, "240.1.0.9_9443",
			[]string{"- -> outbound|9443||one.internal"}},
		{"a CIDR service's tcp route", []*model.Service{cidr, other},
			[]*istioconfig.Config{vsConfig("to-sink", "app", &networking.VirtualService{Hosts: []string{"range.internal"}, Tcp: []*networking.TCPRoute{{
				Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "sink.internal"}}},
			}}})}, "0.0.0.0_7100",
			[]string{"cidr 10.70.0.0/24 -> outbound|7100||sink.internal", "default -> PassthroughCluster"}},
		{"a CIDR service's tcp route by destination subnet", []*model.Service{cidr, other},
			[]*istioconfig.Config{vsConfig("to-sink", "app", &networking.VirtualService{Hosts: []string{"range.internal"}, Tcp: []*networking.TCPRoute{{
				Match: []*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.70.0.128/25"}}},
				Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "sink.internal"}}},
			}}})}, "0.0.0.0_7100",
			[]string{"cidr 10.70.0.0/24 -> outbound|7100||range.internal", "cidr 10.70.0.128/25 -> outbound|7100||sink.internal", "default -> PassthroughCluster"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: tt.svcs, Configs: tt.vss})
			p := sidecarProxy("10.1.0.9", "app")
			g, err := generateAll(t, p, s)
			checkResources(t, p, g)
			// A service port whose chains the listener already has is reported, as istiod
			// counts the conflict: the second host without routes (its catch-all is dropped).
			conflict := strings.Contains(tt.name, "first host keeps the listener")
			if got := err != nil && strings.Contains(err.Error(), "services one.internal and two.internal both use 240.1.0.9:9443"); got != conflict {
				t.Errorf("conflict reported %v, want %v (error %v)", got, conflict, err)
			}
			var got []string
			for _, r := range g[ListenerType] {
				if r.Name != tt.listener {
					continue
				}
				l := r.Message.(*listenerv3.Listener)
				for _, fc := range l.GetFilterChains() {
					got = append(got, l4ChainText(fc, ""))
				}
				if d := l.GetDefaultFilterChain(); d != nil {
					got = append(got, l4ChainText(d, "default"))
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s chains (-want +got)\n%s", tt.listener, diff)
			}
		})
	}
}

// l4ChainText is a chain as "match -> clusters": its SNI names or CIDRs ("-" for none, or
// label), and the clusters its tcp_proxy names.
func l4ChainText(fc *listenerv3.FilterChain, label string) string {
	m := fc.GetFilterChainMatch()
	match := "-"
	switch {
	case label != "":
		match = label
	case len(m.GetServerNames()) > 0:
		match = "sni " + strings.Join(m.GetServerNames(), ",")
	case len(m.GetPrefixRanges()) > 0:
		match = "cidr " + cidrText(m.GetPrefixRanges())
	}
	var clusters []string
	cfg := fc.GetFilters()[len(fc.GetFilters())-1].GetTypedConfig().String()
	for _, f := range strings.Fields(strings.NewReplacer(`"`, " ").Replace(cfg)) {
		if strings.HasPrefix(f, "outbound|") || f == PassthroughCluster || f == BlackHoleCluster {
			clusters = append(clusters, f)
		}
	}
	return match + " -> " + strings.Join(slices.Compact(clusters), ",")
}

// TestTCPRouteErrorOnce: a service with a VIP and a CIDR builds its tcp routes for both (the
// VIP's listener and the CIDR's chains on 0.0.0.0_PORT); an error of those routes is
// reported once, not once per place.
func TestTCPRouteErrorOnce(t *testing.T) {
	port := []model.Port{{Name: "tcp", Number: 7100, Protocol: model.ProtocolTCP}}
	both := &model.Service{Hostname: "mixed.internal", Namespace: "app", Addresses: []string{"240.1.0.11", "10.70.0.0/24"}, Resolution: model.ResolutionStatic, Ports: port}
	sink := &model.Service{Hostname: "sink.internal", Namespace: "app", Addresses: []string{"240.1.0.12"}, Resolution: model.ResolutionStatic, Ports: port}
	subnet := []*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.70.0.128/25"}}}
	to := []*networking.RouteDestination{{Destination: &networking.Destination{Host: "sink.internal"}}}
	vs := vsConfig("twice", "app", &networking.VirtualService{Hosts: []string{"mixed.internal"}, Tcp: []*networking.TCPRoute{
		{Match: subnet, Route: to}, {Match: subnet, Route: to},
	}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{both, sink}, Configs: []*istioconfig.Config{vs}})
	p := sidecarProxy("10.1.0.9", "app")
	_, err := ForType(ListenerType, p).Generate(p, s, nil)
	if err == nil {
		t.Fatal("no error for the repeated tcp route match")
	}
	if n := strings.Count(err.Error(), "VirtualService app/twice tcp[1]"); n != 1 {
		t.Errorf("the repeated route is reported %d times, want once:\n%v", n, err)
	}
}
