package gen

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// DestinationRule selection, with istiod's rules (PushContext.destinationRule): for a proxy of
// namespace P and a service of namespace S, the most specific rule (exact host, else the
// longest wildcard) among
//  1. the rules of P (any exportTo that includes P itself; for P the root namespace, only its
//     rules exported to it alone);
//  2. else the rules of S exported beyond S, to P;
//  3. else the rules of the root namespace exported beyond it, to P.
//
// Rules of any other namespace never apply. Rules of one namespace for one host with the same
// exportTo are merged, oldest first: subsets combined (the first of a name kept), the first
// top-level traffic policy kept. A proxy without a namespace (a named EDS request, answered
// alike for all) skips step 1 and sees every exported rule.

// drEntry is one (merged) rule of a pool for one host and exportTo set.
type drEntry struct {
	exportTo []string // sorted, deduplicated; empty: everywhere
	cfg      *istioconfig.Config
}

// drPool holds the rules of one namespace in one role, by resolved host.
type drPool struct {
	exact map[string][]*drEntry
	wild  map[string][]*drEntry
}

func (p *drPool) add(host string, exportTo []string, c *istioconfig.Config) {
	m := p.exact
	if strings.HasPrefix(host, "*") {
		m = p.wild
	}
	for _, e := range m[host] {
		if slices.Equal(e.exportTo, exportTo) {
			e.cfg = mergeDestinationRules(e.cfg, c)
			return
		}
	}
	m[host] = append(m[host], &drEntry{exportTo: exportTo, cfg: c})
}

// mergeDestinationRules returns first with the subsets of next it lacks and, when it has
// none, next's top-level traffic policy; first itself is not modified.
func mergeDestinationRules(first, next *istioconfig.Config) *istioconfig.Config {
	spec := proto.Clone(drSpec(first)).(*networking.DestinationRule)
	for _, ss := range drSpec(next).GetSubsets() {
		if !slices.ContainsFunc(spec.GetSubsets(), func(x *networking.Subset) bool { return x.GetName() == ss.GetName() }) {
			spec.Subsets = append(spec.Subsets, ss)
		}
	}
	if spec.TrafficPolicy == nil {
		spec.TrafficPolicy = drSpec(next).GetTrafficPolicy()
	}
	merged := *first
	merged.Spec = spec
	return &merged
}

// lookup returns the most specific visible rule of the pool for host, nil when none.
func (p *drPool) lookup(host string, visible func(*drEntry) bool) *istioconfig.Config {
	if p == nil {
		return nil
	}
	for _, e := range p.exact[host] {
		if visible(e) {
			return e.cfg
		}
	}
	var best *istioconfig.Config
	bestLen := -1
	for pat, es := range p.wild {
		if len(pat) <= bestLen || !hostMatches(pat, host) {
			continue
		}
		for _, e := range es {
			if visible(e) {
				best, bestLen = e.cfg, len(pat)
				break
			}
		}
	}
	return best
}

// drPools indexes a snapshot's DestinationRules as istiod does (setDestinationRules).
type drPools struct {
	local     map[string]*drPool // by namespace: the rules a proxy of that namespace reads first
	exported  map[string]*drPool // by namespace: the rules exported beyond it
	rootLocal *drPool            // the root namespace's rules exported to it alone
	// distinct holds the namespaces (but the root) whose own rules may choose differently
	// for their proxies than for others: a rule not exported everywhere, a wildcard, or one for
	// a host outside the namespace. A namespace whose rules are all public and for its own
	// services chooses as everyone does (step 2 finds the same rule).
	distinct map[string]bool
}

type drPoolsKey struct{}

