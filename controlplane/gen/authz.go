package gen

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// AuthorizationPolicy → Envoy RBAC, as istiod's authz builder generates it for a sidecar's
// inbound chains and a gateway's listeners (the rules were learned from istiod; the code is
// xdslab's):
//
//   - A proxy's policies are those of the root namespace and of its own namespace whose selector
//     is empty or a subset of its labels; a policy with targetRef(s) applies to Gateway API
//     gateways and waypoints only, never to a sidecar or an Istio gateway.
//   - Per action one filter, AUDIT (action LOG), then DENY, then ALLOW.
//     Policies annotated istio.io/dry-run: "true" go to shadow_rules.
//   - CUSTOM policies come first (before jwt_authn on HTTP chains), one filter per provider,
//     by provider name. istiod's default mesh config defines no extensionProviders, so every
//     provider is unknown, for which istiod builds no ext_authz filter but a DENY RBAC filter
//     of the provider's enforced (not dry-run) rules, each named
//     "istio-ext-authz-PROVIDER-ns[NS]-policy[NAME]-rule[i]-deny-due-to-bad-CUSTOM-action" and
//     generated as a DENY rule: what the policy would send to the authorizer is refused.
//   - Each rule i of policy NAME in NS is the RBAC policy "ns[NS]-policy[NAME]-rule[i]"; an
//     ALLOW policy without rules is one policy that matches nothing (deny all).
//   - A rule's principals are one AND per from entry (source conditions, then the when
//     conditions on the source), its permissions one AND per to entry (host, method, path,
//     port, then the when conditions on the destination); each condition is an OR of its values
//     and a NOT(OR) of its notValues.
//   - On a TCP chain, HTTP-only conditions (hosts, methods, paths, request headers, request.auth)
//     cannot be evaluated: an ALLOW rule with one is dropped (it allows less), a DENY or AUDIT
//     rule loses the condition (it denies more). xdslab treats the conditions it does not
//     generate (path templates, experimental.envoy.filters keys) the same way on every chain,
//     and `xdslab validate` warns about them.

// RBAC filter names and the TCP filter's stat prefix, as istiod names them.
const (
	httpRBACFilterName    = "envoy.filters.http.rbac"
	networkRBACFilterName = "envoy.filters.network.rbac"
	rbacTCPStatPrefix     = "tcp."
	jwtAuthnFilterName    = "envoy.filters.http.jwt_authn"
	dryRunAnnotation      = "istio.io/dry-run"
)

// authzPolicies are the AuthorizationPolicies that apply to one proxy, by action.
type authzPolicies struct {
	audit, deny, allow []*istioconfig.Config
	custom             []*istioconfig.Config // CUSTOM: denied, as istiod for an unknown provider
	deps               []istioconfig.Key
	td                 string
	// keepTrustDomain leaves source principals and trust domains as written (withTrustDomain,
	// principalsOf): istiod migrates them for Envoy, not for proxyless gRPC servers.
	keepTrustDomain bool
}

// authzFor selects the proxy's policies.
func authzFor(p *model.Proxy, s *model.Snapshot) authzPolicies {
	out := authzPolicies{}
	nss := []string{RootNamespace}
	if p.Namespace != RootNamespace {
		nss = append(nss, p.Namespace)
	}
	for _, ns := range nss {
		for _, c := range s.ConfigsIn(istioconfig.KindAuthorizationPolicy, ns) {
			ap := apSpec(c)
			if ap == nil || !model.AuthorizationPolicySelects(c, p) {
				continue
			}
			switch ap.GetAction() {
			case securityapi.AuthorizationPolicy_ALLOW:
				out.allow = append(out.allow, c)
			case securityapi.AuthorizationPolicy_DENY:
				out.deny = append(out.deny, c)
			case securityapi.AuthorizationPolicy_AUDIT:
				out.audit = append(out.audit, c)
			case securityapi.AuthorizationPolicy_CUSTOM:
				out.custom = append(out.custom, c)
			default:
				continue
			}
			out.deps = append(out.deps, c.Key())
		}
	}
	out.deps = sortDeps(out.deps)
	for _, ps := range [][]*istioconfig.Config{out.custom, out.audit, out.deny, out.allow} {
		if slices.ContainsFunc(ps, namesPrincipals) {
			out.td = registryTrustDomain(s)
			break
		}
	}
	return out
}

