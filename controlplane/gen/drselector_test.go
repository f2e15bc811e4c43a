package gen

import (
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// A DestinationRule with a workloadSelector applies only to the proxies of its namespace that
// it selects (istiod's SidecarScope.DestinationRule): two proxies of one namespace get
// different clusters and different cache keys; a proxy the selector does not pick takes its
// namespace's rule without a selector, and when there is none, no rule at all (not the
// service namespace's); a proxy of another namespace never sees it.
func TestDestinationRuleWorkloadSelector(t *testing.T) {
	const (
		ledger = "ledger.bank.svc.cluster.local"
		queue  = "queue.bank.svc.cluster.local"
	)
	// Each rule's connect timeout tells which one a cluster took.
	timeout := func(sec int64) *networking.TrafficPolicy {
		return &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(time.Duration(sec) * time.Second)}}}
	}
	sel := func(labels map[string]string) *typev1beta1.WorkloadSelector {
		return &typev1beta1.WorkloadSelector{MatchLabels: labels}
	}
	http := []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}
	s := model.NewSnapshot(1, model.SnapshotInput{
		Services: []*model.Service{
			{Hostname: ledger, Namespace: "bank", Addresses: []string{"10.96.5.1"}, Ports: http},
			{Hostname: queue, Namespace: "bank", Addresses: []string{"10.96.5.2"}, Ports: http},
		},
		Configs: []*istioconfig.Config{
			createdAt(drConfig("ledger", "bank", &networking.DestinationRule{Host: ledger, TrafficPolicy: timeout(3)}), 1),
			createdAt(drConfig("queue", "bank", &networking.DestinationRule{Host: queue, TrafficPolicy: timeout(3)}), 1),
			// In the clients' namespace: an older rule without a selector, then the payments
			// workloads' own rule, which comes first all the same.
			createdAt(drConfig("ledger-all", "shop", &networking.DestinationRule{Host: ledger, TrafficPolicy: timeout(4)}), 2),
			createdAt(drConfig("ledger-payments", "shop", &networking.DestinationRule{Host: ledger, WorkloadSelector: sel(map[string]string{"app": "payments"}), TrafficPolicy: timeout(5)}), 3),
			createdAt(drConfig("queue-batch", "shop", &networking.DestinationRule{Host: queue, WorkloadSelector: sel(map[string]string{"app": "batch"}), TrafficPolicy: timeout(6)}), 3),
		},
	})
	payments := sidecarProxy("10.0.0.1", "shop")
	payments.Labels = map[string]string{"app": "payments", "version": "v2"}
	web := sidecarProxy("10.0.0.2", "shop")
	web.Labels = map[string]string{"app": "web"}
	other := sidecarProxy("10.0.0.3", "elsewhere")
	other.Labels = map[string]string{"app": "payments"}

	timeoutOf := func(p *model.Proxy, host string) string {
		t.Helper()
		name := ClusterName(Outbound, 80, "", host)
		rs, err := ForType(ClusterType, p).Generate(p, s, []string{name})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 1 {
			t.Fatalf("%d clusters named %s", len(rs), name)
		}
		if _, err := validateDeep(rs[0].Message); err != nil {
			t.Fatal(err)
		}
		return rs[0].Message.(*clusterv3.Cluster).GetConnectTimeout().AsDuration().String()
	}
	for _, tc := range []struct {
		p           *model.Proxy
		host, want  string
		description string
	}{
		{payments, ledger, "5s", "the selector rule that picks it"},
		{web, ledger, "4s", "its namespace's rule without a selector"},
		{other, ledger, "3s", "another namespace: the service's rule"},
		{payments, queue, "10s", "only a selector rule for others in its namespace: no rule, the default timeout"},
		{other, queue, "3s", "another namespace: the service's rule"},
	} {
		if got := timeoutOf(tc.p, tc.host); got != tc.want {
			t.Errorf("%s (%s) for %s: connect timeout %s, want %s", tc.p.IPAddresses[0], tc.description, tc.host, got, tc.want)
		}
	}
	for _, typeURL := range []string{ClusterType, ListenerType, RouteType, EndpointType} {
		if ViewKey(typeURL, payments, s, false) == ViewKey(typeURL, web, s, false) {
			t.Errorf("%s: proxies the selectors treat differently share the view key %q", typeURL, ViewKey(typeURL, web, s, false))
		}
	}
	same := sidecarProxy("10.0.0.4", "shop")
	same.Labels = map[string]string{"app": "payments"}
	if ViewKey(ClusterType, payments, s, false) != ViewKey(ClusterType, same, s, false) {
		t.Error("proxies the selectors treat alike have different view keys")
	}
}

