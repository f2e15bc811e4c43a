package gen

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// clusterSummary is what the DR policy tests compare.
type clusterSummary struct {
	Type           string
	LB             string
	ConnectTimeout time.Duration
	MaxConns       uint32
	MaxPending     uint32
	MaxRequests    uint32
	MaxRetries     uint32
	H2             bool
	MaxReqPerConn  uint32
	Consecutive5xx uint32
	Panic          float64
	LBConfig       string // "maglev N", "ring N" (minimum size), "" for none
}

func summarizeCluster(t *testing.T, c *clusterv3.Cluster) clusterSummary {
	t.Helper()
	var th *clusterv3.CircuitBreakers_Thresholds // none: every limit reads 0
	if ths := c.GetCircuitBreakers().GetThresholds(); len(ths) > 0 {
		th = ths[0]
	}
	s := clusterSummary{
		Type: c.GetType().String(), LB: c.GetLbPolicy().String(), ConnectTimeout: c.GetConnectTimeout().AsDuration(),
		MaxConns: th.GetMaxConnections().GetValue(), MaxPending: th.GetMaxPendingRequests().GetValue(),
		MaxRequests: th.GetMaxRequests().GetValue(), MaxRetries: th.GetMaxRetries().GetValue(),
		Consecutive5xx: c.GetOutlierDetection().GetConsecutive_5Xx().GetValue(),
		Panic:          c.GetCommonLbConfig().GetHealthyPanicThreshold().GetValue(),
	}
	switch lc := c.GetLbConfig().(type) {
	case *clusterv3.Cluster_MaglevLbConfig_:
		s.LBConfig = fmt.Sprintf("maglev %d", lc.MaglevLbConfig.GetTableSize().GetValue())
	case *clusterv3.Cluster_RingHashLbConfig_:
		s.LBConfig = fmt.Sprintf("ring %d", lc.RingHashLbConfig.GetMinimumRingSize().GetValue())
	case nil:
	default:
		t.Fatalf("unexpected lb_config %T", lc)
	}
	if a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName]; a != nil {
		o := &upstreamhttpv3.HttpProtocolOptions{}
		if err := a.UnmarshalTo(o); err != nil {
			t.Fatal(err)
		}
		s.H2 = o.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil
		s.MaxReqPerConn = o.GetCommonHttpProtocolOptions().GetMaxRequestsPerConnection().GetValue()
	}
	return s
}

const maxU32 = 4294967295

func hashLB(ch *networking.LoadBalancerSettings_ConsistentHashLB) *networking.LoadBalancerSettings {
	return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: ch}}
}

func hashTP(ch *networking.LoadBalancerSettings_ConsistentHashLB) *networking.TrafficPolicy {
	return &networking.TrafficPolicy{LoadBalancer: hashLB(ch)}
}

// ringHash is a header hash on a ringHash ring of size (and, deprecated, minimumRingSize old).
func ringHash(size, old uint64) *networking.LoadBalancerSettings_ConsistentHashLB {
	return &networking.LoadBalancerSettings_ConsistentHashLB{
		HashKey:         &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"},
		HashAlgorithm:   &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{MinimumRingSize: size}},
		MinimumRingSize: old,
	}
}

func maglev(table uint64) *networking.LoadBalancerSettings_ConsistentHashLB {
	return &networking.LoadBalancerSettings_ConsistentHashLB{
		HashKey:       &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"},
		HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: table}},
	}
}