// namesPrincipals reports whether a policy has source.principal conditions, the only ones the
// trust domain changes.
func namesPrincipals(c *istioconfig.Config) bool {
	for _, r := range apSpec(c).GetRules() {
		for _, f := range r.GetFrom() {
			if len(f.GetSource().GetPrincipals())+len(f.GetSource().GetNotPrincipals()) > 0 {
				return true
			}
		}
		for _, w := range r.GetWhen() {
			if w.GetKey() == "source.principal" {
				return true
			}
		}
	}
	return false
}

// registryTrustDomain is the trust domain principals migrate to and inbound mTLS accepts
// peers of: istiod's is the mesh config's,
// which xdslab reads off the identities its registries build with it — the service accounts
// of endpoints (spiffe://TD/ns/…/sa/…). A ServiceEntry's subjectAltNames are the user's and
// may name another trust domain: they count (meshTrustDomain) only when no endpoint has an
// identity.
func registryTrustDomain(s *model.Snapshot) string {
	if td := s.IdentityTrustDomain(); td != "" {
		return td
	}
	return meshTrustDomain(s)
}

func apSpec(c *istioconfig.Config) *securityapi.AuthorizationPolicy {
	if c == nil {
		return nil
	}
	s, _ := c.Spec.(*securityapi.AuthorizationPolicy)
	return s
}

func (a authzPolicies) empty() bool {
	return len(a.custom)+len(a.audit)+len(a.deny)+len(a.allow) == 0
}

// Names of the RBAC policies istiod generates for a CUSTOM policy whose provider the mesh
// config does not define.
const (
	extAuthzPolicyPrefix = "istio-ext-authz-"
	badCustomSuffix      = "-deny-due-to-bad-CUSTOM-action"
)

// customRBAC is one DENY RBAC per CUSTOM provider, by provider name: the enforced policies'
// rules generated as DENY rules (a dry-run policy adds its provider, with no rules).
func (a authzPolicies) customRBAC(tcp bool) []*rbacv3.RBAC {
	byProvider := map[string]*rbacv3.RBAC{}
	for _, c := range a.custom {
		ap := apSpec(c)
		provider := ap.GetProvider().GetName()
		r := byProvider[provider]
		if r == nil {
			r = &rbacv3.RBAC{Action: rbacv3.RBAC_DENY, Policies: map[string]*rbacv3.Policy{}}
			byProvider[provider] = r
		}
		if dry, _ := strconv.ParseBool(c.Annotations[dryRunAnnotation]); dry {
			// Validation rejects dry-run CUSTOM policies, as istiod's does; istiod's builder
			// would still add the provider's filter, without their rules.
			continue
		}
		name := func(i int) string {
			return extAuthzPolicyPrefix + provider + "-" + authzPolicyName(c.Namespace, c.Name, i) + badCustomSuffix
		}
		for i, rule := range ap.GetRules() {
			if rule == nil {
				continue
			}
			if pol := a.rulePolicy(c.Namespace, rule, tcp, rbacv3.RBAC_DENY); pol != nil {
				r.Policies[name(i)] = pol
			}
		}
		if len(ap.GetRules()) == 0 {
			r.Policies[name(0)] = matchNothing()
		}
	}
	out := make([]*rbacv3.RBAC, 0, len(byProvider))
	for _, p := range slices.Sorted(maps.Keys(byProvider)) {
		out = append(out, byProvider[p])
	}
	return out
}

