package gen

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestTCPKeepaliveAndRetryBudget: a connection pool's tcpKeepalive becomes the cluster's
// upstream TCP keepalive (whole seconds) and a traffic policy's retryBudget its circuit
// breaker's retry budget (20 % and 3 by default), as istiod's applyConnectionPool sets them;
// port-level settings for the port drop the rule's budget, a subset's replaces it.
func TestTCPKeepaliveAndRetryBudget(t *testing.T) {
	const host = "ledger.bank.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "bank", Addresses: []string{"240.7.0.1"},
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 9090, Protocol: model.ProtocolTCP}}}
	dr := drConfig("ledger", "bank", &networking.DestinationRule{Host: host,
		TrafficPolicy: &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{
				TcpKeepalive: &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Probes: 4, Time: durationpb.New(90e9), Interval: durationpb.New(1500e6)}}},
			RetryBudget: &networking.TrafficPolicy_RetryBudget{MinRetryConcurrency: 6, BudgetInterval: durationpb.New(5e9)},
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 9090},
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 7}}}},
		},
		Subsets: []*networking.Subset{{Name: "gold", Labels: map[string]string{"tier": "gold"},
			TrafficPolicy: &networking.TrafficPolicy{RetryBudget: &networking.TrafficPolicy_RetryBudget{Percent: wrapperspb.Double(40)}}}},
	})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{dr}})
	p := sidecarProxy("10.7.7.7", "bank")
	rs, err := ForType(ClusterType, p).Generate(p, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*clusterv3.Cluster{}
	for _, r := range rs {
		byName[r.Name] = r.Message.(*clusterv3.Cluster)
	}
	keepalive := &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{
		KeepaliveProbes: wrapperspb.UInt32(4), KeepaliveTime: wrapperspb.UInt32(90), KeepaliveInterval: wrapperspb.UInt32(1)}}
	ruleBudget := &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 20}, BudgetInterval: durationpb.New(5e9), MinRetryConcurrency: wrapperspb.UInt32(6)}
	goldBudget := &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 40}, MinRetryConcurrency: wrapperspb.UInt32(3)}
	tests := []struct {
		cluster   string
		keepalive *clusterv3.UpstreamConnectionOptions
		budget    *clusterv3.CircuitBreakers_Thresholds_RetryBudget
	}{
		{"outbound|8080||" + host, keepalive, ruleBudget},
		{"outbound|9090||" + host, nil, nil}, // port-level settings replace the policy
		{"outbound|8080|gold|" + host, keepalive, goldBudget},
	}
	for _, tt := range tests {
		c := byName[tt.cluster]
		if c == nil {
			t.Fatalf("no cluster %s", tt.cluster)
		}
		if err := c.ValidateAll(); err != nil {
			t.Errorf("%s: %v", tt.cluster, err)
		}
		if diff := cmp.Diff(tt.keepalive, c.GetUpstreamConnectionOptions(), protocmp.Transform()); diff != "" {
			t.Errorf("%s upstream connection options (-want +got):\n%s", tt.cluster, diff)
		}
		if diff := cmp.Diff(tt.budget, c.GetCircuitBreakers().GetThresholds()[0].GetRetryBudget(), protocmp.Transform()); diff != "" {
			t.Errorf("%s retry budget (-want +got):\n%s", tt.cluster, diff)
		}
	}
}

// TestWarmup: a load balancer's warmup is the slow start of round robin and least request
// (also the default), with istiod's defaults (aggression 1, minimum 10 %); the deprecated
// warmupDurationSecs gives the window alone; RANDOM gets none; a consistent hash keeps the
// least-request config istiod set before it unless it sets its own (a ring hash without a
// minimum size does not); proxyless gRPC gets none.
func TestWarmup(t *testing.T) {
	window := durationpb.New(45e9)
	full := &clusterv3.Cluster_SlowStartConfig{SlowStartWindow: window, Aggression: &corev3.RuntimeDouble{DefaultValue: 2, RuntimeKey: "("}, MinWeightPercent: &typev3.Percent{Value: 10}}
	warm := &networking.WarmupConfiguration{Duration: window, Aggression: wrapperspb.Double(2)}
	lr := func(sc *clusterv3.Cluster_SlowStartConfig) *clusterv3.Cluster {
		return &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_LEAST_REQUEST, LbConfig: &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: sc}}}
	}
	tests := []struct {
		name string
		lb   *networking.LoadBalancerSettings
		grpc bool
		want *clusterv3.Cluster // lb_policy and lb_config
	}{
		{"round robin", &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}, Warmup: warm},
			false, &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_ROUND_ROBIN, LbConfig: &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: full}}}},
		{"default", &networking.LoadBalancerSettings{Warmup: warm}, false, lr(full)},
		{"deprecated seconds", &networking.LoadBalancerSettings{WarmupDurationSecs: window}, false, lr(&clusterv3.Cluster_SlowStartConfig{SlowStartWindow: window})},
		{"random", &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}, Warmup: warm},
			false, &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_RANDOM}},
		{"ring hash without a minimum size", &networking.LoadBalancerSettings{Warmup: warm, LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
			HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}, HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{}}}}},
			false, &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_RING_HASH, LbConfig: lr(full).LbConfig}},
		{"grpc", &networking.LoadBalancerSettings{Warmup: warm}, true, &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_ROUND_ROBIN}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clusterv3.Cluster{}
			policy{lb: tt.lb}.applyLB(c, tt.grpc)
			if diff := cmp.Diff(tt.want, c, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestUseClientProtocol: connectionPool.http.useClientProtocol makes every port's cluster
// speak upstream as the client spoke (use_downstream_protocol_config), keeping the common
// HTTP options and dropping HTTP/2's, as istiod's applyConnectionPool does.
func TestUseClientProtocol(t *testing.T) {
	const host = "mixed.proto.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "proto", Addresses: []string{"240.7.0.2"},
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}, {Name: "grpc", Number: 8081, Protocol: model.ProtocolGRPC}, {Name: "tcp", Number: 8082, Protocol: model.ProtocolTCP}}}
	dr := drConfig("mixed", "proto", &networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{
		ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{
			UseClientProtocol: true, IdleTimeout: durationpb.New(33e9), MaxConcurrentStreams: 12}}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{dr}})
	p := sidecarProxy("10.7.7.8", "proto")
	rs, err := ForType(ClusterType, p).Generate(p, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &upstreamhttpv3.HttpProtocolOptions{
		CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(33e9)},
		UpstreamProtocolOptions:   useDownstreamConfig(),
	}
	n := 0
	for _, r := range rs {
		c := r.Message.(*clusterv3.Cluster)
		if !strings.HasSuffix(r.Name, "||"+host) {
			continue
		}
		n++
		if err := c.ValidateAll(); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		got := &upstreamhttpv3.HttpProtocolOptions{}
		if err := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsName].UnmarshalTo(got); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("%s protocol options (-want +got):\n%s", r.Name, diff)
		}
	}
	if n != 3 {
		t.Errorf("%d clusters of %s, want 3", n, host)
	}
}

