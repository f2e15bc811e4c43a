package simulator

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// ServiceLabel is the metadata label every object that belongs to a service carries (its
// ServiceEntry, WorkloadEntries, VirtualService, DestinationRule); the dir sink (simulator/sinks)
// groups files by it.
const ServiceLabel = "xdslab.io/service"

// protocol port bases: ports are named "<proto>-<number>" so that Istio infers the protocol.
var protoInfo = [...]struct {
	name, istio string
	base        uint32
}{
	{"http", "HTTP", 8080},
	{"grpc", "GRPC", 9090},
	{"tcp", "TCP", 3306},
}

const maxPortsPerService = 16

type port struct {
	number uint32
	proto  int // index into protoInfo
	// An explicit port (topology.mesh) carries its own name, Istio protocol and target port.
	pname, istio string
	target       uint32
}

func (p port) name() string {
	if p.pname != "" {
		return p.pname
	}
	return fmt.Sprintf("%s-%d", protoInfo[p.proto].name, p.number)
}
func (p port) isHTTP() bool { return p.proto != 2 }
func (p port) istioProto() string {
	if p.istio == ProtocolAuto {
		return "" // Istio selects it (sniffs)
	}
	if p.istio != "" {
		return p.istio
	}
	return protoInfo[p.proto].istio
}
func (p port) targetPort() uint32 {
	if p.target != 0 {
		return p.target
	}
	return p.number
}

// protoIndex maps an Istio protocol onto the simulator's classes: HTTP-like, gRPC, other.
func protoIndex(istio string) int {
	switch strings.ToUpper(istio) {
	case "HTTP", "HTTP2":
		return 0
	case "GRPC", "GRPC-WEB":
		return 1
	}
	return 2
}

type endpoint struct {
	addr    string
	region  int
	zone    int
	version int // 1-based
	sa      string
	gen     int // the service epoch that created it
	// An endpoint of an explicit mesh (topology.mesh) has its locality and labels as written.
	explicit bool
	loc      string
	labels   map[string]string
}

func (e *endpoint) locality() string {
	if e.explicit {
		return e.loc
	}
	return fmt.Sprintf("region-%d/zone-%d-%d", e.region, e.region, e.zone)
}

// like copies what a replacement keeps of e: locality, version and labels.
func (e *endpoint) like(o *endpoint) {
	e.region, e.zone, e.version = o.region, o.zone, o.version
	e.explicit, e.loc, e.labels = o.explicit, o.loc, o.labels
}

type vsState struct {
	weights []int32 // per version, sum 100
	timeout time.Duration
}

type drState struct {
	lb            networking.LoadBalancerSettings_SimpleLB
	consecutive5x uint32
}

type service struct {
	name, ns  string
	ports     []port
	sa        string
	endpoints []*endpoint
	// epoch changes when every endpoint is being replaced (rolling deploy, service-account
	// change); pending restores of an older epoch are dropped.
	epoch int
	vs    *vsState
	dr    *drState
	// deleted marks a service removed from the mesh (pending actions on it are dropped).
	deleted bool
	// groups are an explicit service's endpoint groups (topology.mesh): endpoints it gains
	// later (scale) take the locality and labels of one of them.
	groups []MeshEndpoints
}

func (s *service) host() string { return fmt.Sprintf("%s.%s.svc.cluster.local", s.name, s.ns) }

func (s *service) hasHTTP() bool {
	for _, p := range s.ports {
		if p.isHTTP() {
			return true
		}
	}
	return false
}

