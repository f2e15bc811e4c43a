package validate

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"

	securityapi "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/xdslab/xdslab/istioconfig"
)

// authorizationPolicy mirrors istiod's ValidateAuthorizationPolicy: selector and targetRef(s)
// exclusive, CUSTOM only with a provider and without identity conditions, no provider on
// other actions, DENY with rules, no empty from/to/source/operation, no empty values, valid
// IPs, ports and path templates, and when-conditions with a known key and a value. It then
// warns about what xdslab accepts but does not generate (notGeneratedAuthz).
func (c *checker) authorizationPolicy(at Path, ap *securityapi.AuthorizationPolicy) {
	sel := ap.GetSelector().GetMatchLabels()
	refs := len(ap.GetTargetRefs())
	if ap.GetTargetRef() != nil {
		refs++
	}
	if ap.GetSelector() != nil && refs > 0 {
		c.errf(at.With("targetRef"), "only one of selector or targetRef(s) can be set: keep one")
	}
	if ap.GetTargetRef() != nil && len(ap.GetTargetRefs()) > 0 {
		c.errf(at.With("targetRefs"), "only one of targetRef or targetRefs can be set: use targetRefs")
	}
	c.targetRefs(at, ap.GetTargetRef(), ap.GetTargetRefs())
	c.selector(at.With("selector", "matchLabels"), sel, "AuthorizationPolicy selector")
	action := ap.GetAction()
	if action == securityapi.AuthorizationPolicy_CUSTOM {
		if ap.Rules == nil {
			c.errf(at.With("rules"), "a CUSTOM policy without rules never triggers: add an empty rule {} to send every request to the provider")
		} else if ap.GetProvider().GetName() == "" {
			c.errf(at.With("provider", "name"), "must not be empty for a CUSTOM policy: name an extension provider of the mesh config")
		}
	} else if ap.GetProvider() != nil {
		c.errf(at.With("provider"), "must not be set with action %s: remove it or use action CUSTOM", action)
	}
	if action == securityapi.AuthorizationPolicy_DENY && ap.Rules == nil {
		c.errf(at.With("rules"), "a DENY policy without rules never triggers: add an empty rule {} to deny every request")
	}
	for i, r := range ap.GetRules() {
		c.authzRule(at.With("rules", i), action, r)
	}
	c.notGeneratedAuthz(at, ap)
}

// targetRefKinds are the group/kind pairs istiod lets a policy's targetRef(s) name (the
// version is not checked; the core group is written "" or "core").
var targetRefKinds = []string{"core/Service", "networking.istio.io/ServiceEntry", "gateway.networking.k8s.io/Gateway", "gateway.networking.k8s.io/GatewayClass"}

// targetRefs mirrors istiod's validatePolicyTargetReference for a policy's targetRef and each
// of its targetRefs: a name, no namespace (no cross-namespace references), and a group/kind
// of targetRefKinds.
func (c *checker) targetRefs(at Path, one *typev1beta1.PolicyTargetReference, many []*typev1beta1.PolicyTargetReference) {
	check := func(ra Path, r *typev1beta1.PolicyTargetReference) {
		if r == nil {
			return
		}
		if r.GetName() == "" {
			c.errf(ra.With("name"), "is required: name the %s the policy applies to", cmp.Or(r.GetKind(), "Service"))
		}
		if r.GetNamespace() != "" {
			c.errf(ra.With("namespace"), "must not be set: a policy references objects of its own namespace only")
		}
		if gk := cmp.Or(r.GetGroup(), "core") + "/" + r.GetKind(); !slices.Contains(targetRefKinds, gk) {
			c.errf(ra.With("kind"), "%s/%s is not a kind a policy can target: use one of %s (group/kind, \"\" for core)", r.GetGroup(), r.GetKind(), strings.Join(targetRefKinds, ", "))
		}
	}
	check(at.With("targetRef"), one)
	for i, r := range many {
		check(at.With("targetRefs", i), r)
	}
}