// customHTTPFilters are the HTTP RBAC filters of the CUSTOM policies (customRBAC), which istiod
// puts before jwt_authn.
func (a authzPolicies) customHTTPFilters() []*hcmv3.HttpFilter {
	var out []*hcmv3.HttpFilter
	for _, r := range a.customRBAC(false) {
		out = append(out, &hcmv3.HttpFilter{Name: httpRBACFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&rbachttpv3.RBAC{Rules: r})}})
	}
	return out
}

// httpFilters are the HTTP RBAC filters, audit, deny, allow (customHTTPFilters go before the
// jwt_authn filter).
func (a authzPolicies) httpFilters() []*hcmv3.HttpFilter {
	var out []*hcmv3.HttpFilter
	for _, r := range a.build(false) {
		out = append(out, &hcmv3.HttpFilter{Name: httpRBACFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&rbachttpv3.RBAC{
			Rules: r.rules, ShadowRules: r.shadow, ShadowRulesStatPrefix: shadowStatPrefix(r.shadow),
		})}})
	}
	return out
}

// tcpFilters are the network RBAC filters, CUSTOM (customRBAC), audit, deny, allow.
func (a authzPolicies) tcpFilters() []*listenerv3.Filter {
	var out []*listenerv3.Filter
	for _, r := range a.customRBAC(true) {
		out = append(out, &listenerv3.Filter{Name: networkRBACFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(&rbactcpv3.RBAC{
			Rules: r, StatPrefix: rbacTCPStatPrefix,
		})}})
	}
	for _, r := range a.build(true) {
		out = append(out, &listenerv3.Filter{Name: networkRBACFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(&rbactcpv3.RBAC{
			Rules: r.rules, StatPrefix: rbacTCPStatPrefix, ShadowRules: r.shadow, ShadowRulesStatPrefix: shadowStatPrefix(r.shadow),
		})}})
	}
	return out
}

// shadowStatPrefix is istiod's prefix for shadow rules' stats, keyed by their action; without
// shadow rules istiod reads the action of nil, ALLOW, and so does xdslab.
func shadowStatPrefix(r *rbacv3.RBAC) string {
	switch {
	case r.GetAction() == rbacv3.RBAC_ALLOW:
		return "istio_dry_run_allow_"
	case r.GetAction() == rbacv3.RBAC_DENY:
		return "istio_dry_run_deny_"
	}
	return ""
}

type builtRBAC struct{ rules, shadow *rbacv3.RBAC }

func (a authzPolicies) build(tcp bool) []builtRBAC {
	var out []builtRBAC
	for _, g := range []struct {
		ps     []*istioconfig.Config
		action rbacv3.RBAC_Action
	}{{a.audit, rbacv3.RBAC_LOG}, {a.deny, rbacv3.RBAC_DENY}, {a.allow, rbacv3.RBAC_ALLOW}} {
		if len(g.ps) == 0 {
			continue
		}
		var b builtRBAC
		for _, c := range g.ps {
			target := &b.rules
			if dry, _ := strconv.ParseBool(c.Annotations[dryRunAnnotation]); dry {
				target = &b.shadow
			}
			if *target == nil {
				*target = &rbacv3.RBAC{Action: g.action, Policies: map[string]*rbacv3.Policy{}}
			}
			ap := apSpec(c)
			for i, r := range ap.GetRules() {
				if r == nil {
					continue
				}
				if pol := a.rulePolicy(c.Namespace, r, tcp, g.action); pol != nil {
					(*target).Policies[authzPolicyName(c.Namespace, c.Name, i)] = pol
				}
			}
			if len(ap.GetRules()) == 0 {
				(*target).Policies[authzPolicyName(c.Namespace, c.Name, 0)] = matchNothing()
			}
		}
		out = append(out, b)
	}
	return out
}

func authzPolicyName(ns, name string, rule int) string {
	return "ns[" + ns + "]-policy[" + name + "]-rule[" + strconv.Itoa(rule) + "]"
}

