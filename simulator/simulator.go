package simulator

import (
	"container/heap"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"math/rand/v2"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// Simulator is the pure core: a mesh and its churn timeline. It has no clock and does no I/O
// after New (which reads replay traces); one goroutine owns it.
type Simulator struct {
	cfg     Config
	m       *mesh
	initial []istioconfig.Config
	procs   []*process
	q       queue
	seq     uint64
	nextID  uint64
	err     error
}

// process is one churn entry's arrival stream.
type process struct {
	idx   int
	ch    Churn
	rng   *rand.Rand // arrival times only
	delta *dist.Sampler
	stop  time.Duration
	t     time.Duration // last arrival
	k     int           // arrivals so far (every, at, replay index)
	at    []time.Duration
	trace []TraceEvent
}

// item is a pending point on the timeline: the next arrival of a process, or a follow-up action
// (a flap's restore, a rollout's next step) scheduled by an earlier event.
type item struct {
	at     time.Duration
	seq    uint64
	proc   *process
	k      int // arrival index (replay)
	action func(*evb)
}

type queue []item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// New validates cfg, generates the initial topology, reads replay traces and lays out the first
// arrival of every churn process.
func New(cfg Config) (*Simulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMesh(cfg.Topology, cfg.Seed)
	if err != nil {
		return nil, err
	}
	s := &Simulator{cfg: cfg, m: m}
	s.initial = m.all()
	for i, ch := range cfg.Churn {
		p := &process{idx: i, ch: ch, rng: newRand(subSeed(cfg.Seed, fmt.Sprintf("churn-%d", i))), t: ch.Start}
		p.stop = cfg.Duration
		if ch.Stop != 0 && ch.Stop < p.stop {
			p.stop = ch.Stop
		}
		if ch.Kind == Scale {
			if p.delta, err = dist.New(ch.Delta, subSeed(cfg.Seed, fmt.Sprintf("delta-%d", i))); err != nil {
				return nil, fmt.Errorf("churn[%d] (scale): delta: %w", i, err)
			}
		}
		if len(ch.At) > 0 {
			p.at = slices.Clone(ch.At)
			slices.Sort(p.at)
		}
		if ch.Kind == Replay {
			f, err := os.Open(ch.File)
			if err != nil {
				return nil, fmt.Errorf("churn[%d] (replay): %w", i, err)
			}
			p.trace, err = ParseTrace(f, ch.File)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("churn[%d] (replay): %w", i, err)
			}
		}
		s.procs = append(s.procs, p)
		s.scheduleNext(p)
	}
	return s, nil
}

// Config returns the configuration with defaults applied.
func (s *Simulator) Config() Config { return s.cfg }

// Initial returns the initial topology: Sidecars first (or an explicit mesh's objects), then
// each service's ServiceEntry, WorkloadEntries, VirtualService and DestinationRule.
func (s *Simulator) Initial() []istioconfig.Config { return slices.Clone(s.initial) }

// Current renders the mesh as it stands after the events emitted so far (replayed events
// excluded: they do not change the model).
func (s *Simulator) Current() []istioconfig.Config { return s.m.all() }

// scheduleNext queues p's next arrival, if it falls before the process stops.
func (s *Simulator) scheduleNext(p *process) {
	var t time.Duration
	switch {
	case p.ch.Kind == Replay:
		if p.k >= len(p.trace) {
			return
		}
		t = p.ch.Start + p.trace[p.k].Scheduled
	case p.ch.Rate > 0:
		gap := p.rng.ExpFloat64() / p.ch.Rate
		if gap > float64(math.MaxInt64/2)/1e9 {
			return
		}
		t = p.t + time.Duration(gap*1e9)
	case p.ch.Every > 0:
		t = p.ch.Start + time.Duration(p.k+1)*p.ch.Every
	default:
		for p.k < len(p.at) && p.at[p.k] < p.ch.Start {
			p.k++
		}
		if p.k >= len(p.at) {
			return
		}
		t = p.at[p.k]
	}
	if t >= p.stop {
		return
	}
	p.t = t
	s.push(item{at: t, proc: p, k: p.k})
	p.k++
}

