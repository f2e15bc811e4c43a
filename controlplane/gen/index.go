package gen

import (
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// index holds the per-call lookups the generators need: the DestinationRule and the
// VirtualServices that apply to each host. It is built from a snapshot in O(configs) and
// never modified afterwards.
//
// Selection rules (dependent on the proxy only through its scope and, for DestinationRules and
// the order of VirtualServices, its namespace, and for DestinationRules with a workloadSelector
// its labels; ViewKey names what matters, so that outbound resources are shared by every client
// with the same view):
//   - DestinationRule: istiod's (destrule.go): the proxy's namespace, then the service's,
//     then the root namespace; the most specific host in each; rules merged per namespace; a
//     rule with a workloadSelector only for the proxies of its namespace it selects.
//   - VirtualService: those whose gateways are empty or include "mesh", in istiod's order
//     (vsOrder: the ones private to the proxy's namespace, then those exported to it by
//     name, then public ones; each by creation time, name, namespace). tcp routes read every
//     VS whose hosts (short names resolved in the VS's namespace) match the host, in that
//     order (virtualServices); HTTP routes only one (httpVirtualServices): the first with the
//     exact host and a route for the port, else the first with the most specific wildcard host.
type index struct {
	snap *model.Snapshot
	// scope is the proxy's view: VirtualServices it does not see are ignored, DestinationRules
	// are chosen for its namespace (nil: every config applies, rules as for no namespace).
	scope *model.Scope
	// drNS, without a scope, is the namespace DestinationRules are chosen for: a named EDS
	// request's (namedRuleNamespace: the proxy's own when its namespace's rules come first,
	// or when some rule is exported to a list of namespaces).
	drNS string
	drs  *drPools // the snapshot's DestinationRules, fetched at the first lookup
	// labels are the proxy's: the DestinationRules of its namespace with a workloadSelector
	// apply when they select it (of).
	labels map[string]string
	// The maps are built on first need, after scanLimit lookups answered by a linear scan, so
	// that a request for one or two names (an EDS push) does not pay O(configs) allocations.
	lookups int
	built   bool
	vs      map[string][]*istioconfig.Config // exact host → VSs, in vsOrder
	vsW     []*istioconfig.Config            // VSs with at least one wildcard host, in vsOrder
	vsPos   map[*istioconfig.Config]int      // position in vsOrder
	// listenerPortDests is set for a sidecar's HTTP route configurations: a destination
	// without a port goes to the listener's port (destinationCluster).
	listenerPortDests bool
	// proxyDests is set for an HTTP proxy route configuration (httpproxy.go), built for port
	// 0: istiod looks a destination without a port up among the services of the egress
	// listener alone (all their ports), its only port, else 0.
	proxyDests bool
	// whole is the proxy's whole scope when scope is one egress listener's (nil: scope is
	// the whole scope). istiod reads a route destination's DestinationRule from its
	// SidecarScope, which holds the services of every egress listener (routeDestinationRule).
	whole *model.Scope
}

const scanLimit = 8

func newIndex(s *model.Snapshot, sc *model.Scope) *index { return &index{snap: s, scope: sc} }

// namespace is the proxy's namespace ("" without a scope).
func (ix *index) namespace() string {
	if ix.scope == nil {
		return ""
	}
	return ix.scope.Namespace
}

// routeDestinationRule is the DestinationRule a route destination's host reads its consistent
// hash, or a tcp_proxy its idle timeout, maximum duration and source-IP hash, from: the one
// that applies to the host (destinationRule) when the proxy's whole scope sees its service,
// else none. istiod looks both the service and the rule up in the proxy's SidecarScope
// (ServiceForHostname, HashForHTTPDestination), which has neither for a service not exported
// to the proxy's namespace or not imported by its Sidecar.
func (ix *index) routeDestinationRule(host string) *istioconfig.Config {
	if visibleService(ix.snap, ix.proxyScope(), host) == nil {
		return nil
	}
	return ix.destinationRule(host)
}

// egressIndex is the index of proxy p's egress listener scope esc within its whole scope sc
// (a Sidecar's listener, or sc itself): lookups istiod makes in the whole SidecarScope (the
// rule of a route's destination, routeDestinationRule) go to sc. Every index of an egress
// listener is made here, so none forgets its whole scope.
func egressIndex(s *model.Snapshot, sc, esc *model.Scope, p *model.Proxy) *index {
	ix := newIndex(s, esc).of(p)
	if esc != sc {
		ix.whole = sc
	}
	return ix
}

// proxyScope is the proxy's whole scope (istiod's SidecarScope): whole, else scope.
func (ix *index) proxyScope() *model.Scope {
	if ix.whole != nil {
		return ix.whole
	}
	return ix.scope
}

// vsVisible applies the scope to one VirtualService.
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
	ix.vs = map[string][]*istioconfig.Config{}
	ix.vsPos = map[*istioconfig.Config]int{}
	for i, c := range vsOrder(s, ix.namespace()) {
		vs := vsSpec(c)
		if vs == nil || !forMesh(vs.GetGateways()) || !ix.vsVisible(c) {
			continue
		}
		ix.vsPos[c] = i
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

// destinationRule returns the DR that applies to host for the proxy, or nil (destrule.go).
func (ix *index) destinationRule(host string) *istioconfig.Config {
	ns := ruleNamespace(ix.namespace())
	if ix.scope == nil {
		ns = ix.drNS
	}
	if ix.drs == nil {
		ix.drs = destinationRulePools(ix.snap)
	}
	return ix.drs.choose(ns, serviceNamespace(ix.snap, host), host, ix.labels)
}

// of sets the proxy the index chooses DestinationRules for (its labels); it returns ix.
func (ix *index) of(p *model.Proxy) *index {
	if p != nil {
		ix.labels = p.Labels
	}
	return ix
}

// virtualServices returns the VSs with a host (exact or wildcard) that matches host, in
// vsOrder: what istiod reads tcp routes from (getConfigsForHost).
func (ix *index) virtualServices(host string) []*istioconfig.Config {
	if !ix.useMaps() {
		var out []*istioconfig.Config
		for _, c := range vsOrder(ix.snap, ix.namespace()) {
			vs := vsSpec(c)
			if vs == nil || !forMesh(vs.GetGateways()) || !ix.vsVisible(c) {
				continue
			}
			for _, raw := range vs.GetHosts() {
				if refersTo(raw, c.Namespace, host) || (strings.HasPrefix(raw, "*") && hostMatches(raw, host)) {
					out = append(out, c)
					break
				}
			}
		}
		return out
	}
	exact := ix.vs[host]
	var wild []*istioconfig.Config
	for _, c := range ix.vsW {
		if _, ok := vsWildcardHost(c, host); ok && !containsConfig(exact, c) {
			wild = append(wild, c)
		}
	}
	if len(wild) == 0 {
		return exact
	}
	out := append(slices.Clone(exact), wild...)
	slices.SortStableFunc(out, func(a, b *istioconfig.Config) int { return ix.vsPos[a] - ix.vsPos[b] })
	return out
}

// httpVirtualServices returns the VSs whose HTTP routes may apply to host, in the order they
// are tried, as istiod builds a sidecar's virtual hosts (computeWildcardHostVirtualServiceIndex,
// and the first virtual host of a name wins): every VS in vsOrder that names host exactly, else
// the first whose most specific wildcard host matches host; none when none does. The first of
// them with a route for the port (its routes may all be for other ports or sources, or it may
// have tcp routes only) is the one whose routes apply: istiod builds no virtual host for a VS
// without routes there, so the next VS's virtual host of the name is the first. A wildcard VS
// is never tried after an exact one: istiod's index gives the host to the exact VS.
func (ix *index) httpVirtualServices(host string) []*istioconfig.Config {
	var exact []*istioconfig.Config
	var best *istioconfig.Config
	bestLen := -1
	for _, c := range ix.virtualServices(host) {
		if slices.ContainsFunc(vsSpec(c).GetHosts(), func(raw string) bool { return refersTo(raw, c.Namespace, host) }) {
			exact = append(exact, c)
			continue
		}
		if w, ok := vsWildcardHost(c, host); ok && len(w) > bestLen {
			best, bestLen = c, len(w)
		}
	}
	if len(exact) > 0 || best == nil {
		return exact
	}
	return []*istioconfig.Config{best}
}

// vsWildcardHost returns the longest wildcard host of VS c that matches host.
func vsWildcardHost(c *istioconfig.Config, host string) (string, bool) {
	best, found := "", false
	for _, raw := range vsSpec(c).GetHosts() {
		h := resolveHost(raw, c.Namespace)
		if strings.HasPrefix(h, "*") && hostMatches(h, host) && (!found || len(h) > len(best)) {
			best, found = h, true
		}
	}
	return best, found
}

// vsOrder returns the snapshot's VirtualServices in the order istiod reads them for a proxy
// of namespace ns (VirtualServicesForGateway): those exported only to some namespaces and
// private to ns (their own namespace) first, then those exported to ns by name, then the
// public ones; within each, by creation time, then name, then namespace
// (configCompareByCreationTime). Computed once per snapshot's configs and namespace.
func vsOrder(s *model.Snapshot, ns string) []*istioconfig.Config {
	byTime := s.Derived(vsOrderKey{}, func() any {
		cs := slices.Clone(s.VirtualServices()) // delegates merged into their roots
		slices.SortStableFunc(cs, compareByCreation)
		restricted := false
		for _, c := range cs {
			if ex := vsSpec(c).GetExportTo(); len(ex) > 0 && !slices.Contains(ex, "*") {
				restricted = true
			}
		}
		return vsOrdered{cs, restricted}
	}).(vsOrdered)
	if !byTime.restricted {
		return byTime.cs
	}
	return s.Derived(vsOrderKey{ns: ns, local: true}, func() any {
		cs := slices.Clone(byTime.cs)
		slices.SortStableFunc(cs, func(a, b *istioconfig.Config) int {
			return vsExportRank(vsSpec(a).GetExportTo(), a.Namespace, ns) - vsExportRank(vsSpec(b).GetExportTo(), b.Namespace, ns)
		})
		return cs
	}).([]*istioconfig.Config)
}

type vsOrderKey struct {
	ns    string
	local bool
}

type vsOrdered struct {
	cs         []*istioconfig.Config
	restricted bool
}

// Ranks of a VirtualService's exportTo seen from a namespace, in istiod's order.
const (
	vsPrivate  = iota // exported to some namespaces, its own among them, the proxy's
	vsExported        // exported to some namespaces, the proxy's named among them
	vsPublic          // exported everywhere (or not to ns: the scope drops it anyway)
)

func vsExportRank(exportTo []string, vsNS, ns string) int {
	switch {
	case len(exportTo) == 0 || slices.Contains(exportTo, "*"):
		return vsPublic
	case vsNS == ns && (slices.Contains(exportTo, ".") || slices.Contains(exportTo, vsNS)):
		return vsPrivate
	case slices.Contains(exportTo, ns):
		return vsExported
	}
	return vsPublic
}

// compareByCreation is istiod's configCompareByCreationTime: older first, then by name, then
// by namespace.
func compareByCreation(a, b *istioconfig.Config) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Namespace, b.Namespace)
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
