package model

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/xdslab/xdslab/istioconfig"
)

// Snapshot is an immutable view of the mesh that a push reads: services, the endpoint index and
// config objects by kind and namespace. A Snapshot never changes once built; an update builds a
// new one that shares every unchanged part with its parent (an endpoint-only update copies only
// the endpoint index's top-level map and the changed hosts' slices).
type Snapshot struct {
	// Version is unique per snapshot and increases with Seq ("1", "2", …).
	Version string
	Seq     uint64

	services []*Service // sorted by hostname
	// serviceByHost holds each service with the Seq at which it last changed.
	serviceByHost map[string]hostService
	// endpoints holds each host's endpoints, sorted by CompareEndpoints, with the Seq at which
	// they last changed (so caches can key EDS resources by it). A host whose endpoints were
	// removed keeps an entry without endpoints, for its generation.
	endpoints map[string]hostEndpoints
	configs   map[istioconfig.Kind][]*istioconfig.Config // sorted by namespace, then name
	configKey map[istioconfig.Key]*istioconfig.Config
	// configGen is the Seq at which any config object last changed.
	configGen uint64
	// vis holds visibility facts computed on first use (see scope_view.go). It depends only on
	// services and configs, so an endpoint-only successor shares it.
	vis *visibility
	// byIP indexes endpoints by address on first use (EndpointsAt); every change of the
	// endpoint index replaces it.
	byIP *ipIndex
}

// ipIndex maps an address to the endpoints at it, built once; it also keeps the trust domain
// of the endpoints' identities (IdentityTrustDomain), found once.
type ipIndex struct {
	once sync.Once
	m    map[string][]*Endpoint

	tdOnce sync.Once
	td     string
}

// TrustDomainOf returns the trust domain of a SPIFFE id spiffe://TD/…; false for anything else.
func TrustDomainOf(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "spiffe://")
	if !ok {
		return "", false
	}
	td, _, ok := strings.Cut(rest, "/")
	return td, ok && td != ""
}

// IdentityTrustDomain is the trust domain of the first endpoint identity of the form
// spiffe://TD/…, in service then endpoint order: the one the registries build workload
// identities with. Empty when no endpoint has one. Found on the first call for a snapshot's
// endpoint set.
func (s *Snapshot) IdentityTrustDomain() string {
	find := func() string {
		for _, svc := range s.services {
			for _, ep := range s.endpoints[svc.Hostname].eps {
				if td, ok := TrustDomainOf(ep.ServiceAccount); ok {
					return td
				}
			}
		}
		return ""
	}
	if s.byIP == nil { // a snapshot not built by NewSnapshot (tests)
		return find()
	}
	s.byIP.tdOnce.Do(func() { s.byIP.td = find() })
	return s.byIP.td
}

// EndpointsAt returns the endpoints whose address is ip, in service then CompareEndpoints
// order (a workload that serves several services has one endpoint per service). The index is
// built on the first call for a snapshot's endpoint set. The slice must not be modified.
func (s *Snapshot) EndpointsAt(ip string) []*Endpoint {
	build := func() map[string][]*Endpoint {
		m := map[string][]*Endpoint{}
		for _, svc := range s.services {
			for _, ep := range s.endpoints[svc.Hostname].eps {
				m[ep.Address] = append(m[ep.Address], ep)
			}
		}
		return m
	}
	if s.byIP == nil { // a snapshot not built by NewSnapshot (tests)
		return build()[ip]
	}
	s.byIP.once.Do(func() { s.byIP.m = build() })
	return s.byIP.m[ip]
}

// SnapshotInput is what a snapshot is built from.
type SnapshotInput struct {
	Services  []*Service
	Endpoints map[string][]*Endpoint // by service hostname
	Configs   []*istioconfig.Config
}