func (s *Simulator) push(it item) {
	it.seq = s.seq
	s.seq++
	heap.Push(&s.q, it)
}

// schedule queues a follow-up action at t (dropped when t is past the end of the run).
func (s *Simulator) schedule(t time.Duration, f func(*evb)) {
	if t >= s.cfg.Duration {
		return
	}
	s.push(item{at: t, action: f})
}

// Next returns the next event on the timeline; ok is false when the run has no more events.
// Arrivals that find nothing to change come back with Skip set (and ID 0). An error (the address
// space ran out) ends the run.
func (s *Simulator) Next() (ev Event, ok bool, err error) {
	if s.err != nil {
		return Event{}, false, s.err
	}
	if s.q.Len() == 0 {
		return Event{}, false, nil
	}
	it := heap.Pop(&s.q).(item)
	b := &evb{s: s, at: it.at}
	if it.proc != nil {
		s.scheduleNext(it.proc)
		b.ev.Kind = it.proc.ch.Kind
		s.arrive(b, it.proc, it.k)
	} else {
		it.action(b)
	}
	if b.err != nil {
		s.err = b.err
		return Event{}, false, b.err
	}
	return s.finish(b), true, nil
}

// evb builds one event.
type evb struct {
	s      *Simulator
	at     time.Duration
	ev     Event
	counts []probe.Predicate
	others []probe.Predicate
	nss    []string
	err    error
}

func (s *Simulator) finish(b *evb) Event {
	ev := b.ev
	ev.Scheduled = b.at
	if ev.Skip == "" && len(b.counts)+len(b.others) == 0 && len(ev.Expectation.All) == 0 {
		ev.Skip = "nothing to change"
	}
	if ev.Skip != "" {
		ev.Upserts, ev.Deletes = nil, nil
		return ev
	}
	s.nextID++
	ev.ID = s.nextID
	if len(ev.Expectation.All) == 0 { // replayed events carry their own
		ev.Expectation.All, ev.Expectation.Rest = capPredicates(b.counts, b.others, s.cfg.MaxPredicates)
		if ns := s.m.reach(b.nss...); len(ns) > 0 || (s.m.importers != nil && len(b.nss) > 0) {
			if len(ns) == 0 {
				ns = []string{noImporter} // no sidecar sees these namespaces (routers may)
			}
			ev.Expectation.Reach.Namespaces = ns
			ev.Expectation.Reach.PredicateNamespaces = s.m.predicateReach(ev.Expectation.All, ns)
		}
		ev.Expectation.Reach.ProxyType = s.m.proxyTypeReach(ev.Expectation.All)
	}
	ev.Expectation.EventID = ev.ID
	ev.Expectation.Kind = string(ev.Kind)
	return ev
}

// capPredicates keeps every count predicate (sampled only if they alone exceed max) and an
// evenly spaced sample of the others; rest is what it left out (probe.Expectation.Rest).
func capPredicates(counts, others []probe.Predicate, max int) (kept, rest []probe.Predicate) {
	if len(counts) >= max {
		kept, rest = sample(counts, max)
		return kept, append(rest, others...)
	}
	kept, rest = sample(others, max-len(counts))
	return append(slices.Clone(counts), kept...), rest
}

// sample picks n evenly spaced predicates of ps, in order, and returns the others as rest.
func sample(ps []probe.Predicate, n int) (picked, rest []probe.Predicate) {
	if len(ps) <= n {
		return slices.Clone(ps), nil
	}
	picked = make([]probe.Predicate, 0, n)
	rest = make([]probe.Predicate, 0, len(ps)-n)
	next := 0
	for i, p := range ps {
		if next < n && i == next*len(ps)/n {
			picked = append(picked, p)
			next++
			continue
		}
		rest = append(rest, p)
	}
	return picked, rest
}