// mesh is the simulator's model of the world; objects are rendered from it on demand and never
// mutated once handed out.
type mesh struct {
	topo     Topology
	rng      *rand.Rand
	ports    *dist.Sampler
	eps      *dist.Sampler
	services []*service // creation order
	nextSvc  int
	nextAddr uint64
	// imports[ns] lists the namespaces whose Sidecar imports ns (sidecar scoping only).
	importers map[string][]string
	// hostImporters[host] lists the client namespaces whose Sidecar imports that one host
	// (NS/HOST, an explicit mesh's Sidecars) without importing its whole namespace.
	hostImporters map[string][]string
	// heldPorts[ns] lists the ports an egress listener with a port holds in the Sidecar of
	// client namespace ns (an explicit mesh's): its route configuration of such a port comes
	// from that listener alone, which the lab does not model, so no route predicate there
	// holds those clients.
	heldPorts map[string][]uint32
	sidecars  []istioconfig.Config
	gw        gatewayState
	// namespaces are where service-create puts services: ns-0 … or the explicit mesh's.
	namespaces []string
	// static are the explicit mesh's Istio objects, written as they are; locs its localities
	// (zone index i of an explicit endpoint is locs[i]).
	static []istioconfig.Config
	locs   []string
	// explicitNames are the explicit mesh's services (namespace/name).
	explicitNames map[string]bool
	// authz are the simulated AuthorizationPolicies (authz.go).
	authz authzState
}

// maxAddresses is the size of 10.0.0.0/8 without .0 and .255 host octets.
const maxAddresses = 256 * 256 * 254

// MaxEndpointAddresses is how many endpoint addresses a run can ever allocate, its initial
// topology and its churn together: each endpoint gets a new address in 10.0.0.0/8 (none is
// reused), and a run stops when they run out.
const MaxEndpointAddresses = maxAddresses

func (m *mesh) allocAddr() (string, error) {
	if m.nextAddr >= maxAddresses {
		return "", fmt.Errorf("simulator: address space 10.0.0.0/8 exhausted after %d endpoints", maxAddresses)
	}
	i := m.nextAddr
	m.nextAddr++
	return fmt.Sprintf("10.%d.%d.%d", i/(254*256), (i/254)%256, i%254+1), nil
}

func nsName(i int) string { return fmt.Sprintf("ns-%d", i) }

// noImporter stands in a probe reach for "no sidecar namespace": "~" is Istio's egress
// notation for none, and no namespace can be named so.
const noImporter = "~"

func newMesh(t Topology, seed uint64) (*mesh, error) {
	ports, err := dist.New(t.PortsPerService, subSeed(seed, "ports"))
	if err != nil {
		return nil, fmt.Errorf("topology.portsPerService: %w", err)
	}
	eps, err := dist.New(t.EndpointsPerService, subSeed(seed, "endpoints"))
	if err != nil {
		return nil, fmt.Errorf("topology.endpointsPerService: %w", err)
	}
	m := &mesh{topo: t, rng: newRand(subSeed(seed, "topology")), ports: ports, eps: eps}
	if t.Mesh != nil {
		if err := m.buildExplicit(t.Mesh); err != nil {
			return nil, err
		}
		m.buildAuthz(subSeed(seed, "authz"))
		return m, nil
	}
	for i := range t.Namespaces {
		m.namespaces = append(m.namespaces, nsName(i))
	}
	if t.SidecarScoping {
		m.buildSidecars()
	}
	for i := 0; i < t.Services; i++ {
		if _, err := m.createService(nsName(i % t.Namespaces)); err != nil {
			return nil, err
		}
	}
	m.buildGateways(subSeed(seed, "gateways"))
	m.buildAuthz(subSeed(seed, "authz"))
	return m, nil
}

func (m *mesh) buildSidecars() {
	n := m.topo.Namespaces
	m.importers = map[string][]string{}
	for i := 0; i < n; i++ {
		ns := nsName(i)
		hosts := []string{"./*", "istio-system/*"}
		imported := []int{i}
		others := m.rng.Perm(n)
		for _, j := range others {
			if len(imported) > m.topo.SidecarImports {
				break
			}
			if j != i {
				imported = append(imported, j)
			}
		}
		slices.Sort(imported)
		for _, j := range imported {
			m.importers[nsName(j)] = append(m.importers[nsName(j)], ns)
			if j != i {
				hosts = append(hosts, nsName(j)+"/*")
			}
		}
		m.sidecars = append(m.sidecars, istioconfig.Config{
			Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: ns},
			Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: hosts}}},
		})
	}
	for k := range m.importers {
		slices.Sort(m.importers[k])
	}
}

