package gen

import (
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSidecarEgressBind: an HTTP egress port with a bind address or captureMode NONE gets a
// listener BIND_PORT (egressbind.yaml in the parity corpus): one HTTP chain fetching route
// configuration PORT, bound to its port only under captureMode NONE; the catch-all listener
// still builds 0.0.0.0_PORT. A TCP port's services share BIND_PORT with their tcp_proxy chains,
// and a MONGO or MYSQL port's (MYSQL is TCP), and a TLS or HTTPS port's. A sniffed port's too.
// A 0.0.0.0 bind under captureMode NONE binds 0.0.0.0_PORT, which every service of the port
// joins (as one without a VIP). An HTTP_PROXY port gets its HTTP proxy listener on the bind
// (httpproxy.go); a unix socket bind on a port number (which validation rejects) is not
// bound. A bound listener depends on the Sidecar.
func TestSidecarEgressBind(t *testing.T) {
	kiln := &model.Service{Hostname: "kiln.egressbind.svc.cluster.local", Namespace: "egressbind", Addresses: []string{"240.0.81.1"}, Ports: []model.Port{
		{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}}}
	egress := func(num uint32, proto, bind string, mode networking.CaptureMode) *networking.IstioEgressListener {
		return &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: num, Protocol: proto, Name: "p"}, Bind: bind, CaptureMode: mode, Hosts: []string{"./*"}}
	}
	tests := []struct {
		name      string
		egress    *networking.IstioEgressListener
		listeners []string // outbound listeners besides virtualOutbound, "!" after a bound one's name when it binds its port
	}{
		{"bind address", egress(8080, "HTTP", "127.0.0.2", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "127.0.0.2_8080", "240.0.81.1_5000"}},
		{"captureMode NONE", egress(8080, "HTTP", "", networking.CaptureMode_NONE), []string{"0.0.0.0_8080", "127.0.0.1_8080!", "240.0.81.1_5000"}},
		{"bind address and captureMode NONE", egress(8080, "HTTP", "127.0.0.3", networking.CaptureMode_NONE), []string{"0.0.0.0_8080", "127.0.0.3_8080!", "240.0.81.1_5000"}},
		{"no bind", egress(8080, "HTTP", "", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "240.0.81.1_5000"}},
		{"0.0.0.0 bind: the usual listener", egress(8080, "HTTP", "0.0.0.0", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "240.0.81.1_5000"}},
		{"unix socket bind on a port number (invalid): the usual listeners", egress(8080, "HTTP", "unix:///var/run/kiln.sock", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "240.0.81.1_5000"}},
		{"TCP port bind address", egress(5000, "TCP", "127.0.0.2", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "127.0.0.2_5000", "240.0.81.1_5000"}},
		{"TCP port captureMode NONE", egress(5000, "TCP", "", networking.CaptureMode_NONE), []string{"0.0.0.0_8080", "127.0.0.1_5000!", "240.0.81.1_5000"}},
		{"MYSQL port bind address: as TCP", egress(5000, "MYSQL", "127.0.0.2", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "127.0.0.2_5000", "240.0.81.1_5000"}},
		{"MYSQL port captureMode NONE: as TCP", egress(5000, "MYSQL", "", networking.CaptureMode_NONE), []string{"0.0.0.0_8080", "127.0.0.1_5000!", "240.0.81.1_5000"}},
		{"MONGO port captureMode NONE", egress(5000, "MONGO", "", networking.CaptureMode_NONE), []string{"0.0.0.0_8080", "127.0.0.1_5000!", "240.0.81.1_5000"}},
		{"sniffed port bind address", egress(5000, "", "127.0.0.2", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "127.0.0.2_5000", "240.0.81.1_5000"}},
		{"HTTP_PROXY port: one HTTP proxy listener on the bind", egress(5000, "HTTP_PROXY", "127.0.0.2", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "127.0.0.2_5000", "240.0.81.1_5000"}},
		{"TLS port bind address", egress(5000, "TLS", "127.0.0.2", networking.CaptureMode_DEFAULT), []string{"0.0.0.0_8080", "127.0.0.2_5000", "240.0.81.1_5000"}},
		{"HTTPS port captureMode NONE", egress(5000, "HTTPS", "", networking.CaptureMode_NONE), []string{"0.0.0.0_8080", "127.0.0.1_5000!", "240.0.81.1_5000"}},
		{"0.0.0.0 bind and captureMode NONE", egress(8080, "HTTP", "0.0.0.0", networking.CaptureMode_NONE), []string{"0.0.0.0_8080!", "240.0.81.1_5000"}},
		{"TCP port 0.0.0.0 bind and captureMode NONE: every service there", egress(5000, "TCP", "0.0.0.0", networking.CaptureMode_NONE), []string{"0.0.0.0_5000!", "0.0.0.0_8080", "240.0.81.1_5000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "pinned", Namespace: "egressbind"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{tt.egress, {Hosts: []string{"./*"}}}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{kiln}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.65.9.9", "egressbind")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			for _, r := range g[ListenerType] {
				l := r.Message.(*listenerv3.Listener)
				if r.Name == VirtualOutboundListener || l.GetTrafficDirection().String() != "OUTBOUND" {
					continue
				}
				name := r.Name
				if l.GetBindToPort() == nil {
					name += "!"
				}
				got = append(got, name)
				if a := l.GetAddress().GetSocketAddress().GetAddress(); a == "0.0.0.0" || a == "240.0.81.1" {
					continue
				}
				// Its address and bind_to_port come from the Sidecar.
				if !slices.Contains(r.Deps, sc.Key()) {
					t.Errorf("%s: deps %v lack the Sidecar %v", r.Name, r.Deps, sc.Key())
				}
				fc := l.GetFilterChains()
				if tt.egress.GetPort().GetProtocol() == "" {
					continue // sniffed: the TCP and HTTP chains of a VIP listener
				}
				if len(fc) != 1 || fc[0].GetFilterChainMatch() != nil || l.GetDefaultFilterChain() != nil || len(l.GetListenerFilters()) != 0 {
					t.Errorf("%s: want one HTTP chain without a match, no default chain, no listener filter: %v", r.Name, l)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.listeners) {
				t.Errorf("listeners %v, want %v", got, tt.listeners)
			}
			if !slices.ContainsFunc(g[RouteType], func(r Resource) bool { return r.Name == "8080" }) {
				t.Error("no route configuration 8080")
			}
		})
	}
}

// TestSidecarEgressBindLocalhost: captureMode NONE without a bind listens on the proxy's
// loopback, istiod's actualLocalHosts: ::1 on an IPv6-only proxy, 127.0.0.1 otherwise.
func TestSidecarEgressBindLocalhost(t *testing.T) {
	kiln := &model.Service{Hostname: "kiln.egressbind.svc.cluster.local", Namespace: "egressbind", Addresses: []string{"240.0.81.1"}, Ports: []model.Port{
		{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}}}
	for _, tt := range []struct{ ip, want string }{{"10.65.9.9", "127.0.0.1"}, {"fd00::9", "::1"}} {
		t.Run(tt.ip, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "pinned", Namespace: "egressbind"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
					{Port: &networking.SidecarPort{Number: 8080, Protocol: "HTTP", Name: "http"}, CaptureMode: networking.CaptureMode_NONE, Hosts: []string{"./*"}},
					{Port: &networking.SidecarPort{Number: 5000, Protocol: "TCP", Name: "tcp"}, CaptureMode: networking.CaptureMode_NONE, Hosts: []string{"./*"}},
				}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{kiln}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy(tt.ip, "egressbind")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			for _, port := range []uint32{8080, 5000} {
				r := findResource(g[ListenerType], ListenerName(tt.want, port))
				if r == nil {
					t.Errorf("no listener %s", ListenerName(tt.want, port))
					continue
				}
				if a := r.Message.(*listenerv3.Listener).GetAddress().GetSocketAddress().GetAddress(); a != tt.want {
					t.Errorf("%s listens on %s, want %s", r.Name, a, tt.want)
				}
			}
		})
	}
}

// TestSidecarEgressBindCatchAll: the catch-all egress listener (no port) binds its services'
// ports as one with a port does (egresscatchall.yaml in the parity corpus): under captureMode
// NONE every port on 127.0.0.1, bound, instead of the VIP and 0.0.0.0 listeners; with a bind
// address and the default capture mode on that address, not bound. virtualOutbound stays.
func TestSidecarEgressBindCatchAll(t *testing.T) {
	kiln := &model.Service{Hostname: "kiln.egressbind.svc.cluster.local", Namespace: "egressbind", Addresses: []string{"240.0.81.1"}, Ports: []model.Port{
		{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}, {Name: "tls", Number: 8443, Protocol: model.ProtocolTLS}}}
	for _, tt := range []struct {
		name      string
		egress    *networking.IstioEgressListener
		listeners []string // "!" after a name that binds its port
	}{
		{"captureMode NONE", &networking.IstioEgressListener{CaptureMode: networking.CaptureMode_NONE, Hosts: []string{"./*"}}, []string{"127.0.0.1_5000!", "127.0.0.1_8080!", "127.0.0.1_8443!"}},
		{"bind address", &networking.IstioEgressListener{Bind: "127.0.0.4", Hosts: []string{"./*"}}, []string{"127.0.0.4_5000", "127.0.0.4_8080", "127.0.0.4_8443"}},
		{"neither", &networking.IstioEgressListener{Hosts: []string{"./*"}}, []string{"0.0.0.0_8080", "240.0.81.1_5000", "240.0.81.1_8443"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "catchall", Namespace: "egressbind"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{tt.egress}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{kiln}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.65.9.9", "egressbind")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			for _, r := range g[ListenerType] {
				l := r.Message.(*listenerv3.Listener)
				if l.GetTrafficDirection().String() != "OUTBOUND" || r.Name == VirtualOutboundListener {
					continue
				}
				if l.GetBindToPort() == nil {
					r.Name += "!"
				}
				got = append(got, r.Name)
			}
			if !slices.Equal(got, tt.listeners) {
				t.Errorf("listeners %v, want %v", got, tt.listeners)
			}
			if findResource(g[ListenerType], VirtualOutboundListener) == nil {
				t.Error("no virtualOutbound")
			}
		})
	}
}