// --- predicate helpers ----------------------------------------------------------------------

func clusterName(p uint32, subset, host string) string {
	return fmt.Sprintf("outbound|%d|%s|%s", p, subset, host)
}

func (b *evb) touch(svc *service) { b.nss = append(b.nss, svc.ns) }

// endpointsChanged records added and removed endpoints of svc: the objects to write and the
// predicates (count per port, present/absent per endpoint and port).
func (b *evb) endpointsChanged(svc *service, added, removed []*endpoint) {
	m := b.s.m
	b.touch(svc)
	if m.topo.WorkloadEntries {
		for _, e := range removed {
			b.ev.Deletes = append(b.ev.Deletes, istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Name: weName(svc, e), Namespace: svc.ns})
		}
		for _, e := range added {
			b.ev.Upserts = append(b.ev.Upserts, m.workloadEntryConfig(svc, e))
		}
	} else {
		b.ev.Upserts = append(b.ev.Upserts, m.serviceEntry(svc))
	}
	for _, p := range svc.ports {
		res := clusterName(p.number, "", svc.host())
		b.counts = append(b.counts, probe.Predicate{Op: probe.EndpointCount, Resource: res, Count: len(svc.endpoints)})
		for _, e := range added {
			b.others = append(b.others, probe.Predicate{Op: probe.EndpointPresent, Resource: res, Address: e.addr, Port: p.targetPort()})
		}
		for _, e := range removed {
			b.others = append(b.others, probe.Predicate{Op: probe.EndpointAbsent, Resource: res, Address: e.addr, Port: p.targetPort()})
		}
	}
}

// pickServices draws up to n distinct services satisfying ok, uniformly.
func (s *Simulator) pickServices(n int, ok func(*service) bool) []*service {
	rng := s.m.rng
	all := s.m.services
	if n == 1 && len(all) > 0 {
		// The common case, without scanning the mesh: a few random draws, which are uniform
		// over the services satisfying ok; the scan below handles meshes where few do.
		for range 16 {
			if svc := all[rng.IntN(len(all))]; ok == nil || ok(svc) {
				return []*service{svc}
			}
		}
	}
	var cands []*service
	for _, svc := range s.m.services {
		if ok == nil || ok(svc) {
			cands = append(cands, svc)
		}
	}
	if n >= len(cands) {
		return cands
	}
	for i := range n {
		j := i + rng.IntN(len(cands)-i)
		cands[i], cands[j] = cands[j], cands[i]
	}
	return cands[:n]
}

func hasEndpoints(s *service) bool { return len(s.endpoints) > 0 }

func removeEndpoint(svc *service, e *endpoint) {
	svc.endpoints = slices.DeleteFunc(svc.endpoints, func(x *endpoint) bool { return x == e })
}

// --- arrivals -------------------------------------------------------------------------------

func (s *Simulator) arrive(b *evb, p *process, k int) {
	switch p.ch.Kind {
	case EndpointFlap:
		s.flap(b, p)
	case Scale:
		s.scale(b, p)
	case RollingDeploy:
		s.rollingDeploy(b, p)
	case ServiceCreate:
		s.serviceCreate(b, p)
	case ServiceDelete:
		s.serviceDelete(b, p)
	case ConfigChange:
		switch p.ch.Target {
		case TargetVirtualService:
			s.changeVS(b, p)
		case TargetGateway:
			s.changeGateway(b, p)
		case TargetAuthz:
			s.changeAuthz(b, p)
		default:
			s.changeDR(b, p)
		}
	case ServiceAccountChange:
		s.changeSA(b, p)
	case ZoneFailure:
		s.zoneFailure(b, p)
	case Replay:
		s.replay(b, p.trace[k])
	}
}

