package gen

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// endpoints is the EDS generator (the same for sidecars and proxyless gRPC clients). EDS is
// named: a wildcard request gets the assignments of every EDS cluster the CDS generator
// would produce for a sidecar (outbound, default and subsets).
//
// Only the wildcard list is scoped to the proxy's view (the clusters its CDS has); a named
// request is answered for any name. An assignment depends on who asks only through the
// DestinationRule it sees (edsrule.go) and, with locality load balancing, its locality: proxies
// that see the same rules share the bytes.
func endpoints(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	ix := newIndex(s, nil).of(p)
	ix.drNS = namedRuleNamespace(p, s) // the rules it sees, as in its CDS (edsrule.go)
	if wantAll(names) {
		ix = newIndex(s, s.ScopeFor(p)).of(p)
		names = edsClusterNames(s, ix, p != nil && p.Type == model.Router)
	} else {
		names = slices.Clone(names)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	out := make([]Resource, 0, len(names))
	var errs []error
	for _, name := range names {
		r, err := endpointResource(p, s, ix, name)
		if err != nil {
			errs = append(errs, err)
		}
		if r.Message != nil { // bad endpoints are left out, the rest of the assignment is kept
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// edsClusterNames lists every outbound EDS cluster name in the snapshot, sorted: a router's
// include the passthrough (resolution NONE) services', EDS on gateways (cds.go).
func edsClusterNames(s *model.Snapshot, ix *index, router bool) []string {
	var names []string
	for _, svc := range visibleServices(s, ix.scope) {
		if svc.Resolution != model.ResolutionStatic && !(router && svc.Resolution == model.ResolutionPassthrough) {
			continue
		}
		dr := ix.destinationRule(svc.Hostname)
		for _, port := range svc.Ports {
			if port.Protocol == model.ProtocolUDP || !ix.scope.SeesPort(svc, port.Number) {
				continue // no cluster (cds.go)
			}
			names = append(names, ClusterName(Outbound, port.Number, "", svc.Hostname))
			if dr != nil {
				for _, ss := range drSpec(dr).GetSubsets() {
					if checkSubsetName(ss.GetName()) == nil { // CDS reports bad names
						names = append(names, ClusterName(Outbound, port.Number, ss.GetName(), svc.Hostname))
					}
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// endpointResource builds the ClusterLoadAssignment for one cluster name. A well-formed name of
// an unknown service, port or subset gets an assignment with no endpoints (so a warming
// cluster completes and sends no traffic); a malformed name is an error.
//
// When its DestinationRule or the service's traffic distribution asks for locality load
// balancing (locality.go), the assignment is p's: ranked or reweighted against p's locality.
func endpointResource(p *model.Proxy, s *model.Snapshot, ix *index, name string) (Resource, error) {
	cn, err := ParseClusterName(name)
	if err != nil {
		return Resource{}, fmt.Errorf("EDS: %w", err)
	}
	empty := Resource{Name: name, Message: &endpointv3.ClusterLoadAssignment{ClusterName: name}}
	if cn.Direction != Outbound {
		return empty, nil
	}
	svc := s.Service(cn.Host)
	if svc == nil {
		return empty, nil
	}
	deps := []istioconfig.Key{ServiceKey(svc), EndpointKey(svc)}
	port, ok := svc.Port(cn.Port)
	if !ok {
		empty.Deps = sortDeps(deps)
		return empty, nil
	}
	drNS := ix.drNS // named: AssignmentRuleKey chooses alike
	if ix.scope != nil {
		drNS = ruleNamespace(ix.namespace())
	}
	dr := namedAssignmentRule(s, drNS, ix.labels, svc.Namespace, svc.Hostname, cn.Subset)
	var selector map[string]string
	var ss *networking.Subset
	if cn.Subset != "" {
		if dr != nil {
			deps = append(deps, dr.Key())
		}
		ss = subset(dr, cn.Subset)
		if ss == nil {
			empty.Deps = sortDeps(deps)
			return empty, nil
		}
		selector = ss.GetLabels()
	}
	var pol policy
	if dr != nil {
		pol = effectivePolicy(drSpec(dr), cn.Port, ss)
	}
	pol.distribution = svc.TrafficDistribution
	lb := localityPolicy(pol, p, s)
	if lb != nil && dr != nil {
		deps = append(deps, dr.Key())
	}
	var mode *networking.ClientTLSSettings_TLSmode
	if dr != nil {
		if mode = ruleTLSMode(drSpec(dr), cn.Subset, cn.Port); mode != nil {
			deps = append(deps, dr.Key()) // its TLS mode decides the endpoints' tlsMode
		}
	}
	cla, err := loadAssignment(name, svc, port, s.Endpoints(svc.Hostname), selector, svc.Resolution == model.ResolutionDNS, newWorkloadMTLS(s), mode, lb)
	return Resource{Name: name, Message: cla, Deps: sortDeps(deps)}, err
}

// loadAssignment groups the endpoints that match selector and serve port by locality. Each endpoint's
// load_balancing_weight is its weight (at least 1, as grpc-go rejects 0); a locality's weight is
// the sum of its endpoints' weights. Duplicate address:port pairs are dropped (the first, by
// model.CompareEndpoints order, wins) since grpc-go rejects them. With allowHostnames false
// (EDS), an endpoint whose address is not an IP is dropped with an error, as Envoy would reject
// the whole assignment. A unix domain socket (unix:///path, an @abstract name) is a pipe
// address, as istiod sends it.
//
// An endpoint that takes Istio mTLS (endpointTLSMode) carries the metadata tlsMode "istio"
// that auto-mTLS clusters match on, as istiod's endpoints say, when drMode (the TLS mode the
// cluster's DestinationRule sets for it, ruleTLSMode) is ISTIO_MUTUAL, or when it is nil and
// the workload's PeerAuthentication (ws) does not say DISABLE for its port. Any other mode
// leaves every endpoint without it: clients then send it plaintext.
//
// A gateway's SNI-DNAT cluster (its name is IstioSNI's, gateway_autopassthrough.go) keeps only
// the endpoints that take Istio mTLS, as istiod filters them by that name: before the locality
// load balancing, and a locality whose endpoints all go keeps its place, empty and without a
// weight.
//
// With lb set, the localities are then ranked or reweighted for the proxy (locality.go).
func loadAssignment(name string, svc *model.Service, port model.Port, eps []*model.Endpoint, selector map[string]string, allowHostnames bool, ws *workloadMTLS, drMode *networking.ClientTLSSettings_TLSmode, lb *localityLB) (*endpointv3.ClusterLoadAssignment, error) {
	byRule := endpointsMTLSOf(drMode)
	sniDNAT := strings.HasPrefix(name, sniDNATPrefix)
	// group holds a locality's messages, allocated together.
	type group struct {
		loc     model.Locality
		weight  uint64
		lle     endpointv3.LocalityLbEndpoints
		locMsg  corev3.Locality
		wrapped wrapperspb.UInt32Value
		eps     []*model.Endpoint // with lb: the endpoints of lle.LbEndpoints, in order
	}
	var groups []*group
	byLoc := map[model.Locality]*group{}
	seen := map[netip.AddrPort]bool{}
	seenHost := map[string]bool{}
	var istioMD *corev3.Metadata // shared by the assignment's mTLS endpoints
	var errs []error
	for _, ep := range eps {
		if !model.LabelsMatch(selector, ep.Labels) {
			continue
		}
		tp, ok := ep.ServesPort(port)
		if !ok {
			continue
		}
		pipe, isPipe := strings.CutPrefix(ep.Address, model.UnixAddressPrefix)
		if isPipe {
			// A unix domain socket endpoint (a STATIC entry's, or a WorkloadEntry a DNS entry
			// selects): a pipe address, no port, as istiod sends it.
			tp = 0
			if seenHost[ep.Address] {
				continue
			}
			seenHost[ep.Address] = true
		} else if addr, err := netip.ParseAddr(ep.Address); err == nil {
			ap := netip.AddrPortFrom(addr, uint16(tp))
			if seen[ap] {
				continue
			}
			seen[ap] = true
		} else if !allowHostnames {
			errs = append(errs, fmt.Errorf("EDS %s: endpoint %q of service %s (from %s) is not an IP address; use resolution DNS for hostnames", name, ep.Address, svc.Hostname, ep.Source))
			continue
		} else {
			k := HostPortName(ep.Address, tp)
			if seenHost[k] {
				continue
			}
			seenHost[k] = true
		}
		g := byLoc[ep.Locality]
		if g == nil {
			g = &group{loc: ep.Locality}
			byLoc[ep.Locality] = g
			groups = append(groups, g)
		}
		mtls := endpointTLSMode(ep) == tlsModeIstio && (byRule == mtlsAlways || byRule == mtlsByPeerAuth && ws.mode(svc.Namespace, ep, tp) != mtlsDisable)
		if sniDNAT && !mtls {
			continue // the locality keeps its place, without this endpoint
		}
		w := max(ep.Weight, 1)
		g.weight += uint64(w)
		var lbe *endpointv3.LbEndpoint
		if isPipe {
			lbe = newPipeLbEndpoint(pipe, w, healthStatus(ep.Health))
		} else {
			lbe = newLbEndpoint(ep.Address, tp, w, healthStatus(ep.Health))
		}
		if mtls {
			// auto-mTLS: the cluster's transport_socket_matches pick mTLS for this endpoint.
			if istioMD == nil {
				istioMD = tlsModeMetadata()
			}
			lbe.Metadata = istioMD
		}
		g.lle.LbEndpoints = append(g.lle.LbEndpoints, lbe)
		if lb != nil {
			g.eps = append(g.eps, ep)
		}
	}
	slices.SortFunc(groups, func(a, b *group) int {
		return cmp.Or(strings.Compare(a.loc.Region, b.loc.Region), strings.Compare(a.loc.Zone, b.loc.Zone), strings.Compare(a.loc.SubZone, b.loc.SubZone))
	})
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	if len(groups) > 0 {
		cla.Endpoints = make([]*endpointv3.LocalityLbEndpoints, 0, len(groups))
	}
	for _, g := range groups {
		if len(g.lle.LbEndpoints) > 0 { // an SNI-DNAT cluster's locality may have none left
			g.wrapped.Value = uint32(min(g.weight, math.MaxUint32))
			g.lle.LoadBalancingWeight = &g.wrapped
		}
		// Always a Locality message, even with empty fields: grpc-go NACKs a
		// LocalityLbEndpoints without one ("EDS response contains a locality without ID").
		g.locMsg = corev3.Locality{Region: g.loc.Region, Zone: g.loc.Zone, SubZone: g.loc.SubZone}
		g.lle.Locality = &g.locMsg
		cla.Endpoints = append(cla.Endpoints, &g.lle)
	}
	if lb != nil {
		byGroup := make([][]*model.Endpoint, len(groups))
		for i, g := range groups {
			byGroup[i] = g.eps
		}
		lb.apply(cla, byGroup)
	}
	return cla, errors.Join(errs...)
}

// tlsModeMetadata is the endpoint metadata of a workload that takes Istio mTLS.
func tlsModeMetadata() *corev3.Metadata {
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
		transportSocketMatchKey: {Fields: map[string]*structpb.Value{"tlsMode": structpb.NewStringValue(tlsModeIstio)}},
	}}
}

// lbEndpointAlloc holds every message of one LbEndpoint so that it costs one allocation
// instead of eight (EDS is the bulk of a sidecar's config).
type lbEndpointAlloc struct {
	lb     endpointv3.LbEndpoint
	hostID endpointv3.LbEndpoint_Endpoint
	ep     endpointv3.Endpoint
	addr   corev3.Address
	sa     corev3.Address_SocketAddress
	sock   corev3.SocketAddress
	port   corev3.SocketAddress_PortValue
	weight wrapperspb.UInt32Value
}

func newLbEndpoint(addr string, port, weight uint32, health corev3.HealthStatus) *endpointv3.LbEndpoint {
	a := &lbEndpointAlloc{}
	a.port.PortValue = port
	a.sock.Address = addr
	a.sock.PortSpecifier = &a.port
	a.sa.SocketAddress = &a.sock
	a.addr.Address = &a.sa
	a.ep.Address = &a.addr
	a.hostID.Endpoint = &a.ep
	a.weight.Value = weight
	a.lb.HostIdentifier = &a.hostID
	a.lb.HealthStatus = health
	a.lb.LoadBalancingWeight = &a.weight
	return &a.lb
}

// newPipeLbEndpoint is the endpoint of a unix domain socket at path, as istiod sends it.
func newPipeLbEndpoint(path string, weight uint32, health corev3.HealthStatus) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path}}},
		}},
		HealthStatus:        health,
		LoadBalancingWeight: wrapperspb.UInt32(weight),
	}
}

func healthStatus(h model.HealthStatus) corev3.HealthStatus {
	switch h {
	case model.Unhealthy:
		return corev3.HealthStatus_UNHEALTHY
	case model.Draining:
		return corev3.HealthStatus_DRAINING
	}
	return corev3.HealthStatus_HEALTHY
}

func socketAddress(addr string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       addr,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// sortDeps sorts and de-duplicates dependency keys, dropping empty ones.
func sortDeps(deps []istioconfig.Key) []istioconfig.Key {
	deps = slices.DeleteFunc(deps, func(k istioconfig.Key) bool { return k.Kind == "" })
	slices.SortFunc(deps, func(a, b istioconfig.Key) int {
		return cmp.Or(strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return slices.Compact(deps)
}
