package gen

import (
	"fmt"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// geoMesh is one service (port 80) with endpoints in five localities and a DestinationRule
// with the traffic policy tp (nil: no DestinationRule).
func geoMesh(tp *networking.TrafficPolicy) *model.Snapshot {
	return geoMeshDistribution(tp, model.TrafficDistributionAny)
}

// geoMeshDistribution is geoMesh with the service's traffic distribution td.
func geoMeshDistribution(tp *networking.TrafficPolicy, td model.TrafficDistribution) *model.Snapshot {
	svc := &model.Service{Hostname: shop, Namespace: "store", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}},
		TrafficDistribution: td}
	loc := func(s string) model.Locality { return ParseLocality(s) }
	eps := []*model.Endpoint{
		shopEP("10.0.0.1", map[string]string{"app": "a", "version": "v1"}, loc("r1/z1"), 1, model.Healthy),
		shopEP("10.0.0.2", map[string]string{"app": "b", "version": "v1"}, loc("r1/z1/s2"), 1, model.Healthy),
		shopEP("10.0.0.3", map[string]string{"app": "a", "version": "v2"}, loc("r1/z2"), 2, model.Healthy),
		shopEP("10.0.0.4", map[string]string{"app": "a", "version": "v1"}, loc("r2/z1"), 1, model.Healthy),
		shopEP("10.0.0.5", map[string]string{"app": "b"}, loc("r3/z1"), 1, model.Healthy),
	}
	var cfgs []*istioconfig.Config
	if tp != nil {
		cfgs = append(cfgs, &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "shop", Namespace: "store"},
			Spec: &networking.DestinationRule{Host: shop, TrafficPolicy: tp}})
	}
	return model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: map[string][]*model.Endpoint{shop: eps}, Configs: cfgs})
}

