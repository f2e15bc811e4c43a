package gen

import (
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	hashv3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

const (
	mysqlHost   = "mysql.db.svc.cluster.local"
	replicaHost = "replica.db.svc.cluster.local"
	legacyHost  = "legacy.db.svc.cluster.local"
)

// tcpMesh: mysql (VIP 10.96.0.20) and its replica on 3306, and legacy, a TCP service without a
// VIP on 7000 (served by 0.0.0.0_7000).
func tcpMesh(cfgs ...*istioconfig.Config) *model.Snapshot {
	tcpPort := func(n uint32) []model.Port {
		return []model.Port{{Name: "tcp", Number: n, Protocol: model.ProtocolTCP}}
	}
	return model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		{Hostname: mysqlHost, Namespace: "db", Addresses: []string{"10.96.0.20"}, Ports: tcpPort(3306)},
		{Hostname: replicaHost, Namespace: "db", Addresses: []string{"10.96.0.21"}, Ports: tcpPort(3306)},
		{Hostname: legacyHost, Namespace: "db", Ports: tcpPort(7000)},
	}, Configs: cfgs})
}

func tcpRoute(match []*networking.L4MatchAttributes, dests ...*networking.RouteDestination) *networking.TCPRoute {
	return &networking.TCPRoute{Match: match, Route: dests}
}

func l4dest(host, subset string, weight int32) *networking.RouteDestination {
	return &networking.RouteDestination{Destination: &networking.Destination{Host: host, Subset: subset}, Weight: weight}
}

func weightedTCP(statPrefix string, cw ...*tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight) *tcpproxyv3.TcpProxy {
	return &tcpproxyv3.TcpProxy{StatPrefix: statPrefix, ClusterSpecifier: &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: &tcpproxyv3.TcpProxy_WeightedCluster{Clusters: cw}}}
}

func tcpChain(match *listenerv3.FilterChainMatch, tp *tcpproxyv3.TcpProxy) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{FilterChainMatch: match, Filters: []*listenerv3.Filter{{Name: tcpProxyFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(tp)}}}}
}

func singleTCP(cluster string) *tcpproxyv3.TcpProxy {
	return &tcpproxyv3.TcpProxy{StatPrefix: cluster, ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: cluster}}
}

