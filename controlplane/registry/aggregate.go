package registry

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/cow"
	"github.com/xdslab/xdslab/istioconfig"
)

// Change is what one write changed in the aggregate's state. It is the control plane's one
// account of what changed: the aggregate compares each host's merged service and endpoints
// (and takes a config object's change from the store's event) as it applies a write, and the
// debouncer (its EDS bypass) and the snapshot builder act on the keys and the Full flag it
// reports, without deciding again.
type Change struct {
	// Keys are what changed: KindService and KindEndpoint keys (Name is the hostname,
	// Namespace the service's) for services and their endpoints, or the key of an Istio config
	// object (VirtualService, DestinationRule, Sidecar, Gateway, …). A service that was added,
	// removed or redefined has a KindService key; a host whose endpoints changed a KindEndpoint
	// key.
	Keys map[istioconfig.Key]struct{}
	// Full is true when clusters, listeners or routes may have changed: a service or a config
	// object changed, or the endpoints of a DNS-resolution service (its cluster inlines them,
	// as in Istio) or of a headless Service with a port not served through HTTP (a listener per
	// endpoint). False means only endpoints of EDS services changed: an incremental (EDS) push
	// suffices.
	Full bool
	// ServicesAdded and ServicesRemoved count services that appeared or disappeared.
	ServicesAdded, ServicesRemoved int
	// Time is when the change was made (the aggregate's clock).
	Time time.Time
	// View is the aggregate's state right after this change (immutable): what a snapshot
	// built for the changes up to this one reads.
	View *View
}

// EndpointsOnly reports whether every key is a KindEndpoint key (an endpoint update, for the
// trigger reason and pilot_inbound_updates, even when a DNS service makes it Full).
func (c Change) EndpointsOnly() bool {
	for k := range c.Keys {
		if k.Kind != model.KindEndpoint {
			return false
		}
	}
	return true
}

// Reason is the push trigger reason of the change.
func (c Change) Reason() model.TriggerReason {
	for k := range c.Keys {
		if k.Kind != model.KindService && k.Kind != model.KindEndpoint {
			return model.ReasonConfigUpdate
		}
	}
	if c.EndpointsOnly() {
		return model.ReasonEndpointUpdate
	}
	return model.ReasonServiceUpdate
}

// PushRequest is the change as a request for the debouncer: its keys, Full and View as they
// are. The request owns the keys from then on (a Change is reported once and not kept).
func (c Change) PushRequest() *model.PushRequest {
	req := &model.PushRequest{
		Full:           c.Full,
		ConfigsUpdated: c.Keys,
		Reasons:        map[model.TriggerReason]int{c.Reason(): 1},
		Start:          c.Time,
	}
	if c.View != nil {
		req.Source = c.View
	}
	return req
}

// AggregateOptions configure an Aggregate.
type AggregateOptions struct {
	// Registries in priority order: a host defined by several takes the first one's service
	// and endpoints. ServiceEntry-derived services come after every registry.
	Registries []Registry
	// Convert configures the ServiceEntry conversion.
	Convert ConvertOptions
	// Now is the clock that stamps Change.Time; nil means time.Now.
	Now func() time.Time
	// OnChange is the one consumer of changes. It is called in change order, on the goroutine
	// that made the change, after the change's View was published (it may read the
	// aggregate). It should not block for long: writers wait for it.
	OnChange func(Change)
	// OnError is told about a ServiceEntry that could not be converted; the entry's previous
	// services and endpoints are kept.
	OnError func(key istioconfig.Key, err error)
}

type entry struct {
	svc *model.Service
	eps []*model.Endpoint
}

type seState struct {
	cfg      *istioconfig.Config
	services map[string]*model.Service
	eps      map[string][]*model.Endpoint
}