// ranks renders an assignment as "region/zone/subzone p=PRIORITY w=WEIGHT: addresses".
func ranks(c *endpointv3.ClusterLoadAssignment) []string {
	var out []string
	for _, l := range c.GetEndpoints() {
		var addrs []string
		for _, e := range l.GetLbEndpoints() {
			addrs = append(addrs, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
		}
		out = append(out, fmt.Sprintf("%s/%s/%s p=%d w=%d: %s", l.GetLocality().GetRegion(), l.GetLocality().GetZone(),
			l.GetLocality().GetSubZone(), l.GetPriority(), l.GetLoadBalancingWeight().GetValue(), strings.Join(addrs, " ")))
	}
	return out
}

func TestLocalityLoadBalancing(t *testing.T) {
	outlier := &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3)}
	lbs := func(s *networking.LocalityLoadBalancerSetting) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{LocalityLbSetting: s}
	}
	inR1Z1 := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.9.0.1"}, Namespace: "store", Locality: model.Locality{Region: "r1", Zone: "z1"},
		Labels: map[string]string{"app": "a"}}
	inR2 := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.9.0.2"}, Namespace: "store", Locality: model.Locality{Region: "r2", Zone: "z9"},
		Labels: map[string]string{"app": "b"}}
	// As model.WithWorkloadLabels resolves a proxy: topology labels added.
	resolved := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.9.0.1"}, Namespace: "store", Locality: model.Locality{Region: "r1", Zone: "z1"},
		Labels: map[string]string{"app": "a", model.LabelCluster: model.RegistryClusterID, model.LabelRegion: "r1", model.LabelZone: "z1"}, Resolved: true}
	tests := []struct {
		name  string
		tp    *networking.TrafficPolicy
		proxy *model.Proxy
		want  []string
	}{
		{"failoverPriority on the cluster: every registry endpoint is in the proxy's", &networking.TrafficPolicy{OutlierDetection: outlier, LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{
			FailoverPriority: []string{model.LabelCluster, "app"}})}, resolved, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=1 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=1 w=1: 10.0.0.5"}},
		{"no rule: priority 0 everywhere", nil, inR1Z1, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=0 w=1: 10.0.0.5"}},
		{"outlier detection alone: default failover", &networking.TrafficPolicy{OutlierDetection: outlier}, inR1Z1, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=1 w=1: 10.0.0.2", "r1/z2/ p=2 w=2: 10.0.0.3", "r2/z1/ p=3 w=1: 10.0.0.4", "r3/z1/ p=3 w=1: 10.0.0.5"}},
		{"default failover from another region", &networking.TrafficPolicy{OutlierDetection: outlier}, inR2, []string{
			// same region (2) and elsewhere (3), compacted to 0 and 1
			"r1/z1/ p=1 w=1: 10.0.0.1", "r1/z1/s2 p=1 w=1: 10.0.0.2", "r1/z2/ p=1 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=1 w=1: 10.0.0.5"}},
		{"failover: the target region before the others", &networking.TrafficPolicy{OutlierDetection: outlier, LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{
			Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "r2", To: "r3"}, {From: "r1", To: "r2"}}})}, inR2, []string{
			"r1/z1/ p=2 w=1: 10.0.0.1", "r1/z1/s2 p=2 w=1: 10.0.0.2", "r1/z2/ p=2 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=1 w=1: 10.0.0.5"}},
		{"disabled", &networking.TrafficPolicy{OutlierDetection: outlier, LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(false)})}, inR1Z1, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=0 w=1: 10.0.0.5"}},
		{"failover setting without outlier detection: nothing", &networking.TrafficPolicy{LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{
			Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "r1", To: "r2"}}})}, inR1Z1, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=0 w=1: 10.0.0.5"}},
		{"distribute: shares split by weight, the rest emptied", &networking.TrafficPolicy{LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{
			Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{
				{From: "r2/*", To: map[string]uint32{"r2/*": 100}},
				{From: "r1/z1/*", To: map[string]uint32{"r1/z1/*": 70, "r1/z2": 20, "r3/*": 10}},
			}})}, inR1Z1, []string{
			"r1/z1/ p=0 w=35: 10.0.0.1", "r1/z1/s2 p=0 w=35: 10.0.0.2", "r1/z2/ p=0 w=20: 10.0.0.3", "r2/z1/ p=0 w=1: ", "r3/z1/ p=0 w=10: 10.0.0.5"}},
		{"distribute: no rule for the proxy", &networking.TrafficPolicy{LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{
			Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{From: "r3", To: map[string]uint32{"r3": 100}}}})}, inR1Z1, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=0 w=1: 10.0.0.5"}},
		{"failoverPriority: labels in order, localities split", &networking.TrafficPolicy{OutlierDetection: outlier, LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{
			FailoverPriority: []string{"app", "topology.kubernetes.io/region", "version=v1"}})}, inR1Z1, []string{
			// app=a r1 v1: 0; app=a r1 v2: 1; app=a r2: 2; app=b: 3
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=3 w=1: 10.0.0.2", "r1/z2/ p=1 w=2: 10.0.0.3", "r2/z1/ p=2 w=1: 10.0.0.4", "r3/z1/ p=3 w=1: 10.0.0.5"}},
		{"failoverPriority then failover", &networking.TrafficPolicy{OutlierDetection: outlier, LoadBalancer: lbs(&networking.LocalityLoadBalancerSetting{
			FailoverPriority: []string{"app"}, Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "r1", To: "r3"}}})}, inR1Z1, []string{
			// app=a: 0*5 + locality rank (0, 2, 4); app=b: 1*5 + (1, 3)
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=3 w=1: 10.0.0.2", "r1/z2/ p=1 w=2: 10.0.0.3", "r2/z1/ p=2 w=1: 10.0.0.4", "r3/z1/ p=4 w=1: 10.0.0.5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cla := checkedAssignment(t, tc.proxy, geoMesh(tc.tp), ClusterName(Outbound, 80, "", shop))
			if diff := cmp.Diff(tc.want, ranks(cla)); diff != "" {
				t.Errorf("assignment (-want +got):\n%s", diff)
			}
		})
	}
}

