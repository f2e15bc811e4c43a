package gen

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// withRule replaces the geo mesh's DestinationRule with dr (its host is the shop).
func withRule(s *model.Snapshot, td model.TrafficDistribution, dr *networking.DestinationRule) *model.Snapshot {
	svcs := s.Services()
	svc := *svcs[0]
	svc.TrafficDistribution = td
	dr.Host = shop
	cfg := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "shop", Namespace: "store"}, Spec: dr}
	return model.NewSnapshot(2, model.SnapshotInput{Services: []*model.Service{&svc}, Endpoints: map[string][]*model.Endpoint{shop: s.Endpoints(shop)},
		Configs: []*istioconfig.Config{cfg}})
}

// TestZoneAwareLoadBalancing checks istiod's zoneAwareLbSetting: the assignment ranked by
// region only (after failoverPriority), with or without outlier detection, the cluster's
// zone_aware_lb_config, enabled: false (routing_enabled 0 %, assignment untouched), port-level
// settings and subsets, and the locality class the ADS server caches by.
func TestZoneAwareLoadBalancing(t *testing.T) {
	outlier := &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3), MinHealthPercent: 20}
	za := func(z *networking.ZoneAwareLoadBalancerSetting) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{ZoneAwareLbSetting: z}
	}
	inR1Z1 := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.9.0.1"}, Namespace: "store", Locality: model.Locality{Region: "r1", Zone: "z1"},
		Labels: map[string]string{"app": "a"}}
	flat := []string{"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=0 w=1: 10.0.0.4", "r3/z1/ p=0 w=1: 10.0.0.5"}
	byRegion := []string{"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=1 w=1: 10.0.0.4", "r3/z1/ p=1 w=1: 10.0.0.5"}
	// zac is the zone_aware_lb_config wanted: nil none; routing nil: Envoy's default.
	type zac struct {
		minSize *uint64
		off     bool
	}
	three := uint64(3)
	tests := []struct {
		name    string
		td      model.TrafficDistribution
		dr      *networking.DestinationRule
		subset  string
		want    []string
		config  *zac
		panic   float64 // healthy_panic_threshold
		class   string  // EDS locality class
		noClass bool    // the host's assignments do not depend on the proxy
	}{
		{name: "no outlier detection needed: the proxy's region first", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{})}}, want: byRegion, config: &zac{}, class: "region=r1"},
		{name: "minClusterSize and outlier detection", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: outlier,
			LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{MinClusterSize: wrapperspb.UInt32(3)})}}, want: byRegion, config: &zac{minSize: &three}, panic: 20, class: "region=r1"},
		{name: "enabled false: routing off, assignment untouched", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: outlier,
			LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{Enabled: wrapperspb.Bool(false), MinClusterSize: wrapperspb.UInt32(3),
				Failover: []*networking.ZoneAwareLoadBalancerSetting_Failover{{From: "r1", To: "r3"}}})}}, want: flat, config: &zac{minSize: &three, off: true}, panic: 20, noClass: true},
		{name: "failover: the first rule from the proxy's region names the next one", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{Failover: []*networking.ZoneAwareLoadBalancerSetting_Failover{
				{From: "r2", To: "r1"}, {From: "r1", To: "r3"}, {From: "r1", To: "r2"}}})}}, want: []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=2 w=1: 10.0.0.4", "r3/z1/ p=1 w=1: 10.0.0.5"}, config: &zac{}, class: "region=r1"},
		{name: "failoverPriority, then regions", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{FailoverPriority: []string{"app"}})}}, want: []string{
			// app=a: 0*3 + region rank (0, 2); app=b: 1*3 + (0, 2)
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=2 w=1: 10.0.0.2", "r1/z2/ p=0 w=2: 10.0.0.3", "r2/z1/ p=1 w=1: 10.0.0.4", "r3/z1/ p=3 w=1: 10.0.0.5"}, config: &zac{}, class: "region=r1|app=a"},
		{name: "wins over the traffic distribution", td: model.TrafficDistributionPreferSameZone, dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{})}}, want: byRegion, config: &zac{},
			class: "loc=r1/z1/|topology.istio.io/network=|topology.kubernetes.io/region=r1|topology.kubernetes.io/zone=z1"},
		{name: "port-level", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
			Port: &networking.PortSelector{Number: 80}, LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{})}}}}, want: byRegion, config: &zac{}, class: "region=r1"},
		{name: "port-level for another port", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
			Port: &networking.PortSelector{Number: 81}, LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{})}}}}, want: flat, class: "region=r1"},
		{name: "a subset's", dr: &networking.DestinationRule{Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"},
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{})}}}}, subset: "v1", want: []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r2/z1/ p=1 w=1: 10.0.0.4"}, config: &zac{}, class: "region=r1"},
		{name: "a subset's load balancer replaces the rule's", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{})}, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"},
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{
				Simple: networking.LoadBalancerSettings_ROUND_ROBIN}}}}}}, subset: "v1", want: []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=0 w=1: 10.0.0.2", "r2/z1/ p=0 w=1: 10.0.0.4"}, class: "region=r1"},
		// The subset keeps the rule's outlier detection: its simple load balancer fails over by
		// region, zone and subzone (istiod's mesh-wide locality default), so the class is the
		// whole locality, not the region (two zones' proxies must not share the assignment).
		{name: "a subset's load balancer replaces the rule's, its outlier detection stays", dr: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{
			OutlierDetection: outlier, LoadBalancer: za(&networking.ZoneAwareLoadBalancerSetting{})}, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"},
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{
				Simple: networking.LoadBalancerSettings_LEAST_REQUEST}}}}}}, subset: "v1", want: []string{
			"r1/z1/ p=0 w=1: 10.0.0.1", "r1/z1/s2 p=1 w=1: 10.0.0.2", "r2/z1/ p=2 w=1: 10.0.0.4"}, panic: 20, class: "loc=r1/z1/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := withRule(geoMesh(nil), tc.td, tc.dr)
			name := ClusterName(Outbound, 80, tc.subset, shop)
			cla := checkedAssignment(t, inR1Z1, s, name)
			if diff := cmp.Diff(tc.want, ranks(cla)); diff != "" {
				t.Errorf("assignment (-want +got):\n%s", diff)
			}
			rs, err := ForType(ClusterType, inR1Z1).Generate(inR1Z1, s, []string{name})
			if err != nil || len(rs) != 1 {
				t.Fatalf("CDS: %d resources, %v", len(rs), err)
			}
			c := rs[0].Message.(*clusterv3.Cluster)
			if _, err := validateDeep(c); err != nil {
				t.Error(err)
			}
			lbc := c.GetCommonLbConfig()
			if lbc.GetLocalityWeightedLbConfig() != nil {
				t.Error("locality_weighted_lb_config set")
			}
			got := lbc.GetZoneAwareLbConfig()
			switch {
			case tc.config == nil && got != nil:
				t.Errorf("zone_aware_lb_config %v, want none", got)
			case tc.config != nil && got == nil:
				t.Error("no zone_aware_lb_config")
			case tc.config != nil:
				if (got.GetMinClusterSize() != nil) != (tc.config.minSize != nil) || (tc.config.minSize != nil && got.GetMinClusterSize().GetValue() != *tc.config.minSize) {
					t.Errorf("min_cluster_size %v, want %v", got.GetMinClusterSize(), tc.config.minSize)
				}
				if off := got.GetRoutingEnabled() != nil && got.GetRoutingEnabled().GetValue() == 0; off != tc.config.off || (!off && got.GetRoutingEnabled() != nil) {
					t.Errorf("routing_enabled %v, want off %v", got.GetRoutingEnabled(), tc.config.off)
				}
			}
			if v := lbc.GetHealthyPanicThreshold(); v == nil || v.GetValue() != tc.panic {
				t.Errorf("healthy_panic_threshold %v, want %v", v, tc.panic)
			}
			if got := LocalityDependent(s, shop); got == tc.noClass {
				t.Errorf("LocalityDependent = %v", got)
			}
			if got := LocalityClass(EndpointType, inR1Z1, s); got != tc.class {
				t.Errorf("EDS locality class %q, want %q", got, tc.class)
			}
		})
	}
}

