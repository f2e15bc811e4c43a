package gen

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSniffedPort: a VIP service port without a protocol is sniffed as istiod does: its VIP
// listener has the HTTP inspector, a plaintext-HTTP chain to route configuration "HOST:PORT"
// (one virtual host, domains "*", to the service), and a TCP default chain to the cluster; the
// cluster speaks the downstream's protocol upstream. Everything passes deep validation.
func TestSniffedPort(t *testing.T) {
	const host = "sniff.app.svc.cluster.local"
	src := istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "app", Name: "sniff"}
	in := model.SnapshotInput{
		Services: []*model.Service{{Hostname: host, Namespace: "app", Addresses: []string{"240.0.0.7"},
			Ports: []model.Port{{Name: "http-web", Number: 8081, Protocol: model.ProtocolUnknown}}, Source: src}},
		Endpoints: map[string][]*model.Endpoint{host: {{Service: host, Address: "10.1.3.1", ServiceAccount: "spiffe://cluster.local/ns/app/sa/sniff", Source: src}}},
	}
	p := sidecarProxy("10.9.0.1", "other")
	g, err := generateAll(t, p, model.NewSnapshot(1, in))
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	cluster := ClusterName(Outbound, 8081, "", host)
	byName := func(typeURL, name string) any {
		for _, r := range g[typeURL] {
			if r.Name == name {
				return r.Message
			}
		}
		t.Fatalf("%s %s not generated", typeURL, name)
		return nil
	}
	l := byName(ListenerType, "240.0.0.7_8081").(*listenerv3.Listener)
	if len(l.GetListenerFilters()) != 1 || l.GetListenerFilters()[0].GetName() != httpInspectorFilterName {
		t.Errorf("listener filters %v, want the HTTP inspector", l.GetListenerFilters())
	}
	if len(l.GetFilterChains()) != 1 || l.GetFilterChains()[0].GetFilterChainMatch().GetTransportProtocol() != "raw_buffer" {
		t.Fatalf("filter chains %v, want one plaintext HTTP chain", l.GetFilterChains())
	}
	h := &hcmv3.HttpConnectionManager{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil || h.GetRds().GetRouteConfigName() != HostPortName(host, 8081) {
		t.Errorf("HTTP chain: %v, route %q, want %q", err, h.GetRds().GetRouteConfigName(), HostPortName(host, 8081))
	}
	if got := l.GetDefaultFilterChain().GetFilters(); len(got) != 1 || got[0].GetName() != tcpProxyFilterName {
		t.Errorf("default chain %v, want tcp_proxy to %s", got, cluster)
	}
	rc := byName(RouteType, HostPortName(host, 8081)).(*routev3.RouteConfiguration)
	if vh := rc.GetVirtualHosts(); len(vh) != 1 || len(vh[0].GetDomains()) != 1 || vh[0].GetDomains()[0] != "*" ||
		vh[0].GetRoutes()[0].GetRoute().GetCluster() != cluster {
		t.Errorf("route configuration %v, want one virtual host \"*\" to %s", rc, cluster)
	}
	c := byName(ClusterType, cluster).(*clusterv3.Cluster)
	opts := &upstreamhttpv3.HttpProtocolOptions{}
	if err := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName].UnmarshalTo(opts); err != nil || opts.GetUseDownstreamProtocolConfig() == nil {
		t.Errorf("cluster protocol options %v (%v), want use_downstream_protocol", opts, err)
	}
	if len(c.GetTransportSocketMatches()) != 2 {
		t.Errorf("cluster has %d transport socket matches, want auto-mTLS's 2", len(c.GetTransportSocketMatches()))
	}
}

// TestSniffedPortWithoutVIP: a port without a protocol of a service without an address is
// sniffed on 0.0.0.0_PORT as istiod does: the HTTP inspector, a plaintext-HTTP chain to route
// configuration "PORT" where the service has its virtual host, and a TCP default chain to the
// service's cluster.
func TestSniffedPortWithoutVIP(t *testing.T) {
	const host = "sniffy.example.org"
	src := istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "ext", Name: "sniffy"}
	in := model.SnapshotInput{Services: []*model.Service{{Hostname: host, Namespace: "ext", Resolution: model.ResolutionDNS,
		Ports: []model.Port{{Name: "web", Number: 9300, Protocol: model.ProtocolUnknown}}, Source: src}}}
	p := sidecarProxy("10.9.0.1", "other")
	g, err := generateAll(t, p, model.NewSnapshot(1, in))
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var l *listenerv3.Listener
	for _, r := range g[ListenerType] {
		if r.Name == "0.0.0.0_9300" {
			l = r.Message.(*listenerv3.Listener)
		}
	}
	if l == nil {
		t.Fatal("no listener 0.0.0.0_9300")
	}
	if len(l.GetListenerFilters()) != 1 || l.GetListenerFilters()[0].GetName() != httpInspectorFilterName {
		t.Errorf("listener filters %v, want the HTTP inspector", l.GetListenerFilters())
	}
	h := &hcmv3.HttpConnectionManager{}
	if len(l.GetFilterChains()) != 1 || l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h) != nil || h.GetRds().GetRouteConfigName() != "9300" {
		t.Fatalf("filter chains %v, want one HTTP chain to route configuration 9300", l.GetFilterChains())
	}
	cluster := ClusterName(Outbound, 9300, "", host)
	if def := l.GetDefaultFilterChain().GetFilters(); len(def) != 1 || def[0].GetName() != tcpProxyFilterName || !strings.Contains(def[0].GetTypedConfig().String(), cluster) {
		t.Errorf("default chain %v, want tcp_proxy to %s", def, cluster)
	}
	var rc *routev3.RouteConfiguration
	for _, r := range g[RouteType] {
		if r.Name == "9300" {
			rc = r.Message.(*routev3.RouteConfiguration)
		}
	}
	found := false
	for _, vh := range rc.GetVirtualHosts() {
		if slices.Contains(vh.GetDomains(), host) && vh.GetRoutes()[0].GetRoute().GetCluster() == cluster {
			found = true
		}
	}
	if !found {
		t.Errorf("route configuration 9300 %v, want a virtual host for %s to %s", rc, host, cluster)
	}
}