func (s *Simulator) flap(b *evb, p *process) {
	total := 0
	for _, svc := range s.m.services {
		total += len(svc.endpoints)
	}
	if total == 0 {
		b.ev.Skip = "no endpoints to flap"
		return
	}
	i := s.m.rng.IntN(total)
	var svc *service
	for _, x := range s.m.services {
		if i < len(x.endpoints) {
			svc = x
			break
		}
		i -= len(x.endpoints)
	}
	e := svc.endpoints[i]
	removeEndpoint(svc, e)
	b.ev.Phase = "remove"
	b.endpointsChanged(svc, nil, []*endpoint{e})
	epoch := svc.epoch
	if p.ch.Down > 0 {
		s.schedule(b.at+p.ch.Down, func(b *evb) {
			b.ev.Kind, b.ev.Phase = EndpointFlap, "restore"
			if svc.deleted || svc.epoch != epoch {
				b.ev.Skip = "restore superseded: service deleted or its endpoints replaced"
				return
			}
			svc.endpoints = append(svc.endpoints, e)
			b.endpointsChanged(svc, []*endpoint{e}, nil)
		})
	}
}

func (s *Simulator) scale(b *evb, p *process) {
	svcs := s.pickServices(p.ch.Services, nil)
	if len(svcs) == 0 {
		b.ev.Skip = "no services to scale"
		return
	}
	rng := s.m.rng
	for _, svc := range svcs {
		d := max(p.delta.Int(), 1)
		if rng.IntN(2) == 0 && len(svc.endpoints) > 0 {
			d = min(d, len(svc.endpoints))
			var removed []*endpoint
			for range d {
				e := svc.endpoints[rng.IntN(len(svc.endpoints))]
				removeEndpoint(svc, e)
				removed = append(removed, e)
			}
			b.endpointsChanged(svc, nil, removed)
			continue
		}
		var added []*endpoint
		for range d {
			e, err := s.m.newEndpoint(svc)
			if err != nil {
				b.err = err
				return
			}
			svc.endpoints = append(svc.endpoints, e)
			added = append(added, e)
		}
		b.endpointsChanged(svc, added, nil)
	}
}

func (s *Simulator) rollingDeploy(b *evb, p *process) {
	svcs := s.pickServices(p.ch.Services, hasEndpoints)
	if len(svcs) == 0 {
		b.ev.Skip = "no service with endpoints to roll"
		return
	}
	b.ev.Phase = "step"
	for _, svc := range svcs {
		svc.epoch++
		rollout, n := svc.epoch, len(svc.endpoints)
		step := func(last bool) func(*evb) {
			return func(b *evb) {
				b.ev.Kind, b.ev.Phase = RollingDeploy, "step"
				if svc.deleted || svc.epoch != rollout {
					b.ev.Skip = "rollout step superseded: service deleted or a newer rollout started"
					return
				}
				s.rollStep(b, svc, rollout, last)
			}
		}
		step(n == 1)(b)
		for i := 1; i < n; i++ {
			s.schedule(b.at+time.Duration(int64(p.ch.Window)*int64(i)/int64(n)), step(i == n-1))
		}
	}
}

// rollStep replaces one endpoint older than the rollout (all of them on the last step) with a
// new one: same locality and version, a new address.
func (s *Simulator) rollStep(b *evb, svc *service, rollout int, last bool) {
	var added, removed []*endpoint
	for _, e := range slices.Clone(svc.endpoints) {
		if e.gen >= rollout {
			continue
		}
		ne, err := s.m.newEndpoint(svc)
		if err != nil {
			b.err = err
			return
		}
		ne.like(e)
		removeEndpoint(svc, e)
		svc.endpoints = append(svc.endpoints, ne)
		added, removed = append(added, ne), append(removed, e)
		if !last {
			break
		}
	}
	if len(added) == 0 {
		b.ev.Skip = "rollout already complete"
		return
	}
	b.endpointsChanged(svc, added, removed)
}