// TestProxyProtocol: a traffic policy's proxyProtocol wraps the cluster's transport socket in
// the upstream PROXY protocol socket, as istiod does: a raw buffer when there is none, and each
// auto-mTLS match's socket (the shared matches left as they were); port-level settings drop
// it, a subset's replaces it.
func TestProxyProtocol(t *testing.T) {
	const host = "db.pp.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "pp", Addresses: []string{"240.7.0.3"},
		Ports: []model.Port{{Name: "tcp", Number: 5432, Protocol: model.ProtocolTCP}, {Name: "tcp-admin", Number: 5433, Protocol: model.ProtocolTCP}}}
	eps := map[string][]*model.Endpoint{host: {{Service: host, Address: "10.7.0.3", Labels: map[string]string{TLSModeLabel: "istio", "role": "primary"}, ServiceAccount: "db"}}}
	dr := drConfig("db", "pp", &networking.DestinationRule{Host: host,
		TrafficPolicy: &networking.TrafficPolicy{ProxyProtocol: &networking.TrafficPolicy_ProxyProtocol{Version: networking.TrafficPolicy_ProxyProtocol_V2},
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 5433}, Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}}}},
		Subsets: []*networking.Subset{{Name: "primary", Labels: map[string]string{"role": "primary"},
			TrafficPolicy: &networking.TrafficPolicy{ProxyProtocol: &networking.TrafficPolicy_ProxyProtocol{Version: networking.TrafficPolicy_ProxyProtocol_V1}}}},
	})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: eps, Configs: []*istioconfig.Config{dr}})
	p := sidecarProxy("10.7.7.9", "pp")
	rs, err := ForType(ClusterType, p).Generate(p, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	version := func(ts *corev3.TransportSocket) (string, string) {
		if ts.GetName() != upstreamProxyProtocolSocketName {
			return "", ts.GetName()
		}
		pp := &proxyprotocolv3.ProxyProtocolUpstreamTransport{}
		if err := ts.GetTypedConfig().UnmarshalTo(pp); err != nil {
			t.Fatal(err)
		}
		return pp.GetConfig().GetVersion().String(), pp.GetTransportSocket().GetName()
	}
	want := map[string][]string{ // cluster → per socket (matches, or the one socket): version/inner
		"outbound|5432||" + host:        {"V2/" + tlsTransportSocketName, "V2/" + rawBufferSocketName},
		"outbound|5432|primary|" + host: {"V1/" + tlsTransportSocketName, "V1/" + rawBufferSocketName},
		"outbound|5433||" + host:        {"/"}, // port-level: no PROXY protocol, TLS disabled (no socket)
	}
	for _, r := range rs {
		exp, ok := want[r.Name]
		if !ok {
			continue
		}
		c := r.Message.(*clusterv3.Cluster)
		if err := c.ValidateAll(); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		var got []string
		for _, m := range c.GetTransportSocketMatches() {
			v, inner := version(m.GetTransportSocket())
			got = append(got, v+"/"+inner)
		}
		if len(c.GetTransportSocketMatches()) == 0 {
			v, inner := version(c.GetTransportSocket())
			got = append(got, v+"/"+inner)
		}
		if !cmp.Equal(exp, got) {
			t.Errorf("%s sockets %v, want %v", r.Name, got, exp)
		}
	}
	// The shared auto-mTLS matches are not wrapped for other clusters.
	if ts := (&shared{}).plaintextMatch().GetTransportSocket(); ts.GetName() != rawBufferSocketName {
		t.Errorf("shared plaintext match changed: %v", ts)
	}
}
