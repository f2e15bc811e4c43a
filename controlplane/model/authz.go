package model

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/xdslab/xdslab/istioconfig"
	securityapi "istio.io/api/security/v1beta1"
)

// AuthorizationPolicySelects reports whether AuthorizationPolicy c applies to proxy p, as
// istiod selects for a sidecar: c is in the root namespace or p's, has no targetRef(s) (those
// are for Gateway API gateways and waypoints), and its selector is empty or a subset of p's labels.
// A router is selected the same way (a Gateway API gateway, which istiod selects by targetRef,
// is not modelled). A proxyless gRPC workload is selected the same way: its server listeners
// carry RBAC filters.
func AuthorizationPolicySelects(c *istioconfig.Config, p *Proxy) bool {
	if c == nil {
		return false
	}
	ap, ok := c.Spec.(*securityapi.AuthorizationPolicy)
	if !ok {
		return false
	}
	return policySelects(c, p, ap.GetSelector(), ap.GetTargetRef() != nil || len(ap.GetTargetRefs()) > 0)
}

// RequestAuthenticationSelects reports whether RequestAuthentication c applies to proxy p, with
// the rules of AuthorizationPolicySelects (istiod selects both kinds the same way), except that
// it selects no proxyless gRPC workload (xdslab gives those no jwt_authn filter, as istiod).
func RequestAuthenticationSelects(c *istioconfig.Config, p *Proxy) bool {
	if c == nil || p == nil || p.IsGRPC() {
		return false
	}
	ra, ok := c.Spec.(*securityapi.RequestAuthentication)
	if !ok {
		return false
	}
	return policySelects(c, p, ra.GetSelector(), ra.GetTargetRef() != nil || len(ra.GetTargetRefs()) > 0)
}

func policySelects(c *istioconfig.Config, p *Proxy, sel interface{ GetMatchLabels() map[string]string }, targetRef bool) bool {
	if p == nil || targetRef || (c.Namespace != RootNamespace && c.Namespace != p.Namespace) {
		return false
	}
	for k, v := range sel.GetMatchLabels() {
		if got, ok := p.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// TouchesAuthz reports whether a changed AuthorizationPolicy or RequestAuthentication selects p
// before or after the change (istiod's ProxyNeedsPush for these kinds: only the proxies a
// policy selects). Affects leaves the kinds to it, since the decision depends on the proxy's
// labels, not its scope.
func (ch *ChangeSet) TouchesAuthz(p *Proxy) bool {
	for _, k := range ch.Keys {
		var sel func(*istioconfig.Config, *Proxy) bool
		switch k.Kind {
		case istioconfig.KindAuthorizationPolicy:
			sel = AuthorizationPolicySelects
		case istioconfig.KindRequestAuthentication:
			sel = RequestAuthenticationSelects
		default:
			continue
		}
		if sel(ch.Prev.Config(k), p) || sel(ch.Next.Config(k), p) {
			return true
		}
	}
	return false
}

// ParseJwksURI is istiod's reading of a jwksUri: scheme http (default port 80) or https
// (443), an optional explicit port, and the host.
func ParseJwksURI(s string) (host string, port int, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", 0, fmt.Errorf("jwksUri %q does not parse: %v", s, err)
	}
	switch u.Scheme {
	case "http":
		port = 80
	case "https":
		port = 443
	default:
		return "", 0, fmt.Errorf("jwksUri %q has scheme %q: use http:// or https://", s, u.Scheme)
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return "", 0, fmt.Errorf("jwksUri %q has port %q: use a number", s, p)
		}
	}
	return u.Hostname(), port, nil
}