func (c *checker) authzRule(at Path, action securityapi.AuthorizationPolicy_Action, r *securityapi.Rule) {
	if r == nil {
		c.errf(at, "a rule must not be null: write {} for a rule that matches everything")
		return
	}
	custom := action == securityapi.AuthorizationPolicy_CUSTOM
	if r.From != nil && len(r.From) == 0 {
		c.errf(at.With("from"), "must not be empty: remove it to match any source")
	}
	var fromExists, toExists, tcpFrom, tcpTo bool
	for j, f := range r.GetFrom() {
		fat := at.With("from", j, "source")
		s := f.GetSource()
		if s == nil {
			c.errf(fat, "must be set: name at least one source condition, or remove this from entry")
			continue
		}
		fromExists = true
		lists := []struct {
			name string
			v    []string
		}{
			{"principals", s.Principals}, {"notPrincipals", s.NotPrincipals},
			{"requestPrincipals", s.RequestPrincipals}, {"notRequestPrincipals", s.NotRequestPrincipals},
			{"namespaces", s.Namespaces}, {"notNamespaces", s.NotNamespaces},
			{"ipBlocks", s.IpBlocks}, {"notIpBlocks", s.NotIpBlocks},
			{"remoteIpBlocks", s.RemoteIpBlocks}, {"notRemoteIpBlocks", s.NotRemoteIpBlocks},
			{"serviceAccounts", s.ServiceAccounts}, {"notServiceAccounts", s.NotServiceAccounts},
			{"trustDomains", s.TrustDomains}, {"notTrustDomains", s.NotTrustDomains},
		}
		n := 0
		for _, l := range lists {
			n += len(l.v)
			c.nonEmptyValues(fat.With(l.name), l.v)
		}
		if n == 0 {
			c.errf(fat, "must not be empty: name at least one source condition, or remove this from entry")
		}
		if len(s.Principals)+len(s.NotPrincipals)+len(s.Namespaces)+len(s.NotNamespaces) > 0 && len(s.ServiceAccounts)+len(s.NotServiceAccounts) > 0 {
			c.errf(fat.With("serviceAccounts"), "cannot be set with namespaces or principals: use one or the other")
		}
		for _, l := range []struct {
			name string
			v    []string
		}{{"ipBlocks", s.IpBlocks}, {"notIpBlocks", s.NotIpBlocks}, {"remoteIpBlocks", s.RemoteIpBlocks}, {"notRemoteIpBlocks", s.NotRemoteIpBlocks}} {
			c.ipValues(fat.With(l.name), l.v)
		}
		for _, l := range []struct {
			name string
			v    []string
		}{{"serviceAccounts", s.ServiceAccounts}, {"notServiceAccounts", s.NotServiceAccounts}} {
			c.serviceAccounts(fat.With(l.name), l.v)
		}
		for _, l := range []struct {
			name string
			v    []string
		}{{"trustDomains", s.TrustDomains}, {"notTrustDomains", s.NotTrustDomains}} {
			c.trustDomains(fat.With(l.name), l.v)
		}
		if s.Principals != nil || s.NotPrincipals != nil || s.IpBlocks != nil || s.NotIpBlocks != nil || s.Namespaces != nil ||
			s.NotNamespaces != nil || s.RemoteIpBlocks != nil || s.NotRemoteIpBlocks != nil || s.ServiceAccounts != nil || s.NotServiceAccounts != nil {
			tcpFrom = true
		}
		if custom {
			for _, l := range lists {
				if len(l.v) > 0 && !strings.Contains(strings.ToLower(l.name), "ipblocks") {
					c.errf(fat.With(l.name), "is not supported with action CUSTOM: the external authorizer sees no peer identity; remove it")
				}
			}
		}
	}
	if r.To != nil && len(r.To) == 0 {
		c.errf(at.With("to"), "must not be empty: remove it to match any operation")
	}
	for j, t := range r.GetTo() {
		tat := at.With("to", j, "operation")
		o := t.GetOperation()
		if o == nil {
			c.errf(tat, "must be set: name at least one operation condition, or remove this to entry")
			continue
		}
		toExists = true
		lists := []struct {
			name string
			v    []string
		}{
			{"hosts", o.Hosts}, {"notHosts", o.NotHosts}, {"ports", o.Ports}, {"notPorts", o.NotPorts},
			{"methods", o.Methods}, {"notMethods", o.NotMethods}, {"paths", o.Paths}, {"notPaths", o.NotPaths},
		}
		n := 0
		for _, l := range lists {
			n += len(l.v)
			c.nonEmptyValues(tat.With(l.name), l.v)
		}
		if n == 0 {
			c.errf(tat, "must not be empty: name at least one operation condition, or remove this to entry")
		}
		c.portValues(tat.With("ports"), o.Ports)
		c.portValues(tat.With("notPorts"), o.NotPorts)
		c.pathTemplates(tat.With("paths"), o.Paths)
		c.pathTemplates(tat.With("notPaths"), o.NotPaths)
		if o.Ports != nil || o.NotPorts != nil {
			tcpTo = true
		}
	}
	for j, w := range r.GetWhen() {
		wat := at.With("when", j)
		if w == nil {
			c.errf(wat, "a condition must not be null")
			continue
		}
		k := w.GetKey()
		switch {
		case k == "":
			c.errf(wat.With("key"), "must not be empty: name an attribute such as request.headers[x-user] or source.ip")
			continue
		case len(w.GetValues()) == 0 && len(w.GetNotValues()) == 0:
			c.errf(wat, "at least one of values or notValues must be set for key %s", k)
			continue
		}
		c.authzKey(wat.With("key"), k)
		for _, l := range []struct {
			name string
			v    []string
		}{{"values", w.GetValues()}, {"notValues", w.GetNotValues()}} {
			c.nonEmptyValues(wat.With(l.name), l.v)
			c.authzValues(wat.With(l.name), k, l.v)
		}
		if custom && (k == "source.namespace" || k == "source.serviceAccount" || k == "source.trustDomain" || k == "source.principal" || strings.HasPrefix(k, "request.auth.")) {
			c.errf(wat.With("key"), "%s is not supported with action CUSTOM: remove the condition", k)
		}
	}
	if action == securityapi.AuthorizationPolicy_DENY && ((fromExists && !toExists && !tcpFrom) || (toExists && !tcpTo)) {
		c.warnf(at, "uses only HTTP attributes in a DENY rule, so it denies all traffic to the TCP ports in its scope (as istiod generates it): name the ports in to.operation.ports")
	}
}

