package gen

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestIPv6OnlyProxy: a sidecar all of whose addresses are IPv6 gets istiod's IPv6 wildcard
// (its actualWildcard ::) where an IPv4 one gets 0.0.0.0: wildcard listeners ::_PORT, the
// virtual listeners on ::, DNS clusters resolving IPv6 only, the inbound passthrough bound to
// ::6. A Sidecar egress bind :: is its wildcard (one ::_PORT for the port's services instead of
// their VIP listeners), and 0.0.0.0 an address like any other there; on an IPv4 proxy it is
// the other way round (ipv6only.yaml).
func TestIPv6OnlyProxy(t *testing.T) {
	hopper := &model.Service{Hostname: "hopper.sixth.svc.cluster.local", Namespace: "sixth", Addresses: []string{"240.0.96.1"}, Ports: []model.Port{
		{Name: "tcp-wild", Number: 5410, Protocol: model.ProtocolTCP}, {Name: "tcp-four", Number: 5412, Protocol: model.ProtocolTCP},
		{Name: "http", Number: 7410, Protocol: model.ProtocolHTTP}}}
	chute := &model.Service{Hostname: "chute.sixth.example", Namespace: "sixth", Resolution: model.ResolutionDNS, MeshExternal: true,
		Ports: []model.Port{{Name: "tls", Number: 443, Protocol: model.ProtocolTLS}}}
	egress := func(num uint32, bind string) *networking.IstioEgressListener {
		return &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: num, Protocol: "TCP", Name: "p"}, Bind: bind, Hosts: []string{"./*"}}
	}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "binder", Namespace: "sixth"},
		Spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "sixbind"}},
			Egress:           []*networking.IstioEgressListener{egress(5410, "::"), egress(5412, "0.0.0.0"), {Hosts: []string{"./*"}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{hopper, chute}, Configs: []*istioconfig.Config{sc},
		Endpoints: map[string][]*model.Endpoint{hopper.Hostname: {{Service: hopper.Hostname, Address: "fd00:10::21", Weight: 1, Health: model.Healthy}}}})

	for _, tc := range []struct {
		name     string
		ip       string
		bound    bool // under the Sidecar
		wildcard string
		dns      clusterv3.Cluster_DnsLookupFamily
		upstream string
		// listeners are the outbound listeners besides virtualOutbound.
		listeners []string
	}{
		{"IPv4", "10.69.0.10", false, "0.0.0.0", clusterv3.Cluster_V4_ONLY, "127.0.0.6",
			[]string{"0.0.0.0_443", "0.0.0.0_7410", "240.0.96.1_5410", "240.0.96.1_5412"}},
		{"IPv6 only", "fd00:10::10", false, "::", clusterv3.Cluster_V6_ONLY, "::6",
			[]string{"240.0.96.1_5410", "240.0.96.1_5412", "::_443", "::_7410"}},
		// :: is the wildcard: ::_5410 instead of hopper's VIP listener for the port (the
		// catch-all builds that beside it); 0.0.0.0 is an address: 0.0.0.0_5412.
		{"IPv6 only, binds", "fd00:10::10", true, "::", clusterv3.Cluster_V6_ONLY, "::6",
			[]string{"0.0.0.0_5412", "240.0.96.1_5410", "240.0.96.1_5412", "::_443", "::_5410", "::_7410"}},
		// 0.0.0.0 is the wildcard, :: an address: ::_5410.
		{"IPv4, binds", "10.69.0.10", true, "0.0.0.0", clusterv3.Cluster_V4_ONLY, "127.0.0.6",
			[]string{"0.0.0.0_443", "0.0.0.0_5412", "0.0.0.0_7410", "240.0.96.1_5410", "240.0.96.1_5412", "::_5410"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels := map[string]string{"app": "client"}
			if tc.bound {
				labels = map[string]string{"app": "sixbind"}
			}
			p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{tc.ip}, ID: "binder.sixth", Namespace: "sixth", DNSDomain: "sixth.svc.cluster.local", Labels: labels}
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			for _, r := range g[ListenerType] {
				l := r.Message.(*listenerv3.Listener)
				switch r.Name {
				case VirtualOutboundListener, VirtualInboundListener:
					if a := l.GetAddress().GetSocketAddress().GetAddress(); a != tc.wildcard {
						t.Errorf("%s listens on %s, want %s", r.Name, a, tc.wildcard)
					}
					continue
				}
				got = append(got, r.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.listeners) {
				t.Errorf("listeners %v, want %v", got, tc.listeners)
			}
			for _, r := range g[ClusterType] {
				c := r.Message.(*clusterv3.Cluster)
				switch {
				case r.Name == ClusterName(Outbound, 443, "", chute.Hostname):
					if c.GetDnsLookupFamily() != tc.dns {
						t.Errorf("%s: dns_lookup_family %v, want %v", r.Name, c.GetDnsLookupFamily(), tc.dns)
					}
				case r.Name == InboundPassthroughCluster:
					if a := c.GetUpstreamBindConfig().GetSourceAddress().GetAddress(); a != tc.upstream {
						t.Errorf("%s binds %s, want %s", r.Name, a, tc.upstream)
					}
				}
			}
		})
	}
}

// TestIPv6OnlyRouter: an IPv6-only router's Gateway server ports without bind listen on ::
// (::_PORT) and its DNS clusters resolve IPv6 only, as istiod builds them for its IP family.
func TestIPv6OnlyRouter(t *testing.T) {
	chute := &model.Service{Hostname: "chute.sixth.example", Namespace: "sixth", Resolution: model.ResolutionDNS, MeshExternal: true,
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	gw := gwConfig("sixth", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(8080, "HTTP", "*/chute.sixth.example")}})
	vs := vsConfig("chute", "sixth", &networking.VirtualService{Hosts: []string{"chute.sixth.example"}, Gateways: []string{"istio-system/sixth"},
		Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(chute.Hostname, 80, "")}}}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{chute}, Configs: []*istioconfig.Config{gw, vs},
		Endpoints: map[string][]*model.Endpoint{chute.Hostname: {{Service: chute.Hostname, Address: chute.Hostname, Weight: 1, Health: model.Healthy}}}})
	for _, tc := range []struct {
		ip, listener string
		dns          clusterv3.Cluster_DnsLookupFamily
	}{
		{"100.64.0.1", "0.0.0.0_8080", clusterv3.Cluster_V4_ONLY},
		{"fd00:9::1", "::_8080", clusterv3.Cluster_V6_ONLY},
	} {
		t.Run(tc.ip, func(t *testing.T) {
			p := routerProxy("istio-system", ingressLabels)
			p.IPAddresses = []string{tc.ip}
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			if got := names(g[ListenerType]); !slices.Equal(got, []string{tc.listener}) {
				t.Errorf("listeners %v, want [%s]", got, tc.listener)
			}
			c, ok := find(g[ClusterType], ClusterName(Outbound, 80, "", chute.Hostname))
			if !ok {
				t.Fatalf("no cluster for %s: %v", chute.Hostname, names(g[ClusterType]))
			}
			if f := c.Message.(*clusterv3.Cluster).GetDnsLookupFamily(); f != tc.dns {
				t.Errorf("dns_lookup_family %v, want %v", f, tc.dns)
			}
		})
	}
}
