package model

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/protobuf/proto"
)

// SnapshotSource is the current state a snapshot is built from: the merged services and
// endpoints and the Istio config objects (VirtualService, DestinationRule, Sidecar, Gateway;
// ServiceEntry and WorkloadEntry reach a snapshot only as the services they define). The
// registry aggregate implements it; a builder reads it under one lock so that it is consistent.
type SnapshotSource interface {
	// Services returns every service, in any order.
	Services() []*Service
	Service(host string) *Service
	// Endpoints returns a host's endpoints, sorted by CompareEndpoints. It is only called for
	// hosts that have a Service.
	Endpoints(host string) []*Endpoint
	// Configs returns every config object, in any order.
	Configs() []*istioconfig.Config
	Config(key istioconfig.Key) *istioconfig.Config
}

// ChangeReport says what a snapshot changed compared with its parent. Host lists and keys are
// sorted.
type ChangeReport struct {
	// Full is true when clusters, listeners or routes may have changed: a service was added,
	// removed or redefined (its service accounts included), a config object changed, or the
	// endpoints of a DNS-resolution service changed (its cluster inlines them). False means only
	// endpoints of EDS services changed: an incremental (EDS) push of EndpointsChanged suffices.
	Full            bool
	ServicesAdded   []string
	ServicesRemoved []string
	ServicesChanged []string
	// EndpointsChanged lists the hosts whose endpoints changed (added and removed services
	// included when they have endpoints).
	EndpointsChanged []string
	ConfigsChanged   []istioconfig.Key
	// Rebuilt is true when the snapshot was built from scratch (no parent, or a request for
	// everything); the lists then still describe the difference from the parent.
	Rebuilt bool
	// Keys is every change above as a key with its namespace, as the builder decided it: a
	// KindService key per added, removed or changed service, a KindEndpoint key per host in
	// EndpointsChanged and the config keys. The ADS server scopes a push by it (Applied). It
	// is not modified after the build.
	Keys map[istioconfig.Key]struct{}
}

// Applied returns the push request for what a build applied: req's reasons and start, with
// Full and the changed keys taken from the report (the merged changes less those that changed
// back within the batch; for a request for everything, what the rebuild found).
func (r ChangeReport) Applied(req *PushRequest) *PushRequest {
	out := &PushRequest{Full: r.Full, ConfigsUpdated: r.Keys}
	if req != nil {
		out.Reasons, out.Start = req.Reasons, req.Start
	}
	return out
}

// key records a change of kind for host (a service's hostname) in namespace ns.
func (r *ChangeReport) key(kind istioconfig.Kind, host, ns string) {
	if r.Keys == nil {
		r.Keys = map[istioconfig.Key]struct{}{}
	}
	r.Keys[istioconfig.Key{Kind: kind, Name: host, Namespace: ns}] = struct{}{}
}

// Empty reports whether nothing changed (the builder then returns the parent unchanged).
func (r ChangeReport) Empty() bool {
	return len(r.ServicesAdded)+len(r.ServicesRemoved)+len(r.ServicesChanged)+
		len(r.EndpointsChanged)+len(r.ConfigsChanged) == 0
}

// SnapshotDelta is a set of changes to apply to a snapshot.
type SnapshotDelta struct {
	// Services by host; a nil value removes the service and its endpoints.
	Services map[string]*Service
	// Endpoints by host; a nil or empty slice removes them.
	Endpoints map[string][]*Endpoint
	// Configs by key; a nil value removes the object.
	Configs map[istioconfig.Key]*istioconfig.Config
}