// TestZoneAwareDNSCluster checks that a DNS cluster's inlined endpoints are ranked by region
// for the proxy.
func TestZoneAwareDNSCluster(t *testing.T) {
	const host = "geo.example.com"
	svc := &model.Service{Hostname: host, Namespace: "ext", MeshExternal: true, Resolution: model.ResolutionDNS,
		Ports: []model.Port{{Name: "tcp", Number: 9000, Protocol: model.ProtocolTCP}}}
	eps := []*model.Endpoint{
		{Service: host, Address: "a.geo.example.com", Locality: model.Locality{Region: "r1", Zone: "z1"}},
		{Service: host, Address: "b.geo.example.com", Locality: model.Locality{Region: "r1", Zone: "z2"}},
		{Service: host, Address: "c.geo.example.com", Locality: model.Locality{Region: "r2", Zone: "z1"}},
	}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "geo", Namespace: "ext"}, Spec: &networking.DestinationRule{
		Host: host, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{ZoneAwareLbSetting: &networking.ZoneAwareLoadBalancerSetting{}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: map[string][]*model.Endpoint{host: eps}, Configs: []*istioconfig.Config{dr}})
	p := &model.Proxy{Type: model.SidecarProxy, Namespace: "ext", Locality: model.Locality{Region: "r2", Zone: "z7"}}
	rs, err := ForType(ClusterType, p).Generate(p, s, []string{ClusterName(Outbound, 9000, "", host)})
	if err != nil || len(rs) != 1 {
		t.Fatalf("Generate: %d resources, %v", len(rs), err)
	}
	c := rs[0].Message.(*clusterv3.Cluster)
	want := []string{"r1/z1/ p=1 w=1: a.geo.example.com", "r1/z2/ p=1 w=1: b.geo.example.com", "r2/z1/ p=0 w=1: c.geo.example.com"}
	if diff := cmp.Diff(want, ranks(c.GetLoadAssignment())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if c.GetCommonLbConfig().GetZoneAwareLbConfig() == nil {
		t.Error("no zone_aware_lb_config")
	}
	if _, err := validateDeep(c); err != nil {
		t.Error(err)
	}
	if got := LocalityClass(ClusterType, p, s); got != "region=r2" {
		t.Errorf("CDS class %q", got)
	}
}