// pickProto draws a protocol index by weight.
func (m *mesh) pickProto() int {
	p := m.topo.Protocols
	w := []float64{p.HTTP, p.GRPC, p.TCP}
	x := m.rng.Float64() * (w[0] + w[1] + w[2])
	for i, wi := range w {
		if x < wi {
			return i
		}
		x -= wi
	}
	return 2
}

func (m *mesh) newEndpoint(s *service) (*endpoint, error) {
	addr, err := m.allocAddr()
	if err != nil {
		return nil, err
	}
	if m.locs != nil {
		return m.newExplicitEndpoint(s, addr), nil
	}
	return &endpoint{
		addr:    addr,
		region:  m.rng.IntN(m.topo.Localities.Regions),
		zone:    m.rng.IntN(m.topo.Localities.ZonesPerRegion),
		version: 1 + m.rng.IntN(m.topo.Versions),
		sa:      s.sa,
		gen:     s.epoch,
	}, nil
}

func (m *mesh) saName(i int) string { return fmt.Sprintf("sa-%d", i) }

// createService adds a service to namespace ns with ports, endpoints and (by density) routing
// config, drawn from the topology.
func (m *mesh) createService(ns string) (*service, error) {
	name := fmt.Sprintf("svc-%d", m.nextSvc)
	m.nextSvc++
	for m.explicitNames[ns+"/"+name] { // an explicit mesh may already have an svc-N
		name = fmt.Sprintf("svc-%d", m.nextSvc)
		m.nextSvc++
	}
	s := &service{name: name, ns: ns}
	np := min(max(m.ports.Int(), 1), maxPortsPerService)
	var perProto [len(protoInfo)]uint32
	for range np {
		pr := m.pickProto()
		s.ports = append(s.ports, port{number: protoInfo[pr].base + perProto[pr], proto: pr})
		perProto[pr]++
	}
	slices.SortFunc(s.ports, func(a, b port) int { return cmp.Compare(a.number, b.number) })
	s.sa = m.saName(m.rng.IntN(m.topo.ServiceAccountsPerNamespace))
	ne := max(m.eps.Int(), 0)
	for range ne {
		e, err := m.newEndpoint(s)
		if err != nil {
			return nil, err
		}
		s.endpoints = append(s.endpoints, e)
	}
	u := m.rng.Float64()
	if u < m.topo.DestinationRules || (u < m.topo.VirtualServices && s.hasHTTP()) {
		s.dr = m.newDR()
	}
	if u < m.topo.VirtualServices && s.hasHTTP() {
		s.vs = m.newVS(nil)
	}
	m.services = append(m.services, s)
	return s, nil
}

var lbChoices = []networking.LoadBalancerSettings_SimpleLB{
	networking.LoadBalancerSettings_ROUND_ROBIN,
	networking.LoadBalancerSettings_LEAST_REQUEST,
	networking.LoadBalancerSettings_RANDOM,
}

// envoyLbPolicy is the Envoy Cluster.LbPolicy name Istio gives a simple lb.
func envoyLbPolicy(lb networking.LoadBalancerSettings_SimpleLB) string {
	switch lb {
	case networking.LoadBalancerSettings_ROUND_ROBIN:
		return "ROUND_ROBIN"
	case networking.LoadBalancerSettings_RANDOM:
		return "RANDOM"
	}
	return "LEAST_REQUEST"
}

func (m *mesh) newDR() *drState {
	return &drState{lb: lbChoices[m.rng.IntN(len(lbChoices))], consecutive5x: uint32(3 + m.rng.IntN(5))}
}