// Aggregate merges registries and ServiceEntries into one view of services and endpoints, and
// serves the config store's version of the Istio config objects that snapshots carry. It is
// safe for concurrent use: writes are serialized (and reported in order, each with the View it
// published); reads take the latest View and no lock.
type Aggregate struct {
	opts AggregateOptions

	// writeMu serializes writers together with their OnChange call, and guards the writers'
	// state below; mu guards rejected, which readers see too.
	writeMu sync.Mutex
	mu      sync.Mutex
	cur     atomic.Pointer[View]
	// next is the View a write is building (nil between writes), with its edits.
	next   *View
	hostEd *cow.Edit[string, entry]
	regs   []map[string]entry // per registry, by host
	ses    map[istioconfig.Key]*seState
	// seByHost indexes the ServiceEntries that define a host.
	seByHost map[string]map[istioconfig.Key]struct{}
	// wes are WorkloadEntries by namespace.
	wes      map[string]map[istioconfig.Key]*istioconfig.Config
	rejected map[istioconfig.Key]error
	// held are the keys of the other config objects ConfigChanged was given and not since
	// deleted: a delete of one is a change even when the store's version, installed by an
	// earlier event of the same write, no longer holds it.
	held map[istioconfig.Key]struct{}
}

// NewAggregate returns an aggregate subscribed to opts.Registries (their current content is
// loaded, and reported as a change, before it returns).
func NewAggregate(opts AggregateOptions) *Aggregate {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Aggregate{
		opts:     opts,
		regs:     make([]map[string]entry, len(opts.Registries)),
		ses:      map[istioconfig.Key]*seState{},
		seByHost: map[string]map[istioconfig.Key]struct{}{},
		wes:      map[string]map[istioconfig.Key]*istioconfig.Config{},
		rejected: map[istioconfig.Key]error{},
		held:     map[istioconfig.Key]struct{}{},
	}
	a.cur.Store(&View{hosts: cow.New[string, entry]()})
	for i := range a.regs {
		a.regs[i] = map[string]entry{}
	}
	for i, r := range opts.Registries {
		r.Subscribe(func(u Update) { a.registryUpdate(i, u) })
	}
	return a
}

// changeSet accumulates what one write changed.
type changeSet struct{ Change }

func (c *changeSet) add(k istioconfig.Key) {
	if c.Keys == nil {
		c.Keys = map[istioconfig.Key]struct{}{}
	}
	c.Keys[k] = struct{}{}
}

// write runs apply under the state lock and reports the change it recorded, if any.
func (a *Aggregate) write(apply func(*changeSet)) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	cs := &changeSet{}
	next := *a.cur.Load()
	a.next = &next
	a.hostEd = next.hosts.Edit()
	a.mu.Lock()
	apply(cs)
	a.mu.Unlock()
	a.next, a.hostEd = nil, nil
	if len(cs.Keys) == 0 {
		return
	}
	a.cur.Store(&next)
	if a.opts.OnChange == nil {
		return
	}
	cs.View = &next
	if !cs.Full {
		for k := range cs.Keys {
			if k.Kind != model.KindEndpoint {
				cs.Full = true
				break
			}
		}
	}
	cs.Time = a.opts.Now()
	a.opts.OnChange(cs.Change)
}

func (a *Aggregate) registryUpdate(i int, u Update) {
	a.write(func(cs *changeSet) {
		hosts := map[string]struct{}{}
		for h, svc := range u.Services {
			e := a.regs[i][h]
			e.svc = svc
			a.regs[i][h] = e
			hosts[h] = struct{}{}
		}
		for h, eps := range u.Endpoints {
			e := a.regs[i][h]
			e.eps = eps
			a.regs[i][h] = e
			hosts[h] = struct{}{}
		}
		for h := range hosts {
			if e := a.regs[i][h]; e.svc == nil && len(e.eps) == 0 {
				delete(a.regs[i], h)
			}
			a.recompute(h, cs)
		}
	})
}

// ConfigChanged applies one change of an Istio config object: old is the previous value (nil
// for an add), cur the new one (nil for a delete), state the config store's version that holds
// it (the View takes its config objects from it; nil: the View's stay as they were).
// ServiceEntries and WorkloadEntries recompute the hosts they touch; a change of any other kind
// is reported by its key (a delete only when the previous View or state held the object).
func (a *Aggregate) ConfigChanged(old, cur *istioconfig.Config, state Configs) {
	ref := cmp.Or(cur, old)
	if ref == nil {
		return
	}
	key := ref.Key()
	a.write(func(cs *changeSet) {
		prev := a.next.Config(key)
		if state != nil {
			a.next.configs = state
		}
		switch key.Kind {
		case istioconfig.KindServiceEntry:
			a.serviceEntryChanged(key, cur, cs)
		case istioconfig.KindWorkloadEntry:
			a.workloadEntryChanged(key, old, cur, cs)
		default:
			// Every event is a change of its object; the version may already hold a later one
			// (whose own event then finds the snapshot unchanged). A delete is one when the
			// object was held: by the previous View, the version, or an earlier event (state
			// is the store's version when the event was delivered, which the first event of a
			// write deleting several objects, a directory's reload, installs for them all).
			// Only a delete of an object nobody held changed nothing.
			_, wasHeld := a.held[key]
			if cur != nil || wasHeld || prev != nil || a.next.Config(key) != nil {
				cs.add(key)
			}
			if cur != nil {
				a.held[key] = struct{}{}
			} else {
				delete(a.held, key)
			}
		}
	})
}

