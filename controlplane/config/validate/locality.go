package validate

import (
	"fmt"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// Topology labels a failoverPriority may name.
const (
	labelRegion   = "topology.kubernetes.io/region"
	labelZone     = "topology.kubernetes.io/zone"
	labelSubzone  = "topology.istio.io/subzone"
	labelHostname = "kubernetes.io/hostname"
)

// localityLB mirrors istiod's ValidateLocalityLbSetting for a DestinationRule's
// localityLbSetting, od being the outlier detection at the same level (failover needs it).
func (c *checker) localityLB(at Path, lb *networking.LocalityLoadBalancerSetting, od *networking.OutlierDetection) {
	if lb == nil {
		return
	}
	if len(lb.GetDistribute()) > 0 && len(lb.GetFailover()) > 0 {
		c.errf(at, "sets both distribute and failover: keep one")
		return
	}
	if len(lb.GetFailover()) > 0 {
		for i, l := range lb.GetFailoverPriority() {
			if l == labelRegion || l == labelZone || l == labelSubzone {
				c.errf(at.With("failoverPriority", i), "%q cannot be combined with failover (which already ranks by region): remove one of them", l)
				return
			}
		}
	}
	var from []string
	for i, d := range lb.GetDistribute() {
		da := at.With("distribute", i)
		from = append(from, d.GetFrom())
		var total uint32
		to := make([]string, 0, len(d.GetTo()))
		for loc := range d.GetTo() {
			to = append(to, loc)
		}
		slices.Sort(to) // the first bad weight reported is always the same one
		for _, loc := range to {
			w := d.GetTo()[loc]
			if w == 0 || w > 100 {
				c.errf(da.With("to", loc), "weight %d is out of range: use 1 to 100", w)
				return
			}
			total += w
		}
		if total != 100 {
			c.errf(da.With("to"), "weights add up to %d: they must add up to 100", total)
			return
		}
		if err := checkLocalities(to); err != nil {
			c.errf(da.With("to"), "%v", err)
		}
	}
	if err := checkLocalities(from); err != nil {
		c.errf(at.With("distribute"), "from: %v", err)
	}
	checkFailover(c, at, lb.GetFailover(), lb.GetFailoverPriority(), od, "", "fails over only with outlier detection: add outlierDetection to this policy, or nothing fails over")
}

// regionPair is a failover entry of either setting (locality or zone-aware).
type regionPair interface {
	GetFrom() string
	GetTo() string
}

// checkFailover checks what localityLbSetting and zoneAwareLbSetting share: failover entries
// name two different regions, without zones or wildcards (zoneNote ends the zone error), a
// failover without outlier detection od beside it is warned about (noOD, as istiod warns), and
// so is a failoverPriority on the node name.
func checkFailover[F regionPair](c *checker, at Path, failover []F, priority []string, od *networking.OutlierDetection, zoneNote, noOD string) {
	if (len(failover) > 0 || len(priority) > 0) && od == nil {
		c.warnf(at, "%s", noOD)
	}
	for i, f := range failover {
		fa := at.With("failover", i)
		switch {
		case f.GetFrom() == f.GetTo():
			c.errf(fa, "from and to are both %q: name two different regions", f.GetFrom())
		case strings.Contains(f.GetFrom(), "/") || strings.Contains(f.GetTo(), "/"):
			c.errf(fa, "names a zone (%q -> %q): failover takes regions only%s", f.GetFrom(), f.GetTo(), zoneNote)
		case strings.Contains(f.GetFrom(), "*") || strings.Contains(f.GetTo(), "*"):
			c.errf(fa, "uses a '*' wildcard (%q -> %q): name regions", f.GetFrom(), f.GetTo())
		}
	}
	for i, l := range priority {
		if strings.SplitN(l, "=", 2)[0] == labelHostname {
			c.warnf(at.With("failoverPriority", i), "%q is compared with the workloads' own labels only: xdslab knows no node names", l)
		}
	}
}

// zoneAwareLB mirrors istiod's ValidateZoneAwareLbSetting for a DestinationRule's
// zoneAwareLbSetting, od being the outlier detection at the same level: zone-aware routing
// already ranks by region (failover orders the other regions) and balances zones, so
// failoverPriority may not name the region, zone or subzone labels, and failover takes two
// different regions, without wildcards.
func (c *checker) zoneAwareLB(at Path, lb *networking.ZoneAwareLoadBalancerSetting, od *networking.OutlierDetection) {
	if lb == nil {
		return
	}
	for i, l := range lb.GetFailoverPriority() {
		if l == labelRegion || l == labelZone || l == labelSubzone {
			c.errf(at.With("failoverPriority", i), "%q is not allowed with zone-aware load balancing, which ranks by region and balances zones itself: remove it", l)
		}
	}
	checkFailover(c, at, lb.GetFailover(), lb.GetFailoverPriority(), od, ", zone-aware routing balances the zones",
		"ranks endpoints without outlier detection, but then only endpoints that health checks or the registry mark unhealthy move traffic to the next priority: add outlierDetection to this policy to fail over on errors too")
}

// checkLocalities reports, as istiod, a malformed locality ("region/zone/subzone", at most one
// '*', last) or one that overlaps another of the list.
func checkLocalities(locs []string) error {
	seen := map[string]map[string]map[string]bool{}
	for _, loc := range locs {
		if n := strings.Count(loc, "*"); n > 1 || (n == 1 && !strings.HasSuffix(loc, "*")) {
			return fmt.Errorf("locality %q: use at most one '*', at the end", loc)
		}
		if seen["*"] != nil {
			return fmt.Errorf("locality %q overlaps %q", loc, "*")
		}
		parts := strings.SplitN(loc, "/", 3)
		if slices.Contains(parts, "") {
			return fmt.Errorf("locality %q has an empty region, zone or subzone", loc)
		}
		overlap := fmt.Errorf("locality %q overlaps one listed before it", loc)
		zones := seen[parts[0]]
		switch len(parts) {
		case 1:
			if zones != nil {
				return overlap
			}
			seen[parts[0]] = map[string]map[string]bool{"*": {"*": true}}
		case 2:
			if zones == nil {
				seen[parts[0]] = map[string]map[string]bool{parts[1]: {"*": true}}
			} else if zones["*"] != nil || zones[parts[1]] != nil {
				return overlap
			} else {
				zones[parts[1]] = map[string]bool{"*": true}
			}
		case 3:
			switch {
			case zones == nil:
				seen[parts[0]] = map[string]map[string]bool{parts[1]: {parts[2]: true}}
			case zones["*"] != nil:
				return overlap
			case zones[parts[1]] == nil:
				zones[parts[1]] = map[string]bool{parts[2]: true}
			case zones[parts[1]]["*"] || zones[parts[1]][parts[2]]:
				return overlap
			default:
				zones[parts[1]][parts[2]] = true
			}
		}
	}
	return nil
}