// TestSniffedInboundPort: the proxy's own port without a protocol is sniffed inbound as istiod
// does: for PERMISSIVE mTLS an HCM chain for mTLS HTTP (istio-http ALPNs) and one for plaintext
// HTTP, tcp_proxy chains for other mTLS, plaintext and TLS; the inbound cluster speaks the
// downstream's protocol to the app.
func TestSniffedInboundPort(t *testing.T) {
	const host = "admin.app.svc.cluster.local"
	src := istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "app", Name: "admin"}
	in := model.SnapshotInput{
		Services: []*model.Service{{Hostname: host, Namespace: "app", Addresses: []string{"240.0.0.9"},
			Ports: []model.Port{{Name: "admin", Number: 7777, Protocol: model.ProtocolUnknown}}, Source: src}},
		Endpoints: map[string][]*model.Endpoint{host: {{Service: host, Address: "10.9.0.1", ServiceAccount: "spiffe://cluster.local/ns/app/sa/admin", Source: src}}},
	}
	p := sidecarProxy("10.9.0.1", "app")
	g, err := generateAll(t, p, model.NewSnapshot(1, in))
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var vi *listenerv3.Listener
	for _, r := range g[ListenerType] {
		if r.Name == VirtualInboundListener {
			vi = r.Message.(*listenerv3.Listener)
		}
	}
	var got []string
	for _, fc := range vi.GetFilterChains() {
		m := fc.GetFilterChainMatch()
		if m.GetDestinationPort().GetValue() != 7777 {
			continue
		}
		got = append(got, m.GetTransportProtocol()+" "+strings.Join(m.GetApplicationProtocols(), ",")+" "+fc.GetFilters()[0].GetName()+" "+strconv.FormatBool(fc.GetTransportSocket() != nil))
	}
	slices.Sort(got)
	want := []string{
		"raw_buffer  " + tcpProxyFilterName + " false",
		"raw_buffer http/1.1,h2c " + hcmFilterName + " false",
		"tls  " + tcpProxyFilterName + " false",
		"tls istio-http/1.0,istio-http/1.1,istio-h2 " + hcmFilterName + " true",
		"tls istio-peer-exchange,istio " + tcpProxyFilterName + " true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("port 7777 chains\n %q\nwant\n %q", got, want)
	}
	for _, r := range g[ClusterType] {
		if r.Name != "inbound|7777||" {
			continue
		}
		opts := &upstreamhttpv3.HttpProtocolOptions{}
		c := r.Message.(*clusterv3.Cluster)
		if err := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName].UnmarshalTo(opts); err != nil || opts.GetUseDownstreamProtocolConfig() == nil {
			t.Errorf("inbound cluster protocol options %v (%v), want use_downstream_protocol", opts, err)
		}
		return
	}
	t.Error("no cluster inbound|7777||")
}

// TestSniffedPortWithVIPOnSharedRoute: a port without a protocol where one service has no
// address (0.0.0.0_9192, route configuration "9192") and another has a VIP: istiod gives every
// sniffed service of the port a virtual host in "9192", the VIP one too (its own listener's HTTP
// chain names "HOST:PORT"). A port whose only sniffed services have VIPs has no listener asking
// for "PORT", so a wildcard request does not get it.
func TestSniffedPortWithVIPOnSharedRoute(t *testing.T) {
	sniffed := []model.Port{{Name: "auto", Number: 9192, Protocol: model.ProtocolUnknown}}
	svc := func(host string, addrs []string, ports []model.Port) *model.Service {
		return &model.Service{Hostname: host, Namespace: "snf", Resolution: model.ResolutionStatic, Addresses: addrs, Ports: ports,
			Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "snf", Name: host}}
	}
	in := model.SnapshotInput{Services: []*model.Service{
		svc("novip.example.org", nil, sniffed),
		svc("vip.example.org", []string{"240.77.0.1"}, sniffed),
		svc("viponly.example.org", []string{"240.77.0.2"}, []model.Port{{Name: "auto", Number: 9194, Protocol: model.ProtocolUnknown}}),
	}}
	p := sidecarProxy("10.9.0.1", "other")
	g, err := generateAll(t, p, model.NewSnapshot(1, in))
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var rc *routev3.RouteConfiguration
	for _, r := range g[RouteType] {
		switch r.Name {
		case "9192":
			rc = r.Message.(*routev3.RouteConfiguration)
		case "9194":
			t.Errorf("route configuration 9194 generated; no listener asks for it")
		}
	}
	got := map[string]string{}
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			got[d] = vh.GetRoutes()[0].GetRoute().GetCluster()
		}
	}
	for d, cluster := range map[string]string{
		"novip.example.org": ClusterName(Outbound, 9192, "", "novip.example.org"),
		"vip.example.org":   ClusterName(Outbound, 9192, "", "vip.example.org"),
		"240.77.0.1":        ClusterName(Outbound, 9192, "", "vip.example.org"),
	} {
		if got[d] != cluster {
			t.Errorf("route configuration 9192: domain %s routes to %q, want %q", d, got[d], cluster)
		}
	}
}
