package gen

import (
	"bytes"
	"slices"
	"testing"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
)

func TestIndexScanMatchesMaps(t *testing.T) {
	top := buildTopology(200, 2)
	// Add a wildcard DR and VS and a DR that loses to the service-namespace one.
	top.configs = append(top.configs,
		&istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "wild", Namespace: "ns-2"}, Spec: &networking.DestinationRule{Host: "*.ns-2.svc.cluster.local"}},
		&istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "other", Namespace: "ns-9"}, Spec: &networking.DestinationRule{Host: host(0)}},
		&istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "wild", Namespace: "ns-3"}, Spec: &networking.VirtualService{Hosts: []string{"*.ns-3.svc.cluster.local"}}},
		&istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "broken", Namespace: "ns-1"}, Spec: &networking.VirtualService{}},
	)
	s := top.snapshot(1)
	built := newIndex(s, nil)
	built.build()
	for _, svc := range s.Services() {
		scan := newIndex(s, nil)
		if got, want := scan.destinationRule(svc.Hostname), built.destinationRule(svc.Hostname); got != want {
			t.Errorf("%s: scan DR %v, map DR %v", svc.Hostname, got, want)
		}
		if got, want := scan.virtualServices(svc.Hostname), built.virtualServices(svc.Hostname); !slices.Equal(got, want) {
			t.Errorf("%s: scan VS %v, map VS %v", svc.Hostname, got, want)
		}
	}
	if dr := built.destinationRule(host(0)); dr == nil || dr.Name != "dr-0" {
		t.Errorf("DR for %s: %v, want dr-0 from the service's namespace", host(0), dr)
	}
	if dr := built.destinationRule(host(2)); dr == nil || dr.Name != "wild" {
		t.Errorf("DR for %s: %v, want the wildcard one", host(2), dr)
	}
}

