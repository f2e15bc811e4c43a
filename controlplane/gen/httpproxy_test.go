package gen

import (
	"cmp"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dfphttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// httpProxyMesh is the mesh of the HTTP proxy tests (httpproxy.yaml in the parity corpus, with
// other names): tern has two HTTP ports and a TCP one, gull an HTTP port on 3128, where auk has
// a TCP port and petrel a sniffed one, all with a VIP.
func httpProxyMesh() []*model.Service {
	svc := func(name, vip string, ports ...model.Port) *model.Service {
		return &model.Service{Hostname: name + ".coast.svc.cluster.local", Namespace: "coast", Addresses: []string{vip}, Ports: ports}
	}
	return []*model.Service{
		svc("tern", "240.0.140.1", model.Port{Name: "http", Number: 80, Protocol: model.ProtocolHTTP},
			model.Port{Name: "http-alt", Number: 8080, Protocol: model.ProtocolHTTP}, model.Port{Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}),
		svc("gull", "240.0.140.2", model.Port{Name: "http", Number: 3128, Protocol: model.ProtocolHTTP}),
		svc("auk", "240.0.140.3", model.Port{Name: "tcp", Number: 3128, Protocol: model.ProtocolTCP}),
		svc("petrel", "240.0.140.4", model.Port{Name: "any", Number: 3128, Protocol: model.ProtocolUnknown}),
	}
}

// TestHTTPProxyListeners: an HTTP_PROXY egress port, and port 0 bound to a unix socket with an
// HTTP protocol, are one HTTP listener for every service the egress listener imports, as
// istiod builds them: one chain without a match fetching route configuration PORT (or the
// socket's name), on 0.0.0.0 without binding under REDIRECT, bound on 127.0.0.1 under
// captureMode NONE or interception mode NONE, on the pipe for a socket; none when the egress
// listener imports nothing, none for a privileged port an unprivileged proxy would bind, none
// for the virtual listeners' ports on 0.0.0.0. The catch-all listener adds nothing to it:
// gull's HTTP port 3128 has no listener of its own, auk's TCP port and petrel's sniffed port
// their VIP listeners.
func TestHTTPProxyListeners(t *testing.T) {
	egress := func(num uint32, proto, bind string, mode networking.CaptureMode, hosts ...string) *networking.IstioEgressListener {
		return &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: num, Protocol: proto, Name: "p"}, Bind: bind, CaptureMode: mode, Hosts: hosts}
	}
	type want struct {
		name, route string
		pipe        string // the socket path, "" for an IP listener
		binds       bool
	}
	tests := []struct {
		name         string
		egress       *networking.IstioEgressListener
		mode         string
		unprivileged bool
		want         []want // the HTTP proxy listeners
		absent       []string
		ip           string // the proxy's address ("" for 10.140.9.9)
	}{
		{"HTTP_PROXY under REDIRECT", egress(3128, "HTTP_PROXY", "", 0, "./*"), "", false,
			[]want{{"0.0.0.0_3128", "3128", "", false}}, nil, ""},
		{"HTTP_PROXY, lower case", egress(3128, "http_proxy", "", 0, "./*"), "", false,
			[]want{{"0.0.0.0_3128", "3128", "", false}}, nil, ""},
		{"HTTP_PROXY with a bind", egress(3128, "HTTP_PROXY", "127.0.0.5", 0, "./*"), "", false,
			[]want{{"127.0.0.5_3128", "3128", "", false}}, nil, ""},
		{"HTTP_PROXY under captureMode NONE", egress(3128, "HTTP_PROXY", "", networking.CaptureMode_NONE, "./*"), "", false,
			[]want{{"127.0.0.1_3128", "3128", "", true}}, nil, ""},
		{"HTTP_PROXY in interception mode NONE", egress(3128, "HTTP_PROXY", "", 0, "./*"), "NONE", false,
			[]want{{"127.0.0.1_3128", "3128", "", true}}, nil, ""},
		// No listener of its own: the catch-all listener builds gull's 0.0.0.0_3128, whose
		// route configuration 3128 istiod still answers from the HTTP_PROXY listener (below).
		{"HTTP_PROXY importing nothing", egress(3128, "HTTP_PROXY", "", 0, "./nobody.coast.svc.cluster.local"), "", false,
			nil, nil, ""},
		{"HTTP_PROXY on a privileged port an unprivileged proxy binds", egress(80, "HTTP_PROXY", "", networking.CaptureMode_NONE, "./*"), "", true,
			nil, []string{"127.0.0.1_80"}, ""},
		{"HTTP_PROXY on the virtual outbound port", egress(15001, "HTTP_PROXY", "", 0, "./*"), "", false,
			nil, []string{"0.0.0.0_15001"}, ""},
		{"unix socket, HTTP", egress(0, "HTTP", "unix:///var/run/coast/http.sock", 0, "./tern.coast.svc.cluster.local"), "", false,
			[]want{{"unix:///var/run/coast/http.sock_0", "unix:///var/run/coast/http.sock", "/var/run/coast/http.sock", true}}, nil, ""},
		{"unix socket, abstract, HTTP_PROXY", egress(0, "HTTP_PROXY", "unix://@coast", 0, "./*"), "", false,
			[]want{{"unix://@coast_0", "unix://@coast", "@coast", true}}, nil, ""},
		{"unix socket, TCP: not generated", egress(0, "TCP", "unix:///var/run/coast/tcp.sock", 0, "./*"), "", false,
			nil, []string{"unix:///var/run/coast/tcp.sock_0"}, ""},
		// An IPv6-only proxy's wildcard is :: (istiod's actualWildcards), where 0.0.0.0 is an
		// address like any other.
		{"HTTP_PROXY on an IPv6-only proxy", egress(3128, "HTTP_PROXY", "", 0, "./*"), "", false,
			[]want{{"::_3128", "3128", "", false}}, []string{"0.0.0.0_3128"}, "fd00:140::9"},
		{"HTTP_PROXY bound to :: on the virtual outbound port, IPv6-only", egress(15001, "HTTP_PROXY", "::", 0, "./*"), "", false,
			nil, []string{"::_15001"}, "fd00:140::9"},
		{"HTTP_PROXY bound to 0.0.0.0 on the virtual outbound port, IPv6-only", egress(15001, "HTTP_PROXY", "0.0.0.0", 0, "./*"), "", false,
			[]want{{"0.0.0.0_15001", "15001", "", false}}, nil, "fd00:140::9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "proxy", Namespace: "coast"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{tt.egress, {Hosts: []string{"./*"}}}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: httpProxyMesh(), Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy(cmp.Or(tt.ip, "10.140.9.9"), "coast")
			p.InterceptionMode = tt.mode
			p.Unprivileged = tt.unprivileged
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			for _, w := range tt.want {
				r := findResource(g[ListenerType], w.name)
				if r == nil {
					t.Fatalf("no listener %s: %v", w.name, resourceNames(g[ListenerType]))
				}
				l := r.Message.(*listenerv3.Listener)
				if got := l.GetBindToPort() == nil || l.GetBindToPort().GetValue(); got != w.binds {
					t.Errorf("%s binds its port %v, want %v", w.name, got, w.binds)
				}
				if got := l.GetAddress().GetPipe().GetPath(); got != w.pipe {
					t.Errorf("%s pipe %q, want %q", w.name, got, w.pipe)
				}
				fc := l.GetFilterChains()
				if len(fc) != 1 || fc[0].GetFilterChainMatch() != nil || l.GetDefaultFilterChain() != nil || len(l.GetListenerFilters()) != 0 {
					t.Fatalf("%s: want one chain without a match, no default chain, no listener filter: %v", w.name, l)
				}
				h := &hcmv3.HttpConnectionManager{}
				if err := fc[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil {
					t.Fatal(err)
				}
				if got := h.GetRds().GetRouteConfigName(); got != w.route {
					t.Errorf("%s asks for route configuration %q, want %q", w.name, got, w.route)
				}
				if !slices.Contains(r.Deps, sc.Key()) {
					t.Errorf("%s: deps %v lack the Sidecar", w.name, r.Deps)
				}
				if findResource(g[RouteType], w.route) == nil {
					t.Errorf("no route configuration %s", w.route)
				}
			}
			for _, name := range tt.absent {
				if findResource(g[ListenerType], name) != nil {
					t.Errorf("listener %s, want none", name)
				}
			}
			if len(tt.want) == 0 && tt.egress.GetPort().GetNumber() == 3128 {
				rc, _ := findResource(g[RouteType], "3128").Message.(*routev3.RouteConfiguration)
				if len(rc.GetVirtualHosts()) != 1 || rc.GetVirtualHosts()[0].GetName() != AllowAnyVirtualHost {
					t.Errorf("route configuration 3128 %v, want allow_any alone (the HTTP_PROXY listener imports nothing)", rc)
				}
			}
			if tt.egress.GetPort().GetNumber() == 3128 && tt.mode == "" && tt.egress.GetCaptureMode() == 0 && len(tt.want) > 0 {
				// The catch-all listener's services on 3128: auk's and petrel's VIP listeners.
				for _, name := range []string{"240.0.140.3_3128", "240.0.140.4_3128"} {
					if findResource(g[ListenerType], name) == nil {
						t.Errorf("no listener %s", name)
					}
				}
				if findResource(g[ListenerType], "240.0.140.2_3128") != nil {
					t.Error("gull's HTTP port 3128 has a listener of its own")
				}
			}
		})
	}
}

func resourceNames(rs []Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// TestHTTPProxyRoutes: an HTTP proxy route configuration has a virtual host per HTTP or sniffed
// port of each service the egress listener imports, with the domains istiod keeps there (port
// 80: all; another port: those with ":PORT"), the VirtualService's routes built for port 0 (a
// match on a port applies nowhere) on each port, a VirtualService host that names no service
// once on port 80 with its one domain, then allow_any. A sniffed service's route configuration
// on the HTTP_PROXY port keeps its own virtual host, domain "*".
func TestHTTPProxyRoutes(t *testing.T) {
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "tern", Namespace: "coast"},
		Spec: &networking.VirtualService{Hosts: []string{"tern.coast.svc.cluster.local", "tern.example.org"}, Http: []*networking.HTTPRoute{
			{Match: []*networking.HTTPMatchRequest{{Port: 80, Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/eighty"}}}},
				Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "tern.coast.svc.cluster.local", Port: &networking.PortSelector{Number: 8080}}}}},
			{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "tern.coast.svc.cluster.local", Port: &networking.PortSelector{Number: 80}}}}},
		}}}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "proxy", Namespace: "coast"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 3128, Protocol: "HTTP_PROXY", Name: "proxy"}, Hosts: []string{"./*"}},
			{Hosts: []string{"./*"}},
		}}}
	// tern.example.org is a VirtualService host beside tern's HTTP ports 80 then 8080: the first,
	// 80, keeps its virtual host (istiod mostly, by map order; xdslab always). gull.example.org
	// beside gull's port 3128 alone gets none.
	gullVS := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "gull", Namespace: "coast"},
		Spec: &networking.VirtualService{Hosts: []string{"gull.coast.svc.cluster.local", "gull.example.org"}, Http: []*networking.HTTPRoute{
			{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "gull.coast.svc.cluster.local"}}}},
		}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: httpProxyMesh(), Configs: []*istioconfig.Config{sc, vs, gullVS}})
	p := sidecarProxy("10.140.9.9", "coast")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"3128", "petrel.coast.svc.cluster.local:3128"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*routev3.RouteConfiguration{}
	for _, r := range rs {
		byName[r.Name] = r.Message.(*routev3.RouteConfiguration)
	}
	rc := byName["3128"]
	if rc == nil {
		t.Fatalf("no route configuration 3128: %v", resourceNames(rs))
	}
	type vh struct {
		domains string
		routes  string // the clusters of its routes
	}
	got := map[string]vh{}
	var order []string
	for _, v := range rc.GetVirtualHosts() {
		var clusters []string
		for _, r := range v.GetRoutes() {
			clusters = append(clusters, r.GetRoute().GetCluster())
		}
		got[v.GetName()] = vh{strings.Join(v.GetDomains(), " "), strings.Join(clusters, " ")}
		order = append(order, v.GetName())
	}
	want := map[string]vh{
		"tern.coast.svc.cluster.local:80": {"tern.coast.svc.cluster.local tern.coast.svc.cluster.local:80 tern tern:80 tern.coast tern.coast:80 tern.coast.svc tern.coast.svc:80 240.0.140.1 240.0.140.1:80",
			"outbound|80||tern.coast.svc.cluster.local"},
		"tern.coast.svc.cluster.local:8080": {"tern.coast.svc.cluster.local:8080 tern:8080 tern.coast:8080 tern.coast.svc:8080 240.0.140.1:8080",
			"outbound|80||tern.coast.svc.cluster.local"},
		"gull.coast.svc.cluster.local:3128": {"gull.coast.svc.cluster.local:3128 gull:3128 gull.coast:3128 gull.coast.svc:3128 240.0.140.2:3128",
			"outbound|3128||gull.coast.svc.cluster.local"},
		"petrel.coast.svc.cluster.local:3128": {"petrel.coast.svc.cluster.local:3128 petrel:3128 petrel.coast:3128 petrel.coast.svc:3128 240.0.140.4:3128",
			"outbound|3128||petrel.coast.svc.cluster.local"},
		"tern.example.org:80": {"tern.example.org", "outbound|80||tern.coast.svc.cluster.local"},
		AllowAnyVirtualHost:   {"*", "PassthroughCluster"},
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("no virtual host %s: %v", name, order)
			continue
		}
		gd, wd := strings.Fields(g.domains), strings.Fields(w.domains)
		slices.Sort(gd)
		slices.Sort(wd)
		if !slices.Equal(gd, wd) {
			t.Errorf("%s domains %v, want %v", name, gd, wd)
		}
		if g.routes != w.routes {
			t.Errorf("%s routes to %q, want %q", name, g.routes, w.routes)
		}
	}
	if len(got) != len(want) {
		t.Errorf("virtual hosts %v, want %d", order, len(want))
	}
	if order[len(order)-1] != AllowAnyVirtualHost {
		t.Errorf("virtual hosts %v: allow_any is not last", order)
	}
	sn := byName["petrel.coast.svc.cluster.local:3128"]
	if sn == nil || len(sn.GetVirtualHosts()) != 1 || !slices.Equal(sn.GetVirtualHosts()[0].GetDomains(), []string{"*"}) ||
		sn.GetVirtualHosts()[0].GetName() != "petrel.coast.svc.cluster.local:3128" {
		t.Errorf("sniffed route configuration: %v, want petrel's virtual host of 3128 alone, domain *", sn)
	}
}

// TestInboundIPScopeHTTPProxy: an HTTP_PROXY port without a bind listens on 0.0.0.0, where
// the agent's ports are left out, so two proxies that differ only in them must not share CDS
// and LDS; with a bind (not the wildcard) they may.
func TestInboundIPScopeHTTPProxy(t *testing.T) {
	for _, tt := range []struct {
		bind  string
		share bool
	}{{"", false}, {"127.0.0.5", true}} {
		t.Run("bind "+tt.bind, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "proxy", Namespace: "coast"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
					{Port: &networking.SidecarPort{Number: 15021, Protocol: "HTTP_PROXY", Name: "p"}, Bind: tt.bind, Hosts: []string{"./*"}}}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Configs: []*istioconfig.Config{sc}})
			p1, p2 := sidecarProxy("10.140.0.1", "coast"), sidecarProxy("10.140.0.1", "coast")
			p1.StaticPorts, p2.StaticPorts = []uint32{15021}, []uint32{15090}
			if k1, k2 := InboundIPScope(p1, s), InboundIPScope(p2, s); (k1 == k2) != tt.share {
				t.Errorf("agent ports 15021 and 15090: scopes %q and %q, want shared %v", k1, k2, tt.share)
			}
		})
	}
}

// TestHTTPProxyRouteLookups: on an HTTP proxy route configuration (built for port 0) a
// destination without a port takes the service's only port when the egress listener imports
// it, else 0, as istiod looks it up among that listener's services alone; a proxyless gRPC
// client's route configuration HOST:PORT on an HTTP_PROXY port keeps the virtual hosts of that
// configuration naming the host (none when the listener does not import it), with their ports.
func TestHTTPProxyRouteLookups(t *testing.T) {
	to := func(host string) []*networking.HTTPRouteDestination {
		return []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host}}}
	}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "tern", Namespace: "coast"},
		Spec: &networking.VirtualService{Hosts: []string{"tern.coast.svc.cluster.local"}, Http: []*networking.HTTPRoute{
			{Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/petrel"}}}}, Route: to("petrel.coast.svc.cluster.local")},
			{Route: to("auk.coast.svc.cluster.local")},
		}}}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "proxy", Namespace: "coast"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			// Imports tern, auk and gull, not petrel (the catch-all listener does).
			{Port: &networking.SidecarPort{Number: 3128, Protocol: "HTTP_PROXY", Name: "proxy"}, Hosts: []string{"./tern.coast.svc.cluster.local", "./auk.coast.svc.cluster.local", "./gull.coast.svc.cluster.local"}},
			{Hosts: []string{"./*"}},
		}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: httpProxyMesh(), Configs: []*istioconfig.Config{sc, vs}})
	p := sidecarProxy("10.140.9.9", "coast")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"3128"})
	if err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		if vh.GetName() == "tern.coast.svc.cluster.local:80" {
			for _, r := range vh.GetRoutes() {
				clusters = append(clusters, r.GetRoute().GetCluster())
			}
		}
	}
	if want := []string{"outbound|0||petrel.coast.svc.cluster.local", "outbound|3128||auk.coast.svc.cluster.local"}; !slices.Equal(clusters, want) {
		t.Errorf("tern's routes go to %v, want %v", clusters, want)
	}

	g := grpcProxy("coast")
	rs, err = ForType(RouteType, g).Generate(g, s, []string{"gull.coast.svc.cluster.local:3128", "petrel.coast.svc.cluster.local:3128", "auk.coast.svc.cluster.local:3128", "tern.coast.svc.cluster.local:8080"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range rs {
		if r.Name == "gull.coast.svc.cluster.local:3128" {
			if d := r.Message.(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetDomains(); slices.Contains(d, "gull.coast.svc.cluster.local") || !slices.Contains(d, "gull.coast.svc.cluster.local:3128") {
				t.Errorf("gRPC gull:3128 domains %v, want those with :3128 alone", d)
			}
		}
		for _, vh := range r.Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
			got[r.Name] = append(got[r.Name], vh.GetName())
		}
	}
	// gull's virtual host of 3128; none for petrel (not imported) nor auk (TCP); tern's 8080
	// is no HTTP_PROXY port (its own virtual host).
	want := map[string][]string{
		"gull.coast.svc.cluster.local:3128": {"gull.coast.svc.cluster.local:3128"},
		"tern.coast.svc.cluster.local:8080": {"tern.coast.svc.cluster.local:8080"},
	}
	if len(got) != len(want) {
		t.Errorf("gRPC virtual hosts %v, want %v", got, want)
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("gRPC %s: virtual hosts %v, want %v", name, got[name], w)
		}
	}
}

// TestHTTPProxyDynamicForwardProxy: an HTTP proxy listener carries the dynamic forward proxy
// filter of the DYNAMIC_DNS entry istiod builds it from last (an HTTP_PROXY port: nothing
// locks the listener before its loop over the egress listener's services ends), in the
// proxy's DNS family; without such an entry, none.
func TestHTTPProxyDynamicForwardProxy(t *testing.T) {
	dfp := &model.Service{Hostname: "*.zz.example", Namespace: "coast", Resolution: model.ResolutionDynamicDNS, MeshExternal: true,
		CreationTime: time.Unix(1e9, 0), Ports: []model.Port{{Name: "http", Number: 8090, Protocol: model.ProtocolHTTP}}}
	for _, tc := range []struct {
		name, host, ip, listener string
		family                   clusterv3.Cluster_DnsLookupFamily // 0: no filter
	}{
		{"the entry alone", "./*.zz.example", "10.140.9.9", "0.0.0.0_3128", clusterv3.Cluster_V4_ONLY},
		{"the entry alone, IPv6-only", "./*.zz.example", "fd00:140::9", "::_3128", clusterv3.Cluster_V6_ONLY},
		{"no entry", "./tern.coast.svc.cluster.local", "10.140.9.9", "0.0.0.0_3128", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "proxy", Namespace: "coast"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
					{Port: &networking.SidecarPort{Number: 3128, Protocol: "HTTP_PROXY", Name: "p"}, Hosts: []string{tc.host}}}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: append(httpProxyMesh(), dfp), Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy(tc.ip, "coast")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			r := findResource(g[ListenerType], tc.listener)
			if r == nil {
				t.Fatalf("no listener %s: %v", tc.listener, resourceNames(g[ListenerType]))
			}
			h := &hcmv3.HttpConnectionManager{}
			if err := r.Message.(*listenerv3.Listener).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil {
				t.Fatal(err)
			}
			var fc *dfphttpv3.FilterConfig
			for _, f := range h.GetHttpFilters() {
				if f.GetName() == dfpHTTPFilterName {
					fc = &dfphttpv3.FilterConfig{}
					if err := f.GetTypedConfig().UnmarshalTo(fc); err != nil {
						t.Fatal(err)
					}
				}
			}
			switch {
			case tc.family == 0 && fc != nil:
				t.Errorf("a dynamic forward proxy filter without a DYNAMIC_DNS entry: %v", fc)
			case tc.family != 0 && fc == nil:
				t.Errorf("no dynamic forward proxy filter: %v", h.GetHttpFilters())
			case tc.family != 0 && (fc.GetDnsCacheConfig().GetName() != "*.zz.example_dfp_dns_cache" || fc.GetDnsCacheConfig().GetDnsLookupFamily() != tc.family):
				t.Errorf("filter cache %v, want *.zz.example's in %v", fc.GetDnsCacheConfig(), tc.family)
			}
		})
	}
}
