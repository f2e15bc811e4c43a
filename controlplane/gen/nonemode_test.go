package gen

import (
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// noneModeMesh is the mesh of nonemode.yaml in the parity corpus, with names of its own: a
// workload (quill, at the proxy's IP) and services that meet on ports, by age.
func noneModeMesh(configs ...*istioconfig.Config) *model.Snapshot {
	at := func(min int) time.Time { return time.Date(2026, 6, 6, 0, min, 0, 0, time.UTC) }
	svc := func(name string, min int, addrs []string, ports ...model.Port) *model.Service {
		return &model.Service{Hostname: name + ".nib.svc.cluster.local", Namespace: "nib", Addresses: addrs, CreationTime: at(min), Ports: ports}
	}
	port := func(name string, n uint32, p model.Protocol) model.Port {
		return model.Port{Name: name, Number: n, Protocol: p}
	}
	quill := svc("quill", 0, []string{"240.0.90.1"}, port("http", 8080, model.ProtocolHTTP), port("tcp", 9000, model.ProtocolTCP))
	services := []*model.Service{
		quill,
		// 8443: a CIDR's TLS service by SNI, then a VIP's catch-all chain; 5300 sniffed.
		svc("nibcidr", 1, []string{"10.90.128.0/20"}, port("tls", 8443, model.ProtocolTLS), port("tls2", 7443, model.ProtocolTLS)),
		svc("ink", 2, []string{"240.0.90.2"}, port("http", 8080, model.ProtocolHTTP), port("tls", 8443, model.ProtocolTLS), port("any", 5300, model.ProtocolUnknown)),
		// No address: the same bound listeners; its sniffed port's route HOST:5400.
		svc("blot", 3, nil, port("https", 8443, model.ProtocolHTTPS), port("any", 5400, model.ProtocolUnknown), port("low", 80, model.ProtocolHTTP)),
		// 6000: HTTP, then sniffed (which replaces it); 6100: TCP, then HTTP (which adds nothing).
		// 7443: a TLS service by SNI, then an HTTP one, whose chain takes what SNI does not;
		// 7444: the other way round.
		svc("reed", 4, []string{"240.0.90.4"}, port("http", 6000, model.ProtocolHTTP), port("tcp", 6100, model.ProtocolTCP), port("http2", 7444, model.ProtocolHTTP)),
		svc("stem", 5, []string{"240.0.90.5"}, port("any", 6000, model.ProtocolUnknown), port("http", 6100, model.ProtocolHTTP), port("http2", 7443, model.ProtocolHTTP)),
		svc("weft", 6, []string{"10.90.144.0/20"}, port("tls", 7444, model.ProtocolTLS), port("tcp", 7445, model.ProtocolTCP)),
		// 7445: a TLS service of a CIDR and an IP (istiod: a service per address), by SNI and
		// matching everything, before a TCP one.
		svc("selvage", 3, []string{"10.90.160.0/20", "240.0.90.9"}, port("tls", 7445, model.ProtocolTLS)),
	}
	eps := map[string][]*model.Endpoint{quill.Hostname: {{Service: quill.Hostname, Address: "10.90.0.1", Ports: map[string]uint32{"http": 8080, "tcp": 9000}, Labels: map[string]string{"app": "quill"}}}}
	return model.NewSnapshot(1, model.SnapshotInput{Services: services, Endpoints: eps, Configs: configs})
}

// TestInterceptionNone: a proxy whose INTERCEPTION_MODE is NONE (nonemode.yaml in the parity
// corpus) gets no virtualOutbound nor virtualInbound listener and no inbound listener or cluster
// from its services, and every outbound listener binds its port on 127.0.0.1, whatever the
// services' VIPs: an HTTP port one chain to route configuration PORT, a TCP or TLS port the
// chains of its first service (a CIDR's TLS service by SNI) with the later ones merged, a
// sniffed port the first service's chains, also without a VIP (route configuration HOST:PORT);
// a sniffed service replaces an older HTTP one's listener, an HTTP service adds nothing to an
// older TCP one's chain that matches everything, and takes what an SNI chain does not match,
// before or after it. The mode is compared case-sensitively, as istiod does: "none" is REDIRECT.
// An unprivileged proxy in mode NONE leaves out the privileged port 80.
func TestInterceptionNone(t *testing.T) {
	s := noneModeMesh()
	gen := func(t *testing.T, mode string, unprivileged bool) generated {
		t.Helper()
		p := sidecarProxy("10.90.0.1", "nib")
		p.InterceptionMode, p.Unprivileged = mode, unprivileged
		g, err := generateAll(t, p, s)
		if err != nil && mode != "NONE" {
			t.Fatal(err)
		}
		checkResources(t, p, g)
		return g
	}
	names := func(rs []Resource) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	for _, mode := range []string{"REDIRECT", "none", ""} {
		t.Run("mode "+mode, func(t *testing.T) {
			g := gen(t, mode, false)
			for _, want := range []string{VirtualOutboundListener, VirtualInboundListener, "240.0.90.1_9000", "0.0.0.0_8080"} {
				if findResource(g[ListenerType], want) == nil {
					t.Errorf("no listener %s: %v", want, names(g[ListenerType]))
				}
			}
			if findResource(g[ClusterType], "inbound|8080||") == nil {
				t.Errorf("no inbound cluster: %v", names(g[ClusterType]))
			}
		})
	}
	t.Run("mode NONE", func(t *testing.T) {
		g := gen(t, "NONE", false)
		want := []string{"127.0.0.1_5300", "127.0.0.1_5400", "127.0.0.1_6000", "127.0.0.1_6100", "127.0.0.1_7443", "127.0.0.1_7444", "127.0.0.1_7445", "127.0.0.1_80", "127.0.0.1_8080", "127.0.0.1_8443", "127.0.0.1_9000"}
		if got := names(g[ListenerType]); !slices.Equal(got, want) {
			t.Fatalf("listeners %v, want %v", got, want)
		}
		for _, r := range g[ListenerType] {
			l := r.Message.(*listenerv3.Listener)
			if l.GetBindToPort() != nil || l.GetAddress().GetSocketAddress().GetAddress() != "127.0.0.1" {
				t.Errorf("%s: bind_to_port %v at %s, want bound at 127.0.0.1", r.Name, l.GetBindToPort(), l.GetAddress().GetSocketAddress().GetAddress())
			}
		}
		if c := slices.DeleteFunc(names(g[ClusterType]), func(n string) bool { return !strings.HasPrefix(n, "inbound|") }); len(c) > 0 {
			t.Errorf("inbound clusters %v, want none", c)
		}
		if findResource(g[ClusterType], InboundPassthroughCluster) == nil {
			t.Errorf("no %s: %v", InboundPassthroughCluster, names(g[ClusterType]))
		}
		chains := func(name string) (matches []string, def string) {
			l := findResource(g[ListenerType], name).Message.(*listenerv3.Listener)
			for _, fc := range l.GetFilterChains() {
				matches = append(matches, strings.Join(fc.GetFilterChainMatch().GetServerNames(), ",")+"/"+strings.Join(fc.GetFilterChainMatch().GetApplicationProtocols(), ",")+">"+chainTarget(t, fc))
			}
			if d := l.GetDefaultFilterChain(); d != nil {
				def = chainTarget(t, d)
			}
			return matches, def
		}
		for _, tt := range []struct {
			listener string
			matches  []string
			def      string
		}{
			{"127.0.0.1_8080", []string{"/>rds:8080"}, ""},
			{"127.0.0.1_9000", []string{"/>outbound|9000||quill.nib.svc.cluster.local"}, ""},
			{"127.0.0.1_8443", []string{"nibcidr.nib.svc.cluster.local/>outbound|8443||nibcidr.nib.svc.cluster.local"}, "outbound|8443||ink.nib.svc.cluster.local"},
			{"127.0.0.1_5300", []string{"/http/1.1,h2c>rds:ink.nib.svc.cluster.local:5300"}, "outbound|5300||ink.nib.svc.cluster.local"},
			{"127.0.0.1_5400", []string{"/http/1.1,h2c>rds:blot.nib.svc.cluster.local:5400"}, "outbound|5400||blot.nib.svc.cluster.local"},
			{"127.0.0.1_6000", []string{"/http/1.1,h2c>rds:stem.nib.svc.cluster.local:6000"}, "outbound|6000||stem.nib.svc.cluster.local"},
			{"127.0.0.1_6100", []string{"/>outbound|6100||reed.nib.svc.cluster.local"}, ""},
			{"127.0.0.1_7443", []string{"nibcidr.nib.svc.cluster.local/>outbound|7443||nibcidr.nib.svc.cluster.local"}, "rds:7443"},
			{"127.0.0.1_7444", []string{"weft.nib.svc.cluster.local/>outbound|7444||weft.nib.svc.cluster.local"}, "rds:7444"},
			{"127.0.0.1_7445", []string{"selvage.nib.svc.cluster.local/>outbound|7445||selvage.nib.svc.cluster.local"}, "outbound|7445||selvage.nib.svc.cluster.local"},
		} {
			matches, def := chains(tt.listener)
			if !slices.Equal(matches, tt.matches) || def != tt.def {
				t.Errorf("%s: chains %q default %q, want %q default %q", tt.listener, matches, def, tt.matches, tt.def)
			}
		}
		for _, rc := range []string{"blot.nib.svc.cluster.local:5400", "stem.nib.svc.cluster.local:6000", "8080"} {
			if findResource(g[RouteType], rc) == nil {
				t.Errorf("no route configuration %s", rc)
			}
		}
	})
	t.Run("mode NONE unprivileged", func(t *testing.T) {
		g := gen(t, "NONE", true)
		if findResource(g[ListenerType], "127.0.0.1_80") != nil {
			t.Error("an unprivileged proxy binds privileged port 80")
		}
		if findResource(g[ListenerType], "127.0.0.1_8080") == nil {
			t.Error("no listener 127.0.0.1_8080")
		}
	})
}

// chainTarget is where a filter chain sends: "rds:NAME" for an HTTP connection manager, else
// its tcp_proxy's cluster.
func chainTarget(t *testing.T, fc *listenerv3.FilterChain) string {
	t.Helper()
	for _, f := range fc.GetFilters() {
		switch f.GetName() {
		case hcmFilterName:
			return "rds:" + chainHCM(t, fc).GetRds().GetRouteConfigName()
		case tcpProxyFilterName:
			var tp tcpproxyv3.TcpProxy
			if err := f.GetTypedConfig().UnmarshalTo(&tp); err != nil {
				t.Fatal(err)
			}
			return tp.GetCluster()
		}
	}
	return "?"
}

// TestInterceptionNoneSidecar: under a Sidecar, a proxy in mode NONE binds every egress port
// whatever its captureMode (on its bind address, else 127.0.0.1), the catch-all listener's
// ports too, and gets inbound listeners and clusters from the Sidecar's ingress ports only,
// each bound to its port on the workload's IP.
func TestInterceptionNoneSidecar(t *testing.T) {
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "quill", Namespace: "nib"}, Spec: &networking.Sidecar{
		Ingress: []*networking.IstioIngressListener{{Port: &networking.SidecarPort{Number: 7070, Protocol: "HTTP", Name: "in"}, DefaultEndpoint: "127.0.0.1:8080"}},
		Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 8080, Protocol: "HTTP", Name: "http"}, Hosts: []string{"./*"}},
			{Port: &networking.SidecarPort{Number: 6100, Protocol: "TCP", Name: "tcp"}, Bind: "127.0.0.3", Hosts: []string{"./*"}},
			{Hosts: []string{"./ink.nib.svc.cluster.local"}},
		},
	}}
	s := noneModeMesh(sc)
	p := sidecarProxy("10.90.0.1", "nib")
	p.InterceptionMode = "NONE"
	g, err := generateAll(t, p, s)
	if err != nil && !strings.Contains(err.Error(), "both use") { // stem's 6100 meets reed's
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var got []string
	for _, r := range g[ListenerType] {
		if r.Message.(*listenerv3.Listener).GetBindToPort() != nil {
			t.Errorf("%s does not bind its port", r.Name)
		}
		got = append(got, r.Name)
	}
	want := []string{"10.90.0.1_7070", "127.0.0.1_5300", "127.0.0.1_8080", "127.0.0.1_8443", "127.0.0.3_6100"}
	if !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	var inbound []string
	for _, r := range g[ClusterType] {
		if strings.HasPrefix(r.Name, "inbound|") {
			inbound = append(inbound, r.Name)
			if r.Message.(*clusterv3.Cluster).GetType() != clusterv3.Cluster_STATIC {
				t.Errorf("%s: want the STATIC cluster of the ingress port's default endpoint", r.Name)
			}
		}
	}
	if !slices.Equal(inbound, []string{"inbound|7070||"}) {
		t.Errorf("inbound clusters %v, want only the ingress port's", inbound)
	}
}

