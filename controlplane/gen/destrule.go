package gen

import (
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// DestinationRule selection, with istiod's rules (PushContext.destinationRule): for a proxy of
// namespace P and a service of namespace S, the most specific rule (exact host, else the
// longest wildcard; chosen among all of a step's rules, then kept only if exported to P, so a
// more specific rule exported elsewhere hides a less specific one and the next step is tried)
// among
//  1. the rules of P (any exportTo that includes P itself; for P the root namespace, only its
//     rules exported to it alone);
//  2. else the rules of S exported beyond S, to P;
//  3. else the rules of the root namespace exported beyond it, to P.
//
// Rules of any other namespace never apply. Rules of one namespace for one host with the same
// exportTo are merged, oldest first: subsets combined (the first of a name kept), the first
// top-level traffic policy kept. A proxy without a namespace (a named EDS request, answered
// alike for all) skips step 1 and sees every exported rule.
//
// A rule with a workloadSelector (istiod: SidecarScope.DestinationRule, mergeDestinationRule)
// stays in its namespace (exportTo "." whatever it says) and applies only to the proxies of
// that namespace whose labels include its selector's. Such rules come before the others, each
// group oldest first; two with equal selectors merge, and a rule without a selector exported
// alike (only to the namespace) merges into it rather than standing alone. Of the rules a step
// finds for a host, a proxy takes the first selector rule that selects it, else the last rule
// without a selector, else none: a step that finds only selector rules which select other
// workloads ends the search without a rule.

// drEntry is one (merged) rule of a pool for one host and exportTo set.
type drEntry struct {
	exportTo []string // sorted, deduplicated, the rule's own namespace as "."; empty: everywhere
	// written is exportTo as the rule wrote it (sorted, deduplicated, its own namespace by
	// name if so written): istiod decides merges on the written sets, so a rule exported to
	// "shop" does not merge with one of shop exported to ".".
	written []string
	cfg     *istioconfig.Config
	// selector is the workloadSelector's labels of a rule that has one (hasSelector).
	selector    map[string]string
	hasSelector bool
}

// drPool holds the rules of one namespace in one role, by resolved host.
type drPool struct {
	exact map[string][]*drEntry
	wild  map[string][]*drEntry
}

func (p *drPool) add(host string, exportTo, written []string, c *istioconfig.Config) {
	m := p.exact
	if strings.HasPrefix(host, "*") {
		m = p.wild
	}
	sel := drSpec(c).GetWorkloadSelector()
	// istiod's mergeDestinationRule: c merges into every entry exported alike (or, also
	// standing alone, into one whose exportTo its own includes) unless both have selectors
	// that differ; it stands alone when the last entry it met says so.
	alone := true
	for _, e := range m[host] {
		switch {
		case slices.Equal(e.written, written):
			alone = false
		case len(e.written) > 0 && includesAll(written, e.written):
			alone = true
		default:
			alone = true
			continue
		}
		both := e.hasSelector && sel != nil
		if both && !maps.Equal(e.selector, sel.GetMatchLabels()) {
			alone = true
			continue
		}
		if both || !e.hasSelector && sel == nil {
			alone = false
		}
		e.cfg = mergeDestinationRules(e.cfg, c)
	}
	if alone {
		m[host] = append(m[host], &drEntry{exportTo: exportTo, written: written, cfg: c, selector: sel.GetMatchLabels(), hasSelector: sel != nil})
	}
}

// includesAll reports whether every element of sub is in set.
func includesAll(set, sub []string) bool {
	for _, x := range sub {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// entries returns the visible entries of the most specific host of the pool that matches
// host (its exact name, else the longest wildcard), nil when none matches or none of that
// host's is visible. As istiod's MostSpecificHostMatch, the host is chosen before visibility:
// a more specific rule exported elsewhere hides a less specific one exported to the proxy, and
// the search moves on to the next namespace.
func (p *drPool) entries(host string, visible func(*drEntry) bool) []*drEntry {
	if p == nil {
		return nil
	}
	es := p.exact[host]
	if len(es) == 0 {
		bestLen := -1
		for pat, wes := range p.wild {
			if len(pat) > bestLen && len(wes) > 0 && hostMatches(pat, host) {
				es, bestLen = wes, len(pat)
			}
		}
	}
	var out []*drEntry
	for _, e := range es {
		if visible(e) {
			out = append(out, e)
		}
	}
	return out
}

// pick is the rule a proxy of namespace ns with labels takes among the entries one step found
// (istiod's SidecarScope.DestinationRule, outbound): the first selector rule of ns that selects
// it, else the last rule without a selector; nil when neither.
func pick(es []*drEntry, ns string, labels map[string]string) *istioconfig.Config {
	var catchAll *istioconfig.Config
	for _, e := range es {
		if !e.hasSelector {
			catchAll = e.cfg
			continue
		}
		if e.cfg.Namespace == ns && model.LabelsMatch(e.selector, labels) {
			return e.cfg
		}
	}
	return catchAll
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
	// selectors are, by namespace, the workloadSelectors of its rules, in pool order: which
	// of them select a proxy decides its rules (drSelectorKey).
	selectors map[string][]map[string]string
}

type drPoolsKey struct{}

func destinationRulePools(s *model.Snapshot) *drPools {
	return s.Derived(drPoolsKey{}, func() any {
		cs := slices.Clone(s.Configs(istioconfig.KindDestinationRule))
		// Rules with a workloadSelector first, then by creation (istiod:
		// sortConfigBySelectorAndCreationTime).
		slices.SortStableFunc(cs, func(a, b *istioconfig.Config) int {
			as, bs := drSpec(a).GetWorkloadSelector() != nil, drSpec(b).GetWorkloadSelector() != nil
			if as != bs {
				if as {
					return -1
				}
				return 1
			}
			return compareByCreation(a, b)
		})
		ps := &drPools{local: map[string]*drPool{}, exported: map[string]*drPool{}, distinct: map[string]bool{}, selectors: map[string][]map[string]string{}}
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
			if dr.GetWorkloadSelector() != nil {
				exportTo = []string{"."} // istiod never exports a rule with a workload selector
				ps.selectors[c.Namespace] = append(ps.selectors[c.Namespace], dr.GetWorkloadSelector().GetMatchLabels())
			}
			written := slices.Compact(slices.Sorted(slices.Values(exportTo)))
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
				pool(ps.local, c.Namespace).add(host, exportTo, written, c)
			}
			privateOnly := len(exportTo) == 1 && exportTo[0] == "."
			switch {
			case !privateOnly:
				pool(ps.exported, c.Namespace).add(host, exportTo, written, c)
			case c.Namespace == model.RootNamespace:
				if ps.rootLocal == nil {
					ps.rootLocal = &drPool{exact: map[string][]*drEntry{}, wild: map[string][]*drEntry{}}
				}
				ps.rootLocal.add(host, exportTo, written, c)
			}
		}
		return ps
	}).(*drPools)
}

// noRuleNamespace is the namespace a proxy of no namespace (istiod's empty config namespace)
// chooses DestinationRules for: no rule is of it or exported to it by name ("~" is not a
// DestinationRule's exportTo), so it sees only the rules exported everywhere, as in istiod,
// where "" here stands for any proxy (a named EDS request answered alike for all).
const noRuleNamespace = "~"

// ruleNamespace is the namespace a proxy of namespace ns chooses DestinationRules for: ns, or
// noRuleNamespace for "".
func ruleNamespace(ns string) string {
	if ns == "" {
		return noRuleNamespace
	}
	return ns
}

// selectDestinationRule is istiod's choice of rule for a service of namespace svcNS with host
// name host, seen from a proxy of namespace proxyNS ("" for any proxy) without labels.
func selectDestinationRule(s *model.Snapshot, proxyNS, svcNS, host string) *istioconfig.Config {
	return destinationRulePools(s).choose(proxyNS, svcNS, host, nil)
}

// choose is selectDestinationRule over the snapshot's pools, for a proxy with labels (which
// workloadSelectors of its namespace's rules select).
func (ps *drPools) choose(proxyNS, svcNS, host string, labels map[string]string) *istioconfig.Config {
	all := func(*drEntry) bool { return true }
	switch {
	case proxyNS == "":
	case proxyNS != model.RootNamespace:
		if es := ps.local[proxyNS].entries(host, all); len(es) > 0 {
			return pick(es, proxyNS, labels)
		}
	default:
		if es := ps.rootLocal.entries(host, all); len(es) > 0 {
			return pick(es, proxyNS, labels)
		}
	}
	exportedTo := func(e *drEntry) bool {
		return proxyNS == "" || len(e.exportTo) == 0 || slices.Contains(e.exportTo, "*") || slices.Contains(e.exportTo, proxyNS)
	}
	if svcNS != "" {
		if es := ps.exported[svcNS].entries(host, exportedTo); len(es) > 0 {
			return pick(es, proxyNS, labels)
		}
	}
	return pick(ps.exported[model.RootNamespace].entries(host, exportedTo), proxyNS, labels)
}

// drSelectorKey names which workloadSelectors of the DestinationRules of the proxy's namespace
// select it, one character per selector ("" when the namespace has none): proxies of one
// namespace with the same key take the same rules.
func drSelectorKey(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || p.Namespace == "" {
		return ""
	}
	sels := destinationRulePools(s).selectors[p.Namespace]
	if len(sels) == 0 {
		return ""
	}
	b := make([]byte, len(sels))
	for i, sel := range sels {
		b[i] = '0'
		if model.LabelsMatch(sel, p.Labels) {
			b[i] = '1'
		}
	}
	return string(b)
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
