package simulator

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// Simulated AuthorizationPolicies (Topology.AuthorizationPolicies).
//
// Each namespace gets PerNamespace policies authz-0 … without a selector: a policy applies to
// every sidecar of its namespace. The fleet's clients carry their group's node labels, never a
// simulated workload's (app, version), so a policy selecting a workload would reach no client
// and its churn could not be observed; namespace-wide policies reach the namespace's sidecars.
// A policy is ALLOW or DENY (drawn once by the Allow/Deny weights) with 1 to maxAuthzRules
// rules over principals, source namespaces, methods, paths and ports, drawn from the seed.
// The config-change target authz rewrites policies: each gets a new rule set with a different
// number of rules, which its probe predicate (probe.ListenerRBACPolicies on virtualInbound)
// tells apart from the previous version.

// AuthzLabel labels the simulated AuthorizationPolicies.
const AuthzLabel = "xdslab.io/authz"

// InboundListener is the sidecar listener that carries the RBAC filters of its policies.
const InboundListener = "virtualInbound"

// maxAuthzRules bounds the rules of one policy.
const maxAuthzRules = 4

// AuthorizationPolicies describes the simulated AuthorizationPolicies.
type AuthorizationPolicies struct {
	// PerNamespace policies in each namespace (0: none).
	PerNamespace int
	// Allow and Deny weigh the policy actions; both 0 means Allow 0.7, Deny 0.3.
	Allow, Deny float64
}

// authzPolicy is one simulated policy.
type authzPolicy struct {
	ns, name string
	deny     bool
	rules    []*securityapi.Rule
	gen      int // rewrites so far; paths carry it, so each version differs
}

// authzState holds the policies in creation order and their random source (independent of the
// topology's, so adding policies shifts no other draw).
type authzState struct {
	policies []*authzPolicy
	rng      *rand.Rand
}

// buildAuthz creates the policies of every namespace.
func (m *mesh) buildAuthz(seed uint64) {
	a := m.topo.AuthorizationPolicies
	if a.PerNamespace <= 0 {
		return
	}
	m.authz.rng = newRand(seed)
	pDeny := a.Deny / (a.Allow + a.Deny)
	for _, ns := range m.namespaces {
		for j := range a.PerNamespace {
			p := &authzPolicy{ns: ns, name: "authz-" + strconv.Itoa(j), deny: m.authz.rng.Float64() < pDeny}
			m.rewriteAuthz(p, 0)
			m.authz.policies = append(m.authz.policies, p)
		}
	}
}

// rewriteAuthz draws a new rule set for p with a number of rules other than avoid (0 avoids
// nothing).
func (m *mesh) rewriteAuthz(p *authzPolicy, avoid int) {
	rng := m.authz.rng
	n := 1 + rng.IntN(maxAuthzRules)
	for n == avoid {
		n = 1 + rng.IntN(maxAuthzRules)
	}
	p.rules = p.rules[:0:0]
	for range n {
		p.rules = append(p.rules, m.authzRule(p))
	}
	p.gen++
}

var authzMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH"}

// authzRule draws one rule: an ALLOW rule admits a principal or a namespace to some methods
// under a path prefix; a DENY rule refuses other namespaces (or one principal) writes or an
// admin path on the HTTP base port (a port, so that TCP chains keep the rule's meaning).
func (m *mesh) authzRule(p *authzPolicy) *securityapi.Rule {
	rng := m.authz.rng
	peerNS := m.namespaces[rng.IntN(len(m.namespaces))]
	principal := fmt.Sprintf("cluster.local/ns/%s/sa/%s", peerNS, m.saName(rng.IntN(m.topo.ServiceAccountsPerNamespace)))
	var src *securityapi.Source
	switch {
	case p.deny && rng.IntN(2) == 0:
		src = &securityapi.Source{NotNamespaces: []string{p.ns}}
	case rng.IntN(2) == 0:
		src = &securityapi.Source{Principals: []string{principal}}
	default:
		src = &securityapi.Source{Namespaces: []string{peerNS}}
	}
	op := &securityapi.Operation{}
	if p.deny {
		op.Ports = []string{strconv.Itoa(int(protoInfo[0].base))}
		if rng.IntN(2) == 0 {
			op.Methods = []string{"DELETE", "PUT"}
		} else {
			op.Paths = []string{fmt.Sprintf("/admin/v%d/*", p.gen+1)}
		}
	} else {
		k := 1 + rng.IntN(3)
		start := rng.IntN(len(authzMethods) - k + 1)
		op.Methods = slices.Clone(authzMethods[start : start+k])
		op.Paths = []string{fmt.Sprintf("/api/v%d/*", p.gen+1), fmt.Sprintf("/%s/healthz", p.name)}
	}
	return &securityapi.Rule{
		From: []*securityapi.Rule_From{{Source: src}},
		To:   []*securityapi.Rule_To{{Operation: op}},
	}
}

