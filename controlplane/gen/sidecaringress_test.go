package gen

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSidecarIngress: a Sidecar's ingress listeners replace the inbound ports of the proxy's
// services, as istiod builds them (sidecaringress.yaml in the parity corpus): a STATIC cluster
// to the defaultEndpoint (127.0.0.1 without the 127.0.0.6 bind, 0.0.0.0 as the workload's IP, a
// unix socket) or ORIGINAL_DST without one; captureMode NONE a BIND_PORT listener of its own;
// the Sidecar's connection pools over the DestinationRule's.
func TestSidecarIngress(t *testing.T) {
	const ip = "10.64.0.1"
	svc := &model.Service{Hostname: "till.inbound.svc.cluster.local", Namespace: "inbound", Addresses: []string{"240.0.80.1"}, Ports: []model.Port{
		{Name: "http-till", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "http-admin", Number: 7000, Protocol: model.ProtocolHTTP}}}
	eps := map[string][]*model.Endpoint{svc.Hostname: {{Service: svc.Hostname, Address: ip, Ports: map[string]uint32{"http-till": 18080, "http-admin": 17000}, Labels: map[string]string{"app": "client"}}}}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "till", Namespace: "inbound"}, Spec: &networking.DestinationRule{
		Host:          svc.Hostname,
		TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 41}}},
	}}
	pool := func(n int32) *networking.ConnectionPoolSettings {
		return &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: n}}
	}
	in := func(num uint32, proto, def string) *networking.IstioIngressListener {
		return &networking.IstioIngressListener{Port: &networking.SidecarPort{Number: num, Protocol: proto, Name: fmt.Sprintf("p%d", num)}, DefaultEndpoint: def}
	}
	none := func(l *networking.IstioIngressListener, bind string) *networking.IstioIngressListener {
		l.CaptureMode, l.Bind = networking.CaptureMode_NONE, bind
		return l
	}
	withPool := func(l *networking.IstioIngressListener, n int32) *networking.IstioIngressListener {
		l.ConnectionPool = pool(n)
		return l
	}
	tests := []struct {
		name      string
		sidecar   *networking.Sidecar // nil: no Sidecar
		clusters  []string            // inbound clusters: NAME TYPE ENDPOINT bind|nobind max=N
		listeners []string            // inbound listeners other than virtualInbound
		ports     []uint32            // virtualInbound's destination ports
	}{
		{"no Sidecar: the services' target ports", nil,
			[]string{"inbound|17000|| ORIGINAL_DST - bind max=41", "inbound|18080|| ORIGINAL_DST - bind max=41"}, nil, []uint32{17000, 18080}},
		{"inboundConnectionPool over the rule on service ports", &networking.Sidecar{InboundConnectionPool: pool(13)},
			[]string{"inbound|17000|| ORIGINAL_DST - bind max=13", "inbound|18080|| ORIGINAL_DST - bind max=13"}, nil, []uint32{17000, 18080}},
		{"ingress ports replace the services' ports", &networking.Sidecar{Ingress: []*networking.IstioIngressListener{in(18080, "HTTP", "127.0.0.1:8080")}},
			[]string{"inbound|18080|| STATIC 127.0.0.1:8080 nobind max=41"}, nil, []uint32{18080}},
		{"0.0.0.0 is the workload's IP, a unix socket as it is, none ORIGINAL_DST", &networking.Sidecar{Ingress: []*networking.IstioIngressListener{
			in(19000, "TCP", "0.0.0.0:9000"), in(18081, "GRPC", "unix:///var/run/till.sock"), in(18085, "", "")}},
			[]string{"inbound|18081|| STATIC /var/run/till.sock bind max=4294967295", "inbound|18085|| ORIGINAL_DST - bind max=4294967295", "inbound|19000|| STATIC 10.64.0.1:9000 bind max=4294967295"},
			nil, []uint32{18081, 18085, 19000}},
		{"captureMode NONE binds a listener of its own", &networking.Sidecar{Ingress: []*networking.IstioIngressListener{
			none(in(18082, "HTTP", "127.0.0.1:8082"), ""), none(in(18083, "TCP", ""), "0.0.0.0"), in(18080, "HTTP", "")}},
			[]string{"inbound|18080|| ORIGINAL_DST - bind max=41", "inbound|18082|| STATIC 127.0.0.1:8082 nobind max=4294967295", "inbound|18083|| ORIGINAL_DST - bind max=4294967295"},
			[]string{"0.0.0.0_18083", "10.64.0.1_18082"}, []uint32{18080}},
		{"the port's pool over inboundConnectionPool over the rule", &networking.Sidecar{InboundConnectionPool: pool(13), Ingress: []*networking.IstioIngressListener{
			withPool(in(18080, "HTTP", ""), 7), in(17000, "HTTP", "")}},
			[]string{"inbound|17000|| ORIGINAL_DST - bind max=13", "inbound|18080|| ORIGINAL_DST - bind max=7"}, nil, []uint32{17000, 18080}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			configs := []*istioconfig.Config{dr}
			if tt.sidecar != nil {
				configs = append(configs, &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "till-in", Namespace: "inbound"}, Spec: tt.sidecar})
			}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: eps, Configs: configs})
			p := sidecarProxy(ip, "inbound")
			p.InterceptionMode = "REDIRECT"
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var clusters, listeners []string
			var ports []uint32
			for _, r := range g[ClusterType] {
				if strings.HasPrefix(r.Name, "inbound|") {
					clusters = append(clusters, inboundClusterText(r.Message.(*clusterv3.Cluster)))
				}
			}
			for _, r := range g[ListenerType] {
				l := r.Message.(*listenerv3.Listener)
				switch {
				case r.Name == VirtualInboundListener:
					for _, fc := range l.GetFilterChains() {
						if n := fc.GetFilterChainMatch().GetDestinationPort().GetValue(); n != 0 && n != VirtualInboundPort && !slices.Contains(ports, n) {
							ports = append(ports, n)
						}
					}
				case l.GetTrafficDirection().String() == "INBOUND":
					listeners = append(listeners, r.Name)
					if len(l.GetListenerFilters()) > 0 && l.GetListenerFilters()[0].GetName() == originalDstFilterName {
						t.Errorf("%s: a listener that binds its port has original_dst", r.Name)
					}
				}
			}
			slices.Sort(ports)
			if !slices.Equal(clusters, tt.clusters) {
				t.Errorf("inbound clusters\n %s\nwant\n %s", strings.Join(clusters, "\n "), strings.Join(tt.clusters, "\n "))
			}
			if !slices.Equal(listeners, tt.listeners) {
				t.Errorf("inbound listeners %v, want %v", listeners, tt.listeners)
			}
			if !slices.Equal(ports, tt.ports) {
				t.Errorf("virtualInbound ports %v, want %v", ports, tt.ports)
			}
		})
	}
}