// NewSnapshot builds a snapshot at seq from scratch. The inputs are not copied deeply: callers
// hand over ownership of the pointed-to values and of the endpoint slices (a sorted slice is
// kept as is), which must not be modified afterwards.
func NewSnapshot(seq uint64, in SnapshotInput) *Snapshot {
	s := &Snapshot{
		Seq:           seq,
		Version:       strconv.FormatUint(seq, 10),
		serviceByHost: make(map[string]hostService, len(in.Services)),
		endpoints:     make(map[string]hostEndpoints, len(in.Endpoints)),
		configs:       make(map[istioconfig.Kind][]*istioconfig.Config),
		configKey:     make(map[istioconfig.Key]*istioconfig.Config, len(in.Configs)),
		configGen:     seq,
		vis:           &visibility{},
		byIP:          &ipIndex{},
	}
	for _, svc := range in.Services {
		s.serviceByHost[svc.Hostname] = hostService{svc, seq}
	}
	s.services = sortedServices(s.serviceByHost)
	for host, eps := range in.Endpoints {
		s.endpoints[host] = hostEndpoints{sortedEndpoints(eps), seq}
	}
	for _, c := range in.Configs {
		s.configKey[c.Key()] = c
	}
	s.configs = groupConfigs(s.configKey)
	return s
}

// hostService is a service with the Seq at which it last changed.
type hostService struct {
	svc *Service
	gen uint64
}

// hostEndpoints are a host's endpoints with the Seq at which they last changed.
type hostEndpoints struct {
	eps []*Endpoint
	gen uint64
}

func sortedServices(m map[string]hostService) []*Service {
	out := make([]*Service, 0, len(m))
	for _, hs := range m {
		out = append(out, hs.svc)
	}
	slices.SortFunc(out, func(a, b *Service) int { return strings.Compare(a.Hostname, b.Hostname) })
	return out
}

// sortedEndpoints returns eps sorted: eps itself when it already is (the snapshot then shares
// the caller's slice, which callers hand over and never modify), else a sorted copy.
func sortedEndpoints(eps []*Endpoint) []*Endpoint {
	if slices.IsSortedFunc(eps, CompareEndpoints) {
		return eps
	}
	out := slices.Clone(eps)
	slices.SortFunc(out, CompareEndpoints)
	return out
}

func groupConfigs(byKey map[istioconfig.Key]*istioconfig.Config) map[istioconfig.Kind][]*istioconfig.Config {
	out := make(map[istioconfig.Kind][]*istioconfig.Config)
	for _, c := range byKey {
		out[c.Kind] = append(out[c.Kind], c)
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b *istioconfig.Config) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
		})
	}
	return out
}

// Services returns every service sorted by hostname. The slice must not be modified.
func (s *Snapshot) Services() []*Service { return s.services }

// Service returns the service with the hostname, or nil.
func (s *Snapshot) Service(host string) *Service { return s.serviceByHost[host].svc }

// Endpoints returns the endpoints of the service with the hostname, sorted. The slice must not
// be modified.
func (s *Snapshot) Endpoints(host string) []*Endpoint { return s.endpoints[host].eps }

// EndpointGen is the snapshot Seq at which the host's endpoints last changed (0 if never set).
func (s *Snapshot) EndpointGen(host string) uint64 { return s.endpoints[host].gen }

// ServiceGen is the snapshot Seq at which the host's Service last changed (0 if unknown).
func (s *Snapshot) ServiceGen(host string) uint64 { return s.serviceByHost[host].gen }

// ConfigGen is the snapshot Seq at which any config object last changed.
func (s *Snapshot) ConfigGen() uint64 { return s.configGen }

// Configs returns every config of a kind, sorted by namespace then name. The slice must not be
// modified.
func (s *Snapshot) Configs(kind istioconfig.Kind) []*istioconfig.Config { return s.configs[kind] }

// ConfigsIn returns the configs of a kind in one namespace.
func (s *Snapshot) ConfigsIn(kind istioconfig.Kind, namespace string) []*istioconfig.Config {
	all := s.configs[kind]
	i, _ := slices.BinarySearchFunc(all, namespace, func(c *istioconfig.Config, ns string) int { return strings.Compare(c.Namespace, ns) })
	j := i
	for j < len(all) && all[j].Namespace == namespace {
		j++
	}
	return all[i:j]
}

// Config returns one config object, or nil.
func (s *Snapshot) Config(key istioconfig.Key) *istioconfig.Config { return s.configKey[key] }

