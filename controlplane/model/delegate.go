package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/istioconfig"
)

// VirtualService delegation, as istiod merges it (its VirtualService controller) before any
// generator reads a VirtualService: a VirtualService without hosts is a delegate, which no
// proxy reads on its own; an http route of a VirtualService with hosts (a root) that names one
// with `delegate: {name, namespace}` is replaced by the delegate's http routes, each merged
// with it (MergeDelegateRoute). A delegate that does not exist, has hosts, or is not exported
// to the root's namespace drops the root's route; a delegate route whose matches conflict
// with the root route's is dropped. Delegation is one level deep: a delegate's own delegate
// routes are invalid (validate rejects them) and are dropped here.

// DelegateIssue is a root route, or one of its delegate's routes, that the merge drops, with
// why, for `xdslab validate` to report (istiod only logs them).
type DelegateIssue struct {
	// Root is the root VirtualService, Route the index of its http route with the delegate.
	Root  *istioconfig.Config
	Route int
	// DelegateRoute is the index of the delegate's http route that was dropped, -1 when the
	// whole root route was.
	DelegateRoute int
	Msg           string
}

// MergeDelegates returns the VirtualServices of vss with hosts, in their order, each root
// replaced by a copy (same Meta) whose http routes are merged with their delegates', and the
// routes the merge dropped. Delegates (no hosts) are left out. vss is not modified.
func MergeDelegates(vss []*istioconfig.Config) ([]*istioconfig.Config, []DelegateIssue) {
	delegates := map[istioconfig.Key]*istioconfig.Config{}
	for _, c := range vss {
		if vs, ok := c.Spec.(*networking.VirtualService); ok && len(vs.GetHosts()) == 0 {
			delegates[c.Key()] = c
		}
	}
	var issues []DelegateIssue
	out := make([]*istioconfig.Config, 0, len(vss)-len(delegates))
	for _, c := range vss {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok || len(vs.GetHosts()) == 0 {
			continue
		}
		if !isRoot(vs) {
			out = append(out, c)
			continue
		}
		merged := proto.Clone(vs).(*networking.VirtualService)
		merged.Http = nil
		for i, r := range vs.GetHttp() {
			ref := r.GetDelegate()
			if ref == nil {
				merged.Http = append(merged.Http, r)
				continue
			}
			key := DelegateKey(ref, c.Namespace)
			d := delegates[key]
			switch {
			case d == nil:
				msg := fmt.Sprintf("delegate VirtualService %s/%s does not exist", key.Namespace, key.Name)
				if findConfig(vss, key) != nil {
					msg = fmt.Sprintf("VirtualService %s/%s has hosts, so it is not a delegate", key.Namespace, key.Name)
				}
				issues = append(issues, DelegateIssue{Root: c, Route: i, DelegateRoute: -1, Msg: msg})
				continue
			case !ExportedTo(d.Spec.(*networking.VirtualService).GetExportTo(), d.Namespace, c.Namespace):
				issues = append(issues, DelegateIssue{Root: c, Route: i, DelegateRoute: -1,
					Msg: fmt.Sprintf("delegate VirtualService %s/%s is not exported to the root's namespace %s", key.Namespace, key.Name, c.Namespace)})
				continue
			}
			qr := qualifyRootGateways(r, c.Namespace) // once for all the delegate's routes
			for j, dr := range d.Spec.(*networking.VirtualService).GetHttp() {
				if dr.GetDelegate() != nil {
					issues = append(issues, DelegateIssue{Root: c, Route: i, DelegateRoute: j,
						Msg: fmt.Sprintf("route %d of delegate %s/%s delegates again: delegation is one level deep", j, key.Namespace, key.Name)})
					continue
				}
				m, ok := MergeDelegateRoute(qr, qualifyDelegateRoute(dr, d.Namespace))
				if !ok {
					issues = append(issues, DelegateIssue{Root: c, Route: i, DelegateRoute: j,
						Msg: fmt.Sprintf("the matches of route %d of delegate %s/%s are not within the root route's", j, key.Namespace, key.Name)})
					continue
				}
				merged.Http = append(merged.Http, m)
			}
		}
		out = append(out, &istioconfig.Config{Meta: c.Meta, Spec: merged})
	}
	return out, issues
}