// authzKeys are the when-condition keys istiod knows, by exact name; request.headers[…],
// request.auth.claims[…] and experimental.envoy.filters.… are matched by prefix.
var authzKeys = map[string]bool{
	"source.ip": true, "remote.ip": true, "source.namespace": true, "source.serviceAccount": true,
	"source.principal": true, "source.trustDomain": true, "request.auth.principal": true,
	"request.auth.audiences": true, "request.auth.presenter": true, "destination.ip": true,
	"destination.port": true, "connection.sni": true,
}

// authzKey is the key half of istiod's ValidateAttribute: a known attribute, and a name in
// brackets for request.headers, request.auth.claims and experimental.envoy.filters.… (whose
// key reads FILTER.PATH[NAME]).
func (c *checker) authzKey(at Path, key string) {
	for _, m := range []string{"request.headers", "request.auth.claims", "experimental.envoy.filters."} {
		if strings.HasPrefix(key, m) {
			open := strings.Index(key, "[")
			if !strings.HasSuffix(key, "]") || open <= 0 || open >= len(key)-2 {
				form := m + "[NAME]"
				if strings.HasSuffix(m, ".") {
					form = m + "FILTER.PATH[NAME]"
				}
				c.errf(at, "%q is not of the form %s", key, form)
				return
			}
			if m == "request.auth.claims" {
				if names, ok := ClaimNames(strings.TrimPrefix(key, m)); ok && slices.Contains(names, "") {
					c.warnf(at, "%q names an empty claim: istiod (and xdslab) generate a metadata matcher with an empty key, which Envoy refuses with the whole listener: remove the empty brackets", key)
				}
			}
			return
		}
	}
	if !authzKeys[key] {
		c.errf(at, "unknown attribute %q: use one of request.headers[NAME], source.ip, remote.ip, source.namespace, source.principal, source.serviceAccount, source.trustDomain, request.auth.principal, request.auth.audiences, request.auth.presenter, request.auth.claims[NAME], destination.ip, destination.port, connection.sni", key)
	}
}

