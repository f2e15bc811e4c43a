package gen

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
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