func TestDestinationRulePolicies(t *testing.T) {
	simple := func(lb networking.LoadBalancerSettings_SimpleLB) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: lb}}
	}
	def := clusterSummary{Type: "EDS", LB: "LEAST_REQUEST", ConnectTimeout: DefaultConnectTimeout, MaxConns: maxU32, MaxPending: maxU32, MaxRequests: maxU32, MaxRetries: maxU32}
	with := func(f func(*clusterSummary)) clusterSummary { s := def; f(&s); return s }
	grpcBreakers := func(s *clusterSummary, maxRequests uint32) {
		s.MaxConns, s.MaxPending, s.MaxRequests, s.MaxRetries = 0, 0, maxRequests, 0
	}
	tests := []struct {
		name    string
		dr      *networking.DestinationRule
		cluster string
		proto   model.Protocol
		grpc    bool
		want    clusterSummary
	}{
		{"no DR", nil, "outbound|80||" + shop, model.ProtocolHTTP, false, def},
		// Proxyless gRPC (istiod's grpcgen): no circuit breakers but max_requests from
		// http2MaxRequests (grpc-go's default of 1024 without it), no outlier detection.
		{"no DR, grpc proxy", nil, "outbound|80||" + shop, model.ProtocolHTTP, true, with(func(s *clusterSummary) { s.LB = "ROUND_ROBIN"; grpcBreakers(s, 0) })},
		{"pool and outlier detection, grpc proxy", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{
				Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 7},
				Http: &networking.ConnectionPoolSettings_HTTPSettings{Http2MaxRequests: 40, Http1MaxPendingRequests: 9, MaxRetries: 3},
			},
			OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(4), Interval: durationpb.New(time.Second)},
		}}, "outbound|80||" + shop, model.ProtocolHTTP, true, with(func(s *clusterSummary) { s.LB = "ROUND_ROBIN"; grpcBreakers(s, 40) })},
		{"GRPC port gets HTTP/2", nil, "outbound|80||" + shop, model.ProtocolGRPC, false, with(func(s *clusterSummary) { s.H2 = true })},
		{"simple random", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_RANDOM)}},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RANDOM" })},
		{"random is round robin for grpc", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_RANDOM)}},
			"outbound|80||" + shop, model.ProtocolHTTP, true, with(func(s *clusterSummary) { s.LB = "ROUND_ROBIN"; grpcBreakers(s, 0) })},
		{"passthrough lb", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_PASSTHROUGH)}},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.Type = "ORIGINAL_DST"; s.LB = "CLUSTER_PROVIDED" })},
		// Consistent hashing (istiod's ApplyRingHashLoadBalancer): no algorithm is RING_HASH
		// with the minimum ring size always spelled out, the deprecated top-level
		// minimumRingSize or 1024.
		{"consistent hash", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}})},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RING_HASH"; s.LBConfig = "ring 1024" })},
		{"consistent hash, deprecated minimumRingSize", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(&networking.LoadBalancerSettings_ConsistentHashLB{MinimumRingSize: 2048})},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RING_HASH"; s.LBConfig = "ring 2048" })},
		// ringHash: RING_HASH, its minimumRingSize only when set; it wins over the deprecated field.
		{"ringHash minimumRingSize", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(ringHash(4096, 2048))},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RING_HASH"; s.LBConfig = "ring 4096" })},
		{"ringHash without a size", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(ringHash(0, 2048))},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RING_HASH" })},
		{"ringHash size capped at Envoy's 8M", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(ringHash(1<<30, 0))},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RING_HASH"; s.LBConfig = "ring 8388608" })},
		// maglev: MAGLEV, its tableSize only when set (and one Envoy takes: a prime below 5000011).
		{"maglev tableSize", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(maglev(65537))},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "MAGLEV"; s.LBConfig = "maglev 65537" })},
		{"maglev without a tableSize", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(maglev(0))},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "MAGLEV" })},
		{"maglev tableSize not prime", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(maglev(65536))},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "MAGLEV" })},
		{"maglev tableSize too large", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(maglev(5000011))},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "MAGLEV" })},
		// Proxyless gRPC: the same ring config; maglev (which grpc-go lacks) is a default ring.
		{"ringHash, grpc proxy", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(ringHash(4096, 0))},
			"outbound|80||" + shop, model.ProtocolHTTP, true, with(func(s *clusterSummary) { s.LB = "RING_HASH"; s.LBConfig = "ring 4096"; grpcBreakers(s, 0) })},
		{"maglev, grpc proxy", &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(maglev(65537))},
			"outbound|80||" + shop, model.ProtocolHTTP, true, with(func(s *clusterSummary) { s.LB = "RING_HASH"; grpcBreakers(s, 0) })},
		// Port-level and subset load balancers replace the top-level one, hash config included.
		{"port-level maglev over top-level ring", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: hashLB(ringHash(4096, 0)),
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{
				{Port: &networking.PortSelector{Number: 80}, LoadBalancer: hashLB(maglev(131))},
			},
		}}, "outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "MAGLEV"; s.LBConfig = "maglev 131" })},
		{"port-level without a load balancer drops the top-level ring", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer:      hashLB(ringHash(4096, 0)),
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 80}, ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 5}}}},
		}}, "outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.MaxConns = 5 })},
		{"subset ring over top-level maglev", &networking.DestinationRule{Host: shop,
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: hashLB(maglev(131))},
			Subsets:       []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: hashTP(ringHash(2048, 0))}},
		}, "outbound|80|v1|" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RING_HASH"; s.LBConfig = "ring 2048" })},
		{"subset keeps top-level maglev", &networking.DestinationRule{Host: shop,
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: hashLB(maglev(131))},
			Subsets:       []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}},
		}, "outbound|80|v1|" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "MAGLEV"; s.LBConfig = "maglev 131" })},
		{"subset port-level ring over subset maglev", &networking.DestinationRule{Host: shop,
			Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer:      hashLB(maglev(131)),
				PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 80}, LoadBalancer: hashLB(&networking.LoadBalancerSettings_ConsistentHashLB{})}},
			}}},
		}, "outbound|80|v1|" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "RING_HASH"; s.LBConfig = "ring 1024" })},
		// istiod makes a subset cluster ORIGINAL_DST when the subset's own top-level load
		// balancer, or the service cluster's for the port, is PASSTHROUGH, before it applies
		// the merged policy: a port-level hash or balancer does not change it.
		{"subset passthrough over its port-level ring", &networking.DestinationRule{Host: shop,
			Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer:      simple(networking.LoadBalancerSettings_PASSTHROUGH),
				PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 80}, LoadBalancer: hashLB(ringHash(4096, 0))}},
			}}},
		}, "outbound|80|v1|" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.Type = "ORIGINAL_DST"; s.LB = "CLUSTER_PROVIDED" })},
		{"subset balancer under a passthrough rule", &networking.DestinationRule{Host: shop,
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_PASSTHROUGH)},
			Subsets:       []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_ROUND_ROBIN)}}},
		}, "outbound|80|v1|" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.Type = "ORIGINAL_DST"; s.LB = "CLUSTER_PROVIDED" })},
		{"subset balancer under a port-level passthrough on another port", &networking.DestinationRule{Host: shop,
			TrafficPolicy: &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 81}, LoadBalancer: simple(networking.LoadBalancerSettings_PASSTHROUGH)}}},
			Subsets:       []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_ROUND_ROBIN)}}},
		}, "outbound|80|v1|" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "ROUND_ROBIN" })},
		{"connection pool and outlier", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{
				Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 10, ConnectTimeout: durationpb.New(time.Second)},
				Http: &networking.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: 20, Http2MaxRequests: 30, MaxRetries: 4, MaxRequestsPerConnection: 1},
			},
			OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(7), MinHealthPercent: 40},
		}}, "outbound|80||" + shop, model.ProtocolHTTP, false, clusterSummary{Type: "EDS", LB: "LEAST_REQUEST", ConnectTimeout: time.Second, MaxConns: 10, MaxPending: 20, MaxRequests: 30, MaxRetries: 4, MaxReqPerConn: 1, Consecutive5xx: 7, Panic: 40}},
		{"port level overrides top level", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: simple(networking.LoadBalancerSettings_RANDOM),
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{
				{Port: &networking.PortSelector{Number: 80}, LoadBalancer: simple(networking.LoadBalancerSettings_ROUND_ROBIN)},
				{Port: &networking.PortSelector{Number: 81}, LoadBalancer: simple(networking.LoadBalancerSettings_LEAST_CONN)},
			},
		}}, "outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "ROUND_ROBIN" })},
		{"subset overrides, keeps the rest", &networking.DestinationRule{Host: shop,
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_RANDOM), ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 5}}},
			Subsets:       []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_ROUND_ROBIN)}}},
		}, "outbound|80|v1|" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.LB = "ROUND_ROBIN"; s.MaxConns = 5 })},
		{"h2 upgrade", &networking.DestinationRule{Host: shop, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE}}}},
			"outbound|80||" + shop, model.ProtocolHTTP, false, with(func(s *clusterSummary) { s.H2 = true })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &model.Service{Hostname: shop, Namespace: "store", Ports: []model.Port{{Name: "p", Number: 80, Protocol: tt.proto}}}
			var configs []*istioconfig.Config
			if tt.dr != nil {
				configs = append(configs, &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "d", Namespace: "store"}, Spec: tt.dr})
			}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: configs})
			p := sidecarProxy("10.9.9.9", "store")
			if tt.grpc {
				p = grpcProxy("store")
			}
			rs, err := ForType(ClusterType, p).Generate(p, s, []string{tt.cluster})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 {
				t.Fatalf("want 1 cluster, got %d", len(rs))
			}
			if _, err := validateDeep(rs[0].Message); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summarizeCluster(t, rs[0].Message.(*clusterv3.Cluster))); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestHashLBOnOriginalDst: a passthrough (ORIGINAL_DST) cluster stays CLUSTER_PROVIDED without