// authzValues is the value half of istiod's ValidateAttribute.
func (c *checker) authzValues(at Path, key string, values []string) {
	switch key {
	case "source.ip", "remote.ip", "destination.ip":
		c.ipValues(at, values)
	case "destination.port":
		c.portValues(at, values)
	case "source.trustDomain":
		// Wildcards only: istiod's '/' rule is for from.source.trustDomains alone.
		c.wildcardValues(at, values)
	case "source.serviceAccount":
		c.serviceAccounts(at, values)
	}
}

// serviceAccounts mirrors istiod's CheckServiceAccount: at most 16 values, each NAME or
// NAMESPACE/NAME of at most 320 characters, without wildcards.
func (c *checker) serviceAccounts(at Path, vs []string) {
	if len(vs) > 16 {
		c.errf(at, "has %d values: list at most 16 service accounts (or match by namespace or principal)", len(vs))
	}
	for k, v := range vs {
		switch {
		case strings.Count(v, "/") > 1 || strings.HasPrefix(v, "/") || strings.HasSuffix(v, "/"):
			c.errf(at.With(k), "%q is not a service account: write NAME or NAMESPACE/NAME", v)
		case strings.Contains(v, "*"):
			c.errf(at.With(k), "%q: wildcards are not allowed in a service account: name it, or match principals instead", v)
		case len(v) > 320:
			c.errf(at.With(k), "is %d characters long: a service account is at most 320", len(v))
		}
	}
}

// trustDomains mirrors istiod's CheckTrustDomainValues: wildcard values without '/'.
func (c *checker) trustDomains(at Path, vs []string) {
	c.wildcardValues(at, vs)
	for i, v := range vs {
		if strings.Contains(v, "/") {
			c.errf(at.With(i), "%q: a trust domain has no '/': write the domain alone, e.g. cluster.local", v)
		}
	}
}

func (c *checker) nonEmptyValues(at Path, vs []string) {
	for i, v := range vs {
		if v == "" {
			c.errf(at.With(i), "an empty value is not allowed: remove it")
		}
	}
}

func (c *checker) ipValues(at Path, vs []string) {
	for i, v := range vs {
		if v != "" && !isIPOrCIDR(v) {
			c.errf(at.With(i), "%q is not an IP address or CIDR range", v)
		}
	}
}

func (c *checker) portValues(at Path, vs []string) {
	for i, v := range vs {
		if p, err := strconv.ParseUint(v, 10, 32); v != "" && (err != nil || p > 65535) {
			c.errf(at.With(i), "%q is not a port in 0..65535", v)
		}
	}
}

func (c *checker) wildcardValues(at Path, vs []string) {
	for i, v := range vs {
		switch n := strings.Count(v, "*"); {
		case n > 1:
			c.errf(at.With(i), "%q has more than one wildcard: use at most one", v)
		case n == 1 && v != "*" && !strings.HasPrefix(v, "*") && !strings.HasSuffix(v, "*"):
			c.errf(at.With(i), "%q has a wildcard in the middle: put it at the start or the end", v)
		}
	}
}

// pathLiteralRE is a path segment of URI characters (RFC 3986 pchar, unencoded ones and
// %-escapes), which a path with templates must be made of between its templates.
var pathLiteralRE = regexp.MustCompile(`^[a-zA-Z0-9._~%!$&'()+,;:@=-]+$`)