// newVS draws a weighted split over the versions (each weight >= 1, sum 100) that differs from
// prev, and a timeout.
func (m *mesh) newVS(prev *vsState) *vsState {
	n := m.topo.Versions
	w := make([]int32, n)
	for {
		left := int32(100 - n)
		for i := range n - 1 {
			x := int32(m.rng.IntN(int(left) + 1))
			w[i] = 1 + x
			left -= x
		}
		w[n-1] = 1 + left
		if prev == nil || n == 1 || !slices.Equal(prev.weights, w) {
			break
		}
	}
	return &vsState{weights: w, timeout: time.Duration(1+m.rng.IntN(30)) * time.Second}
}

func (m *mesh) deleteService(s *service) {
	s.deleted = true
	m.services = slices.DeleteFunc(m.services, func(x *service) bool { return x == s })
}

// reach is the set of clients an event on services in nss reaches.
func (m *mesh) reach(nss ...string) []string {
	if m.importers == nil {
		return nil
	}
	var out []string
	for _, ns := range nss {
		out = append(out, m.importers[ns]...)
		suffix := "." + ns + ".svc.cluster.local"
		for host, clients := range m.hostImporters {
			if strings.HasSuffix(host, suffix) {
				out = append(out, clients...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// predicateReach gives each predicate the namespaces whose sidecars see its service, when
// they are not all the event's (all): an event that changes services of several namespaces
// (a zone failure) holds each Sidecar-scoped client only to the services it can see. A
// predicate whose service is not known from its names is left to all. Nil when every
// predicate's reach is all.
func (m *mesh) predicateReach(ps []probe.Predicate, all []string) [][]string {
	out := make([][]string, len(ps))
	narrower := false
	for i, p := range ps {
		host, ns, ok := predicateHost(p)
		if !ok {
			continue
		}
		r := m.importers[ns]
		if hi := m.hostImporters[host]; len(hi) > 0 {
			r = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(r), hi...))))
		}
		if p.Op == probe.RouteTo && len(m.heldPorts) > 0 {
			r = slices.DeleteFunc(slices.Clone(r), func(client string) bool {
				return slices.ContainsFunc(m.heldPorts[client], func(n uint32) bool { return fmt.Sprint(n) == p.Resource })
			})
		}
		if len(r) == 0 && m.importers != nil {
			r = []string{noImporter} // no sidecar sees this service
		}
		if len(r) == 0 || slices.Equal(r, all) {
			continue
		}
		out[i], narrower = r, true
	}
	if !narrower {
		return nil
	}
	return out
}

// predicateHost is the hostname and namespace of the service a predicate is about.
func predicateHost(p probe.Predicate) (host, ns string, ok bool) {
	ns, ok = predicateNamespace(p)
	if !ok {
		return "", "", false
	}
	host = p.Host
	if p.Op != probe.RouteTo {
		host = strings.Split(p.Resource, "|")[3]
	}
	return host, ns, true
}

// predicateNamespace is the namespace of the service a predicate is about, from the hostname in
// its cluster name or route (NAME.NAMESPACE.svc.cluster.local).
func predicateNamespace(p probe.Predicate) (string, bool) {
	host := p.Host
	if p.Op != probe.RouteTo {
		parts := strings.Split(p.Resource, "|")
		if len(parts) != 4 {
			return "", false
		}
		host = parts[3]
	}
	name, rest, ok := strings.Cut(host, ".")
	if !ok || name == "" {
		return "", false
	}
	ns, suffix, ok := strings.Cut(rest, ".")
	if !ok || ns == "" || suffix != "svc.cluster.local" {
		return "", false
	}
	return ns, true
}

// --- rendering to Istio objects -------------------------------------------------------------

func (s *service) meta(kind istioconfig.Kind, name string) istioconfig.Meta {
	return istioconfig.Meta{Kind: kind, Name: name, Namespace: s.ns, Labels: map[string]string{ServiceLabel: s.name}}
}

func weName(s *service, e *endpoint) string {
	b := []byte(s.name + "-" + e.addr)
	for i, c := range b {
		if c == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

func (s *service) weLabels(e *endpoint) map[string]string {
	if e.explicit {
		return e.labels
	}
	return map[string]string{"app": s.name, "version": fmt.Sprintf("v%d", e.version)}
}

func (s *service) workloadEntry(e *endpoint) *networking.WorkloadEntry {
	return &networking.WorkloadEntry{
		Address:        e.addr,
		Labels:         s.weLabels(e),
		Locality:       e.locality(),
		ServiceAccount: e.sa,
	}
}

func (m *mesh) serviceEntry(s *service) istioconfig.Config {
	se := &networking.ServiceEntry{
		Hosts:      []string{s.host()},
		Location:   networking.ServiceEntry_MESH_INTERNAL,
		Resolution: networking.ServiceEntry_STATIC,
	}
	for _, p := range s.ports {
		se.Ports = append(se.Ports, &networking.ServicePort{Number: p.number, Protocol: p.istioProto(), Name: p.name(), TargetPort: p.targetPort()})
	}
	if m.topo.WorkloadEntries {
		se.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": s.name}}
	} else {
		for _, e := range s.endpoints {
			se.Endpoints = append(se.Endpoints, s.workloadEntry(e))
		}
	}
	return istioconfig.Config{Meta: s.meta(istioconfig.KindServiceEntry, s.name), Spec: se}
}

func (m *mesh) workloadEntryConfig(s *service, e *endpoint) istioconfig.Config {
	return istioconfig.Config{Meta: s.meta(istioconfig.KindWorkloadEntry, weName(s, e)), Spec: s.workloadEntry(e)}
}

func subsetName(v int) string { return fmt.Sprintf("v%d", v) }

func (m *mesh) destinationRule(s *service) istioconfig.Config {
	dr := &networking.DestinationRule{
		Host: s.host(),
		TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: &networking.LoadBalancerSettings{
				LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: s.dr.lb},
			},
			OutlierDetection: &networking.OutlierDetection{
				Consecutive_5XxErrors: wrapperspb.UInt32(s.dr.consecutive5x),
				Interval:              durationpb.New(10 * time.Second),
				BaseEjectionTime:      durationpb.New(30 * time.Second),
				MaxEjectionPercent:    50,
			},
		},
	}
	for v := 1; v <= m.topo.Versions; v++ {
		dr.Subsets = append(dr.Subsets, &networking.Subset{Name: subsetName(v), Labels: map[string]string{"version": subsetName(v)}})
	}
	return istioconfig.Config{Meta: s.meta(istioconfig.KindDestinationRule, s.name), Spec: dr}
}

func (m *mesh) virtualService(s *service) istioconfig.Config {
	vs := &networking.VirtualService{Hosts: []string{s.host()}}
	for _, p := range s.ports {
		if !p.isHTTP() {
			continue
		}
		r := &networking.HTTPRoute{
			Name:    fmt.Sprintf("port-%d", p.number),
			Match:   []*networking.HTTPMatchRequest{{Port: p.number}},
			Timeout: durationpb.New(s.vs.timeout),
		}
		for i, w := range s.vs.weights {
			r.Route = append(r.Route, &networking.HTTPRouteDestination{
				Destination: &networking.Destination{Host: s.host(), Subset: subsetName(i + 1), Port: &networking.PortSelector{Number: p.number}},
				Weight:      w,
			})
		}
		vs.Http = append(vs.Http, r)
	}
	return istioconfig.Config{Meta: s.meta(istioconfig.KindVirtualService, s.name), Spec: vs}
}

// objects renders everything that belongs to s, in a stable order.
func (m *mesh) objects(s *service) []istioconfig.Config {
	out := []istioconfig.Config{m.serviceEntry(s)}
	if m.topo.WorkloadEntries {
		for _, e := range s.endpoints {
			out = append(out, m.workloadEntryConfig(s, e))
		}
	}
	if s.vs != nil {
		out = append(out, m.virtualService(s))
	}
	if s.dr != nil {
		out = append(out, m.destinationRule(s))
	}
	return out
}

// keys names everything that belongs to s.
func (m *mesh) keys(s *service) []istioconfig.Key {
	var out []istioconfig.Key
	for _, c := range m.objects(s) {
		out = append(out, c.Key())
	}
	return out
}

// all renders the whole mesh: Sidecars, then every service's objects, then the gateways and
// their VirtualServices, then the AuthorizationPolicies.
func (m *mesh) all() []istioconfig.Config {
	out := slices.Clone(m.sidecars)
	out = append(out, m.static...)
	for _, s := range m.services {
		out = append(out, m.objects(s)...)
	}
	out = append(out, m.gatewayObjects()...)
	return append(out, m.authzObjects()...)
}

// --- seeds ----------------------------------------------------------------------------------

// subSeed derives an independent seed for one purpose, so that adding a churn process or a
// topology knob does not shift the draws of the others.
func subSeed(seed uint64, purpose string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(purpose); i++ {
		h ^= uint64(purpose[i])
		h *= 1099511628211
	}
	return splitmix(seed ^ splitmix(h))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, splitmix(seed))) }