// The filter chains below are what istiod's buildSidecarOutboundTCPFilterChainOpts and
// buildOutboundNetworkFilters (networkfilter.go) build for the same VirtualService.
func TestTCPRoutes(t *testing.T) {
	mysql := ClusterName(Outbound, 3306, "", mysqlHost)
	replica := ClusterName(Outbound, 3306, "", replicaHost)
	subnet := func(s ...string) []*networking.L4MatchAttributes {
		return []*networking.L4MatchAttributes{{DestinationSubnets: s}}
	}
	tests := []struct {
		name     string
		listener string
		tcp      []*networking.TCPRoute
		gateways []string
		dr       *networking.DestinationRule
		want     []*listenerv3.FilterChain
	}{
		{"no tcp route: the service's cluster", "10.96.0.20_3306", nil, nil, nil,
			[]*listenerv3.FilterChain{tcpChain(nil, singleTCP(mysql))}},
		{"weighted catch-all", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute(nil, l4dest("mysql", "", 80), l4dest("replica", "", 20), l4dest("replica", "off", 0))}, nil, nil,
			[]*listenerv3.FilterChain{tcpChain(nil, weightedTCP("mysql.db",
				&tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: mysql, Weight: 80},
				&tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: replica, Weight: 20}))}},
		{"single destination with a port", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute(nil, &networking.RouteDestination{Destination: &networking.Destination{Host: "replica", Port: &networking.PortSelector{Number: 3307}}})}, nil, nil,
			[]*listenerv3.FilterChain{tcpChain(nil, singleTCP(ClusterName(Outbound, 3307, "", replicaHost)))}},
		// Subnet matches collect into one prefix-range chain; the service's chain follows.
		{"destination subnets", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute([]*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.2.0.0/16"}}, {DestinationSubnets: []string{"10.1.0.7"}}}, l4dest("replica", "", 0))}, nil, nil,
			[]*listenerv3.FilterChain{
				tcpChain(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{
					{AddressPrefix: "10.1.0.7", PrefixLen: wrapperspb.UInt32(32)}, {AddressPrefix: "10.2.0.0", PrefixLen: wrapperspb.UInt32(16)}}}, singleTCP(replica)),
				tcpChain(nil, singleTCP(mysql)),
			}},
		// A subnet route, then a catch-all: nothing after the catch-all is read.
		{"catch-all ends the list", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute(subnet("10.3.0.0/24"), l4dest("replica", "", 0)), tcpRoute(nil, l4dest("replica", "", 0)), tcpRoute(nil, l4dest("mysql", "v9", 0))}, nil, nil,
			[]*listenerv3.FilterChain{
				tcpChain(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "10.3.0.0", PrefixLen: wrapperspb.UInt32(24)}}}, singleTCP(replica)),
				tcpChain(nil, singleTCP(replica)),
			}},
		// matchTCP: another port, other source labels, another namespace or only another
		// gateway leave the route out.
		{"matches for others", "10.96.0.20_3306",
			[]*networking.TCPRoute{
				tcpRoute([]*networking.L4MatchAttributes{{Port: 3307}}, l4dest("replica", "", 0)),
				tcpRoute([]*networking.L4MatchAttributes{{SourceLabels: map[string]string{"app": "other"}}}, l4dest("replica", "", 0)),
				tcpRoute([]*networking.L4MatchAttributes{{SourceNamespace: "elsewhere"}}, l4dest("replica", "", 0)),
				tcpRoute([]*networking.L4MatchAttributes{{Gateways: []string{"db/gw"}}}, l4dest("replica", "", 0)),
			}, nil, nil,
			[]*listenerv3.FilterChain{tcpChain(nil, singleTCP(mysql))}},
		{"matches for this proxy", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute([]*networking.L4MatchAttributes{{Port: 3306, SourceLabels: map[string]string{"app": "client"}, SourceNamespace: "app", Gateways: []string{"mesh"}}}, l4dest("replica", "", 0))}, nil, nil,
			[]*listenerv3.FilterChain{tcpChain(nil, singleTCP(replica))}},
		{"VirtualService for a gateway only", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute(nil, l4dest("replica", "", 0))}, []string{"db/gw"}, nil,
			[]*listenerv3.FilterChain{tcpChain(nil, singleTCP(mysql))}},
		// The first destination's DestinationRule: idle timeout, max connection duration and a
		// source-IP hash (buildOutboundNetworkFiltersWithWeightedClusters, maybeSetHashPolicy).
		{"weighted with DestinationRule", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute(nil, l4dest("mysql", "", 50), l4dest("replica", "", 50))}, nil,
			&networking.DestinationRule{Host: "mysql", TrafficPolicy: &networking.TrafficPolicy{
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(time.Minute), MaxConnectionDuration: durationpb.New(time.Hour)}},
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
					HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}},
			}},
			[]*listenerv3.FilterChain{tcpChain(nil, func() *tcpproxyv3.TcpProxy {
				tp := weightedTCP("mysql.db", &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: mysql, Weight: 50}, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: replica, Weight: 50})
				tp.IdleTimeout = durationpb.New(time.Minute)
				tp.MaxDownstreamConnectionDuration = durationpb.New(time.Hour)
				tp.HashPolicy = []*hashv3.HashPolicy{{PolicySpecifier: &hashv3.HashPolicy_SourceIp_{SourceIp: &hashv3.HashPolicy_SourceIp{}}}}
				return tp
			}())}},
		// buildOutboundNetworkFiltersWithSingleDestination + maybeSetHashPolicy: one
		// destination (or the service's own chain) takes its DestinationRule's idle timeout and
		// source-IP hash, unless its subset sets a load balancer of its own.
		{"single destinations with DestinationRule", "10.96.0.20_3306",
			[]*networking.TCPRoute{tcpRoute(subnet("10.4.0.0/16"), l4dest("mysql", "plain", 0)), tcpRoute(subnet("10.5.0.0/16"), l4dest("mysql", "rr", 0))}, nil,
			&networking.DestinationRule{Host: "mysql", TrafficPolicy: &networking.TrafficPolicy{
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(time.Minute)}},
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
					HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}},
			}, Subsets: []*networking.Subset{{Name: "plain"}, {Name: "rr", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
				LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}}}}}},
			func() []*listenerv3.FilterChain {
				withDR := func(cluster string, hash bool) *tcpproxyv3.TcpProxy {
					tp := singleTCP(cluster)
					tp.IdleTimeout = durationpb.New(time.Minute)
					if hash {
						tp.HashPolicy = []*hashv3.HashPolicy{{PolicySpecifier: &hashv3.HashPolicy_SourceIp_{SourceIp: &hashv3.HashPolicy_SourceIp{}}}}
					}
					return tp
				}
				return []*listenerv3.FilterChain{
					tcpChain(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "10.4.0.0", PrefixLen: wrapperspb.UInt32(16)}}}, withDR(ClusterName(Outbound, 3306, "plain", mysqlHost), true)),
					tcpChain(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "10.5.0.0", PrefixLen: wrapperspb.UInt32(16)}}}, withDR(ClusterName(Outbound, 3306, "rr", mysqlHost), false)),
					tcpChain(nil, withDR(mysql, true)),
				}
			}()},
		{"service without a VIP", "0.0.0.0_7000",
			[]*networking.TCPRoute{tcpRoute(nil, l4dest("legacy", "a", 30), l4dest("legacy", "b", 70))}, nil, nil,
			[]*listenerv3.FilterChain{tcpChain(nil, weightedTCP("mysql.db",
				&tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: ClusterName(Outbound, 7000, "a", legacyHost), Weight: 30},
				&tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: ClusterName(Outbound, 7000, "b", legacyHost), Weight: 70}))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := "mysql"
			if tt.listener == "0.0.0.0_7000" {
				host = "legacy"
			}
			cfgs := []*istioconfig.Config{vsConfig("mysql", "db", &networking.VirtualService{Hosts: []string{host}, Gateways: tt.gateways, Tcp: tt.tcp})}
			if tt.dr != nil {
				cfgs = append(cfgs, drConfig("mysql", "db", tt.dr))
			}
			p := sidecarProxy("10.0.0.9", "app")
			rs, err := ForType(ListenerType, p).Generate(p, tcpMesh(cfgs...), []string{tt.listener})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 {
				t.Fatalf("%d listeners", len(rs))
			}
			if _, err := validateDeep(rs[0].Message); err != nil {
				t.Fatal(err)
			}
			// The chain matching everything is the default filter chain when others exist
			// (istiod's buildSidecarOutboundListener), the only chain otherwise.
			l := rs[0].Message.(*listenerv3.Listener)
			got := l.GetFilterChains()
			if (l.GetDefaultFilterChain() != nil) != (len(tt.want) > 1) {
				t.Errorf("default filter chain %v with %d chains expected", l.GetDefaultFilterChain(), len(tt.want))
			}
			if l.GetDefaultFilterChain() != nil {
				got = append(got, l.GetDefaultFilterChain())
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("filter chains (-istiod +ours):\n%s", diff)
			}
		})
	}
}