// matchNothing is the policy of an ALLOW without rules: no permission and no principal match.
func matchNothing() *rbacv3.Policy {
	return &rbacv3.Policy{
		Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_NotRule{NotRule: &rbacv3.Permission{Rule: &rbacv3.Permission_Any{Any: true}}}}},
		Principals:  []*rbacv3.Principal{{Identifier: &rbacv3.Principal_NotId{NotId: &rbacv3.Principal{Identifier: &rbacv3.Principal_Any{Any: true}}}}},
	}
}

// condition is one key of a rule with its values and notValues.
type condition struct {
	key       string
	values    []string
	notValues []string
}

// errCannot marks a condition a chain cannot evaluate (HTTP-only on TCP) or that xdslab does
// not generate.
var errCannot = errors.New("cannot be generated on this chain")

// rulePolicy is one rule's RBAC policy, or nil when an ALLOW rule has a condition that cannot
// be generated.
func (a authzPolicies) rulePolicy(ns string, r *securityapi.Rule, tcp bool, action rbacv3.RBAC_Action) *rbacv3.Policy {
	var srcWhen, dstWhen []condition
	for _, w := range r.GetWhen() {
		c := condition{w.GetKey(), w.GetValues(), w.GetNotValues()}
		switch k := w.GetKey(); {
		case k == "destination.ip", k == "destination.port", k == "connection.sni", strings.HasPrefix(k, "experimental.envoy.filters."):
			dstWhen = append(dstWhen, c)
		default:
			srcWhen = append(srcWhen, c)
		}
	}
	pol := &rbacv3.Policy{}
	tos := r.GetTo()
	if len(tos) == 0 {
		tos = []*securityapi.Rule_To{nil}
	}
	for _, t := range tos {
		var conds []condition
		if o := t.GetOperation(); o != nil {
			conds = []condition{{"hosts", o.Hosts, o.NotHosts}, {"methods", o.Methods, o.NotMethods}, {"paths", o.Paths, o.NotPaths}, {"ports", o.Ports, o.NotPorts}}
		}
		var and []*rbacv3.Permission
		for _, c := range append(conds, dstWhen...) {
			ps, err := a.permissionsOf(c, tcp, action)
			if err != nil {
				return nil
			}
			and = append(and, ps...)
		}
		if len(and) == 0 {
			and = []*rbacv3.Permission{{Rule: &rbacv3.Permission_Any{Any: true}}}
		}
		pol.Permissions = append(pol.Permissions, &rbacv3.Permission{Rule: &rbacv3.Permission_AndRules{AndRules: &rbacv3.Permission_Set{Rules: and}}})
	}
	froms := r.GetFrom()
	if len(froms) == 0 {
		froms = []*securityapi.Rule_From{nil}
	}
	for _, f := range froms {
		var conds []condition
		if s := f.GetSource(); s != nil {
			conds = []condition{
				{"source.principal", s.Principals, s.NotPrincipals}, {"request.auth.principal", s.RequestPrincipals, s.NotRequestPrincipals},
				{"source.serviceAccount", s.ServiceAccounts, s.NotServiceAccounts}, {"source.trustDomain", s.TrustDomains, s.NotTrustDomains},
				{"source.namespace", s.Namespaces, s.NotNamespaces}, {"remote.ip", s.RemoteIpBlocks, s.NotRemoteIpBlocks},
				{"source.ip", s.IpBlocks, s.NotIpBlocks},
			}
		}
		var and []*rbacv3.Principal
		for _, c := range append(conds, srcWhen...) {
			ps, err := a.principalsOf(ns, c, tcp, action)
			if err != nil {
				return nil
			}
			and = append(and, ps...)
		}
		if len(and) == 0 {
			and = []*rbacv3.Principal{{Identifier: &rbacv3.Principal_Any{Any: true}}}
		}
		pol.Principals = append(pol.Principals, &rbacv3.Principal{Identifier: &rbacv3.Principal_AndIds{AndIds: &rbacv3.Principal_Set{Ids: and}}})
	}
	return pol
}