// EndpointCount is the total number of endpoints.
func (s *Snapshot) EndpointCount() int {
	n := 0
	for _, he := range s.endpoints {
		n += len(he.eps)
	}
	return n
}

// WithEndpoints returns a new snapshot at seq in which the listed hosts' endpoints are replaced
// (a nil or empty slice removes them). Services and configs are shared with s, not rebuilt.
func (s *Snapshot) WithEndpoints(seq uint64, updates map[string][]*Endpoint) *Snapshot {
	n := *s
	n.Seq, n.Version = seq, strconv.FormatUint(seq, 10)
	n.endpoints = maps.Clone(s.endpoints)
	n.byIP = &ipIndex{}
	for host, eps := range updates {
		if len(eps) == 0 {
			n.endpoints[host] = hostEndpoints{gen: seq}
		} else {
			n.endpoints[host] = hostEndpoints{sortedEndpoints(eps), seq}
		}
	}
	return &n
}

// ServiceCount is the number of services.
func (s *Snapshot) ServiceCount() int { return len(s.services) }

// SnapshotSummary is a small description of a snapshot, for logs and debug endpoints.
type SnapshotSummary struct {
	Version   string                   `json:"version"`
	Seq       uint64                   `json:"seq"`
	Services  int                      `json:"services"`
	Endpoints int                      `json:"endpoints"`
	Configs   map[istioconfig.Kind]int `json:"configs"`
	ConfigGen uint64                   `json:"configGen"`
}

// Summary describes the snapshot.
func (s *Snapshot) Summary() SnapshotSummary {
	out := SnapshotSummary{Version: s.Version, Seq: s.Seq, Services: len(s.services),
		Endpoints: s.EndpointCount(), Configs: map[istioconfig.Kind]int{}, ConfigGen: s.configGen}
	for k, cs := range s.configs {
		out.Configs[k] = len(cs)
	}
	return out
}

// Consistent checks the snapshot's invariants: services sorted by hostname and indexed, every
// endpoint list belonging to a known service, sorted, and naming that service, every config
// indexed under its own key. Builders' tests assert it; it is too slow for every push.
func (s *Snapshot) Consistent() error {
	var errs []error
	if len(s.services) != len(s.serviceByHost) {
		errs = append(errs, fmt.Errorf("snapshot %s: %d services listed, %d indexed", s.Version, len(s.services), len(s.serviceByHost)))
	}
	for i, svc := range s.services {
		if s.serviceByHost[svc.Hostname].svc != svc {
			errs = append(errs, fmt.Errorf("snapshot %s: service %s not indexed", s.Version, svc.Hostname))
		}
		if i > 0 && s.services[i-1].Hostname >= svc.Hostname {
			errs = append(errs, fmt.Errorf("snapshot %s: services not sorted at %s", s.Version, svc.Hostname))
		}
	}
	for host, he := range s.endpoints {
		eps := he.eps
		if len(eps) > 0 && s.serviceByHost[host].svc == nil {
			errs = append(errs, fmt.Errorf("snapshot %s: endpoints for unknown service %s", s.Version, host))
		}
		if !slices.IsSortedFunc(eps, CompareEndpoints) {
			errs = append(errs, fmt.Errorf("snapshot %s: endpoints of %s not sorted", s.Version, host))
		}
		for _, ep := range eps {
			if ep.Service != host {
				errs = append(errs, fmt.Errorf("snapshot %s: endpoint %s listed under %s names service %q", s.Version, ep.Address, host, ep.Service))
			}
		}
	}
	n := 0
	for kind, cs := range s.configs {
		for _, c := range cs {
			n++
			if c.Kind != kind || s.configKey[c.Key()] != c {
				errs = append(errs, fmt.Errorf("snapshot %s: config %s misfiled", s.Version, c.Key()))
			}
		}
	}
	if n != len(s.configKey) {
		errs = append(errs, fmt.Errorf("snapshot %s: %d configs grouped, %d indexed", s.Version, n, len(s.configKey)))
	}
	return errors.Join(errs...)
}
