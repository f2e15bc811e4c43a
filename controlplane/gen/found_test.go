package gen

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Tests of differences from istiod the random parity meshes found (hack/istio/parity,
// testdata/mesh/found.yaml sections 10 to 14).

// generatedCluster returns the generated cluster called name, nil when there is none.
func generatedCluster(g generated, name string) *clusterv3.Cluster {
	for _, r := range g[ClusterType] {
		if r.Name == name {
			return r.Message.(*clusterv3.Cluster)
		}
	}
	return nil
}

// mentions reports whether any generated resource of typeURL names s (a cluster name) in its
// JSON form.
func mentions(t *testing.T, g generated, typeURL, s string) bool {
	t.Helper()
	for _, r := range g[typeURL] {
		b, err := protojson.Marshal(r.Message)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// TestDNSEntryWithoutEndpoints: a DNS entry whose workloadSelector selects no WorkloadEntry
// has no endpoints at all (not even its host name, which is the endpoint of an entry without
// workloadSelector and endpoints): istiod builds no cluster for it, while the sidecar's route
// and tcp_proxy still name the cluster. With its host-name endpoint it has a STRICT_DNS one.
func TestDNSEntryWithoutEndpoints(t *testing.T) {
	const host = "depot.example.com"
	svc := &model.Service{Hostname: host, Namespace: "other", Addresses: []string{"240.10.0.1"}, Resolution: model.ResolutionDNS, MeshExternal: true,
		Ports:  []model.Port{{Name: "http", Number: 8300, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 8301, Protocol: model.ProtocolTCP}},
		Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "other", Name: "depot"}}
	vs := vsConfig("depot", "other", &networking.VirtualService{Hosts: []string{host}, Http: []*networking.HTTPRoute{{
		Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host, Port: &networking.PortSelector{Number: 8300}}}},
	}}})
	for _, tc := range []struct {
		name      string
		endpoints []*model.Endpoint
		want      clusterv3.Cluster_DiscoveryType // -1: no cluster
	}{
		{"selector selects nothing", nil, -1},
		{"host name endpoint", []*model.Endpoint{dnsHostEndpoint(svc)}, clusterv3.Cluster_STRICT_DNS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{vs}}
			if tc.endpoints != nil {
				in.Endpoints = map[string][]*model.Endpoint{host: tc.endpoints}
			}
			p := sidecarProxy("10.9.0.1", "other")
			g, err := generateAll(t, p, model.NewSnapshot(1, in))
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			for _, port := range []uint32{8300, 8301} {
				name := ClusterName(Outbound, port, "", host)
				c := generatedCluster(g, name)
				switch {
				case tc.want < 0 && c != nil:
					t.Errorf("%s: built (%v), want no cluster", name, c.GetType())
				case tc.want >= 0 && c.GetType() != tc.want:
					t.Errorf("%s: type %v (built %v), want %v", name, c.GetType(), c != nil, tc.want)
				}
			}
			if !mentions(t, g, RouteType, ClusterName(Outbound, 8300, "", host)) {
				t.Errorf("no route names the cluster of port 8300")
			}
			if !mentions(t, g, ListenerType, ClusterName(Outbound, 8301, "", host)) {
				t.Errorf("no tcp_proxy names the cluster of port 8301")
			}
		})
	}
}