// grpcAccepts checks what grpc-go's EDS parser checks about priorities: contiguous from 0, no
// locality twice at one priority.
func grpcAccepts(cla *endpointv3.ClusterLoadAssignment) error {
	seen := map[string]bool{}
	prios := map[uint32]bool{}
	for _, l := range cla.GetEndpoints() {
		if l.GetLoadBalancingWeight().GetValue() == 0 {
			continue
		}
		k := fmt.Sprint(l.GetPriority(), l.GetLocality())
		if seen[k] {
			return fmt.Errorf("locality %v twice at priority %d", l.GetLocality(), l.GetPriority())
		}
		seen[k] = true
		prios[l.GetPriority()] = true
	}
	for i := range uint32(len(prios)) {
		if !prios[i] {
			return fmt.Errorf("priority %d missing", i)
		}
	}
	return nil
}

func TestProxyLocality(t *testing.T) {
	s := geoMesh(nil)
	node := model.Locality{Region: "node-r", Zone: "node-z"}
	tests := []struct {
		name  string
		proxy *model.Proxy
		want  string
	}{
		{"topology labels first", &model.Proxy{IPAddresses: []string{"10.0.0.1"}, Locality: node, Labels: map[string]string{labelRegion: "lr", labelZone: "lz"}}, "lr/lz"},
		{"locality label", &model.Proxy{IPAddresses: []string{"10.0.0.1"}, Locality: node, Labels: map[string]string{labelLocality: "a/b/c"}}, "a/b/c"},
		{"legacy locality label", &model.Proxy{Locality: node, Labels: map[string]string{legacyLocalityLabel: "a/b"}}, "a/b"},
		{"the registry's workload", &model.Proxy{IPAddresses: []string{"10.0.0.3"}, Locality: node}, "r1/z2"},
		{"the node's", &model.Proxy{IPAddresses: []string{"10.7.7.7"}, Locality: node}, "node-r/node-z"},
		{"none", &model.Proxy{}, ""},
		{"resolved by model.WithWorkloadLabels: its own", &model.Proxy{IPAddresses: []string{"10.0.0.3"}, Locality: model.Locality{Region: "r9", Zone: "z9"},
			NodeLocality: node, Resolved: true}, "r9/z9"},
	}
	for _, tc := range tests {
		if got := ProxyLocality(tc.proxy, s).String(); got != tc.want {
			t.Errorf("%s: ProxyLocality = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLocalityClass(t *testing.T) {
	p := &model.Proxy{Type: model.SidecarProxy, Locality: model.Locality{Region: "r1", Zone: "z1"}, Labels: map[string]string{"app": "a"}}
	outlier := &networking.OutlierDetection{}
	tests := []struct {
		name           string
		tp             *networking.TrafficPolicy
		eds, cds       string
		dependent      bool
		otherDependent bool
	}{
		{"no rule", nil, "", "", false, false},
		{"a rule without outlier detection", &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}}}, "", "", false, false},
		{"outlier detection", &networking.TrafficPolicy{OutlierDetection: outlier}, "loc=r1/z1/", "", true, false},
		{"port-level outlier detection", &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
			Port: &networking.PortSelector{Number: 80}, OutlierDetection: outlier}}}, "loc=r1/z1/", "", true, false},
		{"failover priority labels", &networking.TrafficPolicy{OutlierDetection: outlier, LoadBalancer: &networking.LoadBalancerSettings{
			LocalityLbSetting: &networking.LocalityLoadBalancerSetting{FailoverPriority: []string{"app", labelRegion}}}},
			"loc=r1/z1/|app=a|topology.kubernetes.io/region=r1", "", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := geoMesh(tc.tp)
			if got := LocalityClass(EndpointType, p, s); got != tc.eds {
				t.Errorf("EDS class %q, want %q", got, tc.eds)
			}
			if got := LocalityClass(ClusterType, p, s); got != tc.cds {
				t.Errorf("CDS class %q, want %q (no DNS service)", got, tc.cds)
			}
			if got := LocalityClass(ListenerType, p, s); got != "" {
				t.Errorf("LDS class %q, want none", got)
			}
			if got := LocalityDependent(s, shop); got != tc.dependent {
				t.Errorf("LocalityDependent = %v, want %v", got, tc.dependent)
			}
			if LocalityDependent(s, "other.svc") {
				t.Error("a host without a DestinationRule depends on the proxy")
			}
		})
	}
}