func destinationRulePools(s *model.Snapshot) *drPools {
	return s.Derived(drPoolsKey{}, func() any {
		cs := slices.Clone(s.Configs(istioconfig.KindDestinationRule))
		slices.SortStableFunc(cs, compareByCreation)
		ps := &drPools{local: map[string]*drPool{}, exported: map[string]*drPool{}, distinct: map[string]bool{}}
		pool := func(m map[string]*drPool, ns string) *drPool {
			if m[ns] == nil {
				m[ns] = &drPool{exact: map[string][]*drEntry{}, wild: map[string][]*drEntry{}}
			}
			return m[ns]
		}
		for _, c := range cs {
			dr := drSpec(c)
			if dr == nil || dr.GetHost() == "" {
				continue
			}
			host := resolveHost(dr.GetHost(), c.Namespace)
			exportTo := slices.Clone(dr.GetExportTo())
			if len(dr.GetWorkloadSelector().GetMatchLabels()) > 0 {
				exportTo = []string{"."} // istiod never exports a rule with a workload selector
			}
			for i, e := range exportTo {
				if e == c.Namespace {
					exportTo[i] = "."
				}
			}
			slices.Sort(exportTo)
			exportTo = slices.Compact(exportTo)
			public := len(exportTo) == 0 || slices.Contains(exportTo, "*")
			if c.Namespace != model.RootNamespace && (!public || strings.HasPrefix(host, "*") || serviceNamespace(s, host) != c.Namespace) {
				ps.distinct[c.Namespace] = true
			}
			if public || slices.Contains(exportTo, ".") {
				pool(ps.local, c.Namespace).add(host, exportTo, c)
			}
			privateOnly := len(exportTo) == 1 && exportTo[0] == "."
			switch {
			case !privateOnly:
				pool(ps.exported, c.Namespace).add(host, exportTo, c)
			case c.Namespace == model.RootNamespace:
				if ps.rootLocal == nil {
					ps.rootLocal = &drPool{exact: map[string][]*drEntry{}, wild: map[string][]*drEntry{}}
				}
				ps.rootLocal.add(host, exportTo, c)
			}
		}
		return ps
	}).(*drPools)
}

// selectDestinationRule is istiod's choice of rule for a service of namespace svcNS with host
// name host, seen from a proxy of namespace proxyNS ("" for any proxy).
func selectDestinationRule(s *model.Snapshot, proxyNS, svcNS, host string) *istioconfig.Config {
	return destinationRulePools(s).choose(proxyNS, svcNS, host)
}

// choose is selectDestinationRule over the snapshot's pools.
func (ps *drPools) choose(proxyNS, svcNS, host string) *istioconfig.Config {
	all := func(*drEntry) bool { return true }
	switch {
	case proxyNS == "":
	case proxyNS != model.RootNamespace:
		if c := ps.local[proxyNS].lookup(host, all); c != nil {
			return c
		}
	default:
		if c := ps.rootLocal.lookup(host, all); c != nil {
			return c
		}
	}
	exportedTo := func(e *drEntry) bool {
		return proxyNS == "" || len(e.exportTo) == 0 || slices.Contains(e.exportTo, "*") || slices.Contains(e.exportTo, proxyNS)
	}
	if svcNS != "" {
		if c := ps.exported[svcNS].lookup(host, exportedTo); c != nil {
			return c
		}
	}
	return ps.exported[model.RootNamespace].lookup(host, exportedTo)
}

// drNamespaceKey names the proxy's namespace when its DestinationRules come first for it and
// may choose otherwise than for other proxies (drPools.distinct, or the root namespace with
// rules private to it): then proxies of other namespaces may get other rules for the same
// service. "" otherwise.
func drNamespaceKey(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || p.Namespace == "" {
		return ""
	}
	ps := destinationRulePools(s)
	if p.Namespace == model.RootNamespace && ps.rootLocal != nil || p.Namespace != model.RootNamespace && ps.distinct[p.Namespace] {
		return p.Namespace
	}
	return ""
}

// ruleWithSubset is, for a named EDS request (answered alike for every proxy), a rule for host
// that defines the subset: the one selectDestinationRule picks without a proxy namespace when
// it does, else the first of some namespace's own rules (sorted by namespace) that does. A
// subset defined only in a client namespace's rule thus still gets its endpoints; two client
// namespaces defining one subset name differently share the first's.
func ruleWithSubset(s *model.Snapshot, svcNS, host, name string) *istioconfig.Config {
	if c := selectDestinationRule(s, "", svcNS, host); subset(c, name) != nil {
		return c
	}
	ps := destinationRulePools(s)
	for _, ns := range sortedKeys(ps.local) {
		if c := ps.local[ns].lookup(host, func(e *drEntry) bool { return subset(e.cfg, name) != nil }); c != nil {
			return c
		}
	}
	return nil
}