// TestKeyScope checks the property the ADS server's cache relies on: proxies with the same
// scope (and IPs that are not endpoints) get byte-identical resources, and the scope tells
// apart proxies that would not.
func TestKeyScope(t *testing.T) {
	s := buildTopology(60, 3).snapshot(1)
	a, b := sidecarProxy("10.200.0.1", "ns-0"), sidecarProxy("10.200.0.7", "ns-0")
	c := sidecarProxy("10.200.0.1", "ns-4")
	g := grpcProxy("ns-0")
	ga, err := generateAll(t, a, s)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := generateAll(t, b, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, typeURL := range Types() {
		if KeyScope(typeURL, a) != KeyScope(typeURL, b) {
			t.Errorf("%s: same-namespace sidecars have different scopes", typeURL)
		}
		if len(ga[typeURL]) == 0 || len(ga[typeURL]) != len(gb[typeURL]) {
			t.Fatalf("%s: %d and %d resources for equal scopes", typeURL, len(ga[typeURL]), len(gb[typeURL]))
		}
		for i, ra := range ga[typeURL] {
			rb := gb[typeURL][i]
			ba, err := Marshal(ra.Message)
			if err != nil {
				t.Fatal(err)
			}
			bb, err := Marshal(rb.Message)
			if err != nil {
				t.Fatal(err)
			}
			if ra.Name != rb.Name || !bytes.Equal(ba, bb) {
				t.Errorf("%s %s: equal scopes, different resources", typeURL, ra.Name)
			}
		}
		if typeURL == RouteType && KeyScope(typeURL, a) == KeyScope(typeURL, c) {
			t.Errorf("routes: sidecars in different namespaces share a scope")
		}
		if typeURL != EndpointType && KeyScope(typeURL, a) == KeyScope(typeURL, g) {
			t.Errorf("%s: sidecar and grpc share a scope", typeURL)
		}
	}
}

// TestGRPCListenerKeyScope: a gRPC listener's short name resolves in the client's namespace
// ("web:80" is web.app's listener for a client in app, nothing for one in other), so gRPC
// clients of different namespaces must not share cached listener bytes.
func TestGRPCListenerKeyScope(t *testing.T) {
	s := grpcParityMesh()
	a, b, c := grpcProxy("app"), grpcProxy("app"), grpcProxy("other")
	if KeyScope(ListenerType, a) != KeyScope(ListenerType, b) {
		t.Error("gRPC clients of one namespace have different listener scopes")
	}
	if KeyScope(ListenerType, a) == KeyScope(ListenerType, c) && ViewKey(ListenerType, a, s, false) == ViewKey(ListenerType, c, s, false) {
		t.Error("gRPC clients of different namespaces share a listener cache key, but web:80 is a listener in app only")
	}
}

func TestNilInputs(t *testing.T) {
	s := routeMesh()
	for _, typeURL := range Types() {
		if _, err := ForType(typeURL, nil).Generate(nil, nil, nil); err == nil {
			t.Errorf("%s: nil snapshot accepted", typeURL)
		}
		rs, err := ForType(typeURL, nil).Generate(nil, s, nil)
		if err != nil || len(rs) == 0 {
			t.Errorf("%s with a nil proxy: %d resources, %v", typeURL, len(rs), err)
		}
	}
}

// cacheClass is what the ADS server keys a sidecar's shared bytes by (xds.Server.class), less
// the endpoint IP (the proxies below are no endpoints).
func cacheClass(typeURL string, p *model.Proxy, s *model.Snapshot) string {
	k := KeyScope(typeURL, p) + "|" + ViewKey(typeURL, p, s, true) + "|" + LocalityClass(typeURL, p, s)
	if typeURL == ListenerType {
		k += "|" + InboundScope(p, s)
	}
	return k
}

// TestCacheClassFollowsSourceMatches: tcp and tls routes that match on sourceLabels or
// sourceNamespace make a sidecar's listeners depend on its labels and namespace, so proxies
// that such a match tells apart must not share listener bytes, and proxies it does not tell
// apart still do.
func TestCacheClassFollowsSourceMatches(t *testing.T) {
	proxy := func(ns string, labels map[string]string) *model.Proxy {
		p := sidecarProxy("10.200.0.1", ns)
		p.Labels = labels
		return p
	}
	web := proxy("app", map[string]string{"app": "web"})
	webV2 := proxy("app", map[string]string{"app": "web", "version": "v2"})
	client := proxy("app", map[string]string{"app": "client"})
	other := proxy("other", map[string]string{"app": "client"})
	match := func(m *networking.L4MatchAttributes) *istioconfig.Config {
		return vsConfig("mysql", "db", &networking.VirtualService{Hosts: []string{"mysql"}, Tcp: []*networking.TCPRoute{
			tcpRoute([]*networking.L4MatchAttributes{m}, l4dest("replica", "", 0)),
			tcpRoute(nil, l4dest("mysql", "", 0)),
		}})
	}
	tests := []struct {
		name string
		vs   *istioconfig.Config
		// differ lists the pairs (indexes into the proxies) whose listeners differ; the rest
		// must share a class.
		differ [][2]int
	}{
		{"no source match", match(&networking.L4MatchAttributes{Port: 3306}), nil},
		{"sourceLabels", match(&networking.L4MatchAttributes{SourceLabels: map[string]string{"app": "web"}}), [][2]int{{0, 2}, {0, 3}, {1, 2}, {1, 3}}},
		{"sourceNamespace", match(&networking.L4MatchAttributes{SourceNamespace: "other"}), [][2]int{{0, 3}, {1, 3}, {2, 3}}},
	}
	proxies := []*model.Proxy{web, webV2, client, other}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tcpMesh(tt.vs)
			var ls [][]Resource
			for _, p := range proxies {
				rs, err := ForType(ListenerType, p).Generate(p, s, nil)
				if err != nil {
					t.Fatal(err)
				}
				ls = append(ls, rs)
			}
			for i := range proxies {
				for j := i + 1; j < len(proxies); j++ {
					same := sameBytes(t, ls[i], ls[j])
					if same == slices.Contains(tt.differ, [2]int{i, j}) {
						t.Errorf("proxies %d and %d: identical listeners %v, want %v", i, j, same, !same)
					}
					if !same && cacheClass(ListenerType, proxies[i], s) == cacheClass(ListenerType, proxies[j], s) {
						t.Errorf("proxies %d and %d get different listeners but share cache class %q", i, j, cacheClass(ListenerType, proxies[i], s))
					}
					if same && proxies[i].Namespace == proxies[j].Namespace && cacheClass(ListenerType, proxies[i], s) != cacheClass(ListenerType, proxies[j], s) {
						t.Errorf("proxies %d and %d get the same listeners in one namespace but do not share a class", i, j)
					}
				}
			}
		})
	}
}

