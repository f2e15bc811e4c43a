package gen

import (
	"math"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Locality load balancing, with istiod's rules (its mesh config's default localityLbSetting,
// {enabled: true}, which xdslab does not let a mesh config change):
//
//   - A cluster's effective setting is its DestinationRule's localityLbSetting (the traffic
//     policy in effect for the port and subset), else the mesh default; enabled: false turns it
//     off.
//   - distribute: the first rule whose from matches the proxy's locality reweights the
//     localities its to names (each share split over the matching localities in proportion to
//     their weights, rounded up) and empties the others. It applies with or without outlier
//     detection.
//   - Otherwise, only when outlier detection is in effect (without it Envoy never fails over):
//     failoverPriority ranks each endpoint by how many of the listed labels, in order, it
//     shares with the proxy (splitting a locality into one group per rank), then failover, or
//     the default, ranks each locality against the proxy's: 0 same subzone, 1 same zone,
//     2 same region, 3 elsewhere, 4 for a region that is not the failover target of the
//     proxy's region. Priorities are compacted to 0..N.
//
//   - A service's traffic distribution (model.TrafficDistribution), when its rule sets no
//     localityLbSetting or zoneAwareLbSetting, stands for a setting with failoverPriority on
//     network, region and zone (PreferSameZone; PreferSameNode adds subzone and
//     kubernetes.io/hostname), applied with or without outlier detection.
//
//   - A DestinationRule's zoneAwareLbSetting takes precedence over its localityLbSetting and
//     over the traffic distribution. Unless it says enabled: false, it ranks the assignment
//     with or without outlier detection: failoverPriority as above, then each locality by
//     region only (0 the proxy's region, 1 the failover target of the proxy's region, 2
//     elsewhere), so that Envoy's zone-aware routing balances the zones of the proxy's region
//     at priority 0; the cluster gets zone_aware_lb_config (min_cluster_size from
//     minClusterSize). With enabled: false the assignment is left as it is and the cluster's
//     zone_aware_lb_config says routing_enabled 0 %.
//
// The assignment then depends on who asks: LocalityClass names the part of the proxy it reads
// so that the ADS server caches one assignment per (cluster, class), not per proxy, and only for
// the hosts where it matters (LocalityDependent).

// Topology labels istiod adds to proxies' and endpoints' labels from their localities
// (failoverPriority compares them).
const (
	labelRegion   = "topology.kubernetes.io/region"
	labelZone     = "topology.kubernetes.io/zone"
	labelSubzone  = "topology.istio.io/subzone"
	labelLocality = "topology.istio.io/locality"
	// legacyLocalityLabel is the older form of labelLocality.
	legacyLocalityLabel = "istio-locality"
	labelNetwork        = "topology.istio.io/network"
)

// ProxyLocality is the locality istiod gives p in s: p.Locality for a proxy whose labels
// model.WithWorkloadLabels resolved (p.Resolved); for one built by hand, its topology labels
// (region, zone, subzone; else topology.istio.io/locality or istio-locality,
// "region/zone/subzone"), else the locality of its workload in the registry (the first
// endpoint at its address that has one), else the locality its node reports.
func ProxyLocality(p *model.Proxy, s *model.Snapshot) model.Locality {
	if p == nil {
		return model.Locality{}
	}
	if p.Resolved {
		return p.Locality // model.WithWorkloadLabels resolved it, as istiod does
	}
	r, okR := p.Labels[labelRegion]
	z, okZ := p.Labels[labelZone]
	sz, okS := p.Labels[labelSubzone]
	if okR || okZ || okS {
		return model.Locality{Region: r, Zone: z, SubZone: sz}
	}
	for _, k := range []string{labelLocality, legacyLocalityLabel} {
		if v := p.Labels[k]; v != "" {
			return ParseLocality(v)
		}
	}
	if s != nil {
		for _, ip := range p.IPAddresses {
			for _, ep := range s.EndpointsAt(ip) {
				if ep.Locality != (model.Locality{}) {
					return ep.Locality
				}
			}
		}
	}
	return p.Locality
}

// ParseLocality splits "region/zone/subzone" (zone and subzone may be missing), as istiod reads
// a locality label or a WorkloadEntry's locality.
func ParseLocality(v string) model.Locality {
	r, z, sz := splitRule(v)
	return model.Locality{Region: r, Zone: z, SubZone: sz}
}

// localityFacts is what a snapshot's configs say about locality load balancing, computed once
// per config generation (model.Snapshot.Derived).
type localityFacts struct {
	// hosts are the services some DestinationRule (exact or wildcard, whoever it is exported
	// to) could give a proxy-dependent assignment (outlier detection or distribute anywhere in
	// it), and those with a traffic distribution. A superset is safe: it only splits the
	// cache more than needed.
	hosts map[string]bool
	// dns is set when one of hosts is a DNS service: CDS inlines its endpoints.
	dns bool
	// labels are the failoverPriority labels of those rules and distributions, sorted and
	// unique.
	labels []string
	// regionOnly is set when all of hosts depend on the proxy through zoneAwareLbSetting
	// only, which reads the proxy's region and not its zone or subzone.
	regionOnly bool
}

type localityFactsKey struct{}

func localityFactsOf(s *model.Snapshot) *localityFacts {
	return s.Derived(localityFactsKey{}, func() any { return computeLocalityFacts(s) }).(*localityFacts)
}

func computeLocalityFacts(s *model.Snapshot) *localityFacts {
	f := &localityFacts{}
	// anyLocality: some rule reads more of the proxy's locality than its region (locality
	// failover or distribute, or a traffic distribution below).
	anyLocality := false
	var exact map[string]bool
	var wild []string
	for _, c := range s.Configs(istioconfig.KindDestinationRule) {
		dr := drSpec(c)
		if dr == nil || dr.GetHost() == "" {
			continue
		}
		sensitive := false
		// Outlier detection anywhere in the rule: a level's load balancer without a
		// zone-aware setting may inherit it from another level (a subset's simple load
		// balancer replaces the rule's zone-aware one, its outlier detection stays), and then
		// fails over by region, zone and subzone (istiod's mesh-wide locality default).
		ruleOD := false
		visitPolicies(dr, func(tp *networking.TrafficPolicy) {
			ruleOD = ruleOD || tp.GetOutlierDetection() != nil || slices.ContainsFunc(tp.GetPortLevelSettings(), func(pl *networking.TrafficPolicy_PortTrafficPolicy) bool {
				return pl.GetOutlierDetection() != nil
			})
		})
		visit := func(od *networking.OutlierDetection, lb *networking.LoadBalancerSettings) {
			if za := lb.GetZoneAwareLbSetting(); za != nil {
				// It wins over the level's localityLbSetting and outlier detection (a
				// subset that inherits it with outlier detection of its own only splits the
				// cache more than needed).
				if _, routing := (policy{lb: lb}).zoneAware(); routing {
					sensitive = true
					f.labels = append(f.labels, za.GetFailoverPriority()...)
				}
				return
			}
			if od != nil || ruleOD && lb != nil || len(lb.GetLocalityLbSetting().GetDistribute()) > 0 {
				sensitive = true
				anyLocality = true
			}
			f.labels = append(f.labels, lb.GetLocalityLbSetting().GetFailoverPriority()...)
		}
		visitPolicies(dr, func(tp *networking.TrafficPolicy) {
			visit(tp.GetOutlierDetection(), tp.GetLoadBalancer())
			for _, pl := range tp.GetPortLevelSettings() {
				visit(pl.GetOutlierDetection(), pl.GetLoadBalancer())
			}
		})
		if !sensitive {
			continue
		}
		h := resolveHost(dr.GetHost(), c.Namespace)
		if strings.HasPrefix(h, "*") {
			wild = append(wild, h)
			continue
		}
		if exact == nil {
			exact = map[string]bool{}
		}
		exact[h] = true
	}
	for _, svc := range s.Services() {
		// A traffic distribution makes the service's assignments the proxy's (unless its rule
		// turns locality load balancing off: a superset is safe).
		fp := distributionFailover(svc.TrafficDistribution)
		f.labels = append(f.labels, fp...)
		anyLocality = anyLocality || fp != nil
		dep := fp != nil || exact[svc.Hostname] || slices.ContainsFunc(wild, func(p string) bool { return hostMatches(p, svc.Hostname) })
		if dep {
			if f.hosts == nil {
				f.hosts = map[string]bool{}
			}
			f.hosts[svc.Hostname] = true
			f.dns = f.dns || svc.Resolution == model.ResolutionDNS
		}
	}
	f.regionOnly = !anyLocality
	slices.Sort(f.labels)
	f.labels = slices.Compact(f.labels)
	return f
}

// visitPolicies calls f with a DestinationRule's traffic policy and every subset's.
func visitPolicies(dr *networking.DestinationRule, f func(*networking.TrafficPolicy)) {
	if tp := dr.GetTrafficPolicy(); tp != nil {
		f(tp)
	}
	for _, ss := range dr.GetSubsets() {
		if tp := ss.GetTrafficPolicy(); tp != nil {
			f(tp)
		}
	}
}

// LocalityDependent reports whether the assignments of host's clusters may depend on the proxy
// that asks (its LocalityClass).
func LocalityDependent(s *model.Snapshot, host string) bool {
	return s != nil && localityFactsOf(s).hosts[host]
}

// LocalityClass names what the generators of typeURL read of p for locality load balancing in
// s: "" when nothing (no DestinationRule makes an assignment depend on the proxy; for CDS, none
// does for a DNS service, whose endpoints CDS inlines; other types never), else the proxy's
// locality (its region alone when only zoneAwareLbSetting rules make assignments depend on
// it) and the values of its labels that failoverPriority rules name. Proxies of one class get
// the same assignments.
func LocalityClass(typeURL string, p *model.Proxy, s *model.Snapshot) string {
	if s == nil || (typeURL != EndpointType && typeURL != ClusterType) {
		return ""
	}
	f := localityFactsOf(s)
	if len(f.hosts) == 0 || (typeURL == ClusterType && !f.dns) {
		return ""
	}
	loc := ProxyLocality(p, s)
	var b strings.Builder
	if f.regionOnly {
		b.WriteString("region=" + loc.Region)
	} else {
		b.WriteString("loc=" + loc.Region + "/" + loc.Zone + "/" + loc.SubZone)
	}
	if len(f.labels) > 0 {
		labels := proxyTopologyLabels(p, loc)
		for _, l := range f.labels {
			b.WriteString("|" + l + "=" + labels(l))
		}
	}
	return b.String()
}

// proxyTopologyLabels returns a lookup of p's labels with its locality's topology labels
// added, as istiod augments them.
func proxyTopologyLabels(p *model.Proxy, loc model.Locality) func(string) string {
	var labels map[string]string
	if p != nil {
		labels = p.Labels
	}
	return func(k string) string { return topologyLabel(labels, loc, k) }
}

func topologyLabel(labels map[string]string, loc model.Locality, k string) string {
	switch {
	case k == labelRegion && loc.Region != "":
		return loc.Region
	case k == labelZone && loc.Zone != "":
		return loc.Zone
	case k == labelSubzone && loc.SubZone != "":
		return loc.SubZone
	}
	return labels[k]
}

// endpointTopologyLabel is the value of label k of ep as istiod's registries label their
// workloads: its locality's region, zone and subzone, and the registry's cluster.
func endpointTopologyLabel(ep *model.Endpoint, k string) string {
	if k == model.LabelCluster {
		return model.RegistryClusterID
	}
	return topologyLabel(ep.Labels, ep.Locality, k)
}

// labelHostname is the node label istiod adds to endpoints' labels (a Pod's node) and to
// proxies' (their NODE_NAME); xdslab's model carries both (model.RegistryLabels,
// model.WithWorkloadLabels).
const labelHostname = "kubernetes.io/hostname"

// distributionFailover is the failoverPriority a traffic distribution stands for.
func distributionFailover(d model.TrafficDistribution) []string {
	switch d {
	case model.TrafficDistributionPreferSameZone:
		return []string{labelNetwork, labelRegion, labelZone}
	case model.TrafficDistributionPreferSameNode:
		return []string{labelNetwork, labelRegion, labelZone, labelSubzone, labelHostname}
	}
	return nil
}

// locality returns the locality load balancing setting in effect under p, as istiod resolves
// it: the rule's localityLbSetting, none when it says enabled: false or the rule has a
// zoneAwareLbSetting (which takes precedence, see zoneAware), else the one the service's
// traffic distribution stands for (forced: failover without outlier detection), else the mesh
// default (nil, on).
func (p policy) locality() (set *networking.LocalityLoadBalancerSetting, forced, on bool) {
	if p.lb.GetZoneAwareLbSetting() != nil {
		return nil, false, false
	}
	if set := p.lb.GetLocalityLbSetting(); set != nil {
		if set.GetEnabled() != nil && !set.GetEnabled().GetValue() {
			return nil, false, false
		}
		return set, false, true
	}
	if fp := distributionFailover(p.distribution); fp != nil {
		return &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(true), FailoverPriority: fp}, true, true
	}
	return nil, false, true
}

