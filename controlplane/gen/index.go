package gen

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// index holds the per-call lookups the generators need: the DestinationRule and the
// VirtualServices that apply to each host. It is built from a snapshot in O(configs) and
// never modified afterwards.
//
// Selection rules (simpler than Istio's, and dependent on the proxy only through its scope, so
// that outbound resources are shared by every client with the same view):
//   - DestinationRule: an exact host match wins over a wildcard; among equals, one in the
//     service's namespace wins, then the first by namespace/name. Only one applies.
//   - VirtualService: every VS whose hosts (short names resolved in the VS's namespace) match
//     the host and whose gateways are empty or include "mesh", ordered the same way; their
//     HTTP routes are concatenated.
type index struct {
	snap *model.Snapshot
	// scope is the proxy's view: DestinationRules not exported to it and VirtualServices it
	// does not see are ignored (nil: every config applies).
	scope *model.Scope
	// The maps are built on first need, after scanLimit lookups answered by a linear scan, so
	// that a request for one or two names (an EDS push) does not pay O(configs) allocations.
	lookups int
	built   bool
	dr      map[string]*istioconfig.Config   // exact host → chosen DR
	drW     []*istioconfig.Config            // DRs with a wildcard host
	vs      map[string][]*istioconfig.Config // exact host → VSs
	vsW     []*istioconfig.Config            // VSs with at least one wildcard host
}

const scanLimit = 8

func newIndex(s *model.Snapshot, sc *model.Scope) *index { return &index{snap: s, scope: sc} }

// drVisible and vsVisible apply the scope to one config.
func (ix *index) drVisible(c *istioconfig.Config) bool { return ix.scope.ExportsDestinationRule(c) }
func (ix *index) vsVisible(c *istioconfig.Config) bool { return ix.scope.SeesVirtualService(c) }

// useMaps reports whether lookups should go through the maps, building them when the scan
// budget is spent.
func (ix *index) useMaps() bool {
	if ix.built {
		return true
	}
	ix.lookups++
	if ix.lookups <= scanLimit {
		return false
	}
	ix.build()
	return true
}

func (ix *index) build() {
	s := ix.snap
	ix.built = true
	ix.dr, ix.vs = map[string]*istioconfig.Config{}, map[string][]*istioconfig.Config{}
	for _, c := range s.Configs(istioconfig.KindDestinationRule) {
		dr, ok := c.Spec.(*networking.DestinationRule)
		if !ok || dr.GetHost() == "" || !ix.drVisible(c) {
			continue
		}
		h := resolveHost(dr.GetHost(), c.Namespace)
		if strings.HasPrefix(h, "*") {
			ix.drW = append(ix.drW, c)
			continue
		}
		prev := ix.dr[h]
		if prev == nil || (prev.Namespace != serviceNamespace(s, h) && c.Namespace == serviceNamespace(s, h)) {
			ix.dr[h] = c
		}
	}
	for _, c := range s.Configs(istioconfig.KindVirtualService) {
		vs := vsSpec(c)
		if vs == nil || !forMesh(vs.GetGateways()) || !ix.vsVisible(c) {
			continue
		}
		wild := false
		for i, raw := range vs.GetHosts() {
			h := resolveHost(raw, c.Namespace)
			if strings.HasPrefix(h, "*") {
				wild = true
				continue
			}
			dup := false
			for _, prev := range vs.GetHosts()[:i] {
				dup = dup || resolveHost(prev, c.Namespace) == h
			}
			if !dup {
				ix.vs[h] = append(ix.vs[h], c)
			}
		}
		if wild {
			ix.vsW = append(ix.vsW, c)
		}
	}
}

// refersTo reports whether raw (a host in a config of namespace ns, possibly short) names host
// exactly, without allocating.
func refersTo(raw, ns, host string) bool {
	if raw == host {
		return true
	}
	if raw == "*" || strings.Contains(raw, ".") || ns == "" {
		return false
	}
	// raw + "." + ns + ".svc.cluster.local"
	const suffix = ".svc.cluster.local"
	return len(host) == len(raw)+1+len(ns)+len(suffix) && strings.HasPrefix(host, raw) &&
		host[len(raw)] == '.' && strings.HasPrefix(host[len(raw)+1:], ns) && strings.HasSuffix(host, suffix)
}

func serviceNamespace(s *model.Snapshot, host string) string {
	if svc := s.Service(host); svc != nil {
		return svc.Namespace
	}
	return ""
}

// forMesh reports whether a VS with these gateways applies to sidecars.
func forMesh(gateways []string) bool {
	if len(gateways) == 0 {
		return true
	}
	for _, g := range gateways {
		if g == "mesh" {
			return true
		}
	}
	return false
}

// resolveHost turns a short name ("reviews") into an FQDN in namespace ns, as Istio does for
// hosts in VirtualServices and DestinationRules.
func resolveHost(h, ns string) string {
	if h == "*" || strings.Contains(h, ".") || ns == "" {
		return h
	}
	return h + "." + ns + ".svc.cluster.local"
}

