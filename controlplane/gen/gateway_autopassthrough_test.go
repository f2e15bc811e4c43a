package gen

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGatewayAutoPassthrough: an AUTO_PASSTHROUGH server gets a filter chain per port and
// subset of each service its hosts cover (not a mesh-external one, not a UDP port), matching
// the SNI "outbound_.PORT_.SUBSET_.HOST" and Istio's mTLS ALPNs, with a tcp_proxy (the
// DestinationRule's idle timeout and source-IP hash, no authorization filter) to the SNI-DNAT
// cluster of that name: the service's cluster without upstream TLS, whose assignment holds
// only the endpoints that take Istio mTLS.
func TestGatewayAutoPassthrough(t *testing.T) {
	const api, mail, web = "api.apps.svc.cluster.local", "mail.apps.svc.cluster.local", "web.other.svc.cluster.local"
	services := []*model.Service{
		{Hostname: api, Namespace: "apps", ServiceAccounts: []string{"spiffe://cluster.local/ns/apps/sa/api"}, Ports: []model.Port{
			{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "grpc", Number: 9090, Protocol: model.ProtocolGRPC}, {Name: "dns", Number: 53, Protocol: model.ProtocolUDP}}},
		{Hostname: mail, Namespace: "apps", MeshExternal: true, Ports: []model.Port{{Name: "smtp", Number: 25, Protocol: model.ProtocolTCP}}},
		{Hostname: web, Namespace: "other", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
	}
	eps := map[string][]*model.Endpoint{api: {
		{Service: api, Address: "10.1.0.1", Weight: 1, Labels: map[string]string{"version": "v1", TLSModeLabel: "istio"}},
		{Service: api, Address: "10.1.0.2", Weight: 1, Labels: map[string]string{"version": "v2"}}, // no sidecar
	}}
	auto := server(15443, "TLS", "*.apps.svc.cluster.local")
	auto.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}
	configs := []*istioconfig.Config{
		gwConfig("crossnet", "istio-system", &networking.Gateway{Servers: []*networking.Server{auto}}),
		drConfig("api", "apps", &networking.DestinationRule{Host: api, TrafficPolicy: &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(30 * time.Second)}},
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
				ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}},
			Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL},
			// TLS origination on 9090: none on the SNI-DNAT clusters (nor its auto_sni), and
			// no endpoint takes Istio mTLS there.
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 9090},
				Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}}}},
			Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}, {Name: "v2", Labels: map[string]string{"version": "v2"}}}}),
		// The gateway's DENY policy applies to its other chains, not to these.
		{Meta: istioconfig.Meta{Kind: istioconfig.KindAuthorizationPolicy, Name: "deny", Namespace: "istio-system"}, Spec: &securityapi.AuthorizationPolicy{
			Action: securityapi.AuthorizationPolicy_DENY, Rules: []*securityapi.Rule{{}}}},
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: services, Endpoints: eps, Configs: configs})
	p := routerProxy("istio-system", nil)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	if got := names(g[ListenerType]); !slices.Equal(got, []string{"0.0.0.0_15443"}) {
		t.Fatalf("listeners %v", got)
	}
	l := g[ListenerType][0].Message.(*listenerv3.Listener)
	if len(l.GetListenerFilters()) != 1 || l.GetListenerFilters()[0].GetName() != tlsInspectorFilterName {
		t.Errorf("listener filters %v, want the TLS inspector", l.GetListenerFilters())
	}
	var want []string
	for _, port := range []uint32{80, 9090} {
		for _, subset := range []string{"", "v1", "v2"} {
			want = append(want, IstioSNI(port, subset, api))
		}
	}
	var got []string
	for _, fc := range l.GetFilterChains() {
		m := fc.GetFilterChainMatch()
		if len(m.GetServerNames()) != 1 {
			t.Fatalf("chain %v: want one SNI", m.GetServerNames())
		}
		name := m.GetServerNames()[0]
		got = append(got, name)
		if !slices.Equal(m.GetApplicationProtocols(), []string{"istio", "istio-peer-exchange", "istio-http/1.0", "istio-http/1.1", "istio-h2"}) {
			t.Errorf("chain %s: ALPN %v", name, m.GetApplicationProtocols())
		}
		if fc.GetTransportSocket() != nil {
			t.Errorf("chain %s terminates TLS", name)
		}
		if len(fc.GetFilters()) != 1 {
			t.Fatalf("chain %s: filters %v, want the tcp_proxy only (no RBAC)", name, fc.GetFilters())
		}
		tp := &tcpproxyv3.TcpProxy{}
		if err := fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
			t.Fatal(err)
		}
		if tp.GetCluster() != name || tp.GetIdleTimeout().AsDuration() != 30*time.Second || len(tp.GetHashPolicy()) != 1 {
			t.Errorf("chain %s: tcp_proxy %v, want cluster %s, idle 30s, a source-IP hash", name, tp, name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("chains %v\nwant %v", got, want)
	}
	for _, name := range want {
		r, ok := find(g[ClusterType], name)
		if !ok {
			t.Errorf("no cluster %s", name)
			continue
		}
		c := r.Message.(*clusterv3.Cluster)
		if c.GetTransportSocket() != nil || len(c.GetTransportSocketMatches()) > 0 {
			t.Errorf("cluster %s originates TLS: the client's mTLS passes through", name)
		}
		if a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]; a != nil {
			opts := &upstreamhttpv3.HttpProtocolOptions{}
			if err := a.UnmarshalTo(opts); err != nil {
				t.Fatal(err)
			}
			if opts.GetUpstreamHttpProtocolOptions() != nil {
				t.Errorf("cluster %s: upstream_http_protocol_options %v, set by TLS origination only", name, opts.GetUpstreamHttpProtocolOptions())
			}
		}
		if c.GetEdsClusterConfig().GetServiceName() != name {
			t.Errorf("cluster %s: EDS service name %q", name, c.GetEdsClusterConfig().GetServiceName())
		}
	}
	// The SNI-DNAT assignment keeps the endpoint with a sidecar; the service's own has both.
	addrs := func(name string) []string {
		rs, err := endpoints(p, s, []string{name})
		if err != nil || len(rs) != 1 {
			t.Fatalf("EDS %s: %v, %d resources", name, err, len(rs))
		}
		var out []string
		for _, l := range rs[0].Message.(*endpointv3.ClusterLoadAssignment).GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				out = append(out, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
			}
		}
		slices.Sort(out)
		return out
	}
	if got := addrs(IstioSNI(80, "", api)); !slices.Equal(got, []string{"10.1.0.1"}) {
		t.Errorf("SNI-DNAT endpoints %v, want the mTLS one", got)
	}
	if got := addrs(IstioSNI(9090, "", api)); len(got) != 0 {
		t.Errorf("SNI-DNAT endpoints of the TLS-originating port %v, want none", got)
	}
	if got := addrs(IstioSNI(80, "v2", api)); len(got) != 0 {
		t.Errorf("SNI-DNAT v2 endpoints %v, want none (v2 has no sidecar)", got)
	}
	if got := addrs(ClusterName(Outbound, 80, "", api)); !slices.Equal(got, []string{"10.1.0.1", "10.1.0.2"}) {
		t.Errorf("outbound endpoints %v, want both", got)
	}
}