// a ring or Maglev config whatever its DestinationRule hashes on, as istiod builds it.
func TestHashLBOnOriginalDst(t *testing.T) {
	svc := &model.Service{Hostname: shop, Namespace: "store", Resolution: model.ResolutionPassthrough, Ports: []model.Port{{Name: "p", Number: 80, Protocol: model.ProtocolHTTP}}}
	dr := &networking.DestinationRule{Host: shop, TrafficPolicy: hashTP(maglev(65537))}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "d", Namespace: "store"}, Spec: dr}}})
	p := sidecarProxy("10.9.9.9", "store")
	rs, err := ForType(ClusterType, p).Generate(p, s, []string{"outbound|80||" + shop})
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %d clusters, err %v", len(rs), err)
	}
	c := rs[0].Message.(*clusterv3.Cluster)
	if c.GetType() != clusterv3.Cluster_ORIGINAL_DST || c.GetLbPolicy() != clusterv3.Cluster_CLUSTER_PROVIDED || c.GetLbConfig() != nil {
		t.Errorf("type %s lb_policy %s lb_config %v, want ORIGINAL_DST CLUSTER_PROVIDED none", c.GetType(), c.GetLbPolicy(), c.GetLbConfig())
	}
	if _, err := validateDeep(c); err != nil {
		t.Fatal(err)
	}
}