// TestInterceptionNoneVirtualPorts: the ports of the virtual listeners (15001, 15006) are a
// service's like any other on a proxy in mode NONE, which has no virtual listeners: bound on
// 127.0.0.1, an HTTP one's route configuration with the service's virtual host, as istiod
// builds them.
func TestInterceptionNoneVirtualPorts(t *testing.T) {
	knot := &model.Service{Hostname: "knot.nib.svc.cluster.local", Namespace: "nib", Addresses: []string{"240.0.90.6"}, Ports: []model.Port{
		{Name: "tcp", Number: VirtualOutboundPort, Protocol: model.ProtocolTCP}, {Name: "http", Number: VirtualInboundPort, Protocol: model.ProtocolHTTP}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{knot}})
	p := sidecarProxy("10.90.0.1", "nib")
	p.InterceptionMode = "NONE"
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	for _, name := range []string{"127.0.0.1_15001", "127.0.0.1_15006"} {
		if findResource(g[ListenerType], name) == nil {
			t.Errorf("no listener %s", name)
		}
	}
	rc := findResource(g[RouteType], "15006")
	if rc == nil || len(rc.Message.(*routev3.RouteConfiguration).GetVirtualHosts()) == 0 {
		t.Errorf("route configuration 15006 without knot's virtual host: %v", rc)
	}
}