func (s *Simulator) serviceCreate(b *evb, p *process) {
	for range p.ch.Services {
		svc, err := s.m.createService(s.m.namespaces[s.m.rng.IntN(len(s.m.namespaces))])
		if err != nil {
			b.err = err
			return
		}
		b.touch(svc)
		b.ev.Upserts = append(b.ev.Upserts, s.m.objects(svc)...)
		for _, pt := range svc.ports {
			res := clusterName(pt.number, "", svc.host())
			b.counts = append(b.counts,
				probe.Predicate{Op: probe.ClusterPresent, Resource: res},
				probe.Predicate{Op: probe.EndpointCount, Resource: res, Count: len(svc.endpoints)})
			for _, e := range svc.endpoints {
				b.others = append(b.others, probe.Predicate{Op: probe.EndpointPresent, Resource: res, Address: e.addr, Port: pt.targetPort()})
			}
		}
	}
}

func (s *Simulator) serviceDelete(b *evb, p *process) {
	var keep func(*service) bool
	if len(s.m.gw.hosts) > 0 { // a gateway host's backend stays (its route would dangle)
		keep = func(svc *service) bool { return !s.m.isBackend(svc) }
	}
	svcs := s.pickServices(p.ch.Services, keep)
	if len(svcs) == 0 {
		b.ev.Skip = "no services to delete"
		return
	}
	for _, svc := range svcs {
		b.touch(svc)
		b.ev.Deletes = append(b.ev.Deletes, s.m.keys(svc)...)
		for _, pt := range svc.ports {
			b.counts = append(b.counts, probe.Predicate{Op: probe.ClusterAbsent, Resource: clusterName(pt.number, "", svc.host())})
		}
		s.m.deleteService(svc)
	}
}

func (s *Simulator) changeVS(b *evb, p *process) {
	svcs := s.pickServices(p.ch.Services, (*service).hasHTTP)
	if len(svcs) == 0 {
		b.ev.Skip = "no service with an HTTP or gRPC port"
		return
	}
	for _, svc := range svcs {
		b.touch(svc)
		if svc.dr == nil {
			svc.dr = s.m.newDR()
			b.ev.Upserts = append(b.ev.Upserts, s.m.destinationRule(svc))
		}
		svc.vs = s.m.newVS(svc.vs)
		b.ev.Upserts = append(b.ev.Upserts, s.m.virtualService(svc))
		for _, pt := range svc.ports {
			if !pt.isHTTP() {
				continue
			}
			for v, w := range svc.vs.weights {
				pr := probe.Predicate{Op: probe.RouteTo, Resource: fmt.Sprint(pt.number), Host: svc.host(),
					Cluster: clusterName(pt.number, subsetName(v+1), svc.host())}
				// Istio routes a single destination to its cluster directly, not as a weighted
				// cluster: then there is no weight to check.
				if len(svc.vs.weights) > 1 {
					pr.Weight = uint32(w)
				}
				b.counts = append(b.counts, pr)
			}
		}
	}
}

func (s *Simulator) changeDR(b *evb, p *process) {
	svcs := s.pickServices(p.ch.Services, nil)
	if len(svcs) == 0 {
		b.ev.Skip = "no services"
		return
	}
	rng := s.m.rng
	for _, svc := range svcs {
		b.touch(svc)
		// The new policy differs from the current one; a service without a DestinationRule has
		// Istio's default (LEAST_REQUEST).
		cur := networking.LoadBalancerSettings_LEAST_REQUEST
		if svc.dr != nil {
			cur = svc.dr.lb
		}
		var choices []int
		for i, lb := range lbChoices {
			if lb != cur {
				choices = append(choices, i)
			}
		}
		dr := s.m.newDR()
		dr.lb = lbChoices[choices[rng.IntN(len(choices))]]
		svc.dr = dr
		b.ev.Upserts = append(b.ev.Upserts, s.m.destinationRule(svc))
		for _, pt := range svc.ports {
			b.counts = append(b.counts, probe.Predicate{Op: probe.ClusterLbPolicy, Resource: clusterName(pt.number, "", svc.host()), Value: envoyLbPolicy(dr.lb)})
		}
	}
}