func (a *Aggregate) serviceEntryChanged(key istioconfig.Key, cur *istioconfig.Config, cs *changeSet) {
	hosts := map[string]struct{}{}
	if prev := a.ses[key]; prev != nil {
		for h := range prev.services {
			hosts[h] = struct{}{}
		}
	}
	if cur == nil {
		delete(a.ses, key)
		delete(a.rejected, key)
	} else {
		st, err := a.convert(cur)
		if err != nil {
			a.reject(key, err)
			return
		}
		a.ses[key] = st
		for h := range st.services {
			hosts[h] = struct{}{}
		}
	}
	a.reindex(key, hosts)
	for h := range hosts {
		a.recompute(h, cs)
	}
}

func (a *Aggregate) workloadEntryChanged(key istioconfig.Key, old, cur *istioconfig.Config, cs *changeSet) {
	ns := key.Namespace
	if cur == nil {
		delete(a.wes[ns], key)
	} else {
		if a.wes[ns] == nil {
			a.wes[ns] = map[istioconfig.Key]*istioconfig.Config{}
		}
		a.wes[ns][key] = cur
	}
	selects := func(sel map[string]string, c *istioconfig.Config) bool {
		if c == nil {
			return false
		}
		spec, ok := c.Spec.(*networking.WorkloadEntry)
		return ok && model.LabelsMatch(sel, workloadLabels(c, spec))
	}
	hosts := map[string]struct{}{}
	for sk, st := range a.ses {
		spec := st.cfg.Spec.(*networking.ServiceEntry)
		sel := spec.GetWorkloadSelector()
		if sk.Namespace != ns || sel == nil || !(selects(sel.GetLabels(), old) || selects(sel.GetLabels(), cur)) {
			continue
		}
		nst, err := a.convert(st.cfg)
		if err != nil {
			a.reject(sk, err)
			continue
		}
		a.ses[sk] = nst
		for h := range nst.services {
			hosts[h] = struct{}{}
		}
	}
	for h := range hosts {
		a.recompute(h, cs)
	}
}

func (a *Aggregate) convert(se *istioconfig.Config) (*seState, error) {
	wes := slices.Collect(maps.Values(a.wes[se.Namespace]))
	conv, err := ConvertServiceEntry(se, wes, a.opts.Convert)
	if err != nil {
		return nil, err
	}
	delete(a.rejected, se.Key())
	st := &seState{cfg: se, services: make(map[string]*model.Service, len(conv.Services)), eps: conv.Endpoints}
	for _, svc := range conv.Services {
		st.services[svc.Hostname] = svc
	}
	return st, nil
}

func (a *Aggregate) reject(key istioconfig.Key, err error) {
	a.rejected[key] = err
	if a.opts.OnError != nil {
		a.opts.OnError(key, err)
	}
}

// reindex makes seByHost list key under exactly the hosts its current state defines; hosts
// holds every host it was or is indexed under.
func (a *Aggregate) reindex(key istioconfig.Key, hosts map[string]struct{}) {
	st := a.ses[key]
	for h := range hosts {
		defines := false
		if st != nil {
			_, defines = st.services[h]
		}
		if defines {
			if a.seByHost[h] == nil {
				a.seByHost[h] = map[istioconfig.Key]struct{}{}
			}
			a.seByHost[h][key] = struct{}{}
		} else if m := a.seByHost[h]; m != nil {
			delete(m, key)
			if len(m) == 0 {
				delete(a.seByHost, h)
			}
		}
	}
}

