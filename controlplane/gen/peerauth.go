package gen

import (
	"strings"

	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// RootNamespace holds mesh-wide PeerAuthentications (Istio's default meshConfig.rootNamespace).
const RootNamespace = "istio-system"

// mtlsMode is the inbound mTLS mode of one port.
type mtlsMode uint8

const (
	// mtlsNone: no PeerAuthentication applies, the port is plaintext. (Istio's default is
	// PERMISSIVE; xdslab keeps plaintext so that configs without security policy generate
	// what they always did.)
	mtlsNone mtlsMode = iota
	mtlsDisable
	mtlsPermissive
	mtlsStrict
)

// peerAuth is the PeerAuthentication in effect for one proxy: the mesh-wide policy, overridden
// by the namespace's, then by a workload policy whose selector matches the proxy's labels, then
// per port. UNSET inherits; a policy chain that is UNSET all the way means PERMISSIVE, as in
// Istio.
type peerAuth struct {
	mode  mtlsMode
	ports map[uint32]mtlsMode // workload policy's portLevelMtls, UNSET ports with the workload's mode
	deps  []istioconfig.Key
}

// peerAuthFor resolves the proxy's policy. Among several candidates of one level the oldest
// wins, then the first by name, as istiod picks; a policy with a selector counts only outside
// the root namespace.
func peerAuthFor(p *model.Proxy, s *model.Snapshot) peerAuth {
	var out peerAuth
	pick := func(ns string, workload bool) *istioconfig.Config { return pickPeerAuth(s, ns, p.Labels, workload) }
	apply := func(c *istioconfig.Config) {
		if c == nil {
			return
		}
		out.deps = append(out.deps, c.Key())
		if m := modeOf(paSpec(c).GetMtls()); m != mtlsNone {
			out.mode = m
		} else if out.mode == mtlsNone {
			out.mode = mtlsPermissive // present but UNSET: Istio's default
		}
	}
	apply(pick(RootNamespace, false))
	if p.Namespace != RootNamespace {
		apply(pick(p.Namespace, false))
	}
	// A policy with a selector in the root namespace is no workload policy: istiod ignores it,
	// for the root namespace's own workloads too.
	if w := pick(p.Namespace, true); w != nil && p.Namespace != RootNamespace {
		apply(w)
		for port, m := range paSpec(w).GetPortLevelMtls() {
			pm := modeOf(m)
			if pm == mtlsNone {
				pm = out.mode // UNSET inherits the workload's mode, but the port is still listed
			}
			if out.ports == nil {
				out.ports = map[uint32]mtlsMode{}
			}
			out.ports[port] = pm
		}
	}
	out.deps = sortDeps(out.deps)
	return out
}

// pickPeerAuth returns the namespace's oldest (then first by name) PeerAuthentication without a
// selector, or with workload set the oldest whose selector matches labels.
func pickPeerAuth(s *model.Snapshot, ns string, labels map[string]string, workload bool) *istioconfig.Config {
	var best *istioconfig.Config
	for _, c := range s.ConfigsIn(istioconfig.KindPeerAuthentication, ns) {
		sel := paSpec(c).GetSelector().GetMatchLabels()
		if workload != (len(sel) > 0) || (workload && !labelsMatch(sel, labels)) {
			continue
		}
		if best == nil || c.CreationTimestamp.Before(best.CreationTimestamp) ||
			(c.CreationTimestamp.Equal(best.CreationTimestamp) && c.Name < best.Name) {
			best = c
		}
	}
	return best
}

// namespaceMTLS is the mTLS mode a client assumes for the services of namespace ns (istiod's
// namespace-level inference for auto-mTLS): the namespace's policy without a selector, else
// the mesh-wide one; mtlsNone when neither sets a mode.
func namespaceMTLS(s *model.Snapshot, ns string) mtlsMode {
	if m := modeOf(paSpec(pickPeerAuth(s, ns, nil, false)).GetMtls()); m != mtlsNone {
		return m
	}
	if ns == RootNamespace {
		return mtlsNone
	}
	return modeOf(paSpec(pickPeerAuth(s, RootNamespace, nil, false)).GetMtls())
}

// workloadMTLS resolves the PeerAuthentication of endpoints (the server side of a
// connection), memoized by namespace and labels. A nil *workloadMTLS (a snapshot without
// PeerAuthentication) answers mtlsNone.
type workloadMTLS struct {
	s    *model.Snapshot
	memo map[string]peerAuth
}

func newWorkloadMTLS(s *model.Snapshot) *workloadMTLS {
	if len(s.Configs(istioconfig.KindPeerAuthentication)) == 0 {
		return nil
	}
	return &workloadMTLS{s: s, memo: map[string]peerAuth{}}
}

// mode is the mTLS mode of endpoint ep (a workload in namespace ns) on its port target.
func (w *workloadMTLS) mode(ns string, ep *model.Endpoint, target uint32) mtlsMode {
	if w == nil {
		return mtlsNone
	}
	var b strings.Builder
	b.WriteString(ns)
	for _, k := range sortedKeys(ep.Labels) {
		b.WriteString("|" + k + "=" + ep.Labels[k])
	}
	pa, ok := w.memo[b.String()]
	if !ok {
		pa = peerAuthFor(&model.Proxy{Namespace: ns, Labels: ep.Labels}, w.s)
		w.memo[b.String()] = pa
	}
	return pa.port(target)
}

// port is the mode of one inbound (target) port.
func (pa peerAuth) port(n uint32) mtlsMode {
	if m, ok := pa.ports[n]; ok {
		return m
	}
	return pa.mode
}

func modeOf(m *securityapi.PeerAuthentication_MutualTLS) mtlsMode {
	switch m.GetMode() {
	case securityapi.PeerAuthentication_MutualTLS_DISABLE:
		return mtlsDisable
	case securityapi.PeerAuthentication_MutualTLS_PERMISSIVE:
		return mtlsPermissive
	case securityapi.PeerAuthentication_MutualTLS_STRICT:
		return mtlsStrict
	}
	return mtlsNone
}

func paSpec(c *istioconfig.Config) *securityapi.PeerAuthentication {
	if c == nil {
		return nil
	}
	s, _ := c.Spec.(*securityapi.PeerAuthentication)
	return s
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// InboundScope names what a sidecar's inbound listener reads besides its IP: its namespace and
// which of the PeerAuthentications, AuthorizationPolicies and RequestAuthentications with a
// selector (in the root namespace and its own) select it. The ADS server adds it to the listener cache class
// of every sidecar (its catch-all inbound chains follow the mode and carry the jwt_authn and RBAC
// filters too); it is empty when the snapshot has none of these kinds.
func InboundScope(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || s == nil || len(s.Configs(istioconfig.KindPeerAuthentication))+len(s.Configs(istioconfig.KindAuthorizationPolicy))+len(s.Configs(istioconfig.KindRequestAuthentication)) == 0 {
		return ""
	}
	// The labels matter only to the selectors of these policies in the root namespace and the
	// proxy's: one character per policy with a selector, whether it selects the proxy (not one
	// class per label set, node name included).
	var b strings.Builder
	b.WriteString(p.Namespace + "|")
	nss := []string{RootNamespace}
	if p.Namespace != RootNamespace {
		nss = append(nss, p.Namespace)
	}
	for _, ns := range nss {
		for _, c := range s.ConfigsIn(istioconfig.KindPeerAuthentication, ns) {
			if sel := paSpec(c).GetSelector().GetMatchLabels(); len(sel) > 0 {
				b.WriteByte(bit(labelsMatch(sel, p.Labels)))
			}
		}
		for _, c := range s.ConfigsIn(istioconfig.KindAuthorizationPolicy, ns) {
			if ap := apSpec(c); ap != nil && len(ap.GetSelector().GetMatchLabels()) > 0 {
				b.WriteByte(bit(model.AuthorizationPolicySelects(c, p)))
			}
		}
		for _, c := range s.ConfigsIn(istioconfig.KindRequestAuthentication, ns) {
			if ra, ok := c.Spec.(*securityapi.RequestAuthentication); ok && len(ra.GetSelector().GetMatchLabels()) > 0 {
				b.WriteByte(bit(model.RequestAuthenticationSelects(c, p)))
			}
		}
	}
	return b.String()
}

func bit(v bool) byte {
	if v {
		return '1'
	}
	return '0'
}