// TestGatewayPassthroughServiceMTLS: a gateway's cluster of a resolution NONE mesh service is
// EDS; istiod infers its auto-mTLS from the service's endpoints (as for a sidecar's
// ORIGINAL_DST cluster): transport socket matches only when it has endpoints and all of them
// have a sidecar (tlsMode istio).
func TestGatewayPassthroughServiceMTLS(t *testing.T) {
	const host = "courier.app.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "app", Addresses: []string{"240.10.0.2"}, Resolution: model.ResolutionPassthrough,
		Ports: []model.Port{{Name: "http", Number: 8310, Protocol: model.ProtocolHTTP}}, ServiceAccounts: []string{"spiffe://cluster.local/ns/app/sa/courier"}}
	we := func(addr, sa string) *model.Endpoint {
		return &model.Endpoint{Service: host, Address: addr, ServiceAccount: sa, Labels: map[string]string{"app": "courier"},
			Source: istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Namespace: "app", Name: "courier-" + addr}}
	}
	configs := []*istioconfig.Config{
		gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}}),
		vsConfig("courier", "app", &networking.VirtualService{Hosts: []string{"courier.example.org"}, Gateways: []string{"istio-system/gw"},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(host, 8310, "")}}}}}),
	}
	for _, tc := range []struct {
		name      string
		endpoints []*model.Endpoint
		matches   bool
	}{
		{"no endpoints", nil, false},
		{"endpoint without sidecar", []*model.Endpoint{we("10.50.0.1", "")}, false},
		{"one of two without sidecar", []*model.Endpoint{we("10.50.0.1", "courier"), we("10.50.0.2", "")}, false},
		{"every endpoint with sidecar", []*model.Endpoint{we("10.50.0.1", "courier"), we("10.50.0.2", "courier")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := model.SnapshotInput{Services: []*model.Service{svc}, Configs: configs, Endpoints: map[string][]*model.Endpoint{host: tc.endpoints}}
			p := routerProxy("istio-system", ingressLabels)
			g, err := generateAll(t, p, model.NewSnapshot(1, in))
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			c := generatedCluster(g, ClusterName(Outbound, 8310, "", host))
			if c.GetType() != clusterv3.Cluster_EDS {
				t.Fatalf("cluster %v (built %v), want EDS", c.GetType(), c != nil)
			}
			if got := len(c.GetTransportSocketMatches()) > 0; got != tc.matches || c.GetTransportSocket() != nil {
				t.Errorf("transport socket matches %v, socket %v; want matches %v and no socket", got, c.GetTransportSocket() != nil, tc.matches)
			}
		})
	}
}

// TestGatewayRuleNeedsVisibleService: a gateway route's consistent hash, and its tcp_proxy's
// idle timeout, come from the rule of its destination as the proxy's scope holds it, and the
// scope holds rules only for the services the proxy sees: routes to a service exported to
// its own namespace only take neither (the HTTP route keeps its previous-hosts retry
// predicate).
func TestGatewayRuleNeedsVisibleService(t *testing.T) {
	svc := func(name string, exportTo []string) *model.Service {
		return &model.Service{Hostname: name + ".app.svc.cluster.local", Namespace: "app", Addresses: []string{"240.10.0.3"}, ExportTo: exportTo,
			Ports: []model.Port{{Name: "http", Number: 8320, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 8322, Protocol: model.ProtocolTCP}}}
	}
	hash := &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
		ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}},
		ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(45 * time.Second)}}}
	for _, tc := range []struct {
		name     string
		exportTo []string
		wantHash bool
	}{
		{"exported everywhere", nil, true},
		{"exported to its namespace", []string{"."}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svc("tally", tc.exportTo)
			in := model.SnapshotInput{
				Services:  []*model.Service{s},
				Endpoints: map[string][]*model.Endpoint{s.Hostname: {{Service: s.Hostname, Address: "10.50.0.3"}}},
				Configs: []*istioconfig.Config{
					gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*"), server(8316, "TCP", "*")}}),
					vsConfig("tally", "app", &networking.VirtualService{Hosts: []string{"tally.example.org"}, Gateways: []string{"istio-system/gw"},
						Http: []*networking.HTTPRoute{{Retries: &networking.HTTPRetry{Attempts: 2}, Route: []*networking.HTTPRouteDestination{{Destination: gwDest(s.Hostname, 8320, "")}}}}}),
					vsConfig("tally-tcp", "app", &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"istio-system/gw"},
						Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: gwDest(s.Hostname, 8322, "")}}}}}),
					drConfig("tally", "app", &networking.DestinationRule{Host: s.Hostname, TrafficPolicy: hash}),
				},
			}
			p := routerProxy("istio-system", ingressLabels)
			g, err := generateAll(t, p, model.NewSnapshot(1, in))
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var ra *routev3.RouteAction
			for _, r := range g[RouteType] {
				for _, vh := range r.Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
					for _, rt := range vh.GetRoutes() {
						if rt.GetRoute().GetCluster() == ClusterName(Outbound, 8320, "", s.Hostname) {
							ra = rt.GetRoute()
						}
					}
				}
			}
			if ra == nil {
				t.Fatal("no gateway route to the service")
			}
			if got := len(ra.GetHashPolicy()) > 0; got != tc.wantHash {
				t.Errorf("hash policy %v, want %v", ra.GetHashPolicy(), tc.wantHash)
			}
			if got := len(ra.GetRetryPolicy().GetRetryHostPredicate()) > 0; got == tc.wantHash {
				t.Errorf("previous-hosts retry predicate %v with hash policy %v", got, tc.wantHash)
			}
			if !mentions(t, g, ListenerType, ClusterName(Outbound, 8322, "", s.Hostname)) {
				t.Fatal("no gateway tcp_proxy to the service")
			}
			if got := mentions(t, g, ListenerType, `"idleTimeout":"45s"`); got != tc.wantHash {
				t.Errorf("tcp_proxy idle timeout of the rule %v, want %v", got, tc.wantHash)
			}
		})
	}
}

