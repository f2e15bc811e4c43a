package gen

import (
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// KeyScope names the proxy attributes the generator of typeURL reads, apart from the proxy's own
// IP: two proxies with the same scope get identical resources from the same snapshot, so the
// ADS server's cache shares marshalled bytes among them (it adds the IP itself for a sidecar that
// is an endpoint, whose inbound clusters and listeners are its own). EDS does not depend on the
// proxy's attributes here (scope ""; its locality, where locality load balancing applies, is
// LocalityClass); CDS and LDS depend only on the generator family (LDS also on which tcp and
// tls matches on sourceLabels or sourceNamespace select the proxy, which ViewKey names, and
// its inbound policies, InboundScope; a proxyless gRPC client's LDS on its namespace, which
// resolves short listener names); RDS also on the proxy's namespace (and on which HTTP matches'
// sourceLabels select it, which ViewKey names); SDS on the proxy's verified identity. Routers have their own
// class (routerKeyScope), so sidecar bytes are never served to a router nor the other way round.
func KeyScope(typeURL string, p *model.Proxy) string {
	if p != nil && p.Type == model.Router && !p.IsGRPC() && typeURL != EndpointType {
		return routerKeyScope(typeURL, p)
	}
	fam := "sidecar"
	if p != nil && p.IsGRPC() {
		fam = "grpc"
	}
	switch typeURL {
	case EndpointType:
		return ""
	case SecretType:
		// Secrets are the proxy's identity's own (and never cached: Cacheable).
		if p == nil {
			return "secret|"
		}
		return "secret|" + p.Identity
	case RouteType:
		if p == nil {
			return fam
		}
		// The proxy's labels matter only to the HTTP matches that name sourceLabels, which
		// ViewKey names (httpSourceMatchKey): not one class per label set, node name
		// (kubernetes.io/hostname) included.
		return fam + "|" + p.Namespace
	case ListenerType:
		if p != nil && p.IsGRPC() {
			// A gRPC listener name may be a short name of the proxy's namespace
			// (grpcServicePort): "web:80" is another service's listener in another namespace.
			return fam + "|" + p.Namespace
		}
	}
	return fam
}

// ViewKey names the proxy's view of s that the generator of typeURL reads (model.Scope.Key:
// the Sidecar that applies and the namespace exportTo is checked against), "" when it reads
// none: a named EDS request is answered the same for every proxy (but one whose own
// namespace's DestinationRules come first), a wildcard one lists only the clusters the proxy
// sees (edsrule.go: a named one also names which rules exported to a list of namespaces the
// proxy sees). The ADS server adds it to KeyScope in its cache keys, so
// proxies with different views never share bytes and proxies with the same view do.
//
// It also names the proxy's namespace when DestinationRules of that namespace apply to it
// before any other (drNamespaceKey), and which of that namespace's DestinationRule
// workloadSelectors select it (drSelectorSuffix). For listeners it also names which of the snapshot's source-conditioned L4 matches apply to
// the proxy (sourceMatchKey): a sidecar's outbound TCP chains follow the tcp routes whose
// sourceLabels and sourceNamespace select it, which KeyScope does not name for listeners. A
// proxyless gRPC workload's server listeners also read its IP and labels: the ADS server
// keys those names alone by GRPCServerKey, so its client listeners stay shared.
func ViewKey(typeURL string, p *model.Proxy, s *model.Snapshot, wildcard bool) string {
	if s == nil {
		return ""
	}
	if typeURL == EndpointType && !wildcard {
		// Shared by every proxy, but for one whose own namespace's DestinationRules come
		// first: its subsets' endpoints follow those rules, as its clusters do. Other proxies
		// share by which rules exported to a list of namespaces they see (edsrule.go).
		if ns := drNamespaceKey(p, s); ns != "" {
			return "dr=" + ns + drSelectorSuffix(p, s)
		}
		return exportedRuleKey(p, s)
	}
	k := s.ScopeFor(p).Key()
	if ns := drNamespaceKey(p, s); ns != "" {
		// Its namespace's DestinationRules come first for it (destrule.go).
		k += "|dr=" + ns + drSelectorSuffix(p, s)
	}
	if typeURL == ListenerType {
		if m := sourceMatchKey(p, s); m != "" {
			k += "|src=" + m
		}
	}
	if typeURL == RouteType {
		if m := httpSourceMatchKey(p, s); m != "" {
			k += "|hsrc=" + m
		}
	}
	if p != nil && p.Type == model.Router && !p.IsGRPC() && typeURL != EndpointType {
		// Which Gateways select the router, and its policies and source matches.
		k += "|lbl=" + SelectedLabels(p, s)
	}
	return k
}

type selectorKeysKey struct{}

// selectorKeys is the set of label keys some selector of s reads from a proxy's labels: the
// selectors of Gateways, Sidecars, PeerAuthentications, AuthorizationPolicies,
// RequestAuthentications and DestinationRules, and the sourceLabels of VirtualService matches
// (delegates included), computed once per snapshot's configs.
func selectorKeys(s *model.Snapshot) map[string]bool {
	return s.Derived(selectorKeysKey{}, func() any {
		keys := map[string]bool{}
		add := func(m map[string]string) {
			for k := range m {
				keys[k] = true
			}
		}
		for _, c := range s.Configs(istioconfig.KindGateway) {
			if gw, ok := c.Spec.(*networking.Gateway); ok {
				add(gw.GetSelector())
			}
		}
		for _, c := range s.Configs(istioconfig.KindSidecar) {
			if sc, ok := c.Spec.(*networking.Sidecar); ok {
				add(sc.GetWorkloadSelector().GetLabels())
			}
		}
		for _, c := range s.Configs(istioconfig.KindDestinationRule) {
			add(drSpec(c).GetWorkloadSelector().GetMatchLabels())
		}
		for _, c := range s.Configs(istioconfig.KindPeerAuthentication) {
			add(paSpec(c).GetSelector().GetMatchLabels())
		}
		for _, c := range s.Configs(istioconfig.KindAuthorizationPolicy) {
			add(apSpec(c).GetSelector().GetMatchLabels())
		}
		for _, c := range s.Configs(istioconfig.KindRequestAuthentication) {
			if ra, ok := c.Spec.(*securityapi.RequestAuthentication); ok {
				add(ra.GetSelector().GetMatchLabels())
			}
		}
		vss := append(slices.Clone(s.Configs(istioconfig.KindVirtualService)), s.VirtualServices()...)
		for _, c := range vss {
			vs := vsSpec(c)
			for _, hr := range vs.GetHttp() {
				for _, m := range hr.GetMatch() {
					add(m.GetSourceLabels())
				}
			}
			for _, tr := range vs.GetTcp() {
				for _, m := range tr.GetMatch() {
					add(m.GetSourceLabels())
				}
			}
			for _, tr := range vs.GetTls() {
				for _, m := range tr.GetMatch() {
					add(m.GetSourceLabels())
				}
			}
		}
		return keys
	}).(map[string]bool)
}

// SelectedLabels is the proxy's labels that some selector of s reads (selectorKeys), as
// "k=v|k=v" in key order: proxies that differ only in other labels (the node name istiod adds
// as kubernetes.io/hostname, a pod-template hash) are selected alike.
func SelectedLabels(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || s == nil {
		return ""
	}
	keys := selectorKeys(s)
	var b strings.Builder
	for _, k := range sortedKeys(p.Labels) {
		if keys[k] {
			b.WriteString(k + "=" + p.Labels[k] + "|")
		}
	}
	return b.String()
}

// InboundIPScope names what a sidecar's CDS and LDS read of the proxy itself beyond its view:
// its interception mode when it is NONE (no virtual listeners, every outbound listener bound
// to its port, no inbound config from its services; egressbind.go), and then, or when some
// Sidecar egress listener has captureMode NONE, a 0.0.0.0 bind or an HTTP_PROXY port without a
// bind, whether it is an unprivileged pod (a bound privileged port is left out) and the agent's
// ports (left out of a 0.0.0.0 bind, and of an HTTP_PROXY listener on 0.0.0.0); and when
// the Sidecar that applies to it has ingress listeners its IPs (an ingress port binds to the first, a 0.0.0.0 default endpoint sends to it), its
// interception mode (NONE binds every ingress port), whether it is an unprivileged pod and which
// ports the agent's own listeners take (ingress ports istiod leaves out). "" for a proxy in
// another mode with none of those: inbound config then follows the proxy's IP only where it
// is an endpoint, which the ADS server adds itself.
func InboundIPScope(p *model.Proxy, s *model.Snapshot) string {
	if p == nil || s == nil {
		return ""
	}
	var b strings.Builder
	none := noneInterception(p)
	if none {
		b.WriteString("icpt=NONE|")
	}
	if none || anyEgressCaptureNone(s) {
		// Ports that bind: an unprivileged pod leaves out privileged ones, and a 0.0.0.0
		// bind the agent's own.
		if p.Unprivileged {
			b.WriteString("unpriv|")
		}
		if len(p.StaticPorts) > 0 {
			b.WriteString("agent=" + joinPorts(p.StaticPorts) + "|")
		}
	}
	if !anyIngressSidecar(s) {
		return b.String()
	}
	sc := s.ScopeFor(p)
	if sc == nil || sc.Sidecar == nil {
		return b.String()
	}
	if spec, ok := sc.Sidecar.Spec.(*networking.Sidecar); !ok || len(spec.GetIngress()) == 0 {
		return b.String()
	}
	b.WriteString("ingress=" + strings.Join(p.IPAddresses, "+") + "|icpt=" + p.InterceptionMode +
		"|unpriv=" + strconv.FormatBool(p.Unprivileged) + "|agent=" + joinPorts(p.StaticPorts))
	return b.String()
}

// joinPorts is ports as "N,N,…".
func joinPorts(ports []uint32) string {
	var b strings.Builder
	for i, n := range ports {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(uint64(n), 10))
	}
	return b.String()
}