// inboundClusterText is "NAME TYPE ENDPOINT bind|nobind max=N" (N: max_connections).
func inboundClusterText(c *clusterv3.Cluster) string {
	ep := "-"
	for _, lle := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range lle.GetLbEndpoints() {
			a := lb.GetEndpoint().GetAddress()
			if p := a.GetPipe(); p != nil {
				ep = p.GetPath()
			} else {
				ep = fmt.Sprintf("%s:%d", a.GetSocketAddress().GetAddress(), a.GetSocketAddress().GetPortValue())
			}
		}
	}
	bind := "nobind"
	if c.GetUpstreamBindConfig() != nil {
		bind = "bind"
	}
	var max uint32
	for _, th := range c.GetCircuitBreakers().GetThresholds() {
		max = th.GetMaxConnections().GetValue()
	}
	return fmt.Sprintf("%s %s %s %s max=%d", c.GetName(), c.GetType(), ep, bind, max)
}

// TestSidecarIngressNameClash: an ingress listener that binds its port under the name of an
// outbound listener (0.0.0.0_8080 here, the HTTP service's) is left out with an error: istiod
// sends both, which Envoy rejects as a duplicate.
func TestSidecarIngressNameClash(t *testing.T) {
	svc := &model.Service{Hostname: "till.inbound.svc.cluster.local", Namespace: "inbound", Addresses: []string{"240.0.80.1"},
		Ports: []model.Port{{Name: "http-till", Number: 8080, Protocol: model.ProtocolHTTP}}}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "till-in", Namespace: "inbound"}, Spec: &networking.Sidecar{
		Ingress: []*networking.IstioIngressListener{{Port: &networking.SidecarPort{Number: 8080, Protocol: "HTTP", Name: "http"}, Bind: "0.0.0.0", CaptureMode: networking.CaptureMode_NONE}},
	}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{sc}})
	p := sidecarProxy("10.64.0.1", "inbound")
	rs, err := ForType(ListenerType, p).Generate(p, s, nil)
	if err == nil || !strings.Contains(err.Error(), "Sidecar ingress listener 0.0.0.0_8080 has the name of an outbound listener") {
		t.Errorf("error %v, want the clash reported", err)
	}
	n := 0
	for _, r := range rs {
		if r.Name == "0.0.0.0_8080" {
			n++
			if d := r.Message.(*listenerv3.Listener).GetTrafficDirection().String(); d != "OUTBOUND" {
				t.Errorf("0.0.0.0_8080 is %s, want the outbound listener kept", d)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d listeners 0.0.0.0_8080, want 1", n)
	}
}

// TestSidecarIngressPortRules: which Sidecar ingress ports istiod leaves out (CanBindToPort)
// and where its loopback default endpoints go: virtualInbound's port 15006 is kept; a port of
// the agent's own listeners (ENVOY_STATUS_PORT, ENVOY_PROMETHEUS_PORT, …) is left out on the
// wildcard address (bind 0.0.0.0, or none on an HTTP port) only; a privileged port is left
// out when an unprivileged pod would bind it; 127.0.0.1 is ::1 on an IPv6-only proxy and ::1
// is 127.0.0.1 on an IPv4 one.
func TestSidecarIngressPortRules(t *testing.T) {
	in := func(num uint32, proto, bind string, mode networking.CaptureMode, def string) *networking.IstioIngressListener {
		return &networking.IstioIngressListener{Port: &networking.SidecarPort{Number: num, Protocol: proto, Name: fmt.Sprintf("p%d", num)}, Bind: bind, CaptureMode: mode, DefaultEndpoint: def}
	}
	const dflt, none = networking.CaptureMode_DEFAULT, networking.CaptureMode_NONE
	static := []uint32{15021, 15090}
	tests := []struct {
		name         string
		ip           string
		unprivileged bool
		static       []uint32
		ingress      []*networking.IstioIngressListener
		clusters     []string // inbound clusters: NAME TYPE ENDPOINT bind|nobind max=N
	}{
		{"virtualInbound's port is kept", "10.64.0.1", false, static,
			[]*networking.IstioIngressListener{in(15006, "TCP", "", dflt, "127.0.0.1:9006")},
			[]string{"inbound|15006|| STATIC 127.0.0.1:9006 nobind max=4294967295"}},
		{"an agent port: no bind on HTTP is the wildcard, on TCP not", "10.64.0.1", false, static,
			[]*networking.IstioIngressListener{in(15021, "HTTP", "", dflt, ""), in(15090, "TCP", "", dflt, "")},
			[]string{"inbound|15090|| ORIGINAL_DST - bind max=4294967295"}},
		{"an agent port: bind 0.0.0.0 left out, another bind kept", "10.64.0.1", false, static,
			[]*networking.IstioIngressListener{in(15090, "TCP", "0.0.0.0", none, ""), in(15021, "HTTP", "10.64.0.1", none, "")},
			[]string{"inbound|15021|| ORIGINAL_DST - bind max=4294967295"}},
		{"no agent ports in the metadata", "10.64.0.1", false, nil,
			[]*networking.IstioIngressListener{in(15021, "HTTP", "", dflt, "")},
			[]string{"inbound|15021|| ORIGINAL_DST - bind max=4294967295"}},
		{"unprivileged: a privileged port it binds left out", "10.64.0.1", true, nil,
			[]*networking.IstioIngressListener{in(80, "HTTP", "", none, ""), in(81, "HTTP", "", dflt, ""), in(1024, "HTTP", "", none, "")},
			[]string{"inbound|1024|| ORIGINAL_DST - bind max=4294967295", "inbound|81|| ORIGINAL_DST - bind max=4294967295"}},
		{"privileged: a privileged port it binds kept", "10.64.0.1", false, nil,
			[]*networking.IstioIngressListener{in(80, "HTTP", "", none, "")},
			[]string{"inbound|80|| ORIGINAL_DST - bind max=4294967295"}},
		{"IPv4: ::1 is 127.0.0.1", "10.64.0.1", false, nil,
			[]*networking.IstioIngressListener{in(18080, "HTTP", "", dflt, "[::1]:8080")},
			[]string{"inbound|18080|| STATIC 127.0.0.1:8080 nobind max=4294967295"}},
		{"IPv6: 127.0.0.1 is ::1", "fd00::1", false, nil,
			[]*networking.IstioIngressListener{in(18080, "HTTP", "", dflt, "127.0.0.1:8080"), in(18081, "HTTP", "", dflt, "[::1]:8081")},
			[]string{"inbound|18080|| STATIC ::1:8080 nobind max=4294967295", "inbound|18081|| STATIC ::1:8081 nobind max=4294967295"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "till-in", Namespace: "inbound"}, Spec: &networking.Sidecar{Ingress: tt.ingress}}
			s := model.NewSnapshot(1, model.SnapshotInput{Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy(tt.ip, "inbound")
			p.InterceptionMode, p.Unprivileged, p.StaticPorts = "REDIRECT", tt.unprivileged, tt.static
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var clusters []string
			for _, r := range g[ClusterType] {
				if strings.HasPrefix(r.Name, "inbound|") {
					clusters = append(clusters, inboundClusterText(r.Message.(*clusterv3.Cluster)))
				}
			}
			slices.Sort(clusters)
			if !slices.Equal(clusters, tt.clusters) {
				t.Errorf("inbound clusters\n %s\nwant\n %s", strings.Join(clusters, "\n "), strings.Join(tt.clusters, "\n "))
			}
		})
	}
}

// TestSidecarIngressInterceptionMode: an ingress port of captureMode DEFAULT binds a listener of
// its own on a proxy whose INTERCEPTION_MODE is NONE, compared case-sensitively as istiod's
// GetInterceptionMode does ("none" is not NONE: the proxy is REDIRECT's).
func TestSidecarIngressInterceptionMode(t *testing.T) {
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "till-in", Namespace: "inbound"}, Spec: &networking.Sidecar{
		Ingress: []*networking.IstioIngressListener{{Port: &networking.SidecarPort{Number: 18080, Protocol: "HTTP", Name: "http"}, DefaultEndpoint: "127.0.0.1:8080"}},
	}}
	s := model.NewSnapshot(1, model.SnapshotInput{Configs: []*istioconfig.Config{sc}})
	for _, tt := range []struct {
		mode  string
		bound bool
	}{{"NONE", true}, {"none", false}, {"None", false}, {"REDIRECT", false}, {"", false}} {
		t.Run(tt.mode, func(t *testing.T) {
			p := sidecarProxy("10.64.0.1", "inbound")
			p.InterceptionMode = tt.mode
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			if got := findResource(g[ListenerType], "10.64.0.1_18080") != nil; got != tt.bound {
				t.Errorf("listener 10.64.0.1_18080 built: %v, want %v", got, tt.bound)
			}
		})
	}
}