// upstreamProtocol says how a cluster picks its upstream HTTP protocol: "h2" (explicit
// HTTP/2), "client" (use_downstream_protocol_config) or "h1" (no choice: HTTP/1.1).
func upstreamProtocol(t *testing.T, c *clusterv3.Cluster) string {
	t.Helper()
	a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]
	if a == nil {
		return "h1"
	}
	o := &upstreamhttpv3.HttpProtocolOptions{}
	if err := a.UnmarshalTo(o); err != nil {
		t.Fatal(err)
	}
	switch {
	case o.GetUseDownstreamProtocolConfig() != nil:
		return "client"
	case o.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil:
		return "h2"
	}
	return "h1"
}

// TestH2UpgradePolicy: a rule's h2UpgradePolicy UPGRADE as istiod applies it: a sidecar's
// outbound clusters of a sniffed port keep the client's protocol (chosen before the rule is
// applied), those of an HTTP port upgrade (also in a subset); a gateway does not use the
// client's protocol (its cluster of a sniffed port without a rule speaks HTTP/1.1), so its
// cluster of the sniffed port upgrades; inbound clusters never upgrade.
func TestH2UpgradePolicy(t *testing.T) {
	const host = "spool.app.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "app", Addresses: []string{"240.10.0.4"},
		Ports: []model.Port{{Name: "spool", Number: 8330, Protocol: model.ProtocolUnknown}, {Name: "http-api", Number: 8331, Protocol: model.ProtocolHTTP}}}
	upgrade := &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE}}
	const plain = "reel.app.svc.cluster.local" // a sniffed port without a rule
	plainSvc := &model.Service{Hostname: plain, Namespace: "app", Addresses: []string{"240.10.0.5"},
		Ports: []model.Port{{Name: "reel", Number: 8340, Protocol: model.ProtocolUnknown}}}
	in := model.SnapshotInput{
		Services: []*model.Service{svc, plainSvc},
		Endpoints: map[string][]*model.Endpoint{
			host:  {{Service: host, Address: "10.1.0.1", Labels: map[string]string{"version": "v1"}}},
			plain: {{Service: plain, Address: "10.50.0.5"}},
		},
		Configs: []*istioconfig.Config{
			drConfig("spool", "app", &networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: upgrade},
				Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: upgrade}}}}),
			gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}}),
			vsConfig("spool", "app", &networking.VirtualService{Hosts: []string{"spool.example.org"}, Gateways: []string{"istio-system/gw"},
				Http: []*networking.HTTPRoute{
					{Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/reel"}}}},
						Route: []*networking.HTTPRouteDestination{{Destination: gwDest(plain, 8340, "")}}},
					{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(host, 8330, "")}}},
				}}),
		},
	}
	s := model.NewSnapshot(1, in)
	sidecar := sidecarProxy("10.1.0.1", "app")
	gateway := routerProxy("istio-system", ingressLabels)
	gen := map[*model.Proxy]generated{}
	for _, p := range []*model.Proxy{sidecar, gateway} {
		g, err := generateAll(t, p, s)
		if err != nil {
			t.Fatal(err)
		}
		checkResources(t, p, g)
		gen[p] = g
	}
	for _, tc := range []struct {
		name    string
		proxy   *model.Proxy
		cluster string
		want    string
	}{
		{"sidecar sniffed port", sidecar, ClusterName(Outbound, 8330, "", host), "client"},
		{"sidecar sniffed port subset", sidecar, ClusterName(Outbound, 8330, "v1", host), "client"},
		{"sidecar HTTP port", sidecar, ClusterName(Outbound, 8331, "", host), "h2"},
		{"sidecar HTTP port subset", sidecar, ClusterName(Outbound, 8331, "v1", host), "h2"},
		{"inbound sniffed port", sidecar, ClusterName(Inbound, 8330, "", ""), "client"},
		{"inbound HTTP port", sidecar, ClusterName(Inbound, 8331, "", ""), "h1"},
		{"gateway sniffed port", gateway, ClusterName(Outbound, 8330, "", host), "h2"},
		{"sidecar sniffed port without rule", sidecar, ClusterName(Outbound, 8340, "", plain), "client"},
		{"gateway sniffed port without rule", gateway, ClusterName(Outbound, 8340, "", plain), "h1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := generatedCluster(gen[tc.proxy], tc.cluster)
			if c == nil {
				t.Fatalf("no cluster %s", tc.cluster)
			}
			if got := upstreamProtocol(t, c); got != tc.want {
				t.Errorf("upstream protocol %s, want %s", got, tc.want)
			}
		})
	}
}

