package model

import (
	securityapi "istio.io/api/security/v1beta1"
)

// AuthorizationPolicySelects reports whether AuthorizationPolicy c applies to proxy p, as
// istiod selects for a sidecar: c is in the root namespace or p's, has no targetRef(s) (those
// are for Gateway API gateways and waypoints), and its selector is empty or a subset of p's labels.
// A router is selected the same way (a Gateway API gateway, which istiod selects by targetRef,
// is not modelled); proxyless gRPC clients get no RBAC from xdslab, so no policy selects them.
func AuthorizationPolicySelects(c *Config, p *Proxy) bool {
	if c == nil || p == nil || p.IsGRPC() {
		return false
	}
	ap, ok := c.Spec.(*securityapi.AuthorizationPolicy)
	if !ok || (c.Namespace != RootNamespace && c.Namespace != p.Namespace) {
		return false
	}
	if ap.GetTargetRef() != nil || len(ap.GetTargetRefs()) > 0 {
		return false
	}
	for k, v := range ap.GetSelector().GetMatchLabels() {
		if got, ok := p.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// TouchesAuthz reports whether a changed AuthorizationPolicy selects p before or after the
// change (istiod's ProxyNeedsPush for the kind: only the proxies a policy selects). Affects
// leaves the kind to it, since the decision depends on the proxy's labels, not its scope.
func (ch *ChangeSet) TouchesAuthz(p *Proxy) bool {
	for _, k := range ch.Keys {
		if k.Kind != KindAuthorizationPolicy {
			continue
		}
		if AuthorizationPolicySelects(ch.Prev.Config(k), p) || AuthorizationPolicySelects(ch.Next.Config(k), p) {
			return true
		}
	}
	return false
}