// --- explicit mesh (topology.mesh) ------------------------------------------------------------

// buildExplicit builds the mesh from explicit services and objects: each service with its
// ports, service account and endpoint groups, in the given order, addresses allocated in order.
// Zone failures pick among the mesh's localities (region 0, zone i = locs[i]).
func (m *mesh) buildExplicit(x *Mesh) error {
	m.namespaces = x.namespaces()
	if len(m.namespaces) == 0 {
		m.namespaces = []string{nsName(0)}
	}
	m.static = slices.Clone(x.Config)
	locs := map[string]bool{}
	for _, s := range x.Services {
		for _, g := range s.Endpoints {
			locs[g.Locality] = true
		}
	}
	m.locs = slices.Sorted(maps.Keys(locs))
	if len(m.locs) == 0 {
		m.locs = []string{""}
	}
	m.topo.Localities = Localities{Regions: 1, ZonesPerRegion: len(m.locs)}
	m.explicitNames = map[string]bool{}
	for _, xs := range x.Services {
		m.explicitNames[xs.Namespace+"/"+xs.Name] = true
		s := &service{name: xs.Name, ns: xs.Namespace, sa: xs.ServiceAccount, groups: xs.Endpoints}
		if s.sa == "" {
			s.sa = "default"
		}
		for _, p := range xs.Ports {
			s.ports = append(s.ports, port{number: p.Number, proto: protoIndex(p.Protocol), pname: p.Name, istio: p.Protocol, target: p.TargetPort})
		}
		for _, g := range xs.Endpoints {
			zone, _ := slices.BinarySearch(m.locs, g.Locality)
			for range g.Count {
				addr, err := m.allocAddr()
				if err != nil {
					return err
				}
				s.endpoints = append(s.endpoints, &endpoint{addr: addr, zone: zone, version: 1, sa: s.sa,
					explicit: true, loc: g.Locality, labels: g.Labels})
			}
		}
		m.services = append(m.services, s)
	}
	m.gw.clusters = m.routerClusters(x)
	m.importers, m.hostImporters, m.heldPorts = explicitImporters(x.Config, m.namespaces)
	return nil
}