// permissionsOf is a destination condition's OR of values and NOT(OR) of notValues. An error
// (only for ALLOW) drops the rule; for DENY and AUDIT the value is left out.
func (a authzPolicies) permissionsOf(c condition, tcp bool, action rbacv3.RBAC_Action) ([]*rbacv3.Permission, error) {
	var out []*rbacv3.Permission
	for i, vs := range [][]string{c.values, c.notValues} {
		var or []*rbacv3.Permission
		for _, v := range vs {
			p, err := permissionOf(c.key, v, tcp)
			if err != nil {
				if action == rbacv3.RBAC_ALLOW {
					return nil, err
				}
				continue
			}
			or = append(or, p)
		}
		if len(or) == 0 {
			continue
		}
		p := &rbacv3.Permission{Rule: &rbacv3.Permission_OrRules{OrRules: &rbacv3.Permission_Set{Rules: or}}}
		if i == 1 {
			p = &rbacv3.Permission{Rule: &rbacv3.Permission_NotRule{NotRule: p}}
		}
		out = append(out, p)
	}
	return out, nil
}

func permissionOf(key, v string, tcp bool) (*rbacv3.Permission, error) {
	switch key {
	case "hosts":
		if tcp {
			return nil, errCannot
		}
		return &rbacv3.Permission{Rule: &rbacv3.Permission_Header{Header: headerMatch(":authority", v, true)}}, nil
	case "methods":
		if tcp {
			return nil, errCannot
		}
		return &rbacv3.Permission{Rule: &rbacv3.Permission_Header{Header: headerMatch(":method", v, false)}}, nil
	case "paths":
		if tcp || strings.Contains(v, "{") {
			return nil, errCannot // path templates are not generated
		}
		return &rbacv3.Permission{Rule: &rbacv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: wildcardMatch(v, "")}}}}, nil
	case "ports", "destination.port":
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n > 65535 {
			return nil, fmt.Errorf("bad port %q", v)
		}
		return &rbacv3.Permission{Rule: &rbacv3.Permission_DestinationPort{DestinationPort: uint32(n)}}, nil
	case "destination.ip":
		cidr, err := cidrOf(v)
		if err != nil {
			return nil, err
		}
		return &rbacv3.Permission{Rule: &rbacv3.Permission_DestinationIp{DestinationIp: cidr}}, nil
	case "connection.sni":
		return &rbacv3.Permission{Rule: &rbacv3.Permission_RequestedServerName{RequestedServerName: wildcardMatch(v, "")}}, nil
	}
	return nil, errCannot // experimental.envoy.filters.*: not generated
}

// principalsOf is a source condition's OR of values and NOT(OR) of notValues; request.auth
// conditions match the JWT payload as one matcher over all values, as istiod builds them.
func (a authzPolicies) principalsOf(ns string, c condition, tcp bool, action rbacv3.RBAC_Action) ([]*rbacv3.Principal, error) {
	var out []*rbacv3.Principal
	for i, vs := range [][]string{c.values, c.notValues} {
		if len(vs) == 0 {
			continue
		}
		if c.key == "source.trustDomain" && !a.keepTrustDomain {
			vs = uniqueStrings(vs) // istiod expands aliases and drops repeats (not for gRPC)
		}
		var p *rbacv3.Principal
		if strings.HasPrefix(c.key, "request.auth.") {
			var err error
			if p, err = jwtPrincipal(c.key, vs, tcp); err != nil {
				if action == rbacv3.RBAC_ALLOW {
					return nil, err
				}
				continue
			}
		} else {
			var or []*rbacv3.Principal
			for _, v := range vs {
				p, err := a.principalOf(ns, c.key, v, tcp)
				if err != nil {
					if action == rbacv3.RBAC_ALLOW {
						return nil, err
					}
					continue
				}
				or = append(or, p)
			}
			if len(or) == 0 {
				continue
			}
			p = &rbacv3.Principal{Identifier: &rbacv3.Principal_OrIds{OrIds: &rbacv3.Principal_Set{Ids: or}}}
		}
		if i == 1 {
			p = &rbacv3.Principal{Identifier: &rbacv3.Principal_NotId{NotId: p}}
		}
		out = append(out, p)
	}
	return out, nil
}