// Apply returns a new snapshot at seq with d applied. Everything d does not touch is shared
// with s; the generations (ServiceGen, EndpointGen, ConfigGen) move to seq only for what
// changed.
func (s *Snapshot) Apply(seq uint64, d SnapshotDelta) *Snapshot {
	var n *Snapshot
	if len(d.Endpoints) > 0 {
		n = s.WithEndpoints(seq, d.Endpoints)
	} else {
		c := *s
		c.Seq, c.Version = seq, strconv.FormatUint(seq, 10)
		n = &c
	}
	if len(d.Services) > 0 {
		n.serviceByHost = maps.Clone(s.serviceByHost)
		removed := false
		// The sorted list is patched in place (binary search) rather than re-sorted.
		n.services = slices.Clone(s.services)
		for host, svc := range d.Services {
			i, found := slices.BinarySearchFunc(n.services, host, func(x *Service, h string) int { return strings.Compare(x.Hostname, h) })
			switch {
			case svc != nil && found:
				n.services[i] = svc
			case svc != nil:
				n.services = slices.Insert(n.services, i, svc)
			case found:
				n.services = slices.Delete(n.services, i, i+1)
			}
			if svc != nil {
				n.serviceByHost[host] = hostService{svc, seq}
				continue
			}
			delete(n.serviceByHost, host)
			removed = true
		}
		if removed {
			// A removed service takes its endpoints with it (n may still share the maps with s).
			if len(d.Endpoints) == 0 {
				n.endpoints = maps.Clone(n.endpoints)
			}
			for host, svc := range d.Services {
				if svc == nil {
					delete(n.endpoints, host)
				}
			}
		}
	}
	if len(d.Configs) > 0 {
		n.configKey = maps.Clone(s.configKey)
		for key, c := range d.Configs {
			if c == nil {
				delete(n.configKey, key)
			} else {
				n.configKey[key] = c
			}
		}
		n.configs = groupConfigs(n.configKey)
		n.configGen = seq
	}
	if len(d.Services) > 0 || len(d.Configs) > 0 {
		n.vis = &visibility{}
	}
	if len(d.Services) > 0 {
		n.byIP = &ipIndex{} // a removed service took its endpoints
	}
	return n
}

// BuildSnapshot builds the snapshot that follows prev at seq from src, the state after the
// changes req names, and reports what changed. It is pure: it reads only its arguments.
//
//   - prev nil, req nil, or a full request with no ConfigsUpdated ("everything"): every
//     service, endpoint and config is compared with prev (Rebuilt).
//   - otherwise req's keys are the account of every change between prev's state and src (the
//     aggregate's registry.Change of each write, merged by the debouncer; src is the View the
//     aggregate published with the newest of them), and nothing else is looked at: a
//     KindService key takes the host's service and endpoints from src, a KindEndpoint key its
//     endpoints, any other key the config object. A key whose value in src equals prev's (it
//     changed and changed back within one batch) is left out, so a net no-op pushes nothing.
//
// Full is true when a service or a config object changed, or the endpoints of a service whose
// endpoints are part of its cluster or listeners (Service.EndpointsInCluster,
// EndpointsInListeners), the rule the aggregate's Full follows. When only endpoints changed, the result is prev.WithEndpoints (services and configs
// shared, Full false). When nothing changed, prev itself is returned with an empty report.
func BuildSnapshot(prev *Snapshot, seq uint64, req *PushRequest, src SnapshotSource) (*Snapshot, ChangeReport) {
	if prev == nil {
		return buildFromScratch(seq, src)
	}
	var (
		svcHosts, epHosts = map[string]struct{}{}, map[string]struct{}{}
		cfgKeys           = map[istioconfig.Key]struct{}{}
		everything        = req == nil || (req.Full && len(req.ConfigsUpdated) == 0)
	)
	if !everything {
		for k := range req.ConfigsUpdated {
			switch k.Kind {
			case KindService:
				svcHosts[k.Name] = struct{}{}
			case KindEndpoint:
				epHosts[k.Name] = struct{}{}
			default:
				cfgKeys[k] = struct{}{}
			}
		}
	}
	if everything {
		for _, svc := range prev.services {
			svcHosts[svc.Hostname] = struct{}{}
		}
		for _, svc := range src.Services() {
			svcHosts[svc.Hostname] = struct{}{}
		}
		for k := range prev.configKey {
			cfgKeys[k] = struct{}{}
		}
		for _, c := range src.Configs() {
			cfgKeys[c.Key()] = struct{}{}
		}
	}
	for h := range svcHosts {
		epHosts[h] = struct{}{}
	}

	var rep ChangeReport
	rep.Rebuilt = everything
	d := SnapshotDelta{}
	for h := range svcHosts {
		old, cur := prev.Service(h), src.Service(h)
		switch {
		case old == nil && cur == nil:
			continue
		case old == nil:
			rep.ServicesAdded = append(rep.ServicesAdded, h)
		case cur == nil:
			rep.ServicesRemoved = append(rep.ServicesRemoved, h)
		case old.Equal(cur):
			continue
		default:
			rep.ServicesChanged = append(rep.ServicesChanged, h)
		}
		rep.key(KindService, h, serviceNamespace(old, cur))
		if d.Services == nil {
			d.Services = map[string]*Service{}
		}
		d.Services[h] = cur
	}
	for h := range epHosts {
		var cur []*Endpoint
		if src.Service(h) != nil {
			cur = src.Endpoints(h)
		}
		if endpointsEqual(prev.Endpoints(h), cur) {
			continue
		}
		rep.EndpointsChanged = append(rep.EndpointsChanged, h)
		rep.key(KindEndpoint, h, serviceNamespace(prev.Service(h), src.Service(h)))
		if d.Endpoints == nil {
			d.Endpoints = map[string][]*Endpoint{}
		}
		d.Endpoints[h] = cur
	}
	for k := range cfgKeys {
		old, cur := prev.Config(k), src.Config(k)
		if configsEqual(old, cur) {
			continue
		}
		rep.ConfigsChanged = append(rep.ConfigsChanged, k)
		rep.key(k.Kind, k.Name, k.Namespace)
		if d.Configs == nil {
			d.Configs = map[istioconfig.Key]*istioconfig.Config{}
		}
		d.Configs[k] = cur
	}
	rep.sort()
	rep.Full = len(d.Services) > 0 || len(d.Configs) > 0 || dnsEndpointsChanged(src, rep.EndpointsChanged)
	switch {
	case rep.Empty():
		return prev, rep
	case !rep.Full:
		return prev.WithEndpoints(seq, d.Endpoints), rep
	}
	return prev.Apply(seq, d), rep
}