// seEntry merges the ServiceEntries that define host: the oldest entry (then by namespace and
// name, as Istio orders them) defines the service; the endpoints of every entry for the host in
// that namespace are merged, and so are their service accounts.
func (a *Aggregate) seEntry(host string) entry {
	var keys []istioconfig.Key
	for k := range a.seByHost[host] {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return entry{}
	}
	slices.SortFunc(keys, func(x, y istioconfig.Key) int {
		cx, cy := a.ses[x].cfg, a.ses[y].cfg
		return cmp.Or(cx.CreationTimestamp.Compare(cy.CreationTimestamp),
			strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name))
	})
	win := a.ses[keys[0]]
	e := entry{svc: win.services[host], eps: win.eps[host]}
	var more []*seState
	for _, k := range keys[1:] {
		if k.Namespace == keys[0].Namespace {
			more = append(more, a.ses[k])
		}
	}
	if len(more) == 0 {
		return e
	}
	svc := *e.svc
	svc.ServiceAccounts = slices.Clone(svc.ServiceAccounts)
	eps := slices.Clone(e.eps)
	for _, st := range more {
		svc.ServiceAccounts = append(svc.ServiceAccounts, st.services[host].ServiceAccounts...)
		eps = append(eps, st.eps[host]...)
	}
	slices.Sort(svc.ServiceAccounts)
	svc.ServiceAccounts = slices.Compact(svc.ServiceAccounts)
	slices.SortFunc(eps, model.CompareEndpoints)
	return entry{svc: &svc, eps: eps}
}

// recompute sets the merged entry of host and records what changed.
func (a *Aggregate) recompute(host string, cs *changeSet) {
	var e entry
	for _, r := range a.regs {
		if re, ok := r[host]; ok && re.svc != nil {
			e = re
			break
		}
	}
	if e.svc == nil {
		e = a.seEntry(host)
	}
	old, _ := a.next.hosts.Get(host)
	if e.svc == nil && old.svc == nil {
		return // endpoints without a service are not part of the mesh
	}
	if e.svc == nil {
		a.hostEd.Del(host)
		e.eps = nil
	} else {
		a.hostEd.Set(host, e)
	}
	ns := cmp.Or(e.svc, old.svc).Namespace
	if !old.svc.Equal(e.svc) {
		cs.add(istioconfig.Key{Kind: model.KindService, Name: host, Namespace: ns})
		switch {
		case old.svc == nil:
			cs.ServicesAdded++
		case e.svc == nil:
			cs.ServicesRemoved++
		}
	}
	if !slices.EqualFunc(old.eps, e.eps, func(x, y *model.Endpoint) bool { return x == y || x.Equal(y) }) {
		cs.add(istioconfig.Key{Kind: model.KindEndpoint, Name: host, Namespace: ns})
		if e.svc.EndpointsInCluster() || e.svc.EndpointsInListeners() {
			cs.Full = true
		}
	}
}

// View returns the latest published View: the state after the last change reported.
func (a *Aggregate) View() *View { return a.cur.Load() }

// InOrder calls fn with the latest View between two changes: no change is made or reported
// while fn runs, so whatever fn hands on (a request to rebuild everything from the View) takes
// its place in the order of the changes reported to OnChange. fn must not write to the
// aggregate.
func (a *Aggregate) InOrder(fn func(*View)) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	fn(a.cur.Load())
}

// Services returns every merged service, sorted by hostname.
func (a *Aggregate) Services() []*model.Service {
	out := a.View().Services()
	slices.SortFunc(out, func(x, y *model.Service) int { return strings.Compare(x.Hostname, y.Hostname) })
	return out
}

// Service returns the merged service of host, or nil.
func (a *Aggregate) Service(host string) *model.Service { return a.View().Service(host) }

// Endpoints returns the merged endpoints of host, sorted. The slice must not be modified.
func (a *Aggregate) Endpoints(host string) []*model.Endpoint { return a.View().Endpoints(host) }

// ServiceCount is the number of merged services.
func (a *Aggregate) ServiceCount() int { return a.View().ServiceCount() }

// Rejected returns the ServiceEntries whose latest version could not be converted, with why.
func (a *Aggregate) Rejected() map[istioconfig.Key]error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.rejected)
}