func findConfig(cs []*istioconfig.Config, k istioconfig.Key) *istioconfig.Config {
	for _, c := range cs {
		if c.Key() == k {
			return c
		}
	}
	return nil
}

// DelegateKey is the VirtualService a delegate reference of a root in namespace ns names (its
// namespace defaults to the root's).
func DelegateKey(ref *networking.Delegate, ns string) istioconfig.Key {
	if ref.GetNamespace() != "" {
		ns = ref.GetNamespace()
	}
	return istioconfig.Key{Kind: istioconfig.KindVirtualService, Name: ref.GetName(), Namespace: ns}
}

// isRoot reports whether a VirtualService delegates any http route.
func isRoot(vs *networking.VirtualService) bool {
	return slices.ContainsFunc(vs.GetHttp(), func(r *networking.HTTPRoute) bool { return r.GetDelegate() != nil })
}

// qualifyDelegateRoute returns a copy of a delegate's route whose host names and gateway names
// are resolved in the delegate's namespace ns, as istiod resolves every VirtualService's short
// names in its own namespace: merged into the root, the route is read in the root's.
func qualifyDelegateRoute(r *networking.HTTPRoute, ns string) *networking.HTTPRoute {
	r = proto.Clone(r).(*networking.HTTPRoute)
	for _, d := range r.GetRoute() {
		if d.GetDestination() != nil {
			d.Destination.Host = qualify(d.GetDestination().GetHost(), ns)
		}
	}
	if r.GetMirror() != nil {
		r.Mirror.Host = qualify(r.GetMirror().GetHost(), ns)
	}
	for _, m := range r.GetMirrors() {
		if m.GetDestination() != nil {
			m.Destination.Host = qualify(m.GetDestination().GetHost(), ns)
		}
	}
	qualifyMatchGateways(r.GetMatch(), ns)
	return r
}

// qualifyRootGateways returns root route r of a VirtualService in namespace ns with its
// matches' gateways written as "namespace/name", as istiod resolves the root's short names
// before it compares them with the delegate's (r itself is not modified; a route whose matches
// name no gateway is returned as it is).
func qualifyRootGateways(r *networking.HTTPRoute, ns string) *networking.HTTPRoute {
	if !slices.ContainsFunc(r.GetMatch(), func(m *networking.HTTPMatchRequest) bool { return len(m.GetGateways()) > 0 }) {
		return r
	}
	r = proto.Clone(r).(*networking.HTTPRoute)
	qualifyMatchGateways(r.GetMatch(), ns)
	return r
}

// qualifyMatchGateways writes the gateways of matches ms (of a VirtualService in namespace ns)
// in place as qualifyGateway does.
func qualifyMatchGateways(ms []*networking.HTTPMatchRequest, ns string) {
	for _, m := range ms {
		for i, g := range m.GetGateways() {
			m.Gateways[i] = qualifyGateway(g, ns)
		}
	}
}

// qualifyGateway writes a gateway reference of namespace ns as "namespace/name" ("mesh" and
// references with a namespace stay, "./name" takes ns), reading the legacy "name.namespace…"
// form as istiod does.
func qualifyGateway(g, ns string) string {
	switch {
	case strings.HasPrefix(g, "./"):
		return ns + "/" + g[2:]
	case g == "mesh" || strings.Contains(g, "/"):
		return g
	case strings.Contains(g, "."):
		parts := strings.SplitN(g, ".", 3)
		return parts[1] + "/" + parts[0]
	}
	return ns + "/" + g
}