// TestLocalityDNSCluster checks that a DNS cluster's inlined endpoints are ranked for the proxy
// and that CDS then has a locality class, and the cluster Envoy's locality-weighted balancing
// when failover is configured.
func TestLocalityDNSCluster(t *testing.T) {
	const host = "geo.example.com"
	svc := &model.Service{Hostname: host, Namespace: "ext", MeshExternal: true, Resolution: model.ResolutionDNS,
		Ports: []model.Port{{Name: "tcp", Number: 9000, Protocol: model.ProtocolTCP}}}
	eps := []*model.Endpoint{
		{Service: host, Address: "a.geo.example.com", Locality: model.Locality{Region: "r1", Zone: "z1"}},
		{Service: host, Address: "b.geo.example.com", Locality: model.Locality{Region: "r2", Zone: "z1"}},
	}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "geo", Namespace: "ext"}, Spec: &networking.DestinationRule{
		Host: host, TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{},
			LoadBalancer: &networking.LoadBalancerSettings{LocalityLbSetting: &networking.LocalityLoadBalancerSetting{
				Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "r2", To: "r1"}}}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: map[string][]*model.Endpoint{host: eps}, Configs: []*istioconfig.Config{dr}})
	name := ClusterName(Outbound, 9000, "", host)
	for _, tc := range []struct {
		region string
		want   []string
	}{
		{"r1", []string{"r1/z1/ p=0 w=1: a.geo.example.com", "r2/z1/ p=1 w=1: b.geo.example.com"}},
		{"r2", []string{"r1/z1/ p=1 w=1: a.geo.example.com", "r2/z1/ p=0 w=1: b.geo.example.com"}},
	} {
		p := &model.Proxy{Type: model.SidecarProxy, Namespace: "ext", Locality: model.Locality{Region: tc.region, Zone: "z1"}}
		rs, err := ForType(ClusterType, p).Generate(p, s, []string{name})
		if err != nil || len(rs) != 1 {
			t.Fatalf("Generate: %d resources, %v", len(rs), err)
		}
		c := rs[0].Message.(*clusterv3.Cluster)
		if diff := cmp.Diff(tc.want, ranks(c.GetLoadAssignment())); diff != "" {
			t.Errorf("proxy in %s (-want +got):\n%s", tc.region, diff)
		}
		if c.GetCommonLbConfig().GetLocalityWeightedLbConfig() == nil {
			t.Error("failover configured, but no locality_weighted_lb_config")
		}
		if _, err := validateDeep(c); err != nil {
			t.Error(err)
		}
		if got := LocalityClass(ClusterType, p, s); got != "loc="+tc.region+"/z1/" {
			t.Errorf("CDS class %q", got)
		}
	}
}