// TestDNSRoundRobinClusters: a DNS_ROUND_ROBIN ServiceEntry is a LOGICAL_DNS cluster in istiod
// (convertResolution), with the same inline endpoints as DNS (its host when it has none), while
// DNS is STRICT_DNS. Envoy takes one endpoint in a LOGICAL_DNS cluster: past it, the rest are
// dropped with an error.
func TestDNSRoundRobinClusters(t *testing.T) {
	svc := func(host string, rr bool) *model.Service {
		return &model.Service{Hostname: host, Namespace: "ext", Resolution: model.ResolutionDNS, DNSRoundRobin: rr, MeshExternal: true,
			Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	}
	eps := func(host string, addrs ...string) []*model.Endpoint {
		var out []*model.Endpoint
		for _, a := range addrs {
			out = append(out, &model.Endpoint{Service: host, Address: a, Weight: 1})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		svc   *model.Service
		eps   []*model.Endpoint
		grpc  bool
		typ   clusterv3.Cluster_DiscoveryType
		addrs []string
		err   string
	}{
		{"round robin, own host", svc("rr.example.com", true), eps("rr.example.com", "rr.example.com"), false, clusterv3.Cluster_LOGICAL_DNS, []string{"rr.example.com"}, ""},
		{"round robin, one endpoint", svc("rr.example.com", true), eps("rr.example.com", "one.example.com"), false, clusterv3.Cluster_LOGICAL_DNS, []string{"one.example.com"}, ""},
		{"round robin, two endpoints", svc("rr.example.com", true), eps("rr.example.com", "a.example.com", "b.example.com"), false, clusterv3.Cluster_LOGICAL_DNS, []string{"a.example.com"}, "DNS_ROUND_ROBIN takes one endpoint, 2 found"},
		{"round robin, grpc", svc("rr.example.com", true), eps("rr.example.com", "one.example.com"), true, clusterv3.Cluster_LOGICAL_DNS, []string{"one.example.com"}, ""},
		{"DNS, two endpoints", svc("dns.example.com", false), eps("dns.example.com", "a.example.com", "b.example.com"), false, clusterv3.Cluster_STRICT_DNS, []string{"a.example.com", "b.example.com"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{tc.svc}, Endpoints: map[string][]*model.Endpoint{tc.svc.Hostname: tc.eps}})
			p := sidecarProxy("10.9.9.9", "ext")
			if tc.grpc {
				p = grpcProxy("ext")
			}
			name := "outbound|80||" + tc.svc.Hostname
			rs, err := ForType(ClusterType, p).Generate(p, s, []string{name})
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if len(rs) != 1 {
				t.Fatalf("want 1 cluster, got %d", len(rs))
			}
			c := rs[0].Message.(*clusterv3.Cluster)
			if _, err := validateDeep(c); err != nil {
				t.Fatal(err)
			}
			var addrs []string
			for _, l := range c.GetLoadAssignment().GetEndpoints() {
				for _, lb := range l.GetLbEndpoints() {
					addrs = append(addrs, lb.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
				}
			}
			if c.GetType() != tc.typ || c.GetDnsLookupFamily() != clusterv3.Cluster_V4_ONLY || !slices.Equal(addrs, tc.addrs) {
				t.Errorf("type %s, dns_lookup_family %s, endpoints %v; want %s, V4_ONLY, %v", c.GetType(), c.GetDnsLookupFamily(), addrs, tc.typ, tc.addrs)
			}
		})
	}
}

func TestClustersBadSubsetsKeepTheRest(t *testing.T) {
	svc := &model.Service{Hostname: shop, Namespace: "store", Ports: []model.Port{{Name: "p", Number: 80, Protocol: model.ProtocolHTTP}}}
	dr := &networking.DestinationRule{Host: shop, Subsets: []*networking.Subset{{Name: "v1"}, {Name: "v1"}, {Name: "a|b"}, {Name: "v2"}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "d", Namespace: "store"}, Spec: dr}}})
	p := sidecarProxy("10.9.9.9", "store")
	rs, err := ForType(ClusterType, p).Generate(p, s, nil)
	if err == nil || !strings.Contains(err.Error(), `subset "v1" defined twice`) || !strings.Contains(err.Error(), `"a|b"`) {
		t.Fatalf("err = %v", err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	want := []string{BlackHoleCluster, InboundPassthroughCluster, PassthroughCluster, "outbound|80|v1|" + shop, "outbound|80|v2|" + shop, "outbound|80||" + shop}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestInboundClusters(t *testing.T) {
	s := edsMesh(shopEP("10.0.0.1", nil, model.Locality{}, 1, model.Healthy))
	for _, tc := range []struct {
		ip   string
		want []string
	}{
		{"10.0.0.1", []string{"inbound|80||", "inbound|9090||"}},
		{"10.0.0.2", nil},
	} {
		p := sidecarProxy(tc.ip, "store")
		rs, err := ForType(ClusterType, p).Generate(p, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rs {
			if strings.HasPrefix(r.Name, "inbound|") {
				got = append(got, r.Name)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("proxy %s: (-want +got)\n%s", tc.ip, diff)
		}
	}
}

// TestDNSSubsetWithoutEndpoints: a DNS service's subset that none of its endpoints is in (its
// own host name, which has no labels, or endpoints of other versions) gets no cluster, as
// istiod builds none; a subset without labels, and the service's cluster, keep theirs.
func TestDNSSubsetWithoutEndpoints(t *testing.T) {
	const host, named = "dns.example.com", "named.example.com"
	svc := func(h string) *model.Service {
		return &model.Service{Hostname: h, Namespace: "ext", Resolution: model.ResolutionDNS, MeshExternal: true,
			Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	}
	subsets := []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}, {Name: "v2", Labels: map[string]string{"version": "v2"}}, {Name: "all"}}
	s := model.NewSnapshot(1, model.SnapshotInput{
		Services: []*model.Service{svc(host), svc(named)},
		Endpoints: map[string][]*model.Endpoint{
			host:  {{Service: host, Address: "a.example.net", Weight: 1, Labels: map[string]string{"version": "v1"}}},
			named: {{Service: named, Address: named, Weight: 1}}, // the entry's own host name
		},
		Configs: []*istioconfig.Config{
			drConfig("dns", "ext", &networking.DestinationRule{Host: host, Subsets: subsets}),
			drConfig("named", "ext", &networking.DestinationRule{Host: named, Subsets: subsets}),
		},
	})
	p := sidecarProxy("10.9.9.9", "ext")
	rs, err := ForType(ClusterType, p).Generate(p, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		if strings.HasPrefix(r.Name, "outbound|80|") {
			got = append(got, r.Name)
		}
	}
	slices.Sort(got)
	want := []string{"outbound|80|all|dns.example.com", "outbound|80|all|named.example.com", "outbound|80|v1|dns.example.com", "outbound|80||dns.example.com", "outbound|80||named.example.com"}
	if !slices.Equal(got, want) {
		t.Errorf("clusters %v, want %v", got, want)
	}
}

// TestInboundClusterPoolFromProxyScopeRule: an inbound cluster takes its connection pool from
// the rule the proxy's sidecar scope picks for the service, as istiod's: one exported only to
// the proxy's (and service's) namespace counts, and a rule in the proxy's namespace goes first.
func TestInboundClusterPoolFromProxyScopeRule(t *testing.T) {
	const host = "api.team.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "team", Addresses: []string{"10.96.7.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	pool := func(n int32) *networking.TrafficPolicy {
		return &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: n}}}
	}
	s := model.NewSnapshot(1, model.SnapshotInput{
		Services:  []*model.Service{svc},
		Endpoints: map[string][]*model.Endpoint{host: {{Service: host, Address: "10.7.0.1", Weight: 1, Health: model.Healthy}}},
		Configs: []*istioconfig.Config{
			drConfig("private", "team", &networking.DestinationRule{Host: host, ExportTo: []string{"."}, TrafficPolicy: pool(7)}),
			drConfig("root", model.RootNamespace, &networking.DestinationRule{Host: host, TrafficPolicy: pool(9)}),
		},
	})
	p := sidecarProxy("10.7.0.1", "team")
	rs, err := ForType(ClusterType, p).Generate(p, s, []string{"inbound|80||"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d clusters", len(rs))
	}
	if got := rs[0].Message.(*clusterv3.Cluster).GetCircuitBreakers().GetThresholds()[0].GetMaxConnections().GetValue(); got != 7 {
		t.Errorf("inbound max_connections %d, want 7 (the rule private to the proxy's namespace)", got)
	}
}

// A Sidecar that does not import the proxy's own service gives its inbound cluster no rule, as
// istiod's sidecar scope holds rules for the services it imports only.
func TestInboundClusterNoRuleOutsideSidecarScope(t *testing.T) {
	const host = "api.team.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "team", Addresses: []string{"10.96.7.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	db := &model.Service{Hostname: "db.data.svc.cluster.local", Namespace: "data", Addresses: []string{"10.96.7.2"}, Ports: []model.Port{{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}}}
	pool := &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 7}}}
	maxConns := func(egress string) uint32 {
		s := model.NewSnapshot(1, model.SnapshotInput{
			Services:  []*model.Service{svc, db},
			Endpoints: map[string][]*model.Endpoint{host: {{Service: host, Address: "10.7.0.1", Weight: 1, Health: model.Healthy}}},
			Configs: []*istioconfig.Config{
				drConfig("api", "team", &networking.DestinationRule{Host: host, TrafficPolicy: pool}),
				{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "team"}, Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{egress}}}}},
			},
		})
		p := sidecarProxy("10.7.0.1", "team")
		rs, err := ForType(ClusterType, p).Generate(p, s, []string{"inbound|80||"})
		if err != nil || len(rs) != 1 {
			t.Fatalf("%d clusters, %v", len(rs), err)
		}
		th := rs[0].Message.(*clusterv3.Cluster).GetCircuitBreakers().GetThresholds()
		if len(th) == 0 {
			return 0
		}
		return th[0].GetMaxConnections().GetValue()
	}
	if got := maxConns("data/*"); got == 7 {
		t.Errorf("Sidecar importing data/* only: inbound max connections %d, the rule of a service it does not import", got)
	}
	if got := maxConns("./*"); got != 7 {
		t.Errorf("Sidecar importing its namespace: inbound max connections %d, want the rule's 7", got)
	}
}