// FuzzZoneAware ranks the geo mesh for any proxy locality and any zone-aware setting: never a
// panic, every endpoint kept (zone-aware ranking drops none), and an assignment Envoy and
// grpc-go accept (priorities 0..N without a gap, no locality twice at one priority, valid).
func FuzzZoneAware(f *testing.F) {
	f.Add("r1/z1", "r1", "r2", "app", uint32(0), true, false)
	f.Add("", "", "", "", uint32(1), false, true)
	f.Add("r3/z1/s", "r3", "r1", "version=v1", uint32(4), true, true)
	f.Add("r9", "r9", "r9", "topology.istio.io/network", uint32(2), true, false)
	f.Fuzz(func(t *testing.T, proxyLoc, from, to, label string, minSize uint32, enabled, outlier bool) {
		set := &networking.ZoneAwareLoadBalancerSetting{Enabled: wrapperspb.Bool(enabled),
			Failover: []*networking.ZoneAwareLoadBalancerSetting_Failover{{From: from, To: to}}}
		if minSize > 0 {
			set.MinClusterSize = wrapperspb.UInt32(minSize)
		}
		if label != "" {
			set.FailoverPriority = []string{label, "app"}
		}
		p, s, cla, n := geoAssignment(t, &networking.LoadBalancerSettings{ZoneAwareLbSetting: set}, outlier, proxyLoc)
		if n != 5 {
			t.Fatalf("%d endpoints, want all 5: %v", n, ranks(cla))
		}
		rs, err := ForType(ClusterType, p).Generate(p, s, []string{ClusterName(Outbound, 80, "", shop)})
		if err != nil || len(rs) != 1 {
			t.Fatalf("CDS: %d resources, %v", len(rs), err)
		}
		if _, err := validateDeep(rs[0].Message); err != nil {
			t.Fatal(err)
		}
	})
}