type httpSourceSelectorsKey struct{}

// httpSourceSelectors lists the distinct sourceLabels of the HTTP matches of the snapshot's
// VirtualServices (roots merged with their delegates), whatever gateways they are bound to,
// in config order, computed once per snapshot's configs.
func httpSourceSelectors(s *model.Snapshot) []map[string]string {
	return s.Derived(httpSourceSelectorsKey{}, func() any {
		var out []map[string]string
		seen := map[string]bool{}
		for _, c := range s.VirtualServices() {
			for _, hr := range vsSpec(c).GetHttp() {
				for _, m := range hr.GetMatch() {
					sel := m.GetSourceLabels()
					if len(sel) == 0 {
						continue
					}
					var b strings.Builder
					for _, k := range sortedKeys(sel) {
						b.WriteString(k + "=" + sel[k] + "\x00")
					}
					if !seen[b.String()] {
						seen[b.String()] = true
						out = append(out, sel)
					}
				}
			}
		}
		return out
	}).([]map[string]string)
}

// httpSourceMatchKey is one character per distinct sourceLabels of the snapshot's HTTP
// matches: whether the proxy's labels satisfy it ("" when there is none). A sidecar's routes
// read its labels only there (sourceMatchHTTP), its namespace being in KeyScope: proxies with
// the same key build the same routes, whatever their labels otherwise.
func httpSourceMatchKey(p *model.Proxy, s *model.Snapshot) string {
	sels := httpSourceSelectors(s)
	if len(sels) == 0 {
		return ""
	}
	var labels map[string]string
	if p != nil {
		labels = p.Labels
	}
	b := make([]byte, len(sels))
	for i, sel := range sels {
		b[i] = '0'
		if model.LabelsMatch(sel, labels) {
			b[i] = '1'
		}
	}
	return string(b)
}