// authzConfig renders p as security.istio.io's AuthorizationPolicy.
func authzConfig(p *authzPolicy) istioconfig.Config {
	action := securityapi.AuthorizationPolicy_ALLOW
	if p.deny {
		action = securityapi.AuthorizationPolicy_DENY
	}
	return istioconfig.Config{
		Meta: istioconfig.Meta{Kind: istioconfig.KindAuthorizationPolicy, Name: p.name, Namespace: p.ns, Labels: map[string]string{AuthzLabel: "true"}},
		Spec: &securityapi.AuthorizationPolicy{Action: action, Rules: slices.Clone(p.rules)},
	}
}

// authzObjects renders every policy.
func (m *mesh) authzObjects() []istioconfig.Config {
	out := make([]istioconfig.Config, 0, len(m.authz.policies))
	for _, p := range m.authz.policies {
		out = append(out, authzConfig(p))
	}
	return out
}

// authzPredicate is what a sidecar of p's namespace holds once it has p's current version: the
// RBAC policies of its rules on the inbound listener (istiod names rule i
// "ns[NS]-policy[NAME]-rule[i]").
func authzPredicate(p *authzPolicy) probe.Predicate {
	return probe.Predicate{Op: probe.ListenerRBACPolicies, Resource: InboundListener,
		Value: "ns[" + p.ns + "]-policy[" + p.name + "]-rule[", Count: len(p.rules)}
}

// changeAuthz rewrites Services (distinct) policies. The event reaches the sidecars of their
// namespaces, each held to the predicates of its own namespace's policies; routers and
// proxyless gRPC clients get no inbound RBAC and are not reached.
func (s *Simulator) changeAuthz(b *evb, p *process) {
	pols := s.m.authz.policies
	if len(pols) == 0 {
		b.ev.Skip = "no AuthorizationPolicies"
		return
	}
	n := min(p.ch.Services, len(pols))
	idx := make([]int, len(pols))
	for i := range idx {
		idx[i] = i
	}
	rng := s.m.authz.rng
	for i := range n {
		j := i + rng.IntN(len(idx)-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	idx = idx[:n]
	// An evenly spaced sample keeps the expectation within MaxPredicates; every picked policy is
	// still rewritten, and the others' predicates go to Rest.
	keep := map[int]bool{}
	for k := range min(n, s.cfg.MaxPredicates) {
		keep[k*n/min(n, s.cfg.MaxPredicates)] = true
	}
	exp := &b.ev.Expectation
	for k, i := range idx {
		pol := pols[i]
		s.m.rewriteAuthz(pol, len(pol.rules))
		b.ev.Upserts = append(b.ev.Upserts, authzConfig(pol))
		if !keep[k] {
			exp.Rest = append(exp.Rest, authzPredicate(pol))
			continue
		}
		exp.All = append(exp.All, authzPredicate(pol))
		exp.Reach.PredicateNamespaces = append(exp.Reach.PredicateNamespaces, []string{pol.ns})
		if !slices.Contains(exp.Reach.Namespaces, pol.ns) {
			exp.Reach.Namespaces = append(exp.Reach.Namespaces, pol.ns)
		}
	}
	slices.Sort(exp.Reach.Namespaces)
	if len(exp.Reach.Namespaces) == 1 {
		exp.Reach.PredicateNamespaces = nil // the event's namespace says it all
	}
	exp.Reach.ProxyType = probe.ProxySidecar
}
