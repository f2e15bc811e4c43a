package gen

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
)

// index holds the per-call lookups the generators need: the DestinationRule and the
// VirtualServices that apply to each host. It is built from a snapshot in O(configs) and
// never modified afterwards.
//
// Selection rules (simpler than Istio's, and independent of the proxy so that outbound
// resources can be shared by every client):
//   - DestinationRule: an exact host match wins over a wildcard; among equals, one in the
//     service's namespace wins, then the first by namespace/name. Only one applies.
//   - VirtualService: every VS whose hosts (short names resolved in the VS's namespace) match
//     the host and whose gateways are empty or include "mesh", ordered the same way; their
//     HTTP routes are concatenated.
type index struct {
	snap *model.Snapshot
	dr   map[string]*model.Config   // exact host → chosen DR
	drW  []*model.Config            // DRs with a wildcard host
	vs   map[string][]*model.Config // exact host → VSs
	vsW  []*model.Config            // VSs with at least one wildcard host
}

func newIndex(s *model.Snapshot) *index {
	ix := &index{snap: s, dr: map[string]*model.Config{}, vs: map[string][]*model.Config{}}
	for _, c := range s.Configs(model.KindDestinationRule) {
		dr, ok := c.Spec.(*networking.DestinationRule)
		if !ok || dr.GetHost() == "" {
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
	for _, c := range s.Configs(model.KindVirtualService) {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok || !forMesh(vs.GetGateways()) {
			continue
		}
		wild := false
		seen := map[string]bool{}
		for _, raw := range vs.GetHosts() {
			h := resolveHost(raw, c.Namespace)
			if strings.HasPrefix(h, "*") {
				wild = true
				continue
			}
			if !seen[h] {
				seen[h] = true
				ix.vs[h] = append(ix.vs[h], c)
			}
		}
		if wild {
			ix.vsW = append(ix.vsW, c)
		}
	}
	return ix
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
func (ix *index) destinationRule(host string) *model.Config {
	if c := ix.dr[host]; c != nil {
		return c
	}
	ns := serviceNamespace(ix.snap, host)
	var best *model.Config
	bestLen := -1
	for _, c := range ix.drW {
		pat := resolveHost(c.Spec.(*networking.DestinationRule).GetHost(), c.Namespace)
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
func (ix *index) virtualServices(host string) []*model.Config {
	exact := ix.vs[host]
	var out []*model.Config
	if len(ix.vsW) == 0 {
		out = exact
	} else {
		out = append(out, exact...)
		for _, c := range ix.vsW {
			for _, raw := range c.Spec.(*networking.VirtualService).GetHosts() {
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
	sorted := make([]*model.Config, 0, len(out))
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

func containsConfig(cs []*model.Config, c *model.Config) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// subset returns the named subset of a DR, or nil.
func subset(dr *model.Config, name string) *networking.Subset {
	if dr == nil || name == "" {
		return nil
	}
	for _, ss := range dr.Spec.(*networking.DestinationRule).GetSubsets() {
		if ss.GetName() == name {
			return ss
		}
	}
	return nil
}