// drSelectorSuffix names, after drNamespaceKey, which workloadSelectors of the DestinationRules
// of the proxy's namespace select it (drSelectorKey): two proxies of one namespace that rules
// with a selector treat differently get different clusters, routes and listeners.
func drSelectorSuffix(p *model.Proxy, s *model.Snapshot) string {
	if k := drSelectorKey(p, s); k != "" {
		return "|sel=" + k
	}
	return ""
}

// sourceMatch is one L4 match (of a tcp or tls route of a VirtualService bound to the mesh)
// that depends on the client: it names sourceLabels or a sourceNamespace.
type sourceMatch struct {
	labels    map[string]string
	namespace string
}

type sourceMatchesKey struct{}

// sourceMatches lists the snapshot's source-conditioned L4 matches, in config order, computed
// once per snapshot's configs.
func sourceMatches(s *model.Snapshot) []sourceMatch {
	return s.Derived(sourceMatchesKey{}, func() any {
		var out []sourceMatch
		add := func(labels map[string]string, ns string) {
			if len(labels) > 0 || ns != "" {
				out = append(out, sourceMatch{labels, ns})
			}
		}
		for _, c := range s.VirtualServices() {
			vs := vsSpec(c)
			if !forMesh(vs.GetGateways()) {
				continue // a gateway's routes: no sidecar reads them
			}
			for _, tr := range vs.GetTcp() {
				for _, m := range tr.GetMatch() {
					add(m.GetSourceLabels(), m.GetSourceNamespace())
				}
			}
			for _, tr := range vs.GetTls() {
				for _, m := range tr.GetMatch() {
					add(m.GetSourceLabels(), m.GetSourceNamespace())
				}
			}
		}
		return out
	}).([]sourceMatch)
}