// uniqueStrings is vs without repeats, first occurrences in order.
func uniqueStrings(vs []string) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func authenticated(m *matcherv3.StringMatcher) *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_Authenticated_{Authenticated: &rbacv3.Principal_Authenticated{PrincipalName: m}}}
}

func (a authzPolicies) principalOf(ns, key, v string, tcp bool) (*rbacv3.Principal, error) {
	switch {
	case key == "source.principal":
		return authenticated(wildcardMatch(a.withTrustDomain(v), "spiffe://")), nil
	case key == "source.namespace":
		parts := strings.Split(v, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		return authenticated(regexMatch(".*/ns/" + strings.Join(parts, ".*") + "/.*")), nil
	case key == "source.serviceAccount":
		sns, sa, ok := strings.Cut(v, "/")
		if !ok {
			sns, sa = ns, v
		}
		return authenticated(regexMatch("spiffe://.+/ns/" + regexp.QuoteMeta(sns) + "/(.+/|)sa/" + regexp.QuoteMeta(sa) + "(/.+)?")), nil
	case key == "source.trustDomain":
		switch {
		case v == "*":
			return authenticated(prefixMatch("spiffe://")), nil
		case !strings.Contains(v, "*"):
			return authenticated(prefixMatch("spiffe://" + v + "/")), nil
		}
		before, after, _ := strings.Cut(v, "*")
		return authenticated(regexMatch("spiffe://" + regexp.QuoteMeta(before) + "[^/]*" + regexp.QuoteMeta(after) + "/.*")), nil
	case key == "source.ip", key == "remote.ip":
		cidr, err := cidrOf(v)
		if err != nil {
			return nil, err
		}
		if key == "remote.ip" {
			return &rbacv3.Principal{Identifier: &rbacv3.Principal_RemoteIp{RemoteIp: cidr}}, nil
		}
		return &rbacv3.Principal{Identifier: &rbacv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr}}, nil
	case strings.HasPrefix(key, "request.headers"):
		if tcp {
			return nil, errCannot
		}
		name, ok := validate.InBrackets(strings.TrimPrefix(key, "request.headers"))
		if !ok {
			return nil, fmt.Errorf("bad key %q", key)
		}
		return &rbacv3.Principal{Identifier: &rbacv3.Principal_Header{Header: headerMatch(name, v, false)}}, nil
	}
	return nil, fmt.Errorf("unknown attribute %q", key)
}

// withTrustDomain is istiod's trust-domain migration with the mesh's trust domain and no
// aliases: a principal TD/ns/NS/sa/SA whose trust domain is the default cluster.local, the
// mesh's, or a pattern with a wildcard at one end that matches the mesh's, names the mesh's
// trust domain — except a leading-* pattern that matches it, which is kept as written (its
// regex already matches). "cluster.*/ns/a/sa/b" is thus the exact principal
// cluster.local/ns/a/sa/b, not a literal "*". A principal of another shape, or whose trust
// domain is "*" or matches nothing, is kept.
func (a authzPolicies) withTrustDomain(v string) string {
	parts := strings.Split(v, "/")
	if a.keepTrustDomain || len(parts) != 5 || parts[0] == "*" {
		return v
	}
	td, mesh := parts[0], a.td
	if mesh == "" {
		mesh = DefaultTrustDomain
	}
	if td != DefaultTrustDomain && !trustDomainMatches(td, mesh) {
		return v
	}
	if strings.HasPrefix(td, "*") && strings.HasSuffix(mesh, td[1:]) {
		return v
	}
	parts[0] = mesh
	return strings.Join(parts, "/")
}