// MergeDelegateRoute merges a delegate's route d into the root route root that delegates to it,
// as istiod does: d's matches must each fall within at least one of root's (every pair that does
// not conflict gives a merged match), else d is dropped (ok false); the name is root's and d's
// joined by "-"; rewrite, direct response, timeout, retries, fault, mirrors, CORS and header
// operations d leaves unset come from root. Neither argument is modified.
func MergeDelegateRoute(root, d *networking.HTTPRoute) (*networking.HTTPRoute, bool) {
	matches, ok := mergeMatches(root.GetMatch(), d.GetMatch())
	if !ok {
		return nil, false
	}
	out := proto.Clone(d).(*networking.HTTPRoute)
	out.Match = matches
	out.Name = joinNames(root.GetName(), d.GetName())
	if out.Rewrite == nil {
		out.Rewrite = root.GetRewrite()
	}
	if out.DirectResponse == nil {
		out.DirectResponse = root.GetDirectResponse()
	}
	if out.Timeout == nil {
		out.Timeout = root.GetTimeout()
	}
	if out.Retries == nil {
		out.Retries = root.GetRetries()
	}
	if out.Fault == nil {
		out.Fault = root.GetFault()
	}
	if out.Mirror == nil {
		out.Mirror = root.GetMirror()
	}
	if out.MirrorPercent == nil { //nolint:staticcheck // istiod still merges the deprecated field
		out.MirrorPercent = root.GetMirrorPercent() //nolint:staticcheck // as above
	}
	if out.MirrorPercentage == nil {
		out.MirrorPercentage = root.GetMirrorPercentage()
	}
	if out.CorsPolicy == nil {
		out.CorsPolicy = root.GetCorsPolicy()
	}
	if out.Mirrors == nil {
		out.Mirrors = root.GetMirrors()
	}
	if out.Headers == nil {
		out.Headers = root.GetHeaders()
	}
	return out, true
}

// joinNames is istiod's name of a merged route or match: both joined by "-", or the one set.
func joinNames(root, d string) string {
	switch {
	case d == "":
		return root
	case root == "":
		return d
	}
	return root + "-" + d
}

// mergeMatches merges a delegate route's matches into its root route's: without matches on
// either side the other's apply; otherwise each delegate match is merged with every root
// match it does not conflict with, and one that conflicts with all of them drops the route.
func mergeMatches(root, d []*networking.HTTPMatchRequest) ([]*networking.HTTPMatchRequest, bool) {
	if len(root) == 0 {
		return d, true
	}
	if len(d) == 0 {
		return root, true
	}
	var out []*networking.HTTPMatchRequest
	for _, dm := range d {
		found := false
		for _, rm := range root {
			if matchesConflict(rm, dm) {
				continue
			}
			out = append(out, mergeMatch(rm, dm))
			found = true
		}
		if !found {
			return nil, false
		}
	}
	return out, len(out) > 0
}

// mergeMatch is the delegate's match with what it leaves unset taken from the root's, and the
// maps (headers, withoutHeaders, query parameters, source labels) joined, the delegate's
// values winning.
func mergeMatch(root, d *networking.HTTPMatchRequest) *networking.HTTPMatchRequest {
	out := proto.Clone(d).(*networking.HTTPMatchRequest)
	out.Name = joinNames(root.GetName(), d.GetName())
	if out.Uri == nil {
		out.Uri = root.GetUri()
	}
	if out.Scheme == nil {
		out.Scheme = root.GetScheme()
	}
	if out.Method == nil {
		out.Method = root.GetMethod()
	}
	if out.Authority == nil {
		out.Authority = root.GetAuthority()
	}
	out.Headers = joinMaps(root.GetHeaders(), out.GetHeaders())
	out.WithoutHeaders = joinMaps(root.GetWithoutHeaders(), out.GetWithoutHeaders())
	out.QueryParams = joinMaps(root.GetQueryParams(), out.GetQueryParams())
	out.SourceLabels = joinMaps(root.GetSourceLabels(), out.GetSourceLabels())
	if out.Port == 0 {
		out.Port = root.GetPort()
	}
	if out.SourceNamespace == "" {
		out.SourceNamespace = root.GetSourceNamespace()
	}
	if len(out.Gateways) == 0 {
		out.Gateways = root.GetGateways()
	}
	if out.StatPrefix == "" {
		out.StatPrefix = root.GetStatPrefix()
	}
	return out
}

func joinMaps[V any](root, d map[string]V) map[string]V {
	if len(root) == 0 && len(d) == 0 {
		return nil
	}
	out := maps.Clone(root)
	if out == nil {
		out = map[string]V{}
	}
	maps.Copy(out, d)
	return out
}

