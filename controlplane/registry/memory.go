package registry

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/xdslab/xdslab/controlplane/model"
)

// Registry is a source of Services and Endpoints that an Aggregate merges.
type Registry interface {
	// Name identifies the registry in logs and debug output.
	Name() string
	// Subscribe registers the registry's one subscriber: fn is called at once with the
	// registry's whole content, then after every change, in change order. fn must not call
	// back into the registry.
	Subscribe(fn func(Update))
}

// Update is a change to a registry, host by host.
type Update struct {
	// Services maps a host to its new definition; a nil value means the service was removed.
	Services map[string]*model.Service
	// Endpoints maps a host to its new endpoints (nil: none), sorted by
	// model.CompareEndpoints, each naming the host as its Service.
	Endpoints map[string][]*model.Endpoint
}

// Memory is a Registry held in memory, safe for concurrent use. Values handed to it are owned
// by it from then on and must not be modified.
type Memory struct {
	name string

	// writeMu serializes writes with their notification, so the subscriber sees changes in
	// the order they were made; mu guards the maps (readers take only mu).
	writeMu   sync.Mutex
	mu        sync.RWMutex
	services  map[string]*model.Service
	endpoints map[string][]*model.Endpoint
	notify    func(Update)
}

var _ Registry = (*Memory)(nil)

// NewMemory returns an empty memory registry.
func NewMemory(name string) *Memory {
	return &Memory{name: name, services: map[string]*model.Service{}, endpoints: map[string][]*model.Endpoint{}}
}

// Name implements Registry.
func (m *Memory) Name() string { return m.name }

// Subscribe implements Registry. A second subscriber replaces the first.
func (m *Memory) Subscribe(fn func(Update)) {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.RLock()
	all := Update{Services: maps.Clone(m.services), Endpoints: maps.Clone(m.endpoints)}
	m.mu.RUnlock()
	m.notify = fn
	if fn != nil && (len(all.Services) > 0 || len(all.Endpoints) > 0) {
		fn(all)
	}
}

func (m *Memory) write(apply func() Update) {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.Lock()
	u := apply()
	m.mu.Unlock()
	if m.notify != nil {
		m.notify(u)
	}
}

// SetService adds or replaces a service (its endpoints are kept).
func (m *Memory) SetService(svc *model.Service) {
	m.write(func() Update {
		m.services[svc.Hostname] = svc
		return Update{Services: map[string]*model.Service{svc.Hostname: svc}}
	})
}

// DeleteService removes a service and its endpoints.
func (m *Memory) DeleteService(host string) {
	m.write(func() Update {
		delete(m.services, host)
		delete(m.endpoints, host)
		return Update{Services: map[string]*model.Service{host: nil}, Endpoints: map[string][]*model.Endpoint{host: nil}}
	})
}

// SetEndpoints replaces the endpoints of a host (nil removes them). Each endpoint's Service
// is set to host.
func (m *Memory) SetEndpoints(host string, eps []*model.Endpoint) {
	eps = ownEndpoints(host, eps)
	m.write(func() Update {
		if len(eps) == 0 {
			delete(m.endpoints, host)
		} else {
			m.endpoints[host] = eps
		}
		return Update{Endpoints: map[string][]*model.Endpoint{host: eps}}
	})
}

// Apply makes several changes as one Update (one change for the aggregate): services
// (a nil value removes the service and its endpoints), then endpoints.
func (m *Memory) Apply(u Update) {
	u.Endpoints = maps.Clone(u.Endpoints)
	for host, eps := range u.Endpoints {
		u.Endpoints[host] = ownEndpoints(host, eps)
	}
	m.write(func() Update {
		for host, svc := range u.Services {
			if svc == nil {
				delete(m.services, host)
				delete(m.endpoints, host)
				if _, ok := u.Endpoints[host]; !ok {
					if u.Endpoints == nil {
						u.Endpoints = map[string][]*model.Endpoint{}
					}
					u.Endpoints[host] = nil
				}
				continue
			}
			m.services[host] = svc
		}
		for host, eps := range u.Endpoints {
			if len(eps) == 0 {
				delete(m.endpoints, host)
			} else {
				m.endpoints[host] = eps
			}
		}
		return u
	})
}

// ownEndpoints returns eps sorted, with Service set to host (copying only the endpoints whose
// Service differs).
func ownEndpoints(host string, eps []*model.Endpoint) []*model.Endpoint {
	if len(eps) == 0 {
		return nil
	}
	out := make([]*model.Endpoint, len(eps))
	for i, ep := range eps {
		if ep.Service != host {
			c := *ep
			c.Service = host
			ep = &c
		}
		out[i] = ep
	}
	slices.SortFunc(out, model.CompareEndpoints)
	return out
}

// Services returns every service sorted by hostname.
func (m *Memory) Services() []*model.Service {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := slices.Collect(maps.Values(m.services))
	slices.SortFunc(out, func(a, b *model.Service) int { return strings.Compare(a.Hostname, b.Hostname) })
	return out
}

// Service returns the service with the host, or nil.
func (m *Memory) Service(host string) *model.Service {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.services[host]
}

// Endpoints returns the endpoints of the host, sorted. The slice must not be modified.
func (m *Memory) Endpoints(host string) []*model.Endpoint {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.endpoints[host]
}