// TestGatewayAutoPassthroughOverlap: two AUTO_PASSTHROUGH servers of one port whose hosts
// overlap would each build the chain of a service both cover, and Envoy rejects a listener
// with one filter chain match twice: the first server keeps it, the later one is reported.
func TestGatewayAutoPassthroughOverlap(t *testing.T) {
	const api, web = "api.apps.svc.cluster.local", "web.other.svc.cluster.local"
	services := []*model.Service{
		{Hostname: api, Namespace: "apps", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
		{Hostname: web, Namespace: "other", Ports: []model.Port{{Name: "tcp", Number: 5000, Protocol: model.ProtocolTCP}}},
	}
	tests := []struct {
		name  string
		hosts [][]string // per server, in order
		want  []string   // chain SNIs
		err   []string   // substrings of the error; none when nil
	}{
		{name: "disjoint", hosts: [][]string{{"*.apps.svc.cluster.local"}, {"*.other.svc.cluster.local"}},
			want: []string{IstioSNI(80, "", api), IstioSNI(5000, "", web)}},
		{name: "narrow first", hosts: [][]string{{"*.apps.svc.cluster.local"}, {"*.svc.cluster.local"}},
			want: []string{IstioSNI(80, "", api), IstioSNI(5000, "", web)},
			err:  []string{"Gateway istio-system/crossnet servers[1]", "already served by Gateway istio-system/crossnet servers[0]", IstioSNI(80, "", api)}},
		{name: "wide first", hosts: [][]string{{"*.svc.cluster.local"}, {"*.apps.svc.cluster.local"}},
			want: []string{IstioSNI(80, "", api), IstioSNI(5000, "", web)},
			err:  []string{"Gateway istio-system/crossnet servers[1]", "already served by Gateway istio-system/crossnet servers[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var servers []*networking.Server
			for i, h := range tt.hosts {
				srv := server(15443, "TLS", h...)
				srv.Port.Name = fmt.Sprintf("tls-%d", i)
				srv.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}
				servers = append(servers, srv)
			}
			configs := []*istioconfig.Config{gwConfig("crossnet", "istio-system", &networking.Gateway{Servers: servers})}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: services, Configs: configs})
			p := routerProxy("istio-system", nil)
			g, err := generateAll(t, p, s)
			if tt.err == nil && err != nil {
				t.Fatalf("error %v", err)
			}
			for _, w := range tt.err {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to name %q", err, w)
				}
			}
			checkResources(t, p, g)
			r, ok := find(g[ListenerType], "0.0.0.0_15443")
			if !ok {
				t.Fatalf("no listener 0.0.0.0_15443")
			}
			var got []string
			for _, fc := range r.Message.(*listenerv3.Listener).GetFilterChains() {
				got = append(got, fc.GetFilterChainMatch().GetServerNames()...)
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("chain SNIs %v, want %v (each once)", got, tt.want)
			}
		})
	}
}

