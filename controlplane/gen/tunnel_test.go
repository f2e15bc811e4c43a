package gen

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestDestinationRuleTunnel: a sidecar's tcp_proxy to a host whose DestinationRule sets a tunnel
// gets istiod's tunneling_config (tunnel.yaml in the parity corpus): the rule's, a named
// subset's own (no fallback to the rule's), and the rule's for weighted routes.
func TestDestinationRuleTunnel(t *testing.T) {
	const ns = "egressbind"
	svc := func(name, vip string, port uint32) *model.Service {
		return &model.Service{Hostname: name + "." + ns + ".svc.cluster.local", Namespace: ns, Addresses: []string{vip},
			Ports: []model.Port{{Name: "tcp", Number: port, Protocol: model.ProtocolTCP}}}
	}
	flue := svc("flue", "240.0.81.3", 6000)
	services := []*model.Service{flue, svc("stack", "240.0.81.4", 6001), svc("chute", "240.0.81.5", 6002), svc("hopper", "240.0.81.6", 6003)}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "flue", Namespace: ns}, Spec: &networking.DestinationRule{
		Host:          flue.Hostname,
		TrafficPolicy: &networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{Protocol: "CONNECT", TargetHost: "flue-exit.example.org", TargetPort: 8443}},
		Subsets: []*networking.Subset{
			{Name: "a", Labels: map[string]string{"lane": "a"}, TrafficPolicy: &networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{Protocol: "POST", TargetHost: "10.65.2.9", TargetPort: 7000}}},
			{Name: "b", Labels: map[string]string{"lane": "b"}},
		},
	}}
	route := func(subset string, weight int32) *networking.RouteDestination {
		return &networking.RouteDestination{Destination: &networking.Destination{Host: flue.Hostname, Subset: subset, Port: &networking.PortSelector{Number: 6000}}, Weight: weight}
	}
	vs := func(name string, dests ...*networking.RouteDestination) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: name, Namespace: ns},
			Spec: &networking.VirtualService{Hosts: []string{name + "." + ns + ".svc.cluster.local"}, Tcp: []*networking.TCPRoute{{Route: dests}}}}
	}
	configs := []*istioconfig.Config{dr, vs("stack", route("a", 0)), vs("chute", route("b", 0)), vs("hopper", route("a", 70), route("b", 30))}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: services, Configs: configs})
	p := sidecarProxy("10.65.9.9", ns)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	tests := []struct {
		listener string
		hostname string // "" for no tunneling_config
		post     bool
	}{
		{"240.0.81.3_6000", "flue-exit.example.org:8443", false},
		{"240.0.81.4_6001", "10.65.2.9:7000", true},
		{"240.0.81.5_6002", "", false},
		{"240.0.81.6_6003", "flue-exit.example.org:8443", false},
	}
	for _, tt := range tests {
		t.Run(tt.listener, func(t *testing.T) {
			r := findResource(g[ListenerType], tt.listener)
			if r == nil {
				t.Fatal("no listener")
			}
			l := r.Message.(*listenerv3.Listener)
			var chains []*listenerv3.FilterChain
			chains = append(chains, l.GetFilterChains()...)
			if l.GetDefaultFilterChain() != nil {
				chains = append(chains, l.GetDefaultFilterChain())
			}
			n := 0
			for _, fc := range chains {
				for _, f := range fc.GetFilters() {
					if f.GetName() != tcpProxyFilterName {
						continue
					}
					tp := &tcpproxyv3.TcpProxy{}
					if err := f.GetTypedConfig().UnmarshalTo(tp); err != nil {
						t.Fatal(err)
					}
					n++
					tc := tp.GetTunnelingConfig()
					if tc.GetHostname() != tt.hostname || tc.GetUsePost() != tt.post {
						t.Errorf("tunneling_config %v, want hostname %q post %v", tc, tt.hostname, tt.post)
					}
				}
			}
			if n == 0 {
				t.Error("no tcp_proxy")
			}
		})
	}
}