// zoneAware returns the rule's zoneAwareLbSetting under p (nil: none), and whether it routes
// by zone (it does unless it says enabled: false).
func (p policy) zoneAware() (set *networking.ZoneAwareLoadBalancerSetting, routing bool) {
	set = p.lb.GetZoneAwareLbSetting()
	if set == nil {
		return nil, false
	}
	return set, set.GetEnabled() == nil || set.GetEnabled().GetValue()
}

// zoneAwareConfig is the cluster's zone_aware_lb_config under p, as istiod sets it (nil: the
// rule has no zoneAwareLbSetting): its min_cluster_size, and routing_enabled 0 % when the
// setting says enabled: false (Envoy's default is 100 %).
func (p policy) zoneAwareConfig() *clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig {
	set, routing := p.zoneAware()
	if set == nil {
		return nil
	}
	out := &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig{}
	if n := set.GetMinClusterSize(); n != nil {
		out.MinClusterSize = wrapperspb.UInt64(uint64(n.GetValue()))
	}
	if !routing {
		out.RoutingEnabled = &typev3.Percent{}
	}
	return out
}

// localityLB is the locality load balancing in effect for one cluster and one proxy.
type localityLB struct {
	setting  *networking.LocalityLoadBalancerSetting  // nil: the mesh default (enabled, nothing set)
	zone     *networking.ZoneAwareLoadBalancerSetting // set: zone-aware instead of setting
	failover bool                                     // outlier detection is in effect
	locality model.Locality
	labels   func(string) string // the proxy's labels, topology labels added
}