// explicitImporters is an explicit mesh's sidecar scoping as the lab holds clients to it:
// importers[ns] lists the client namespaces whose sidecars see ns's services. A namespace's
// Sidecar without a workload selector decides for its clients, else the root namespace's
// (istio-system) one, else they see every namespace. Egress hosts are read per namespace:
// "./…" is the client's own, "*/…" every one, "NS/…" that one, and a "~"-prefixed entry an
// exclusion (of its listener: a namespace it reaches into is not counted whole); a host more
// specific than "*" still counts its whole namespace (the lab holds such clients to every
// Nil when no Sidecar narrows any namespace. A host of its own (NS/NAME.NS.svc.cluster.local)
// imports that service only: hostImporters[NAME.NS.svc.cluster.local] lists those clients.
// An egress listener with a port imports only that port of its hosts and builds that port's
// listeners and routes alone (istiod's, and xdslab's, rules): its hosts are not counted, and
// heldPorts[client] lists its port (no route predicate of that port holds the client).
func explicitImporters(cfgs []istioconfig.Config, clientNSs []string) (importers, hostImporters map[string][]string, heldPorts map[string][]uint32) {
	const root = "istio-system"
	scope := map[string]*networking.Sidecar{} // namespace → its namespace-wide Sidecar
	for _, c := range cfgs {
		sc, ok := c.Spec.(*networking.Sidecar)
		if !ok || sc.GetWorkloadSelector() != nil {
			continue
		}
		if prev, dup := scope[c.Namespace]; !dup || prev == nil {
			scope[c.Namespace] = sc
		}
	}
	if len(scope) == 0 {
		return nil, nil, nil
	}
	all := slices.Clone(clientNSs)
	importers = map[string][]string{}
	hostImporters = map[string][]string{}
	hosts := map[string]map[string]bool{} // host → client namespaces
	for _, client := range clientNSs {
		sc := scope[client]
		if sc == nil {
			sc = scope[root]
		}
		seen := map[string]bool{}
		if sc == nil || len(sc.GetEgress()) == 0 {
			for _, ns := range all {
				seen[ns] = true
			}
		}
		for _, eg := range sc.GetEgress() {
			if eg.GetPort() != nil {
				if heldPorts == nil {
					heldPorts = map[string][]uint32{}
				}
				heldPorts[client] = append(heldPorts[client], eg.GetPort().GetNumber())
				continue
			}
			// A "~"-prefixed entry excludes what it names from the listener's imports (istiod).
			// The lab holds a client only to what it surely sees: a namespace an exclusion of the
			// listener reaches into is not counted whole, and an excluded host not at all.
			type excl struct{ ns, host string }
			var excls []excl
			for _, h := range eg.GetHosts() {
				if ns, host, ok := strings.Cut(h, "/"); ok && strings.HasPrefix(ns, "~") {
					ns = strings.TrimPrefix(ns, "~")
					switch ns {
					case "", "*":
						ns = "*"
					case ".":
						ns = client
					}
					excls = append(excls, excl{ns, host})
				}
			}
			excludedNS := func(ns string) bool {
				return slices.ContainsFunc(excls, func(e excl) bool { return e.ns == "*" || e.ns == ns })
			}
			excludedHost := func(host string) bool {
				return slices.ContainsFunc(excls, func(e excl) bool {
					return e.host == "*" || e.host == host || strings.HasPrefix(e.host, "*") && strings.HasSuffix(host, e.host[1:])
				})
			}
			for _, h := range eg.GetHosts() {
				ns, host, ok := strings.Cut(h, "/")
				if !ok {
					ns, host = "*", h // a bare host: any namespace
				}
				if strings.HasPrefix(ns, "~") {
					continue // an exclusion imports nothing
				}
				if host != "*" && !strings.Contains(host, "*") {
					if excludedHost(host) {
						continue
					}
					if hosts[host] == nil {
						hosts[host] = map[string]bool{}
					}
					hosts[host][client] = true
					continue
				}
				switch ns {
				case ".":
					if !excludedNS(client) {
						seen[client] = true
					}
				case "*":
					for _, n := range all {
						if !excludedNS(n) {
							seen[n] = true
						}
					}
				default:
					if !excludedNS(ns) {
						seen[ns] = true
					}
				}
			}
		}
		for ns := range seen {
			importers[ns] = append(importers[ns], client)
		}
	}
	for k := range importers {
		slices.Sort(importers[k])
	}
	for host, clients := range hosts {
		hostImporters[host] = slices.Sorted(maps.Keys(clients))
	}
	return importers, hostImporters, heldPorts
}