// TestGatewayDestinationRuleTunnel: istiod applies a DestinationRule's tunnel on a gateway's TCP
// and TLS-passthrough routes as on a sidecar's (one destination its subset's, a weighted set the
// rule's), but not on AUTO_PASSTHROUGH chains (tunnel.yaml, the gateway cases).
func TestGatewayDestinationRuleTunnel(t *testing.T) {
	const duct = "duct.app.svc.cluster.local"
	services := []*model.Service{{Hostname: duct, Namespace: "app", Addresses: []string{"240.0.81.7"},
		Ports: []model.Port{{Name: "tcp-duct", Number: 6000, Protocol: model.ProtocolTCP}}}}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "duct", Namespace: "app"}, Spec: &networking.DestinationRule{
		Host:          duct,
		TrafficPolicy: &networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{Protocol: "CONNECT", TargetHost: "duct-exit.example.org", TargetPort: 8443}},
		Subsets: []*networking.Subset{
			{Name: "a", Labels: map[string]string{"lane": "a"}, TrafficPolicy: &networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{Protocol: "POST", TargetHost: "10.65.3.9", TargetPort: 7000}}},
			{Name: "b", Labels: map[string]string{"lane": "b"}},
		},
	}}
	route := func(subset string, weight int32) *networking.RouteDestination {
		return &networking.RouteDestination{Destination: gwDest(duct, 6000, subset), Weight: weight}
	}
	sni := func(name string, dests ...*networking.RouteDestination) *networking.TLSRoute {
		return &networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{name}, Port: 16443}}, Route: dests}
	}
	pass := server(16443, "TLS", "*.tunnel.example.org")
	pass.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH}
	auto := server(16447, "TLS", "*.app.svc.cluster.local")
	auto.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}
	configs := []*istioconfig.Config{
		dr,
		gwConfig("tunnel", "istio-system", &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"},
			Servers: []*networking.Server{server(16000, "TCP", "*.tunnel.example.org"), pass, auto}}),
		vsConfig("duct", "istio-system", &networking.VirtualService{
			Hosts:    []string{"a.tunnel.example.org", "w.tunnel.example.org", "b.tunnel.example.org", "r.tunnel.example.org"},
			Gateways: []string{"tunnel"},
			Tcp:      []*networking.TCPRoute{{Match: []*networking.L4MatchAttributes{{Port: 16000}}, Route: []*networking.RouteDestination{route("a", 0)}}},
			Tls: []*networking.TLSRoute{
				sni("w.tunnel.example.org", route("a", 70), route("b", 30)),
				sni("b.tunnel.example.org", route("b", 0)),
				sni("r.tunnel.example.org", route("", 0)),
			},
		}),
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: services, Configs: configs})
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	tests := []struct {
		listener string
		chain    string // the chain's first server name; "" for a chain without
		hostname string // "" for no tunneling_config
		post     bool
	}{
		{"0.0.0.0_16000", "", "10.65.3.9:7000", true},
		{"0.0.0.0_16443", "w.tunnel.example.org", "duct-exit.example.org:8443", false},
		{"0.0.0.0_16443", "b.tunnel.example.org", "", false},
		{"0.0.0.0_16443", "r.tunnel.example.org", "duct-exit.example.org:8443", false},
		{"0.0.0.0_16447", "outbound_.6000_._." + duct, "", false},
		{"0.0.0.0_16447", "outbound_.6000_.a_." + duct, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.listener+"/"+tt.chain, func(t *testing.T) {
			r := findResource(g[ListenerType], tt.listener)
			if r == nil {
				t.Fatal("no listener")
			}
			n := 0
			for _, fc := range r.Message.(*listenerv3.Listener).GetFilterChains() {
				if names := fc.GetFilterChainMatch().GetServerNames(); tt.chain != "" && (len(names) == 0 || names[0] != tt.chain) {
					continue
				}
				for _, f := range fc.GetFilters() {
					if f.GetName() != tcpProxyFilterName {
						continue
					}
					tp := &tcpproxyv3.TcpProxy{}
					if err := f.GetTypedConfig().UnmarshalTo(tp); err != nil {
						t.Fatal(err)
					}
					n++
					tc := tp.GetTunnelingConfig()
					if tc.GetHostname() != tt.hostname || tc.GetUsePost() != tt.post {
						t.Errorf("tunneling_config %v, want hostname %q post %v", tc, tt.hostname, tt.post)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d tcp_proxy filters, want 1", n)
			}
		})
	}
}