// localityPolicy returns the locality load balancing of a cluster under pol for proxy p, or
// nil when it leaves the assignment as it is.
//
// A zoneAwareLbSetting, which istiod prefers to localityLbSetting, ranks the assignment with
// or without outlier detection, unless it says enabled: false (then the assignment is left as
// it is).
func localityPolicy(pol policy, p *model.Proxy, s *model.Snapshot) *localityLB {
	if za, routing := pol.zoneAware(); za != nil {
		if !routing {
			return nil
		}
		loc := ProxyLocality(p, s)
		return &localityLB{zone: za, locality: loc, labels: proxyTopologyLabels(p, loc)}
	}
	set, forced, on := pol.locality()
	if !on {
		return nil
	}
	failover := forced || pol.outlier != nil
	if len(set.GetDistribute()) == 0 && !failover {
		return nil
	}
	loc := ProxyLocality(p, s)
	return &localityLB{setting: set, failover: failover, locality: loc, labels: proxyTopologyLabels(p, loc)}
}

// apply ranks or reweights cla's localities for the proxy. eps[i] are the model endpoints of
// cla.Endpoints[i]'s LbEndpoints, in order (failoverPriority reads their labels).
func (l *localityLB) apply(cla *endpointv3.ClusterLoadAssignment, eps [][]*model.Endpoint) {
	if l == nil || len(cla.GetEndpoints()) == 0 {
		return
	}
	if l.zone != nil {
		if fp := l.zone.GetFailoverPriority(); len(fp) > 0 {
			l.failoverPriority(cla, eps, fp)
		}
		l.failoverByRegion(cla, l.zone.GetFailover())
		return
	}
	if d := l.setting.GetDistribute(); len(d) > 0 {
		l.distribute(cla, d)
		return
	}
	if !l.failover {
		return
	}
	if fp := l.setting.GetFailoverPriority(); len(fp) > 0 {
		l.failoverPriority(cla, eps, fp)
		if len(l.setting.GetFailover()) == 0 {
			return
		}
	}
	l.failoverByLocality(cla, l.setting.GetFailover())
}