// TestCacheClassIgnoresUnreadLabels: a sidecar's routes read its labels only where an HTTP
// match names sourceLabels, and its inbound listener only where a policy's selector does, so
// proxies that differ in a label nothing reads (the node name istiod adds as
// kubernetes.io/hostname) share a class, and proxies a selector tells apart do not.
func TestCacheClassIgnoresUnreadLabels(t *testing.T) {
	proxy := func(labels map[string]string) *model.Proxy {
		p := sidecarProxy("10.200.0.1", "app")
		p.Labels = labels
		return p
	}
	node1 := proxy(map[string]string{"app": "web", model.LabelHostname: "node-1"})
	node2 := proxy(map[string]string{"app": "web", model.LabelHostname: "node-2"})
	canary := proxy(map[string]string{"app": "web", "track": "canary", model.LabelHostname: "node-1"})
	proxies := []*model.Proxy{node1, node2, canary}
	sourceVS := vsConfig("web", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{SourceLabels: map[string]string{"track": "canary"}}}, Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "api"}}}},
		{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web"}}}},
	}})
	policy := authzConfig("app", "canary-only", &securityapi.AuthorizationPolicy{Selector: selector("track", "canary"), Action: securityapi.AuthorizationPolicy_DENY,
		Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/admin"}}}}}}}, nil)
	plainPolicy := authzConfig("app", "everyone", &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_DENY,
		Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/debug"}}}}}}}, nil)
	tests := []struct {
		name    string
		typeURL string
		cfgs    []*istioconfig.Config
		// canaryDiffers: proxy 2 (track=canary) gets other resources than proxies 0 and 1.
		canaryDiffers bool
	}{
		{"routes without source matches", RouteType, nil, false},
		{"routes with a sourceLabels match", RouteType, []*istioconfig.Config{sourceVS}, true},
		{"listeners with a namespace-wide policy", ListenerType, []*istioconfig.Config{plainPolicy}, false},
		{"listeners with a selecting policy", ListenerType, []*istioconfig.Config{plainPolicy, policy}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := routeMesh(tt.cfgs...)
			var rs [][]Resource
			for _, p := range proxies {
				r, err := ForType(tt.typeURL, p).Generate(p, s, nil)
				if err != nil {
					t.Fatal(err)
				}
				rs = append(rs, r)
			}
			if !sameBytes(t, rs[0], rs[1]) {
				t.Fatal("proxies that differ only in their node name get different resources")
			}
			if a, b := cacheClass(tt.typeURL, node1, s), cacheClass(tt.typeURL, node2, s); a != b {
				t.Errorf("proxies that differ only in their node name: classes %q and %q", a, b)
			}
			if same := sameBytes(t, rs[0], rs[2]); same == tt.canaryDiffers {
				t.Fatalf("canary's resources identical to node-1's: %v, want %v", same, !tt.canaryDiffers)
			}
			if tt.canaryDiffers && cacheClass(tt.typeURL, node1, s) == cacheClass(tt.typeURL, canary, s) {
				t.Errorf("canary gets other resources but shares class %q", cacheClass(tt.typeURL, canary, s))
			}
		})
	}
}