// newExplicitEndpoint is a new endpoint in an explicit mesh: it takes the locality and labels
// of one of the service's endpoint groups, or (a service created by churn) a locality of the
// mesh and the synthetic labels.
func (m *mesh) newExplicitEndpoint(s *service, addr string) *endpoint {
	e := &endpoint{addr: addr, version: 1, sa: s.sa, gen: s.epoch, explicit: true}
	if len(s.groups) > 0 {
		g := s.groups[m.rng.IntN(len(s.groups))]
		e.zone, _ = slices.BinarySearch(m.locs, g.Locality)
		e.loc, e.labels = g.Locality, g.Labels
		return e
	}
	e.zone = m.rng.IntN(len(m.locs))
	e.version = 1 + m.rng.IntN(m.topo.Versions)
	e.loc = m.locs[e.zone]
	e.labels = map[string]string{"app": s.name, "version": subsetName(e.version)}
	return e
}

// routerClusters are the clusters routers hold in an explicit mesh: the destinations (without
// subset) of the VirtualServices bound to a Gateway that selects the routers' label
// istio: ingressgateway. Endpoint events on other clusters reach sidecars only.
func (m *mesh) routerClusters(x *Mesh) map[string]int {
	routers := map[string]string{"istio": "ingressgateway"}
	gateways := map[string]bool{} // namespace/name
	for _, c := range x.Config {
		gw, ok := c.Spec.(*networking.Gateway)
		if !ok {
			continue
		}
		selects := true
		for k, v := range gw.GetSelector() {
			selects = selects && routers[k] == v
		}
		if selects {
			gateways[c.Namespace+"/"+c.Name] = true
		}
	}
	ports := map[string][]uint32{}
	for _, s := range m.services {
		for _, p := range s.ports {
			ports[s.host()] = append(ports[s.host()], p.number)
		}
	}
	out := map[string]int{}
	for _, c := range x.Config {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok {
			continue
		}
		bound := false
		for _, g := range vs.GetGateways() {
			if !strings.Contains(g, "/") {
				g = c.Namespace + "/" + g
			}
			bound = bound || gateways[g]
		}
		if !bound {
			continue
		}
		var dests []*networking.Destination
		for _, r := range vs.GetHttp() {
			for _, d := range r.GetRoute() {
				dests = append(dests, d.GetDestination())
			}
		}
		for _, r := range vs.GetTcp() {
			for _, d := range r.GetRoute() {
				dests = append(dests, d.GetDestination())
			}
		}
		for _, r := range vs.GetTls() {
			for _, d := range r.GetRoute() {
				dests = append(dests, d.GetDestination())
			}
		}
		for _, d := range dests {
			if d.GetSubset() != "" {
				continue // routers hold the subset's cluster, not the service's
			}
			host := fqdn(d.GetHost(), c.Namespace)
			if n := d.GetPort().GetNumber(); n != 0 {
				out[clusterName(n, "", host)]++
				continue
			}
			for _, n := range ports[host] {
				out[clusterName(n, "", host)]++
			}
		}
	}
	return out
}

// fqdn resolves a VirtualService destination host the way Istio does for cluster-local
// services: NAME and NAME.NS are short for NAME.NS.svc.cluster.local.
func fqdn(host, ns string) string {
	switch strings.Count(host, ".") {
	case 0:
		return host + "." + ns + ".svc.cluster.local"
	case 1:
		return host + ".svc.cluster.local"
	}
	return host
}