// TestSNIDNATLocalityDistribute: an SNI-DNAT cluster keeps the endpoints that take Istio mTLS
// before the locality load balancing, as istiod filters them: the distribute weights apply to
// what is left, and a locality left empty keeps its place (counted with weight 1, as istiod
// counts a locality without one). Both for EDS (a STATIC service) and the inline assignment of a
// DNS service's SNI-DNAT cluster in CDS.
func TestSNIDNATLocalityDistribute(t *testing.T) {
	for _, res := range []model.Resolution{model.ResolutionStatic, model.ResolutionDNS} {
		t.Run(fmt.Sprint(res), func(t *testing.T) {
			const api = "api.apps.svc.cluster.local"
			svc := &model.Service{Hostname: api, Namespace: "apps", Resolution: res, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
			mtls := map[string]string{TLSModeLabel: "istio"}
			ep := func(addr, loc string, labels map[string]string) *model.Endpoint {
				return &model.Endpoint{Service: api, Address: addr, Weight: 1, Labels: labels, Locality: ParseLocality(loc)}
			}
			eps := map[string][]*model.Endpoint{api: {
				ep("10.0.0.1", "r1/z1", mtls), ep("10.0.0.2", "r1/z1", nil), // one plaintext beside it
				ep("10.0.0.3", "r1/z2", nil), // plaintext only: the locality is left empty
				ep("10.0.0.4", "r2/z1", mtls),
			}}
			auto := server(15443, "TLS", "*.apps.svc.cluster.local")
			auto.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}
			configs := []*istioconfig.Config{
				gwConfig("crossnet", "istio-system", &networking.Gateway{Servers: []*networking.Server{auto}}),
				drConfig("api", "apps", &networking.DestinationRule{Host: api, TrafficPolicy: &networking.TrafficPolicy{
					LoadBalancer: &networking.LoadBalancerSettings{LocalityLbSetting: &networking.LocalityLoadBalancerSetting{
						Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{From: "r1/z1/*", To: map[string]uint32{"r1/*": 80, "r2/*": 20}}}}}}}),
			}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: eps, Configs: configs})
			p := routerProxy("istio-system", nil)
			p.Locality = model.Locality{Region: "r1", Zone: "z1"}
			name := IstioSNI(80, "", api)
			var cla *endpointv3.ClusterLoadAssignment
			if res == model.ResolutionDNS {
				g, err := generateAll(t, p, s)
				if err != nil {
					t.Fatal(err)
				}
				checkResources(t, p, g)
				r, ok := find(g[ClusterType], name)
				if !ok {
					t.Fatalf("no cluster %s", name)
				}
				cla = r.Message.(*clusterv3.Cluster).GetLoadAssignment()
			} else {
				rs, err := endpoints(p, s, []string{name})
				if err != nil || len(rs) != 1 {
					t.Fatalf("EDS %s: %v, %d resources", name, err, len(rs))
				}
				cla = rs[0].Message.(*endpointv3.ClusterLoadAssignment)
				if _, err := validateDeep(cla); err != nil {
					t.Error(err)
				}
			}
			want := []string{"r1/z1/ p=0 w=40: 10.0.0.1", "r1/z2/ p=0 w=40: ", "r2/z1/ p=0 w=20: 10.0.0.4"}
			if got := ranks(cla); !slices.Equal(got, want) {
				t.Errorf("assignment %q\nwant %q", got, want)
			}
		})
	}
}

// TestSNIDNATDNSClusterWithoutMTLSEndpoints: a DNS service none of whose endpoints take Istio
// mTLS still gets its SNI-DNAT cluster, as istiod builds it (by all the endpoints), with no
// endpoint in its assignment.
func TestSNIDNATDNSClusterWithoutMTLSEndpoints(t *testing.T) {
	const db = "db.apps.svc.cluster.local"
	svc := &model.Service{Hostname: db, Namespace: "apps", Resolution: model.ResolutionDNS, Ports: []model.Port{{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}}}
	auto := server(15443, "TLS", "*.apps.svc.cluster.local")
	auto.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}
	// The entry's own host name, as the registry gives a DNS entry without endpoints.
	eps := map[string][]*model.Endpoint{db: {{Service: db, Address: db, Weight: 1}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: eps,
		Configs: []*istioconfig.Config{gwConfig("crossnet", "istio-system", &networking.Gateway{Servers: []*networking.Server{auto}})}})
	p := routerProxy("istio-system", nil)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	name := IstioSNI(5432, "", db)
	r, ok := find(g[ClusterType], name)
	if !ok {
		t.Fatalf("no cluster %s", name)
	}
	c := r.Message.(*clusterv3.Cluster)
	if c.GetType() != clusterv3.Cluster_STRICT_DNS || lbEndpointCount(c.GetLoadAssignment()) != 0 {
		t.Errorf("cluster %s: type %v, %d endpoints; want STRICT_DNS without endpoints", name, c.GetType(), lbEndpointCount(c.GetLoadAssignment()))
	}
}