// FuzzLocality ranks and reweights the geo mesh for any proxy locality and any failover,
// failoverPriority or distribute rule: never a panic, and the assignment stays one Envoy and
// grpc-go accept (priorities 0..N without a gap, no locality twice at one priority, valid).
func FuzzLocality(f *testing.F) {
	f.Add("r1/z1", "r1", "r2", "app", "r1/z1/*", "r1/*", uint32(70), true)
	f.Add("", "", "", "", "*", "*", uint32(100), false)
	f.Add("r2/z9/s", "r2", "r3", "topology.istio.io/network", "r2/*", "r3/z1", uint32(1), true)
	f.Add("a/b/c/d", "a", "a", "version=v1", "a//", "**", uint32(0), true)
	f.Fuzz(func(t *testing.T, proxyLoc, from, to, label, distFrom, distTo string, weight uint32, outlier bool) {
		set := &networking.LocalityLoadBalancerSetting{}
		if distFrom != "" {
			set.Distribute = []*networking.LocalityLoadBalancerSetting_Distribute{{From: distFrom, To: map[string]uint32{distTo: weight, "r3/*": 100 - min(weight, 100)}}}
		} else {
			set.Failover = []*networking.LocalityLoadBalancerSetting_Failover{{From: from, To: to}}
			if label != "" {
				set.FailoverPriority = []string{label, "app"}
			}
		}
		_, _, cla, n := geoAssignment(t, &networking.LoadBalancerSettings{LocalityLbSetting: set}, outlier, proxyLoc)
		if n != 5 && len(set.GetDistribute()) == 0 {
			t.Fatalf("%d endpoints, want all 5: %v", n, ranks(cla))
		}
	})
}

// geoAssignment is the geo mesh's shop:80 assignment under lb (and outlier detection when
// outlier) for a proxy at proxyLoc, checked as the fuzzers check it (valid, accepted by grpc-go),
// with the proxy, the snapshot and how many endpoints it keeps.
func geoAssignment(t *testing.T, lb *networking.LoadBalancerSettings, outlier bool, proxyLoc string) (*model.Proxy, *model.Snapshot, *endpointv3.ClusterLoadAssignment, int) {
	t.Helper()
	tp := &networking.TrafficPolicy{LoadBalancer: lb}
	if outlier {
		tp.OutlierDetection = &networking.OutlierDetection{}
	}
	s := geoMesh(tp)
	p := &model.Proxy{Type: model.SidecarProxy, Locality: ParseLocality(proxyLoc), Labels: map[string]string{"app": "a"}}
	cla := checkedAssignment(t, p, s, ClusterName(Outbound, 80, "", shop))
	n := 0
	for _, l := range cla.GetEndpoints() {
		n += len(l.GetLbEndpoints())
	}
	return p, s, cla, n
}