// trustDomainMatches is istiod's loose match of a principal's trust domain td against the
// mesh's: equal, or either one a pattern with a * at one end that the other matches.
func trustDomainMatches(td, mesh string) bool {
	prefix := func(a, pattern string) bool {
		p, ok := strings.CutSuffix(pattern, "*")
		return ok && strings.HasPrefix(a, p)
	}
	suffix := func(a, pattern string) bool {
		p, ok := strings.CutPrefix(pattern, "*")
		return ok && strings.HasSuffix(a, p)
	}
	return td == mesh || mesh == "*" || prefix(td, mesh) || prefix(mesh, td) || suffix(td, mesh) || suffix(mesh, td)
}

// jwtPrincipal matches request.auth conditions on the JWT payload the jwt_authn filter leaves
// in dynamic metadata (only present with a RequestAuthentication, which xdslab does not
// generate: such a rule matches no request).
func jwtPrincipal(key string, vs []string, tcp bool) (*rbacv3.Principal, error) {
	if tcp {
		return nil, errCannot
	}
	switch {
	case key == "request.auth.principal":
		var or []*rbacv3.Principal
		for _, v := range vs {
			iss, sub := requestPrincipalMatchers(v)
			or = append(or, &rbacv3.Principal{Identifier: &rbacv3.Principal_AndIds{AndIds: &rbacv3.Principal_Set{Ids: []*rbacv3.Principal{
				metadataPrincipal(jwtClaimMatcher([]string{"iss"}, &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: iss}}, false)),
				metadataPrincipal(jwtClaimMatcher([]string{"sub"}, &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: sub}}, false)),
			}}}})
		}
		if len(or) == 1 {
			return or[0], nil
		}
		return &rbacv3.Principal{Identifier: &rbacv3.Principal_OrIds{OrIds: &rbacv3.Principal_Set{Ids: or}}}, nil
	case key == "request.auth.audiences":
		return metadataPrincipal(jwtClaimMatcher([]string{"aud"}, stringOr(vs), true)), nil
	case key == "request.auth.presenter":
		return metadataPrincipal(jwtClaimMatcher([]string{"azp"}, stringOr(vs), true)), nil
	case strings.HasPrefix(key, "request.auth.claims"):
		claims, ok := validate.ClaimNames(strings.TrimPrefix(key, "request.auth.claims"))
		if !ok {
			return nil, fmt.Errorf("bad key %q", key)
		}
		return metadataPrincipal(jwtClaimMatcher(claims, stringOr(vs), true)), nil
	}
	return nil, fmt.Errorf("unknown attribute %q", key)
}

var matchAnyString = func() *matcherv3.StringMatcher { return regexMatch(".+") }

// requestPrincipalMatchers splits ISS/SUB (either side may carry a * at its outer end).
func requestPrincipalMatchers(v string) (iss, sub *matcherv3.StringMatcher) {
	idx := strings.LastIndex(v, "/")
	found := idx >= 0
	is, su := v, ""
	if found {
		is, su = v[:idx], v[idx+1:]
	}
	switch {
	case v == "*":
		return matchAnyString(), matchAnyString()
	case strings.HasPrefix(v, "*"):
		if !found {
			return matchAnyString(), suffixMatch(strings.TrimPrefix(v, "*"))
		}
		if is == "*" {
			return matchAnyString(), exactMatch(su)
		}
		return suffixMatch(strings.TrimPrefix(is, "*")), exactMatch(su)
	case strings.HasSuffix(v, "*"):
		if !found {
			return prefixMatch(strings.TrimSuffix(v, "*")), matchAnyString()
		}
		if su == "*" {
			return exactMatch(is), matchAnyString()
		}
		return exactMatch(is), prefixMatch(strings.TrimSuffix(su, "*"))
	}
	return exactMatch(is), exactMatch(su)
}

