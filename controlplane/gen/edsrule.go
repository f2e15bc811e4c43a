package gen

import (
	"slices"
	"sync"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// What a ClusterLoadAssignment takes from the DestinationRule the asking proxy sees (istiod's
// EndpointBuilder, whose cache key names the rule): the subset's labels, locality load
// balancing (locality.go), and the TLS mode the rule sets for the cluster's port and subset,
// which alone decides whether endpoints carry the tlsMode "istio" metadata auto-mTLS clusters
// match on (ruleTLSMode). The rule is chosen for the proxy: its namespace and labels
// (destrule.go), so a rule exported to some namespaces changes only their proxies' assignments.
//
// The ADS server shares one encoded assignment among the proxies that get the same bytes. Its
// cache key for a named assignment is
//   - ViewKey: the proxy's namespace when that namespace's own rules come first for it
//     (drNamespaceKey), else which rules exported to a list of namespaces it sees
//     (exportedRuleKey), "" when there are none; proxies with one view choose the same rule
//     for every host;
//   - AssignmentRuleKey: the outcome of the rule's TLS mode for that cluster, "" when the rule
//     sets none (or there is no rule), so a rule change that changes it gives the assignment
//     another key, and proxies that see rules with the same outcome share the bytes.
//
// A cached assignment is thus stale only when its service, endpoints or (for subsets,
// locality load balancing and PeerAuthentication) configs changed, which its generation says
// (xds.assignmentGen).

// ruleTLSMode is the TLS mode rule dr sets for the cluster of port and subset name ("" for
// the service's own cluster), nil when it sets none, as istiod's endpoint builder reads it:
// for a subset, the subset's policy and then the rule's; in each, the port's level before the
// top level. Unlike the cluster's TLS (policy.go), a port-level setting without TLS does not
// hide the level above. A subset the rule does not define takes no mode.
func ruleTLSMode(dr *networking.DestinationRule, subsetName string, port uint32) *networking.ClientTLSSettings_TLSmode {
	if dr == nil {
		return nil
	}
	if subsetName == "" {
		return policyTLSMode(dr.GetTrafficPolicy(), port)
	}
	for _, ss := range dr.GetSubsets() {
		if ss.GetName() != subsetName {
			continue
		}
		if m := policyTLSMode(ss.GetTrafficPolicy(), port); m != nil {
			return m
		}
		return policyTLSMode(dr.GetTrafficPolicy(), port)
	}
	return nil
}

// policyTLSMode is the TLS mode one traffic policy sets for port: its port-level setting for
// that port when it has TLS, else its top-level TLS; nil when neither.
func policyTLSMode(tp *networking.TrafficPolicy, port uint32) *networking.ClientTLSSettings_TLSmode {
	if tp == nil {
		return nil
	}
	for _, pl := range tp.GetPortLevelSettings() {
		if pl.GetPort().GetNumber() == port && pl.GetTls() != nil {
			m := pl.GetTls().GetMode()
			return &m
		}
	}
	if tp.GetTls() != nil {
		m := tp.GetTls().GetMode()
		return &m
	}
	return nil
}

// endpointsMTLS says how a rule's TLS mode (ruleTLSMode) marks endpoints: with no mode, an
// endpoint with a sidecar takes mTLS unless its PeerAuthentication disables it for its port;
// with ISTIO_MUTUAL every endpoint with a sidecar does, whatever its PeerAuthentication; with any
// other mode none does. An endpoint without a sidecar never does.
type endpointsMTLS uint8

const (
	mtlsByPeerAuth endpointsMTLS = iota // the rule sets no mode
	mtlsAlways                          // ISTIO_MUTUAL
	mtlsNever                           // DISABLE, SIMPLE, MUTUAL
)

func endpointsMTLSOf(mode *networking.ClientTLSSettings_TLSmode) endpointsMTLS {
	switch {
	case mode == nil:
		return mtlsByPeerAuth
	case *mode == networking.ClientTLSSettings_ISTIO_MUTUAL:
		return mtlsAlways
	}
	return mtlsNever
}

// key is the part of an assignment's cache key the outcome names ("" when the rule leaves it
// to PeerAuthentication, as without a rule).
func (m endpointsMTLS) key() string {
	switch m {
	case mtlsAlways:
		return "tls=istio"
	case mtlsNever:
		return "tls=plain"
	}
	return ""
}

// namedRuleNamespace is the namespace a named EDS request of p chooses DestinationRules for
// (index.drNS): its own when its namespace's rules come first for it (drNamespaceKey) or when
// some rule is exported to a list of namespaces (exportedRuleKey), which the empty namespace
// would see wherever it is exported; "" otherwise, where every proxy chooses alike.
func namedRuleNamespace(p *model.Proxy, s *model.Snapshot) string {
	if ns := drNamespaceKey(p, s); ns != "" {
		return ns
	}
	if p != nil && len(restrictedRuleExports(s)) > 0 {
		return ruleNamespace(p.Namespace)
	}
	return ""
}

// namedAssignmentRule is the rule whose settings the named assignment of host's cluster with
// subset name takes for a proxy of labels choosing for namespace drNS (namedRuleNamespace).
// Without a namespace the assignment is shared by every proxy: a subset the chosen rule lacks
// may come from a client namespace's rule (ruleWithSubset).
func namedAssignmentRule(s *model.Snapshot, drNS string, labels map[string]string, svcNS, host, name string) *istioconfig.Config {
	dr := destinationRulePools(s).choose(drNS, svcNS, host, labels)
	if name != "" && drNS == "" && subset(dr, name) == nil {
		dr = ruleWithSubset(s, svcNS, host, name)
	}
	return dr
}

// restrictedRuleExports lists, in config order, every DestinationRule exported beyond its
// namespace to a list of namespaces rather than everywhere, with those namespaces (its own by
// name): the rules a proxy without a namespace sees and some namespaces do not. Rules with a
// workloadSelector stay in their namespace and are not listed.
func restrictedRuleExports(s *model.Snapshot) []restrictedRule {
	type key struct{}
	return s.Derived(key{}, func() any {
		var out []restrictedRule
		for _, c := range s.Configs(istioconfig.KindDestinationRule) {
			dr := drSpec(c)
			if dr == nil || dr.GetHost() == "" || dr.GetWorkloadSelector() != nil {
				continue
			}
			exportTo := slices.Clone(dr.GetExportTo())
			if len(exportTo) == 0 || slices.Contains(exportTo, "*") {
				continue // public
			}
			for i, e := range exportTo {
				if e == "." {
					exportTo[i] = c.Namespace
				}
			}
			slices.Sort(exportTo)
			exportTo = slices.Compact(exportTo)
			if len(exportTo) == 1 && exportTo[0] == c.Namespace {
				continue // private: only its own namespace's proxies, which drNamespaceKey names
			}
			out = append(out, restrictedRule{id: c.Namespace + "/" + c.Name, exportTo: exportTo})
		}
		return out
	}).([]restrictedRule)
}

// restrictedRule is a DestinationRule exported to a list of namespaces (restrictedRuleExports).
type restrictedRule struct {
	id       string   // namespace/name
	exportTo []string // sorted, "." written as the rule's namespace
}

// exportedRuleKey names, for a named EDS request, the rules exported to a list of namespaces
// (restrictedRuleExports) that p's namespace is in, by namespace/name; "" when it is in none.
// Proxies of namespaces whose own rules do not come first (drNamespaceKey "") with the same
// key choose the same rule for every host, and a rule a proxy does not see never changes its
// key: the proxies that see none keep sharing the assignments they shared before such a rule
// came.
func exportedRuleKey(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || p.Namespace == "" {
		return ""
	}
	var b []byte
	for _, r := range restrictedRuleExports(s) {
		if !slices.Contains(r.exportTo, p.Namespace) {
			continue
		}
		if b == nil {
			b = append(b, "drv="...)
		} else {
			b = append(b, ',')
		}
		b = append(b, r.id...)
	}
	return string(b)
}

// tlsRuleHosts holds the hosts of the snapshot's DestinationRules that set a TLS mode anywhere
// (top level, port level, a subset's): only their assignments can take a mode from a rule.
type tlsRuleHosts struct {
	exact map[string]bool
	wild  bool // a wildcard host's rule sets one: every host may take it
}

func tlsRuleHostsOf(s *model.Snapshot) *tlsRuleHosts {
	type key struct{}
	return s.Derived(key{}, func() any {
		f := &tlsRuleHosts{exact: map[string]bool{}}
		for _, c := range s.Configs(istioconfig.KindDestinationRule) {
			dr := drSpec(c)
			if dr == nil || dr.GetHost() == "" {
				continue
			}
			sets := false
			visitPolicies(dr, func(tp *networking.TrafficPolicy) {
				sets = sets || tp.GetTls() != nil || slices.ContainsFunc(tp.GetPortLevelSettings(),
					func(pl *networking.TrafficPolicy_PortTrafficPolicy) bool { return pl.GetTls() != nil })
			})
			if !sets {
				continue
			}
			if h := resolveHost(dr.GetHost(), c.Namespace); h[0] == '*' {
				f.wild = true
			} else {
				f.exact[h] = true
			}
		}
		return f
	}).(*tlsRuleHosts)
}

// AssignmentRuleKey returns, for proxy p in s, a function naming what the DestinationRule p
// sees makes of the named assignment of cluster name beyond its ViewKey: the outcome of the
// rule's TLS mode for the cluster's port and subset ("tls=istio" or "tls=plain"), "" when the
// rule sets none or there is no rule. The ADS server adds it to the assignment's cache key, so
// a rule change that changes the outcome is never served the old bytes, while proxies with
// the same outcome share them. It returns nil when no rule of s sets a TLS mode (every key
// is then ""). The outcomes are remembered per snapshot's configs and rule view, so a push
// pays for each cluster's lookup once.
func AssignmentRuleKey(p *model.Proxy, s *model.Snapshot) func(name string) string {
	if s == nil {
		return nil
	}
	hosts := tlsRuleHostsOf(s)
	if !hosts.wild && len(hosts.exact) == 0 {
		return nil
	}
	drNS := namedRuleNamespace(p, s)
	var labels map[string]string
	if p != nil {
		labels = p.Labels
	}
	// The proxies of one named-EDS view (ViewKey: the namespace and selector rules that come
	// first for them, else the rules exported to a list of namespaces they see) choose alike,
	// so they share one memo: namespaces that see the same rules do not each fill their own.
	memo := ruleKeyMemoOf(s, ViewKey(EndpointType, p, s, false))
	return func(name string) string {
		memo.mu.RLock()
		k, ok := memo.keys[name]
		memo.mu.RUnlock()
		if ok {
			return k
		}
		k, ruled := assignmentRuleKey(s, hosts, drNS, labels, name)
		if ruled { // only names of a service a TLS rule may apply to: others are cheap to redo
			memo.mu.Lock()
			memo.keys[name] = k
			memo.mu.Unlock()
		}
		return k
	}
}

// assignmentRuleKey is AssignmentRuleKey's outcome for one cluster name, computed; ruled
// reports a name of a service port that a rule setting a TLS mode may apply to.
func assignmentRuleKey(s *model.Snapshot, hosts *tlsRuleHosts, drNS string, labels map[string]string, name string) (key string, ruled bool) {
	cn, err := ParseClusterName(name)
	if err != nil || cn.Direction != Outbound || !hosts.wild && !hosts.exact[cn.Host] {
		return "", false
	}
	svc := s.Service(cn.Host)
	if svc == nil {
		return "", false
	}
	if _, ok := svc.Port(cn.Port); !ok {
		return "", false
	}
	dr := namedAssignmentRule(s, drNS, labels, svc.Namespace, cn.Host, cn.Subset)
	if dr == nil {
		return "", true
	}
	return endpointsMTLSOf(ruleTLSMode(drSpec(dr), cn.Subset, cn.Port)).key(), true
}

// ruleKeyMemo remembers AssignmentRuleKey's outcomes of one rule view, by cluster name.
type ruleKeyMemo struct {
	mu   sync.RWMutex
	keys map[string]string
}

// ruleKeyMemoOf returns the memo of named-EDS view (ViewKey) in s, shared by
// the snapshots with the same services and configs.
func ruleKeyMemoOf(s *model.Snapshot, view string) *ruleKeyMemo {
	type key struct{}
	views := s.Derived(key{}, func() any { return &sync.Map{} }).(*sync.Map)
	if m, ok := views.Load(view); ok {
		return m.(*ruleKeyMemo)
	}
	m, _ := views.LoadOrStore(view, &ruleKeyMemo{keys: map[string]string{}})
	return m.(*ruleKeyMemo)
}