// sourceMatchKey is one character per source-conditioned L4 match of s: whether the proxy's
// labels and namespace satisfy it ("" when s has none). Proxies with the same key build the
// same outbound TCP chains, whatever their labels otherwise.
func sourceMatchKey(p *model.Proxy, s *model.Snapshot) string {
	ms := sourceMatches(s)
	if len(ms) == 0 {
		return ""
	}
	var labels map[string]string
	var ns string
	if p != nil {
		labels, ns = p.Labels, p.Namespace
	}
	b := make([]byte, len(ms))
	for i, m := range ms {
		b[i] = '0'
		if model.LabelsMatch(m.labels, labels) && (m.namespace == "" || m.namespace == ns) {
			b[i] = '1'
		}
	}
	return string(b)
}

// LoopbackKey is "v6" for a proxy with no IPv4 address, "" otherwise: a sidecar's listeners
// bound to the loopback (egress captureMode NONE without bind, ingress default endpoints) take
// ::1 where an IPv4 proxy's take 127.0.0.1 (istiod's actualLocalHosts), whether or not it is an
// endpoint, and a proxy's wildcard listeners are on :: (a Sidecar egress bind :: is its
// wildcard, 0.0.0.0 an address), its DNS clusters resolve IPv6 only and its inbound ones bind
// ::6. A dual-stack proxy's is "dual": its outbound listeners on addresses istiod picks have the
// IPv6 one beside them, and its InboundPassthroughCluster binds ::6 too (proxyDualStack). The
// ADS server adds it to a sidecar's CDS and LDS classes and a router's.
func LoopbackKey(p *model.Proxy) string {
	switch {
	case proxyDualStack(p):
		return "dual"
	case p == nil || proxyIPv4(p):
		return ""
	}
	return "v6"
}

type ingressSidecarsKey struct{}

// anyIngressSidecar reports whether some Sidecar of s has ingress listeners, computed once per
// snapshot's configs: without one, InboundIPScope looks up no proxy's scope.
func anyIngressSidecar(s *model.Snapshot) bool {
	return s.Derived(ingressSidecarsKey{}, func() any {
		for _, c := range s.Configs(istioconfig.KindSidecar) {
			if sc, ok := c.Spec.(*networking.Sidecar); ok && len(sc.GetIngress()) > 0 {
				return true
			}
		}
		return false
	}).(bool)
}

type egressCaptureNoneKey struct{}

// anyEgressCaptureNone reports whether some Sidecar of s has an egress listener with
// captureMode NONE (its ports bind, so an unprivileged proxy leaves out the privileged ones), a
// wildcard bind, 0.0.0.0 or :: (an IPv6-only proxy's), or an HTTP_PROXY port without a bind
// (which leave out the agent's ports),
// computed once per snapshot's configs.
func anyEgressCaptureNone(s *model.Snapshot) bool {
	return s.Derived(egressCaptureNoneKey{}, func() any {
		for _, c := range s.Configs(istioconfig.KindSidecar) {
			if sc, ok := c.Spec.(*networking.Sidecar); ok {
				for _, eg := range sc.GetEgress() {
					// An HTTP_PROXY port without a bind listens on the wildcard too (httpproxy.go).
					if eg.GetCaptureMode() == networking.CaptureMode_NONE || eg.GetBind() == wildcardIP || eg.GetBind() == "::" || isHTTPProxy(eg) && eg.GetBind() == "" {
						return true
					}
				}
			}
		}
		return false
	}).(bool)
}