// TestTrafficDistribution checks istiod's locality load balancing for a service's traffic
// distribution: failover on network, region and zone (and subzone, node for PreferSameNode)
// without outlier detection, locality-weighted clusters, no panic threshold, and a
// DestinationRule's localityLbSetting in its place when it has one.
func TestTrafficDistribution(t *testing.T) {
	outlier := &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3), MinHealthPercent: 50}
	inR1Z1 := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.9.0.1"}, Namespace: "store", Locality: model.Locality{Region: "r1", Zone: "z1"},
		Labels: map[string]string{"app": "a"}}
	sameZone := []string{"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=1 w=2: 10.0.0.3", "r2/z1/ p=2 w=1: 10.0.0.4", "r3/z1/ p=2 w=1: 10.0.0.5"}
	flat := []string{"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=0 w=1: 10.0.0.5"}
	tests := []struct {
		name     string
		td       model.TrafficDistribution
		tp       *networking.TrafficPolicy
		want     []string
		weighted bool
		panic    float64 // healthy_panic_threshold
	}{
		{"none", model.TrafficDistributionAny, nil, flat, false, 0},
		{"PreferSameZone without a rule", model.TrafficDistributionPreferSameZone, nil, sameZone, true, 0},
		{"PreferSameNode: the subzone next", model.TrafficDistributionPreferSameNode, nil, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=1 w=1: 10.0.0.2", "r1/z2/ p=2 w=2: 10.0.0.3", "r2/z1/ p=3 w=1: 10.0.0.4", "r3/z1/ p=3 w=1: 10.0.0.5"}, true, 0},
		{"a rule without a locality setting keeps it; no panic threshold", model.TrafficDistributionPreferSameZone, &networking.TrafficPolicy{OutlierDetection: outlier}, sameZone, true, 0},
		{"without it, the rule's minHealthPercent", model.TrafficDistributionAny, &networking.TrafficPolicy{OutlierDetection: outlier}, []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=1 w=1: 10.0.0.2", "r1/z2/ p=2 w=2: 10.0.0.3", "r2/z1/ p=3 w=1: 10.0.0.4", "r3/z1/ p=3 w=1: 10.0.0.5"}, false, 50},
		{"the rule's locality setting wins (no failover without outlier detection)", model.TrafficDistributionPreferSameZone, &networking.TrafficPolicy{
			LoadBalancer: &networking.LoadBalancerSettings{LocalityLbSetting: &networking.LocalityLoadBalancerSetting{
				Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "r1", To: "r2"}}}}}, flat, false, 0},
		{"the rule turns it off", model.TrafficDistributionPreferSameZone, &networking.TrafficPolicy{
			LoadBalancer: &networking.LoadBalancerSettings{LocalityLbSetting: &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(false)}}}, flat, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := geoMeshDistribution(tc.tp, tc.td)
			name := ClusterName(Outbound, 80, "", shop)
			rs, err := ForType(EndpointType, inR1Z1).Generate(inR1Z1, s, []string{name})
			if err != nil || len(rs) != 1 {
				t.Fatalf("EDS: %d resources, %v", len(rs), err)
			}
			cla := rs[0].Message.(*endpointv3.ClusterLoadAssignment)
			if diff := cmp.Diff(tc.want, ranks(cla)); diff != "" {
				t.Errorf("assignment (-want +got):\n%s", diff)
			}
			if err := grpcAccepts(cla); err != nil {
				t.Error(err)
			}
			rs, err = ForType(ClusterType, inR1Z1).Generate(inR1Z1, s, []string{name})
			if err != nil || len(rs) != 1 {
				t.Fatalf("CDS: %d resources, %v", len(rs), err)
			}
			c := rs[0].Message.(*clusterv3.Cluster)
			if got := c.GetCommonLbConfig().GetLocalityWeightedLbConfig() != nil; got != tc.weighted {
				t.Errorf("locality_weighted_lb_config %v, want %v", got, tc.weighted)
			}
			if got := c.GetCommonLbConfig().GetHealthyPanicThreshold(); got == nil || got.GetValue() != tc.panic {
				t.Errorf("healthy_panic_threshold %v, want %v", got, tc.panic)
			}
			if _, err := validateDeep(c); err != nil {
				t.Error(err)
			}
			if got := LocalityDependent(s, shop); got != (tc.td != model.TrafficDistributionAny || tc.tp != nil) {
				t.Errorf("LocalityDependent = %v", got)
			}
		})
	}
	// The assignments of a service with a traffic distribution are the proxy's: one per
	// locality and topology labels.
	s := geoMeshDistribution(nil, model.TrafficDistributionPreferSameZone)
	want := "loc=r1/z1/|topology.istio.io/network=|topology.kubernetes.io/region=r1|topology.kubernetes.io/zone=z1"
	if got := LocalityClass(EndpointType, inR1Z1, s); got != want {
		t.Errorf("EDS locality class %q, want %q", got, want)
	}
}

// checkedAssignment is p's EDS assignment of cluster name in s, checked as Envoy (deep
// validation) and grpc-go check it; what they refuse is an error of t.
func checkedAssignment(t *testing.T, p *model.Proxy, s *model.Snapshot, name string) *endpointv3.ClusterLoadAssignment {
	t.Helper()
	rs, err := ForType(EndpointType, p).Generate(p, s, []string{name})
	if err != nil || len(rs) != 1 {
		t.Fatalf("EDS: %d resources, %v", len(rs), err)
	}
	cla := rs[0].Message.(*endpointv3.ClusterLoadAssignment)
	if _, err := validateDeep(cla); err != nil {
		t.Error(err)
	}
	if err := grpcAccepts(cla); err != nil {
		t.Errorf("grpc-go would reject %v: %v", ranks(cla), err)
	}
	return cla
}