// TestDNSSubsetOriginalDst: a DNS service's subset cluster that istiod makes ORIGINAL_DST (the
// subset's own load balancer, or the rule's for the port, is PASSTHROUGH) has neither a DNS
// lookup family nor endpoints, and exists also when no endpoint has the subset's labels
// (found by a review of random seeds' fix 6546122, checked against istiod).
func TestDNSSubsetOriginalDst(t *testing.T) {
	const host = "dnsx.example.com"
	svc := &model.Service{Hostname: host, Namespace: "store", Resolution: model.ResolutionDNS,
		Ports: []model.Port{{Name: "tcp", Number: 7443, Protocol: model.ProtocolTCP}}}
	eps := map[string][]*model.Endpoint{host: {{Service: host, Address: "10.8.0.1", Weight: 1, Labels: map[string]string{"version": "v1"}}}}
	pass := &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_PASSTHROUGH}}}
	subsets := func(own *networking.TrafficPolicy) []*networking.Subset {
		return []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: own},
			{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: own}}
	}
	for name, dr := range map[string]*networking.DestinationRule{
		"subsets' own":   {Host: host, Subsets: subsets(pass)},
		"the rule's top": {Host: host, TrafficPolicy: pass, Subsets: subsets(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: eps,
				Configs: []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "d", Namespace: "store"}, Spec: dr}}})
			p := sidecarProxy("10.9.9.9", "store")
			want := []string{"outbound|7443|v1|" + host, "outbound|7443|v2|" + host}
			rs, err := ForType(ClusterType, p).Generate(p, s, want)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 2 {
				t.Fatalf("got %d clusters, want both subsets' (v2 has no endpoint)", len(rs))
			}
			for _, r := range rs {
				c := r.Message.(*clusterv3.Cluster)
				if c.GetType() != clusterv3.Cluster_ORIGINAL_DST || c.GetDnsLookupFamily() != clusterv3.Cluster_AUTO || c.GetLoadAssignment() != nil || c.GetLbPolicy() != clusterv3.Cluster_CLUSTER_PROVIDED {
					t.Errorf("%s: type %v, dns_lookup_family %v, load assignment %v, lb %v; want ORIGINAL_DST, none, none, CLUSTER_PROVIDED",
						c.GetName(), c.GetType(), c.GetDnsLookupFamily(), c.GetLoadAssignment() != nil, c.GetLbPolicy())
				}
				if _, err := validateDeep(c); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