// localityMatches reports whether rule ("region/zone/subzone", each part possibly "*", zone and
// subzone possibly omitted) covers loc.
func localityMatches(loc model.Locality, rule string) bool {
	r, z, sz := splitRule(rule)
	return (r == "*" || r == loc.Region) && (z == "*" || z == "" || z == loc.Zone) && (sz == "*" || sz == "" || sz == loc.SubZone)
}

func splitRule(rule string) (string, string, string) {
	parts := strings.SplitN(rule, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

func lbLocality(le *endpointv3.LocalityLbEndpoints) model.Locality {
	l := le.GetLocality()
	return model.Locality{Region: l.GetRegion(), Zone: l.GetZone(), SubZone: l.GetSubZone()}
}

// distribute applies the first rule whose from covers the proxy. Its destinations are taken in
// sorted order (istiod takes them in map order, which matters only when two overlap).
func (l *localityLB) distribute(cla *endpointv3.ClusterLoadAssignment, rules []*networking.LocalityLoadBalancerSetting_Distribute) {
	for _, rule := range rules {
		if rule == nil || !localityMatches(l.locality, rule.GetFrom()) {
			continue
		}
		unmatched := make([]bool, len(cla.Endpoints))
		for i := range unmatched {
			unmatched[i] = true
		}
		for _, to := range slicesSortedKeys(rule.GetTo()) {
			share := rule.GetTo()[to]
			var idx []int
			var total uint64
			for i, le := range cla.Endpoints {
				if unmatched[i] && localityMatches(lbLocality(le), to) {
					unmatched[i] = false
					idx = append(idx, i)
					total += uint64(max(le.GetLoadBalancingWeight().GetValue(), 1))
				}
			}
			for _, i := range idx {
				w := uint64(max(cla.Endpoints[i].GetLoadBalancingWeight().GetValue(), 1))
				if v := math.Ceil(float64(w*uint64(share)) / float64(total)); v > 0 {
					cla.Endpoints[i].LoadBalancingWeight = wrapperspb.UInt32(uint32(min(v, math.MaxUint32)))
				}
			}
		}
		for i, um := range unmatched {
			if um {
				cla.Endpoints[i].LbEndpoints = nil // receives nothing
			}
		}
		return
	}
}

func slicesSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// failoverByLocality ranks each locality against the proxy's (on top of a failoverPriority
// rank), then compacts the priorities.
func (l *localityLB) failoverByLocality(cla *endpointv3.ClusterLoadAssignment, failover []*networking.LocalityLoadBalancerSetting_Failover) {
	for _, le := range cla.Endpoints {
		loc := lbLocality(le)
		rank := uint32(3)
		switch {
		case loc.Region != l.locality.Region:
			for _, f := range failover {
				if f.GetFrom() == l.locality.Region {
					if loc.Region != f.GetTo() {
						rank = 4
					}
					break
				}
			}
		case loc.Zone != l.locality.Zone:
			rank = 2
		case loc.SubZone != l.locality.SubZone:
			rank = 1
		default:
			rank = 0
		}
		le.Priority = le.Priority*5 + rank
	}
	compactPriorities(cla.Endpoints)
}

// failoverByRegion ranks each locality by region alone, for zone-aware routing (on top of a
// failoverPriority rank): 0 the proxy's region, 1 the target of the first failover rule from
// the proxy's region, 2 any other. Then it compacts the priorities.
func (l *localityLB) failoverByRegion(cla *endpointv3.ClusterLoadAssignment, failover []*networking.ZoneAwareLoadBalancerSetting_Failover) {
	for _, le := range cla.Endpoints {
		region := le.GetLocality().GetRegion()
		rank := uint32(0)
		if region != l.locality.Region {
			rank = 2
			if i := slices.IndexFunc(failover, func(f *networking.ZoneAwareLoadBalancerSetting_Failover) bool {
				return f.GetFrom() == l.locality.Region
			}); i >= 0 && failover[i].GetTo() == region {
				rank = 1
			}
		}
		le.Priority = le.Priority*3 + rank
	}
	compactPriorities(cla.Endpoints)
}

// compactPriorities renumbers priorities 0..N in order, without gaps (Envoy and grpc-go want
// them contiguous).
func compactPriorities(les []*endpointv3.LocalityLbEndpoints) {
	ps := make([]uint32, 0, len(les))
	for _, le := range les {
		ps = append(ps, le.Priority)
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	for _, le := range les {
		i, _ := slices.BinarySearch(ps, le.Priority)
		le.Priority = uint32(i)
	}
}

// failoverPriority splits each locality by how far down the list of labels its endpoints
// agree with the proxy: 0 when all agree, len-j when label j is the first that differs (a
// leading network label that differs ranks after everything instead). A "label=value" entry
// compares with value instead of the proxy's label.
func (l *localityLB) failoverPriority(cla *endpointv3.ClusterLoadAssignment, eps [][]*model.Endpoint, fp []string) {
	names := make([]string, len(fp))
	want := make([]string, len(fp))
	for j, e := range fp {
		name, val, override := strings.Cut(e, "=")
		names[j] = name
		if override {
			want[j] = val
		} else {
			want[j] = l.labels(name)
		}
	}
	network := fp[0] == labelNetwork
	var out []*endpointv3.LocalityLbEndpoints
	for i, le := range cla.Endpoints {
		byRank := map[int][]*endpointv3.LbEndpoint{}
		for k, lb := range le.LbEndpoints {
			ep := eps[i][k]
			rank, adjust := 0, 0
			for j, name := range names {
				if endpointTopologyLabel(ep, name) == want[j] {
					continue
				}
				if j == 0 && network {
					adjust = len(fp)
					continue
				}
				rank = len(fp) - j
				break
			}
			rank += adjust
			byRank[rank] = append(byRank[rank], lb)
		}
		ranks := slicesSortedKeysInt(byRank)
		for _, r := range ranks {
			g := &endpointv3.LocalityLbEndpoints{Locality: le.Locality, LbEndpoints: byRank[r], Priority: uint32(r)}
			var w uint64
			for _, lb := range byRank[r] {
				w += uint64(lb.GetLoadBalancingWeight().GetValue())
			}
			g.LoadBalancingWeight = wrapperspb.UInt32(uint32(min(w, math.MaxUint32)))
			out = append(out, g)
		}
	}
	compactPriorities(out)
	cla.Endpoints = out
}

func slicesSortedKeysInt[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