// matchesConflict reports whether a delegate match d can match a request the root match root
// cannot, as istiod's hasConflict decides it: its URI, scheme, method, authority, headers,
// withoutHeaders and query parameters must be within the root's, ignoreUriCase equal, ports,
// source namespace, source labels and gateways compatible.
func matchesConflict(root, d *networking.HTTPMatchRequest) bool {
	pairs := [][2]*networking.StringMatch{
		{root.GetUri(), d.GetUri()}, {root.GetScheme(), d.GetScheme()},
		{root.GetMethod(), d.GetMethod()}, {root.GetAuthority(), d.GetAuthority()},
	}
	for k, v := range d.GetHeaders() {
		pairs = append(pairs, [2]*networking.StringMatch{root.GetHeaders()[k], v})
	}
	for k, v := range d.GetWithoutHeaders() {
		pairs = append(pairs, [2]*networking.StringMatch{root.GetWithoutHeaders()[k], v})
	}
	for k, v := range d.GetQueryParams() {
		pairs = append(pairs, [2]*networking.StringMatch{root.GetQueryParams()[k], v})
	}
	for _, p := range pairs {
		if stringMatchConflict(p[0], p[1]) {
			return true
		}
	}
	if root.GetIgnoreUriCase() != d.GetIgnoreUriCase() {
		return true
	}
	if root.GetPort() > 0 && d.GetPort() > 0 && root.GetPort() != d.GetPort() {
		return true
	}
	if root.GetSourceNamespace() != "" && d.GetSourceNamespace() != root.GetSourceNamespace() {
		return true
	}
	for k, v := range d.GetSourceLabels() {
		if rv, ok := root.GetSourceLabels()[k]; ok && rv != v {
			return true
		}
	}
	if rg, dg := root.GetGateways(), d.GetGateways(); len(rg) > 0 && len(dg) > 0 {
		if len(rg) < len(dg) {
			return true
		}
		for _, g := range dg {
			if !slices.Contains(rg, g) {
				return true
			}
		}
	}
	return false
}

// stringMatchConflict reports whether the delegate's string match d is not within the root's:
// none when either is unset; a regex only beside an empty match; an exact within an equal
// exact or a prefix it starts with; a prefix within a prefix it starts with. Anything else
// (an empty match on one side and a value on the other) conflicts, as in istiod.
func stringMatchConflict(root, d *networking.StringMatch) bool {
	if root == nil || d == nil {
		return false
	}
	if root.GetRegex() != "" && (d.GetRegex() != "" || d.GetPrefix() != "" || d.GetExact() != "") {
		return true
	}
	if d.GetRegex() != "" && (root.GetRegex() != "" || root.GetPrefix() != "" || root.GetExact() != "") {
		return true
	}
	if exact := root.GetExact(); exact != "" {
		return d.GetPrefix() != "" || d.GetExact() != exact
	}
	if prefix := root.GetPrefix(); prefix != "" {
		if p := d.GetPrefix(); p != "" {
			return !strings.HasPrefix(p, prefix)
		}
		if e := d.GetExact(); e != "" {
			return !strings.HasPrefix(e, prefix)
		}
	}
	return true
}

type mergedVSKey struct{}

type mergedVS struct {
	vss   []*istioconfig.Config
	roots map[istioconfig.Key][]*istioconfig.Config // delegate → the merged roots naming it
}

func (s *Snapshot) merged() mergedVS {
	return s.Derived(mergedVSKey{}, func() any {
		vss, _ := MergeDelegates(s.Configs(istioconfig.KindVirtualService))
		roots := map[istioconfig.Key][]*istioconfig.Config{}
		for _, c := range vss {
			if orig := s.Config(c.Key()); orig != nil && orig != c {
				for _, r := range orig.Spec.(*networking.VirtualService).GetHttp() {
					if ref := r.GetDelegate(); ref != nil {
						k := DelegateKey(ref, c.Namespace)
						if !slices.Contains(roots[k], c) {
							roots[k] = append(roots[k], c)
						}
					}
				}
			}
		}
		return mergedVS{vss, roots}
	}).(mergedVS)
}

// VirtualServices returns the VirtualServices generators read, in Configs order: those with
// hosts, each root merged with its delegates (MergeDelegates), as istiod's VirtualService
// controller hands them to its generators. The slice must not be modified.
func (s *Snapshot) VirtualServices() []*istioconfig.Config { return s.merged().vss }

// DelegateRoots returns the merged roots that name the VirtualService k as a delegate, whether
// or not it exists: a change to k changes what they route.
func (s *Snapshot) DelegateRoots(k istioconfig.Key) []*istioconfig.Config { return s.merged().roots[k] }