func (s *Simulator) changeSA(b *evb, p *process) {
	svcs := s.pickServices(p.ch.Services, hasEndpoints)
	if len(svcs) == 0 {
		b.ev.Skip = "no service with endpoints"
		return
	}
	rng := s.m.rng
	for _, svc := range svcs {
		n := s.m.topo.ServiceAccountsPerNamespace
		var next string
		for next == "" || next == svc.sa {
			next = s.m.saName(rng.IntN(n))
		}
		svc.sa = next
		svc.epoch++
		old := svc.endpoints
		svc.endpoints = nil
		for _, e := range old {
			ne, err := s.m.newEndpoint(svc)
			if err != nil {
				b.err = err
				return
			}
			ne.like(e)
			svc.endpoints = append(svc.endpoints, ne)
		}
		b.endpointsChanged(svc, svc.endpoints, old)
	}
}

type zoneEndpoint struct {
	svc *service
	e   *endpoint
}

func (s *Simulator) zoneFailure(b *evb, p *process) {
	topo := s.m.topo
	byZone := make([][]zoneEndpoint, topo.Localities.Regions*topo.Localities.ZonesPerRegion)
	for _, svc := range s.m.services {
		for _, e := range svc.endpoints {
			z := e.region*topo.Localities.ZonesPerRegion + e.zone
			byZone[z] = append(byZone[z], zoneEndpoint{svc, e})
		}
	}
	var nonEmpty []int
	for z, eps := range byZone {
		if len(eps) > 0 {
			nonEmpty = append(nonEmpty, z)
		}
	}
	if len(nonEmpty) == 0 {
		b.ev.Skip = "no endpoints in any zone"
		return
	}
	rng := s.m.rng
	eps := byZone[nonEmpty[rng.IntN(len(nonEmpty))]]
	n := int(math.Ceil(p.ch.Fraction * float64(len(eps))))
	for i := range n {
		j := i + rng.IntN(len(eps)-i)
		eps[i], eps[j] = eps[j], eps[i]
	}
	failed := eps[:n]
	b.ev.Phase = "remove"
	type svcEps struct {
		svc   *service
		eps   []*endpoint
		epoch int
	}
	var groups []*svcEps
	idx := map[*service]*svcEps{}
	for _, ze := range failed {
		g := idx[ze.svc]
		if g == nil {
			g = &svcEps{svc: ze.svc, epoch: ze.svc.epoch}
			idx[ze.svc] = g
			groups = append(groups, g)
		}
		g.eps = append(g.eps, ze.e)
		removeEndpoint(ze.svc, ze.e)
	}
	for _, g := range groups {
		b.endpointsChanged(g.svc, nil, g.eps)
	}
	if p.ch.Down > 0 {
		s.schedule(b.at+p.ch.Down, func(b *evb) {
			b.ev.Kind, b.ev.Phase = ZoneFailure, "restore"
			for _, g := range groups {
				if g.svc.deleted || g.svc.epoch != g.epoch {
					continue
				}
				g.svc.endpoints = append(g.svc.endpoints, g.eps...)
				b.endpointsChanged(g.svc, g.eps, nil)
			}
			if len(b.counts) == 0 {
				b.ev.Skip = "zone restore superseded: services deleted or their endpoints replaced"
			}
		})
	}
}

func (s *Simulator) replay(b *evb, te TraceEvent) {
	b.ev.Kind = te.Kind
	b.ev.Phase = te.Phase
	b.ev.Upserts = slices.Clone(te.Upserts)
	b.ev.Deletes = slices.Clone(te.Deletes)
	b.ev.Expectation.All = slices.Clone(te.Expectation.All)
	b.ev.Expectation.Reach = te.Expectation.Reach
}
