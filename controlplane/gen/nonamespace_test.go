package gen

import (
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestProxyWithoutNamespace checks what istiod gives a proxy whose node names no namespace
// (no NAMESPACE metadata, a DNS domain without one): its config namespace is empty, so a
// DestinationRule exported to a list of namespaces does not apply to it (an exact host's rule
// exported to team hides the namespace's wildcard rule, as for any proxy outside team: no
// rule, the default 10s), and its route configurations give a Kubernetes service no short
// names (istiod expands names by the proxy's DNS domain).
func TestProxyWithoutNamespace(t *testing.T) {
	const host = "ledger.books.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "books", Addresses: []string{"10.96.7.1"},
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}}
	timeout := func(s int64) *networking.TrafficPolicy {
		return &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(secs(s))}}}
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{
		drConfig("public", "books", &networking.DestinationRule{Host: "*.books.svc.cluster.local", TrafficPolicy: timeout(3)}),
		drConfig("team", "books", &networking.DestinationRule{Host: host, ExportTo: []string{"team"}, TrafficPolicy: timeout(7)}),
	}})
	md, err := structpb.NewStruct(map[string]any{"INSTANCE_IPS": "10.8.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseProxy(&corev3.Node{Id: "sidecar~10.8.0.1~vm-1~localdomain", Metadata: md})
	if err != nil {
		t.Fatalf("a proxy of no namespace is refused: %v", err)
	}
	if p.Namespace != "" {
		t.Fatalf("namespace %q, want none", p.Namespace)
	}
	name := ClusterName(Outbound, 8080, "", host)
	for _, wildcard := range []bool{true, false} {
		var names []string
		if !wildcard {
			names = []string{name}
		}
		rs, err := ForType(ClusterType, p).Generate(p, s, names)
		if err != nil {
			t.Fatal(err)
		}
		r := findResource(rs, name)
		if r == nil {
			t.Fatalf("no cluster %s", name)
		}
		if got := r.Message.(*clusterv3.Cluster).GetConnectTimeout().AsDuration(); got != secs(10) {
			t.Errorf("wildcard=%v: connect timeout %v, want 10s (no rule: the one exported to team is not the proxy's)", wildcard, got)
		}
	}
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"8080"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("routes: %d, %v", len(rs), err)
	}
	var domains []string
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		if vh.GetName() == HostPortName(host, 8080) {
			domains = vh.GetDomains()
		}
	}
	want := []string{host, host + ":8080", "10.96.7.1", "10.96.7.1:8080"}
	if !slices.Equal(domains, want) {
		t.Errorf("domains %q, want %q", domains, want)
	}
}

func secs(n int64) time.Duration { return time.Duration(n) * time.Second }