// Rules of one namespace for one host (istiod's mergeDestinationRule): one with a selector
// and one without, exported alike (to the namespace only), merge into the selector rule, which
// comes first whatever its age; a rule exported everywhere stays apart.
func TestDestinationRuleSelectorMerge(t *testing.T) {
	const host = "cache.bank.svc.cluster.local"
	subsets := func(names ...string) []*networking.Subset {
		var out []*networking.Subset
		for _, n := range names {
			out = append(out, &networking.Subset{Name: n, Labels: map[string]string{"v": n}})
		}
		return out
	}
	s := model.NewSnapshot(1, model.SnapshotInput{
		Services: []*model.Service{{Hostname: host, Namespace: "bank", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}},
		Configs: []*istioconfig.Config{
			createdAt(drConfig("local", "shop", &networking.DestinationRule{Host: host, ExportTo: []string{"."}, Subsets: subsets("b", "a")}), 1),
			createdAt(drConfig("public", "shop", &networking.DestinationRule{Host: host, Subsets: subsets("c")}), 2),
			createdAt(drConfig("mine", "shop", &networking.DestinationRule{Host: host, WorkloadSelector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "web"}}, Subsets: subsets("a")}), 3),
		},
	})
	web := sidecarProxy("10.0.0.2", "shop")
	web.Labels = map[string]string{"app": "web"}
	got := newIndex(s, s.ScopeFor(web)).of(web).destinationRule(host)
	if got == nil || got.Name != "mine" {
		t.Fatalf("rule %v, want mine", got)
	}
	var names []string
	for _, ss := range drSpec(got).GetSubsets() {
		names = append(names, ss.GetName())
	}
	if want := []string{"a", "b"}; !slices.Equal(names, want) {
		t.Errorf("subsets %v, want %v (the local rule merged in, not the public one)", names, want)
	}
	// A proxy it does not select takes the last rule without a selector: the public one.
	if got := newIndex(s, s.ScopeFor(sidecarProxy("10.0.0.3", "shop"))).destinationRule(host); got == nil || got.Name != "public" {
		t.Errorf("unselected proxy: rule %v, want public", got)
	}
}

// A rule exported to its own namespace by name is exported differently from a selector rule
// (exported to ".") as istiod compares the written sets: it does not merge into the selector
// rule, and stays the rule of the proxies the selector does not pick.
func TestDestinationRuleSelectorOwnNamespaceByName(t *testing.T) {
	const host = "ledger.shop.svc.cluster.local"
	s := model.NewSnapshot(1, model.SnapshotInput{
		Services: []*model.Service{{Hostname: host, Namespace: "shop", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}},
		Configs: []*istioconfig.Config{
			createdAt(drConfig("ledger-all", "shop", &networking.DestinationRule{Host: host, ExportTo: []string{"shop"},
				TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(4 * time.Second)}}}}), 1),
			createdAt(drConfig("ledger-payments", "shop", &networking.DestinationRule{Host: host,
				WorkloadSelector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "payments"}}}), 2),
		},
	})
	web := sidecarProxy("10.0.0.4", "shop")
	web.Labels = map[string]string{"app": "web"}
	if got := newIndex(s, s.ScopeFor(web)).of(web).destinationRule(host); got == nil || got.Name != "ledger-all" {
		t.Fatalf("unselected proxy: rule %v, want ledger-all", got)
	}
	pay := sidecarProxy("10.0.0.5", "shop")
	pay.Labels = map[string]string{"app": "payments"}
	got := newIndex(s, s.ScopeFor(pay)).of(pay).destinationRule(host)
	if got == nil || got.Name != "ledger-payments" {
		t.Fatalf("selected proxy: rule %v, want ledger-payments", got)
	}
	if drSpec(got).GetTrafficPolicy() != nil {
		t.Errorf("selected proxy's rule took ledger-all's traffic policy: the two are exported differently and must not merge")
	}
}