// hostMatches reports whether pattern ("*", "*.suffix" or exact) covers host.
func hostMatches(pattern, host string) bool {
	if pattern == "*" {
		return true
	}
	if strings.HasPrefix(pattern, "*") {
		return strings.HasSuffix(host, pattern[1:])
	}
	return pattern == host
}

// destinationRule returns the DR that applies to host, or nil.
func (ix *index) destinationRule(host string) *istioconfig.Config {
	ns := serviceNamespace(ix.snap, host)
	wild := ix.drW
	if ix.useMaps() {
		if c := ix.dr[host]; c != nil {
			return c
		}
	} else {
		var exact *istioconfig.Config
		wild = nil
		for _, c := range ix.snap.Configs(istioconfig.KindDestinationRule) {
			if !ix.drVisible(c) {
				continue
			}
			raw := drSpec(c).GetHost()
			switch {
			case refersTo(raw, c.Namespace, host):
				if exact == nil || (exact.Namespace != ns && c.Namespace == ns) {
					exact = c
				}
			case strings.HasPrefix(raw, "*"):
				wild = append(wild, c)
			}
		}
		if exact != nil {
			return exact
		}
	}
	var best *istioconfig.Config
	bestLen := -1
	for _, c := range wild {
		pat := resolveHost(drSpec(c).GetHost(), c.Namespace)
		if !hostMatches(pat, host) {
			continue
		}
		// The most specific wildcard wins, then the service's namespace, then order.
		l := len(pat)
		if l > bestLen || (l == bestLen && c.Namespace == ns && best.Namespace != ns) {
			best, bestLen = c, l
		}
	}
	return best
}

// virtualServices returns the VSs that apply to host, service namespace first, then by
// namespace/name.
func (ix *index) virtualServices(host string) []*istioconfig.Config {
	var exact, wild []*istioconfig.Config
	if ix.useMaps() {
		exact, wild = ix.vs[host], ix.vsW
	} else {
		for _, c := range ix.snap.Configs(istioconfig.KindVirtualService) {
			vs := vsSpec(c)
			if !forMesh(vs.GetGateways()) || !ix.vsVisible(c) {
				continue
			}
			for _, raw := range vs.GetHosts() {
				if refersTo(raw, c.Namespace, host) {
					exact = append(exact, c)
					break
				}
			}
			for _, raw := range vs.GetHosts() {
				if strings.HasPrefix(raw, "*") {
					wild = append(wild, c)
					break
				}
			}
		}
	}
	var out []*istioconfig.Config
	if len(wild) == 0 {
		out = exact
	} else {
		out = append(out, exact...)
		for _, c := range wild {
			for _, raw := range vsSpec(c).GetHosts() {
				h := resolveHost(raw, c.Namespace)
				if strings.HasPrefix(h, "*") && hostMatches(h, host) && !containsConfig(out, c) {
					out = append(out, c)
					break
				}
			}
		}
	}
	ns := serviceNamespace(ix.snap, host)
	if len(out) < 2 || ns == "" {
		return out
	}
	// Stable partition: the service's own namespace first.
	sorted := make([]*istioconfig.Config, 0, len(out))
	for _, c := range out {
		if c.Namespace == ns {
			sorted = append(sorted, c)
		}
	}
	for _, c := range out {
		if c.Namespace != ns {
			sorted = append(sorted, c)
		}
	}
	return sorted
}

func containsConfig(cs []*istioconfig.Config, c *istioconfig.Config) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// subset returns the named subset of a DR, or nil.
func subset(dr *istioconfig.Config, name string) *networking.Subset {
	if dr == nil || name == "" {
		return nil
	}
	for _, ss := range drSpec(dr).GetSubsets() {
		if ss.GetName() == name {
			return ss
		}
	}
	return nil
}

// drSpec returns a config's DestinationRule spec, nil (whose getters return zero values) when
// the config holds something else.
func drSpec(c *istioconfig.Config) *networking.DestinationRule {
	dr, _ := c.Spec.(*networking.DestinationRule)
	return dr
}

// vsSpec returns a config's VirtualService spec, or nil.
func vsSpec(c *istioconfig.Config) *networking.VirtualService {
	vs, _ := c.Spec.(*networking.VirtualService)
	return vs
}

// visibleServices returns the services of s that sc sees, sorted by hostname (s.Services()
// itself, not a copy, for the unscoped view).
func visibleServices(s *model.Snapshot, sc *model.Scope) []*model.Service {
	all := s.Services()
	if sc.Key() == "" {
		return all
	}
	out := make([]*model.Service, 0, len(all))
	for _, svc := range all {
		if sc.SeesService(svc) {
			out = append(out, svc)
		}
	}
	return out
}

// visibleService returns the service with the host name when sc sees it, else nil.
func visibleService(s *model.Snapshot, sc *model.Scope, host string) *model.Service {
	if svc := s.Service(host); svc != nil && sc.SeesService(svc) {
		return svc
	}
	return nil
}