// TestGatewayMirrorCluster: a gateway builds the cluster a route only mirrors to (istiod
// sends a gateway every cluster of the mesh, so the mirror's exists there).
func TestGatewayMirrorCluster(t *testing.T) {
	const primary, mirror = "courier.app.svc.cluster.local", "echo.app.svc.cluster.local"
	svc := func(host, addr string) *model.Service {
		return &model.Service{Hostname: host, Namespace: "app", Addresses: []string{addr}, Ports: []model.Port{{Name: "http", Number: 8350, Protocol: model.ProtocolHTTP}}}
	}
	in := model.SnapshotInput{
		Services: []*model.Service{svc(primary, "240.10.0.6"), svc(mirror, "240.10.0.7")},
		Endpoints: map[string][]*model.Endpoint{
			primary: {{Service: primary, Address: "10.50.0.6"}},
			mirror:  {{Service: mirror, Address: "10.50.0.7"}},
		},
		Configs: []*istioconfig.Config{
			gwConfig("gw", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{server(80, "HTTP", "*")}}),
			vsConfig("courier", "app", &networking.VirtualService{Hosts: []string{"courier.example.org"}, Gateways: []string{"istio-system/gw"},
				Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(primary, 8350, "")}}, Mirror: gwDest(mirror, 8350, "")}}}),
		},
	}
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, model.NewSnapshot(1, in))
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	for _, host := range []string{primary, mirror} {
		name := ClusterName(Outbound, 8350, "", host)
		if !mentions(t, g, RouteType, name) {
			t.Errorf("no route names %s", name)
		}
		if generatedCluster(g, name) == nil {
			t.Errorf("no cluster %s", name)
		}
	}
}
