package model

import (
	"slices"
	"strings"
	"sync"

	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

// RootNamespace is istiod's default root namespace (meshConfig.rootNamespace): a Sidecar
// without a workload selector there applies to the proxies of every namespace that has none
// of its own. xdslab does not read a mesh config, so it is fixed.
const RootNamespace = "istio-system"

// visibility holds what a snapshot computes once about exportTo: whether any service,
// VirtualService or DestinationRule restricts it (when none does and no Sidecar applies, every
// proxy sees the same mesh and shares one scope key).
type visibility struct {
	once       sync.Once
	restricted bool

	// scopes memoizes ScopeFor for proxies whose labels cannot matter (no Sidecar of their
	// namespace has a workload selector): one Scope per proxy type and namespace.
	mu     sync.Mutex
	scopes map[scopeMemoKey]*Scope

	// derived holds what other packages compute once from services and configs (Derived).
	derivedMu sync.Mutex
	derived   map[any]*derivedValue
}

type derivedValue struct {
	once sync.Once
	v    any
}

// Derived returns f(), computed once for s's services and configs and shared with every
// snapshot that has the same ones (endpoint-only successors): a place for generators to keep
// facts they derive from configs, keyed by a comparable key of their own type. f must read only
// services and configs, never endpoints, and must not ask for its own key.
func (s *Snapshot) Derived(key any, f func() any) any {
	if s.vis == nil { // a snapshot not built by NewSnapshot (tests)
		return f()
	}
	s.vis.derivedMu.Lock()
	d := s.vis.derived[key]
	if d == nil {
		if s.vis.derived == nil {
			s.vis.derived = map[any]*derivedValue{}
		}
		d = &derivedValue{}
		s.vis.derived[key] = d
	}
	s.vis.derivedMu.Unlock()
	d.once.Do(func() { d.v = f() })
	return d.v
}

type scopeMemoKey struct {
	typ NodeType
	ns  string
}

func (s *Snapshot) exportRestricted() bool {
	compute := func() bool {
		for _, svc := range s.services {
			if restrictive(svc.ExportTo) {
				return true
			}
		}
		for _, c := range s.configs[istioconfig.KindVirtualService] {
			// A delegate's (no hosts) exportTo says which roots may use it; no proxy reads a
			// delegate, so it restricts no proxy's view.
			if vs, ok := c.Spec.(*networking.VirtualService); ok && len(vs.GetHosts()) > 0 && restrictive(vs.GetExportTo()) {
				return true
			}
		}
		for _, c := range s.configs[istioconfig.KindDestinationRule] {
			if dr, ok := c.Spec.(*networking.DestinationRule); ok && restrictive(dr.GetExportTo()) {
				return true
			}
		}
		return false
	}
	if s.vis == nil { // a snapshot not built by NewSnapshot (tests)
		return compute()
	}
	s.vis.once.Do(func() { s.vis.restricted = compute() })
	return s.vis.restricted
}

// restrictive reports whether an exportTo list hides the object from some namespace.
func restrictive(exportTo []string) bool {
	return len(exportTo) > 0 && !slices.Contains(exportTo, "*")
}

// Scope is what one proxy sees of one snapshot, istiod's SidecarScope: the services exported
// to the proxy's namespace that the applied Sidecar's egress hosts import (or the destinations
// of the VirtualServices its egress listeners select name), and the
// VirtualServices and DestinationRules exported to that namespace (VirtualServices also
// filtered by the egress hosts, in their own namespace). Generators build only what the scope
// sees; the push filter (ChangeSet.Affects) pushes a change only to scopes that see it.
type Scope struct {
	// Namespace is the proxy's namespace: exportTo is checked against it, and "." in egress
	// hosts means it (also for a root-namespace Sidecar, as in istiod).
	Namespace string
	// Type is the proxy type; routers (gateways) use no Sidecar.
	Type NodeType
	// Sidecar is the Sidecar that applies, nil when none does (the whole exported mesh).
	Sidecar *istioconfig.Config
	// listeners are the Sidecar's egress listeners' hosts, one list per listener (an
	// exclusion applies within its own listener).
	listeners [][]EgressHost
	// ports are the egress listeners' port numbers, parallel to listeners (0 for the
	// catch-all listener, which has none).
	ports []uint32
	// egress holds one scope per egress listener (Egress, CatchAll) and none a scope that
	// imports nothing; nil without a Sidecar and in those scopes themselves.
	egress []*Scope
	none   *Scope
	// catchAll is the scope of the first egress listener without a port (CatchAll); nil when
	// there is none.
	catchAll *Scope
	// exact marks an egress listener's scope whose hosts all name one host in one namespace
	// (no wildcard host, no "*" namespace): istiod then orders its services by creation time
	// alone (CompareServices).
	exact bool
	// vsDests are the services the egress listeners import through the destinations of the
	// VirtualServices they select (istiod's collectImportedServices): host name → ports, 0
	// for every port. They have clusters; no listener or route of theirs is built.
	vsDests map[string]map[uint32]bool
	key     string
}

// ScopeFor returns the scope of proxy p in s: the Sidecar SelectSidecar picks for its
// namespace and labels (none for a router), with the root namespace RootNamespace. A nil
// proxy gets the unscoped view of a proxy without a namespace.
//
// Scopes are immutable and may be shared: ScopeFor returns the same one for every proxy of a
// type and namespace when no Sidecar of that namespace has a workload selector.
func (s *Snapshot) ScopeFor(p *Proxy) *Scope {
	var typ NodeType
	var ns string
	if p != nil {
		typ, ns = p.Type, p.Namespace
	}
	if s.vis == nil || hasSelector(s.ConfigsIn(istioconfig.KindSidecar, ns)) {
		return s.newScope(p)
	}
	k := scopeMemoKey{typ, ns}
	s.vis.mu.Lock()
	sc, ok := s.vis.scopes[k]
	s.vis.mu.Unlock()
	if ok {
		return sc
	}
	sc = s.newScope(p)
	s.vis.mu.Lock()
	if s.vis.scopes == nil {
		s.vis.scopes = map[scopeMemoKey]*Scope{}
	}
	s.vis.scopes[k] = sc
	s.vis.mu.Unlock()
	return sc
}

// hasSelector reports whether any of the Sidecars has a workload selector.
func hasSelector(sidecars []*istioconfig.Config) bool {
	for _, c := range sidecars {
		if sc, ok := c.Spec.(*networking.Sidecar); ok && len(sc.GetWorkloadSelector().GetLabels()) > 0 {
			return true
		}
	}
	return false
}

// newScope computes the scope of p in s.
func (s *Snapshot) newScope(p *Proxy) *Scope {
	sc := &Scope{}
	if p != nil {
		sc.Namespace, sc.Type = p.Namespace, p.Type
	}
	if sc.Type != Router {
		cands := s.ConfigsIn(istioconfig.KindSidecar, sc.Namespace)
		if sc.Namespace != RootNamespace {
			cands = append(slices.Clip(cands), s.ConfigsIn(istioconfig.KindSidecar, RootNamespace)...)
		}
		var labels map[string]string
		if p != nil {
			labels = p.Labels
		}
		sc.Sidecar = SelectSidecar(cands, sc.Namespace, labels, RootNamespace)
	}
	switch {
	case sc.Sidecar != nil:
		spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
		sc.key = "ns=" + sc.Namespace + "|sidecar=" + sc.Sidecar.Namespace + "/" + sc.Sidecar.Name
		sc.none = &Scope{Namespace: sc.Namespace, Type: sc.Type, Sidecar: sc.Sidecar, key: sc.key}
		for _, eg := range SidecarEgress(spec) {
			var hosts []EgressHost
			exact := true
			for _, h := range eg.GetHosts() {
				if e, ok := ParseEgressHost(h, sc.Namespace); ok {
					e.Port = EgressPort(eg)
					hosts = append(hosts, e)
					exact = exact && (e.Exclude || (e.Namespace != "*" && !strings.Contains(e.Host, "*")))
				}
			}
			sc.listeners = append(sc.listeners, hosts)
			sc.ports = append(sc.ports, eg.GetPort().GetNumber())
			sc.egress = append(sc.egress, &Scope{Namespace: sc.Namespace, Type: sc.Type, Sidecar: sc.Sidecar,
				listeners: [][]EgressHost{hosts}, ports: []uint32{eg.GetPort().GetNumber()}, exact: exact, key: sc.key})
			if eg.GetPort() == nil && sc.catchAll == nil {
				// istiod's catch-all is the listener without a port: not one with port number
				// 0, which a unix domain socket bind has.
				sc.catchAll = sc.egress[len(sc.egress)-1]
			}
		}
		sc.vsDests = s.vsDestinations(sc, spec)
	case s.exportRestricted():
		sc.key = "ns=" + sc.Namespace
	}
	return sc
}

// vsDestinations returns the services sc's egress listeners import through the destinations
// of the mesh VirtualServices each selects, as istiod adds them: a destination host (short
// names resolved in the VirtualService's namespace) names a service exported to the proxy's
// namespace; an egress listener with a port imports that port of it, else the destinations'
// ports (every port when one names none), those the service has.
func (s *Snapshot) vsDestinations(sc *Scope, spec *networking.Sidecar) map[string]map[uint32]bool {
	var out map[string]map[uint32]bool
	for i, l := range sc.egress {
		var vss []*istioconfig.Config
		for _, c := range s.VirtualServices() {
			if vs, ok := c.Spec.(*networking.VirtualService); ok && forMesh(vs.GetGateways()) && l.SeesVirtualService(c) {
				vss = append(vss, c)
			}
		}
		listenerPort := EgressPort(SidecarEgress(spec)[i])
		for _, c := range vss {
			for h, ports := range vsDestinationPorts(c.Spec.(*networking.VirtualService), c.Namespace, sc.Namespace) {
				svc := s.Service(h)
				if svc == nil || !ExportedTo(svc.ExportTo, svc.Namespace, sc.Namespace) {
					continue
				}
				add := func(n uint32) {
					if out == nil {
						out = map[string]map[uint32]bool{}
					}
					if out[h] == nil {
						out[h] = map[uint32]bool{}
					}
					out[h][n] = true
				}
				switch {
				case listenerPort != 0:
					if _, ok := svc.Port(listenerPort); ok {
						add(listenerPort)
					}
				case ports[0]:
					add(0)
				default:
					for n := range ports {
						if _, ok := svc.Port(n); ok {
							add(n)
						}
					}
				}
			}
		}
	}
	return out
}

// vsDestinationPorts returns the destination hosts of vs's HTTP (those whose matches admit
// source namespace ns; every one for a proxy of no namespace, ns "", as istiod skips the
// check then), TCP and TLS routes and HTTP mirrors, each with the ports named (0: a
// destination without a port).
func vsDestinationPorts(vs *networking.VirtualService, vsNS, ns string) map[string]map[uint32]bool {
	out := map[string]map[uint32]bool{}
	add := func(d *networking.Destination) {
		if d == nil {
			return
		}
		h := qualify(d.GetHost(), vsNS)
		if out[h] == nil {
			out[h] = map[uint32]bool{}
		}
		out[h][d.GetPort().GetNumber()] = true
	}
	for _, r := range vs.GetHttp() {
		admitted := true
		for _, m := range r.GetMatch() {
			if sn := m.GetSourceNamespace(); sn != "" && ns != "" {
				if admitted = sn == ns; admitted {
					break
				}
			}
		}
		if !admitted {
			continue
		}
		for _, d := range r.GetRoute() {
			add(d.GetDestination())
		}
		add(r.GetMirror())
		for _, m := range r.GetMirrors() {
			add(m.GetDestination())
		}
	}
	for _, r := range vs.GetTcp() {
		for _, d := range r.GetRoute() {
			add(d.GetDestination())
		}
	}
	for _, r := range vs.GetTls() {
		for _, d := range r.GetRoute() {
			add(d.GetDestination())
		}
	}
	return out
}

// forMesh reports whether a VirtualService with these gateways applies to sidecars: none
// listed, or "mesh" among them.
func forMesh(gateways []string) bool {
	return len(gateways) == 0 || slices.Contains(gateways, "mesh")
}

// Key names the view: two proxies whose scopes of one snapshot have the same key see the same
// services and configs (and get the same generated resources, other things equal). It is ""
// for the whole mesh (no Sidecar applies and nothing restricts exportTo); otherwise it names
// the proxy namespace and the applied Sidecar. The Sidecar's content is not in the key: a
// Sidecar change is a config change, which moves the snapshot's full generation, and cache
// entries of older generations are never served.
func (sc *Scope) Key() string {
	if sc == nil {
		return ""
	}
	return sc.key
}

// Egress returns the scope of the egress listener istiod builds a port's outbound listeners
// and route configuration from: the first listener with that port, else the catch-all
// listener without a port; a scope that imports nothing when there is neither. Without a
// Sidecar, and for the scope of one egress listener, it is sc itself.
func (sc *Scope) Egress(port uint32) *Scope {
	if sc == nil || sc.egress == nil {
		return sc
	}
	if i := slices.Index(sc.ports, port); i >= 0 && port != 0 {
		return sc.egress[i]
	}
	return sc.CatchAll()
}

// EgressAt returns the scope of the Sidecar's i-th egress listener (in SidecarEgress order):
// what that listener alone imports. Without a Sidecar, and for the scope of one egress
// listener, it is sc itself; nil for an index out of range.
func (sc *Scope) EgressAt(i int) *Scope {
	if sc == nil || sc.egress == nil {
		return sc
	}
	if i < 0 || i >= len(sc.egress) {
		return nil
	}
	return sc.egress[i]
}

// CatchAll returns the scope of the egress listener without a port, which istiod builds every
// port no other egress listener holds from; a scope that imports nothing when the Sidecar has
// none. Without a Sidecar, and for the scope of one egress listener, it is sc itself.
func (sc *Scope) CatchAll() *Scope {
	if sc == nil || sc.egress == nil {
		return sc
	}
	if sc.catchAll != nil {
		return sc.catchAll
	}
	return sc.none
}

// HoldsPort reports whether an egress listener of the Sidecar has that port: istiod builds the
// port's listeners from it first, and the catch-all listener adds nothing to the listeners
// (addresses and port) that one built.
func (sc *Scope) HoldsPort(port uint32) bool {
	return sc != nil && sc.egress != nil && port != 0 && slices.Contains(sc.ports, port)
}

// EgressProtocol returns the protocol of the egress listener that holds port (HoldsPort), by
// which istiod builds that port's listeners for the services that listener imports, whatever
// their own port's protocol (no protocol: sniffed, ProtocolUnknown). ok is false when no
// egress listener holds the port, and for an HTTP_PROXY port (whose egress listener builds one
// HTTP proxy listener for all its services' ports, gen/httpproxy.go).
func (sc *Scope) EgressProtocol(port uint32) (p Protocol, ok bool) {
	if !sc.HoldsPort(port) {
		return "", false
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	for _, eg := range spec.GetEgress() {
		if eg.GetPort().GetNumber() == port {
			if strings.EqualFold(eg.GetPort().GetProtocol(), "HTTP_PROXY") {
				return "", false
			}
			return ParseProtocol(eg.GetPort().GetProtocol()), true
		}
	}
	return "", false
}

// CompareServices orders two services a scope sees as istiod iterates them when it builds an
// egress listener's outbound listeners (where the first TCP service without an address takes
// the port's 0.0.0.0 listener): the services exported to the proxy's namespace by name before
// the public ones, each by creation time, then name (a ServiceEntry host's is the host name, a
// Kubernetes Service's its own), then namespace. An egress listener's scope whose hosts are
// all exact names in named namespaces orders them by creation time, name and namespace alone.
func (sc *Scope) CompareServices(a, b *Service) int {
	if sc == nil || !sc.exact {
		if c := cmpBool(a.public(), b.public()); c != 0 {
			return c
		}
	}
	if c := a.CreationTime.Compare(b.CreationTime); c != 0 {
		return c
	}
	if c := strings.Compare(a.registryName(), b.registryName()); c != 0 {
		return c
	}
	return strings.Compare(a.Namespace, b.Namespace)
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// imports reports whether an egress listener imports hostname in namespace ns (on port, or
// any port when port is 0), or a VirtualService destination does; true with no Sidecar.
func (sc *Scope) imports(hostname, ns string, port uint32) bool {
	if sc.Sidecar == nil {
		return true
	}
	if ports := sc.vsDests[hostname]; ports != nil && (port == 0 || ports[0] || ports[port]) {
		return true
	}
	for _, hosts := range sc.listeners {
		if egressImports(hosts, hostname, ns, port) {
			return true
		}
	}
	return false
}

// SeesService reports whether the scope contains svc: exported to the proxy's namespace and
// imported by the Sidecar on one of its ports (istiod's egress listener with a port imports
// only the services that have that port: needsPortMatch).
func (sc *Scope) SeesService(svc *Service) bool {
	if sc == nil {
		return true
	}
	if svc == nil || !ExportedTo(svc.ExportTo, svc.Namespace, sc.Namespace) {
		return false
	}
	if sc.Sidecar == nil || len(svc.Ports) == 0 {
		return sc.imports(svc.Hostname, svc.Namespace, 0)
	}
	for _, p := range svc.Ports {
		if sc.imports(svc.Hostname, svc.Namespace, p.Number) {
			return true
		}
	}
	return false
}

// SeesPort reports whether the scope imports port number of svc: it sees svc, and an egress
// host that imports svc has no port or that port (istiod keeps only that port of a service an
// egress listener with a port imports).
func (sc *Scope) SeesPort(svc *Service, port uint32) bool {
	if !sc.SeesService(svc) {
		return false
	}
	if sc == nil || sc.Sidecar == nil {
		return true
	}
	return sc.imports(svc.Hostname, svc.Namespace, port)
}

// SeesVirtualService reports whether the VirtualService c applies in the scope: exported to
// the proxy's namespace and, under a Sidecar, one of its hosts (short names resolved in c's
// namespace) matched by an egress host of c's namespace (or "*"). A wildcard VS host is
// matched by an egress host that covers it ("*" or the same wildcard).
func (sc *Scope) SeesVirtualService(c *istioconfig.Config) bool {
	if sc == nil {
		return true
	}
	vs, ok := c.Spec.(*networking.VirtualService)
	if !ok || !ExportedTo(vs.GetExportTo(), c.Namespace, sc.Namespace) {
		return false
	}
	if sc.Sidecar == nil {
		return true
	}
	for _, h := range vs.GetHosts() {
		h = qualify(h, c.Namespace)
		for _, hosts := range sc.listeners {
			if egressImports(hosts, h, c.Namespace, 0) {
				return true
			}
		}
	}
	return false
}

// ExportsDestinationRule reports whether the DestinationRule c is exported to the scope's
// namespace (istiod applies to a proxy only the rules exported to it; which services they
// reach is decided by the services the scope sees).
func (sc *Scope) ExportsDestinationRule(c *istioconfig.Config) bool {
	if sc == nil {
		return true
	}
	dr, ok := c.Spec.(*networking.DestinationRule)
	return ok && ExportedTo(dr.GetExportTo(), c.Namespace, sc.Namespace)
}

// seesDestinationRule reports whether DR c changes something the scope sees in s: it is
// exported to the scope and its host names (or, wildcard, matches) a service the scope sees.
func (sc *Scope) seesDestinationRule(c *istioconfig.Config, s *Snapshot) bool {
	if !sc.ExportsDestinationRule(c) {
		return false
	}
	dr, _ := c.Spec.(*networking.DestinationRule)
	h := qualify(dr.GetHost(), c.Namespace)
	if !strings.HasPrefix(h, "*") {
		return sc.SeesService(s.Service(h))
	}
	for _, svc := range s.Services() {
		if HostMatches(h, svc.Hostname) && sc.SeesService(svc) {
			return true
		}
	}
	return false
}

// qualify turns a short host name into the FQDN in namespace ns, as istiod resolves hosts of
// VirtualServices and DestinationRules.
func qualify(h, ns string) string {
	if h == "*" || strings.Contains(h, ".") || ns == "" {
		return h
	}
	return h + "." + ns + ".svc.cluster.local"
}

// ChangeSet is one push's changes prepared for the per-proxy push filter: the keys of the
// request with the snapshots before and after, and the addresses of the endpoints whose
// services changed (a proxy at one of them has inbound config built from that service,
// whatever its scope).
type ChangeSet struct {
	Prev, Next *Snapshot
	// Everything is true for a full request with no ConfigsUpdated (or no previous
	// snapshot): every proxy is pushed.
	Everything bool
	Keys       []istioconfig.Key
	ips        map[string]struct{}
}

// NewChangeSet prepares req for filtering; prev may be nil (the first snapshot).
func NewChangeSet(prev, next *Snapshot, req *PushRequest) *ChangeSet {
	ch := &ChangeSet{Prev: prev, Next: next}
	if prev == nil || req == nil || (req.Full && len(req.ConfigsUpdated) == 0) {
		ch.Everything = true
		return ch
	}
	ch.ips = map[string]struct{}{}
	for k := range req.ConfigsUpdated {
		ch.Keys = append(ch.Keys, k)
		if k.Kind != KindService && k.Kind != KindEndpoint {
			continue
		}
		for _, snap := range []*Snapshot{prev, next} {
			for _, ep := range snap.Endpoints(k.Name) {
				ch.ips[ep.Address] = struct{}{}
			}
		}
	}
	slices.SortFunc(ch.Keys, func(a, b istioconfig.Key) int { return strings.Compare(a.String(), b.String()) })
	return ch
}

// TouchesIP reports whether an endpoint of a changed service is (or was) at ip: the proxy
// there must be pushed, as its inbound clusters and listeners come from that service.
func (ch *ChangeSet) TouchesIP(ip string) bool {
	_, ok := ch.ips[ip]
	return ok
}

// Affects reports whether the change reaches a proxy whose scope was prev (in ch.Prev) and is
// next (in ch.Next), istiod's ProxyNeedsPush for sidecars: yes when the view itself changed
// (another Sidecar applies, or the applied one changed), when a changed service or its
// endpoints is seen before or after, when a changed VirtualService or DestinationRule applies
// before or after, and for kinds it does not know. Gateway changes do not reach sidecars;
// AuthorizationPolicy and RequestAuthentication changes are left to TouchesAuthz.
// It does not look at the proxy's IP (see TouchesIP).
func (ch *ChangeSet) Affects(prev, next *Scope) bool {
	if ch.Everything || prev.Key() != next.Key() {
		return true
	}
	for _, k := range ch.Keys {
		if ch.keyAffects(k, prev, next) {
			return true
		}
	}
	return false
}

func (ch *ChangeSet) keyAffects(k istioconfig.Key, prev, next *Scope) bool {
	switch k.Kind {
	case KindService, KindEndpoint:
		return prev.SeesService(ch.Prev.Service(k.Name)) || next.SeesService(ch.Next.Service(k.Name))
	case istioconfig.KindVirtualService:
		// A delegate reaches the proxies that see a root naming it (delegate.go).
		return seen(ch.Prev.Config(k), prev.SeesVirtualService) || seen(ch.Next.Config(k), next.SeesVirtualService) ||
			slices.ContainsFunc(ch.Prev.DelegateRoots(k), prev.SeesVirtualService) || slices.ContainsFunc(ch.Next.DelegateRoots(k), next.SeesVirtualService)
	case istioconfig.KindDestinationRule:
		return (ch.Prev.Config(k) != nil && prev.seesDestinationRule(ch.Prev.Config(k), ch.Prev)) ||
			(ch.Next.Config(k) != nil && next.seesDestinationRule(ch.Next.Config(k), ch.Next))
	case istioconfig.KindSidecar:
		// Selection changes show in the key; here the applied Sidecar itself changed.
		return (prev.Sidecar != nil && prev.Sidecar.Key() == k) || (next.Sidecar != nil && next.Sidecar.Key() == k)
	case istioconfig.KindGateway:
		return next.Type == Router
	case istioconfig.KindAuthorizationPolicy, istioconfig.KindRequestAuthentication:
		return false // by proxy, not by scope: TouchesAuthz
	}
	return true
}

func seen(c *istioconfig.Config, sees func(*istioconfig.Config) bool) bool {
	return c != nil && sees(c)
}