// pathTemplates is istiod's CheckValidPathTemplate: {*} anywhere, {**} only last, no other
// braces, and in a path with a template every other segment non-empty and of URI characters.
func (c *checker) pathTemplates(at Path, vs []string) {
	for i, v := range vs {
		seenAny := false
		templated := strings.Contains(v, "{*}") || strings.Contains(v, "{**}")
		for _, g := range strings.Split(strings.Trim(v, "/"), "/") {
			switch {
			case (g == "{*}" || g == "{**}") && seenAny:
				c.errf(at.With(i), "path %q: {**} must be the last operator", v)
			case g == "{**}":
				seenAny = true
			case g == "{*}":
			case strings.ContainsAny(g, "{}"):
				c.errf(at.With(i), "path %q has '{' or '}' outside the templates {*} and {**}", v)
			case templated && !pathLiteralRE.MatchString(g):
				c.errf(at.With(i), "path %q: segment %q of a path with templates must be non-empty and of URI characters (letters, digits, -._~%%!$&'()+,;:@=): escape the others (%%20 for a space)", v, g)
			}
		}
	}
}

// dryRunAnnotation is the annotation that puts an AuthorizationPolicy in dry-run (shadow rules).
const dryRunAnnotation = "istio.io/dry-run"

// Metadata applies istiod's checks of an object's metadata: a Gateway's name is a DNS label
// (ValidateGateway), and (validateMetadata's checkDryRunAnnotation) istio.io/dry-run only on
// an AuthorizationPolicy, there only with action ALLOW or DENY, and with a value
// strconv.ParseBool reads ("true", "false", "1", …). istiod rejects the object otherwise; the
// generators would silently build shadow LOG rules or read an unparsable value as false.
// Paths start at "metadata".
func Metadata(cfg *istioconfig.Config) []Problem {
	c := &checker{}
	if cfg.Kind == istioconfig.KindGateway && !isDNSLabel(cfg.Name) {
		// istiod's ValidateGateway: a reference namespace/name cannot name a dotted one.
		c.errf(Path{"metadata", "name"}, "%q is not a valid Gateway name: a Gateway's name is a DNS label (at most 63 lowercase letters, digits and '-', no dots)", cfg.Name)
	}
	v, ok := cfg.Annotations[dryRunAnnotation]
	if !ok {
		return c.problems
	}
	at := Path{"metadata", "annotations", dryRunAnnotation}
	ap, isAuthz := cfg.Spec.(*securityapi.AuthorizationPolicy)
	switch {
	case !isAuthz:
		c.errf(at, "is supported on AuthorizationPolicy only: remove it from this %s", cfg.Kind)
	case ap.GetAction() != securityapi.AuthorizationPolicy_ALLOW && ap.GetAction() != securityapi.AuthorizationPolicy_DENY:
		c.errf(at, "supports actions ALLOW and DENY only, not %s: remove it, or use a DENY policy in dry-run", ap.GetAction())
	default:
		if _, err := strconv.ParseBool(v); err != nil {
			c.errf(at, "%q is not a boolean: write \"true\" or \"false\"", v)
		}
	}
	return c.problems
}

// InBrackets is NAME of "[NAME]" (a request.headers key's part after the attribute), false for
// anything else.
func InBrackets(s string) (string, bool) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// ClaimNames is the claim path of a request.auth.claims key's part after the attribute, as
// istiod reads it: "[a][b]" is the nested claims a, b; anything else one "[name]" (so
// "[[team]]" is the claim "[team]"). A name may be empty ("[a][]"): Envoy refuses the metadata
// matcher such a path becomes.
func ClaimNames(s string) ([]string, bool) {
	var out []string
	rest := s
	for rest != "" {
		if rest[0] != '[' {
			break
		}
		end := strings.IndexAny(rest[1:], "[]")
		if end < 0 || rest[1+end] != ']' {
			break
		}
		out = append(out, rest[1:1+end])
		rest = rest[2+end:]
	}
	if rest == "" && len(out) > 0 {
		return out, true
	}
	n, ok := InBrackets(s)
	return []string{n}, ok
}