func metadataPrincipal(m *matcherv3.MetadataMatcher) *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_Metadata{Metadata: m}}
}

// jwtClaimMatcher matches payload.CLAIMS… of jwt_authn's metadata; with list set a claim that
// is a list matches when one element does, as well as a plain value.
func jwtClaimMatcher(claims []string, v *matcherv3.ValueMatcher, list bool) *matcherv3.MetadataMatcher {
	path := []*matcherv3.MetadataMatcher_PathSegment{{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: "payload"}}}
	for _, c := range claims {
		path = append(path, &matcherv3.MetadataMatcher_PathSegment{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: c}})
	}
	m := &matcherv3.MetadataMatcher{Filter: jwtAuthnFilterName, Path: path, Value: v}
	if list {
		m.Value = &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_OrMatch{OrMatch: &matcherv3.OrMatcher{ValueMatchers: []*matcherv3.ValueMatcher{
			{MatchPattern: &matcherv3.ValueMatcher_ListMatch{ListMatch: &matcherv3.ListMatcher{MatchPattern: &matcherv3.ListMatcher_OneOf{OneOf: v}}}},
			v,
		}}}}
	}
	return m
}

func stringOr(vs []string) *matcherv3.ValueMatcher {
	ms := make([]*matcherv3.ValueMatcher, 0, len(vs))
	for _, v := range vs {
		ms = append(ms, &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: wildcardMatch(v, "")}})
	}
	if len(ms) == 1 {
		return ms[0]
	}
	return &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_OrMatch{OrMatch: &matcherv3.OrMatcher{ValueMatchers: ms}}}
}

// wildcardMatch is a value with at most one * at an end: * is any non-empty value, *x a
// suffix, x* a prefix, else exact, each after prefix (a suffix after a prefix is a regex).
func wildcardMatch(v, prefix string) *matcherv3.StringMatcher {
	switch {
	case v == "*":
		return regexMatch(".+")
	case strings.HasPrefix(v, "*"):
		if prefix == "" {
			return suffixMatch(v[1:])
		}
		return regexMatch(prefix + ".*" + regexp.QuoteMeta(v[1:]))
	case strings.HasSuffix(v, "*"):
		return prefixMatch(prefix + v[:len(v)-1])
	}
	return exactMatch(prefix + v)
}

// headerMatch is a header condition: * is presence, *x a suffix, x* a prefix, else exact;
// hosts ignore case.
func headerMatch(name, v string, ignoreCase bool) *routev3.HeaderMatcher {
	h := &routev3.HeaderMatcher{Name: name}
	var m *matcherv3.StringMatcher
	switch {
	case v == "*":
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
		return h
	case strings.HasPrefix(v, "*"):
		m = suffixMatch(v[1:])
	case strings.HasSuffix(v, "*"):
		m = prefixMatch(v[:len(v)-1])
	default:
		m = exactMatch(v)
	}
	m.IgnoreCase = ignoreCase
	h.HeaderMatchSpecifier = &routev3.HeaderMatcher_StringMatch{StringMatch: m}
	return h
}

func exactMatch(v string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}}
}

func prefixMatch(v string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: v}}
}

func suffixMatch(v string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: v}}
}

func regexMatch(re string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}
}

// cidrOf is an IP (a /32 or /128) or a CIDR range, its address kept as written.
func cidrOf(v string) (*corev3.CidrRange, error) {
	var pfx netip.Prefix
	var err error
	if strings.Contains(v, "/") {
		pfx, err = netip.ParsePrefix(v)
	} else {
		var ip netip.Addr
		ip, err = netip.ParseAddr(v)
		pfx = netip.PrefixFrom(ip, ip.BitLen())
	}
	if err != nil {
		return nil, err
	}
	return &corev3.CidrRange{AddressPrefix: pfx.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(pfx.Bits()))}, nil
}