// A broken tcp route is dropped with an error naming the VirtualService; the listener keeps
// the service's chain, and a duplicate subnet chain (which Envoy would reject) is dropped too.
func TestTCPRouteErrors(t *testing.T) {
	vs := vsConfig("mysql", "db", &networking.VirtualService{Hosts: []string{"mysql"}, Tcp: []*networking.TCPRoute{
		tcpRoute([]*networking.L4MatchAttributes{{DestinationSubnets: []string{"not-an-ip"}}}, l4dest("replica", "", 0)),
		tcpRoute([]*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.0.0.0/8"}}}, l4dest("replica", "", 0)),
		tcpRoute([]*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.0.0.0/8"}}}, l4dest("mysql", "", 0)),
	}})
	p := sidecarProxy("10.0.0.9", "app")
	rs, err := ForType(ListenerType, p).Generate(p, tcpMesh(vs), []string{"10.96.0.20_3306"})
	if err == nil {
		t.Fatal("no error for a bad subnet and a duplicate one")
	}
	for _, want := range []string{"VirtualService db/mysql tcp[0]", "not-an-ip", "tcp[2]", "already matched"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if len(rs) != 1 || len(rs[0].Message.(*listenerv3.Listener).GetFilterChains()) != 1 || rs[0].Message.(*listenerv3.Listener).GetDefaultFilterChain() == nil {
		t.Fatalf("want the listener with the 10.0.0.0/8 chain and the service's chain, got %v", rs)
	}
	if _, err := validateDeep(rs[0].Message); err != nil {
		t.Fatal(err)
	}
}

// TestSNIAndCIDRChainsCarryDestinationRule: the chain of a TLS host without a VIP (chosen by
// SNI) and the chain of a TCP service's CIDR on 0.0.0.0_PORT carry the service's
// DestinationRule in their tcp_proxy (idle timeout, maximum connection duration, source-IP
// hash), as istiod's single-destination tcp_proxy does everywhere.
func TestSNIAndCIDRChainsCarryDestinationRule(t *testing.T) {
	const tlsHost, cidrHost = "secure.example.com", "subnet.example.com"
	rule := func(host string) *networking.DestinationRule {
		return &networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
				HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}},
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(time.Minute)}},
		}}
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		{Hostname: tlsHost, Namespace: "db", Ports: []model.Port{{Name: "tls", Number: 9443, Protocol: model.ProtocolTLS}}},
		{Hostname: cidrHost, Namespace: "db", Addresses: []string{"10.40.0.0/16"}, Ports: []model.Port{{Name: "tcp", Number: 9443, Protocol: model.ProtocolTCP}}},
	}, Configs: []*istioconfig.Config{drConfig("secure", "db", rule(tlsHost)), drConfig("subnet", "db", rule(cidrHost))}})
	p := sidecarProxy("10.0.0.9", "app")
	rs, err := ForType(ListenerType, p).Generate(p, s, []string{"0.0.0.0_9443"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d listeners", len(rs))
	}
	if _, err := validateDeep(rs[0].Message); err != nil {
		t.Fatal(err)
	}
	hashed := func(cluster string) *tcpproxyv3.TcpProxy {
		tp := singleTCP(cluster)
		tp.IdleTimeout = durationpb.New(time.Minute)
		tp.HashPolicy = []*hashv3.HashPolicy{{PolicySpecifier: &hashv3.HashPolicy_SourceIp_{SourceIp: &hashv3.HashPolicy_SourceIp{}}}}
		return tp
	}
	want := []*listenerv3.FilterChain{
		tcpChain(&listenerv3.FilterChainMatch{ServerNames: []string{tlsHost}}, hashed(ClusterName(Outbound, 9443, "", tlsHost))),
		tcpChain(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "10.40.0.0", PrefixLen: wrapperspb.UInt32(16)}}}, hashed(ClusterName(Outbound, 9443, "", cidrHost))),
	}
	if diff := cmp.Diff(want, rs[0].Message.(*listenerv3.Listener).GetFilterChains(), protocmp.Transform()); diff != "" {
		t.Errorf("filter chains (-istiod +ours):\n%s", diff)
	}
}
