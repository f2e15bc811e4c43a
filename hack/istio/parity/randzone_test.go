package parity_test

import (
	"fmt"
	"math/rand/v2"
)

// zoneStream is mixed into the seed of the eighth PCG stream (zone-aware load balancing),
// drawn after the first seven: every object a seed produced before these shapes were added
// stays as it was.
const zoneStream = 0xd1b54a32d192ed03

// zoneShapes adds, sometimes, a DestinationRule with zoneAwareLbSetting for a service of an
// earlier stream (whose endpoints are in several localities) in a namespace where no rule
// names it yet: enabled or not, minClusterSize, region failover, failoverPriority on the
// endpoints' labels, with or without outlier detection, top-level or for one port, and
// sometimes a subset with a setting of its own. A DNS service gets no failoverPriority (istiod
// panics ranking a DNS cluster's endpoints by labels when they are in several localities).
func (m *randMesh) zoneShapes() {
	m.r = rand.New(rand.NewPCG(m.seed^zoneStream, zoneStream))
	if !m.chance(0.5) {
		return
	}
	s := m.pickService(func(s *rsvc) bool { return !s.wildcard && s.resolution != "NONE" })
	if s == nil {
		return
	}
	ns := s.ns
	if m.chance(0.3) {
		ns = m.pick(clientNamespaces...)
	}
	if m.hasRule(s, ns) {
		return
	}
	dns := s.resolution == "DNS"
	tp := map[string]any{}
	if len(s.ports) > 1 && m.chance(0.3) {
		pl := m.zoneAwarePolicy(dns)
		pl["port"] = map[string]any{"number": s.ports[1+m.r.IntN(len(s.ports)-1)].number}
		tp["portLevelSettings"] = []any{pl}
	} else {
		tp = m.zoneAwarePolicy(dns)
	}
	spec := map[string]any{"host": m.hostIn(s, ns), "trafficPolicy": tp}
	if m.chance(0.3) {
		ss := map[string]any{"name": "zoned", "labels": map[string]any{"version": "v1"}}
		if m.chance(0.6) {
			ss["trafficPolicy"] = m.zoneAwarePolicy(dns)
		}
		spec["subsets"] = []any{ss}
	}
	m.add("DestinationRule", "networking.istio.io/v1", fmt.Sprintf("dr8-%s-%s", s.name, ns), ns, spec)
}

// zoneAwarePolicy draws a traffic policy whose load balancer has a zoneAwareLbSetting.
func (m *randMesh) zoneAwarePolicy(dns bool) map[string]any {
	za := map[string]any{}
	if m.chance(0.2) {
		za["enabled"] = m.chance(0.3)
	}
	if m.chance(0.4) {
		za["minClusterSize"] = 1 + m.r.IntN(6)
	}
	if m.chance(0.5) {
		regions := []string{"region-a", "region-b", "region-c"}
		var fo []any
		for range 1 + m.r.IntN(3) {
			from := m.pick(regions...)
			to := m.pick(regions...)
			if to == from {
				continue
			}
			fo = append(fo, map[string]any{"from": from, "to": to})
		}
		if len(fo) > 0 {
			za["failover"] = fo
		}
	}
	if !dns && m.chance(0.4) {
		za["failoverPriority"] = []any{m.pick("version", "app", "version=v2")}
		if m.chance(0.4) {
			za["failoverPriority"] = append(za["failoverPriority"].([]any), "topology.istio.io/cluster")
		}
	}
	lb := map[string]any{"zoneAwareLbSetting": za}
	if m.chance(0.3) {
		lb["simple"] = m.pick("ROUND_ROBIN", "RANDOM", "LEAST_REQUEST")
	}
	tp := map[string]any{"loadBalancer": lb}
	if m.chance(0.5) {
		tp["outlierDetection"] = map[string]any{"consecutive5xxErrors": 1 + m.r.IntN(5), "interval": "5s"}
	}
	return tp
}