// serviceNamespace is the namespace of a service that changed: the current definition's, or
// the old one's when it was removed.
func serviceNamespace(old, cur *Service) string {
	if cur != nil {
		return cur.Namespace
	}
	if old != nil {
		return old.Namespace
	}
	return ""
}

// dnsEndpointsChanged reports whether a host in hosts has its endpoints in its cluster
// (Service.EndpointsInCluster) or its listeners (Service.EndpointsInListeners): an EDS-only
// push would leave the cluster's addresses or the listeners stale.
func dnsEndpointsChanged(src SnapshotSource, hosts []string) bool {
	for _, h := range hosts {
		if svc := src.Service(h); svc.EndpointsInCluster() || svc.EndpointsInListeners() {
			return true
		}
	}
	return false
}

func buildFromScratch(seq uint64, src SnapshotSource) (*Snapshot, ChangeReport) {
	in := SnapshotInput{Services: src.Services(), Configs: src.Configs()}
	in.Endpoints = make(map[string][]*Endpoint, len(in.Services))
	rep := ChangeReport{Full: true, Rebuilt: true}
	for _, svc := range in.Services {
		rep.ServicesAdded = append(rep.ServicesAdded, svc.Hostname)
		rep.key(KindService, svc.Hostname, svc.Namespace)
		if eps := src.Endpoints(svc.Hostname); len(eps) > 0 {
			in.Endpoints[svc.Hostname] = eps
			rep.EndpointsChanged = append(rep.EndpointsChanged, svc.Hostname)
			rep.key(KindEndpoint, svc.Hostname, svc.Namespace)
		}
	}
	for _, c := range in.Configs {
		k := c.Key()
		rep.ConfigsChanged = append(rep.ConfigsChanged, k)
		rep.key(k.Kind, k.Name, k.Namespace)
	}
	rep.sort()
	return NewSnapshot(seq, in), rep
}

func (r *ChangeReport) sort() {
	slices.Sort(r.ServicesAdded)
	slices.Sort(r.ServicesRemoved)
	slices.Sort(r.ServicesChanged)
	slices.Sort(r.EndpointsChanged)
	slices.SortFunc(r.ConfigsChanged, func(a, b istioconfig.Key) int { return strings.Compare(a.String(), b.String()) })
}

// endpointsEqual compares two sorted endpoint lists.
func endpointsEqual(a, b []*Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y *Endpoint) bool { return x == y || x.Equal(y) })
}

// configsEqual reports whether two configs have the same content. Stored configs are
// immutable, so the same pointer is the common, cheap case.
func configsEqual(a, b *istioconfig.Config) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Meta.Key() == b.Meta.Key() && a.ResourceVersion == b.ResourceVersion &&
		mapsEqual(a.Labels, b.Labels) && mapsEqual(a.Annotations, b.Annotations) && proto.Equal(a.Spec, b.Spec)
}
