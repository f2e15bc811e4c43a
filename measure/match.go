package measure

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/probe"
)

// Probe matching: when is a push observed?
//
// An expectation (a simulator event's predicates) reaches each client in its reach, and each
// such client ends in exactly one class:
//
//   - observed: the client received the change and it took effect. It is received at the
//     first accepted response received after the expectation was registered (Expect) that
//     touches one of its subjects (a response of the predicate's type that added, changed or
//     removed the predicate's resource: an unrelated response never counts; a new Envoy
//     process's first accepted CDS or LDS response is its whole set of that type, and touches every predicate of
//     the type: a deletion a restarted client's new config shows is observed there; a proxyless
//     gRPC client's is not, as grpc-go takes only a held resource a response lacks as deleted,
//     and a new process holds none) and after which
//     every predicate holds in what the client accepted. It is in effect once every predicate
//     also holds in what the client serves traffic with (probe.ClientState.Effective): a
//     cluster still warming for its ClusterLoadAssignment, or a listener waiting for its
//     routes, keeps the copy it replaces in effect, as Envoy does. The push latency is the in-effect time minus
//     T0 (the receive time of the response that brought it into effect, or the moment a
//     warming timeout did); the receive latency is the receive time minus T0, and the ACK
//     latency the time the ACK of the receiving response was written minus T0.
//   - already held: every predicate held in the client's state when the expectation was
//     registered (a removal and its restore merged into one push, a scale up and down that
//     cancel out). Such a client is given no latency, and a later response never observes it.
//     It stays provisional while an earlier conflicting expectation is unresolved at the
//     client: if the client later sees that earlier state, the held one must be observed by
//     a response of its own.
//   - superseded: the client reached a later conflicting expectation's state (same subject, or
//     a deletion of the service port this one is about: probe.Expectation.Supersedes) without
//     ever having been in this one's: it could never
//     see it any more. Reaching the later one's state on the shared subject is enough: a
//     response after which the later expectation's predicates on that subject hold (and this
//     one does not) shows the client past this one's state there, even when the later one
//     never holds as a whole (a zone failure over many services, one of which a still later
//     change moved on before the client saw the failure). The later event need not be pending
//     at the client, and its predicates on the subject may be in Rest (probe.Expectation.Rest:
//     those its cap left out): a restore that a zone failure changed again 70 ms later, before
//     any push, is superseded once the client shows the failure's state of that cluster. A
//     deletion removes every service port it names, in All or in Rest: one of more ports than
//     the cap passes the earlier changes of each of them once the client has it. A
//     client whose response carries this event's state has observed it,
//     even if a later event on the same subject was registered before that response arrived.
//     A change the client received but that is not in effect (a cluster still warming) was not
//     observed: Envoy applies a cluster only once it is warm, and a later change that replaces
//     the warming copy passes it like one never received, whichever way the matcher learns it
//     (a response shows the client past it, or the later event reached retires it).
//     A superseded client's push latency is the time from T0 to the moment the state that
//     showed it past this one took effect on the resources this event reads: the receive time of
//     that response, or, when it left one of them warming, of the response (or the warming
//     timeout) that brought it into effect; one whose passing state never took effect is
//     missed, as a received change never in effect is. A change a debounce held back until a
//     later one came is as late as that, and the histograms and convergence keep it. One the client was
//     past because it already held a later event's state when that was registered (a removal
//     and its restore merged into no push at all) has no latency: nothing was left to push.
//   - missed: none of the above when Results is called (call Drain first).
//
// No push can be missed if the caller registers the expectation BEFORE it applies the change to
// the source: no response can carry a change that does not exist yet, so every response carrying
// it is received after registration. T0 — the moment the change was applied — may be unknown at
// registration: leave Expectation.T0 zero and call SetT0 on the returned handle right after
// applying. Observations that arrive before SetT0 are counted at once and their latencies
// computed when T0 is set; a response received before T0 (T0 taken late) counts as latency 0 and
// is reported in EventResult.EarlyReceives. Every time is compared on the monotonic clock (as
// offsets from the matcher's creation), so a wall-clock step during a run changes no latency.
//
// Registration is lazy per client: Expect appends to an append-only log, and each client claims
// the new entries on its own goroutine at its next hook call (every hook claims). Reach by group
// and namespace is fixed per client; Reach.WatchersOnly is decided with
// probe.ClientState.Subscribed when the client claims the entry — its subscriptions as of its
// first hook after registration. A
// NamedOnly client (proxyless gRPC: every type by name) treats every event as WatchersOnly: an
// endpoint change of a cluster it never asked for does not target it, so it is not "missed".
// "Already held" is decided at the claim too, over the state the client held before the
// response being reported (ResponseInfo carries the copies it replaced); a client that holds
// no accepted state of a predicate's type since it (re)started holds nothing yet. A response
// received before the registration but read after the claim (the client was busy with the one
// before it) is part of the state as of the registration: if the event holds after it, the
// event is already held.
//
// Convergence is defined here and only here. An event's convergence is the largest push
// latency over the clients that observed or superseded it; when some client in reach missed it
// (or its WatchersOnly reach is unresolved) it is censored: at least the time from T0 to
// Results, and EventResult.Censored says so. Every event with a T0 that some client observed,
// superseded with a latency, or missed enters the convergence histogram of its kind
// (MatchResults.ConvergenceByKind); the overall histogram is the merge of the per-kind ones.
// Events whose every client already held them (or was past them without a response) have
// nothing to converge and are not recorded.
//
// Results counts, per event, the clients of each class. A WatchersOnly event that a client in
// its groups/namespaces never claimed (the client had no hook call since) cannot be classified
// without the client's subscriptions: it is counted as Unresolved, never dropped.

// MatcherConfig configures a Matcher. Zero values take the documented defaults.
type MatcherConfig struct {
	// Shards spreads clients over independently locked shards (index modulo Shards); default 8.
	Shards int
	// KeepLatencies keeps every client's push latency per event in EventResult.Latencies
	// (16 bytes per observation); off, events keep count, min, mean and max only.
	KeepLatencies bool
	// Now stamps registrations; it must read the clock the clients stamp receive times with
	// (default time.Now).
	Now func() time.Time
}

func (c MatcherConfig) withDefaults() MatcherConfig {
	if c.Shards <= 0 {
		c.Shards = 8
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Matcher matches registered expectations against what each client applies. It implements
// probe.Hooks; a fleet tees it with the Observer.
type Matcher struct {
	cfg    MatcherConfig
	epoch  time.Time // offsets of every time the matcher keeps are from here (monotonic)
	logMu  sync.RWMutex
	log    []*matchEvent
	logLen atomic.Int64
	shards []matchShard
	// subjects numbers every predicate subject (probe.Predicate.Subject) the matcher has seen,
	// so that clients compare subjects as integers: a client compares its pending events'
	// subjects on every response that reaches them.
	subjMu   sync.Mutex
	subjects map[string]uint32
	// lastLink is, by subject, the latest registered event that reads it (in All or Rest),
	// under logMu: each event's links chain every later event on its subjects (subjLink).
	lastLink map[uint32]*subjLink
	// nameSeed hashes resource names for matchPend's prefilter.
	nameSeed maphash.Seed
}

var _ probe.Hooks = (*Matcher)(nil)

type matchEvent struct {
	idx   int
	exp   probe.Expectation
	types []string
	// subj is the number of each predicate's subject (Matcher.subjects), typeMask the types
	// its predicates read and predType each predicate's (typeBit), computed once: clients
	// compare them on every response.
	subj     []uint32
	typeMask uint8
	predType []uint8
	// scopes are the numbers of the service ports (probe.Predicate.Scope) its predicates read
	// other than through their port's own cluster's presence, and removes those its predicates
	// say are gone (probe.Predicate.Removes), in All and in Rest, sorted: a deletion supersedes
	// the earlier events about every service port it took away (supersedes), not only those its
	// predicate cap kept. Both are in the subjects' number space ("scope/" names).
	scopes, removes []uint32
	// names is the hash (Matcher.nameSeed) of each predicate's resource name.
	names []uint64
	// links are a registered event's places in the chains of the events that read each of its
	// subjects (All and Rest), sorted by subject; nil for a view (root holds them).
	links []*subjLink
	// oneName: every predicate reads the resource whose name hashes to name0 (an endpoint
	// change's count and address predicates read one cluster's assignment).
	oneName bool
	name0   uint64
	// oneKey: every predicate reads one resource of one type, so that whether the event
	// holds depends on that resource's message alone; memo is the last message it was
	// evaluated over and the answer, and the one before (thousands of clients share one
	// decoded message).
	oneKey bool
	memo   atomic.Pointer[holdsMemo]
	// claims counts the clients that hold the event pending: when the last one resolves it,
	// memo lets its message go (a long run registers thousands of events).
	claims atomic.Int64
	// root is, for the view of an event with per-predicate reach that the clients of one
	// namespace are held to (only their predicates: forClient), the registered event, which
	// keeps every count and latency; nil for the registered event itself.
	root  *matchEvent
	views map[string]*matchEvent // by namespace, under mu

	hasT0 atomic.Bool
	t0    atomic.Int64 // offset from the epoch, valid once hasT0
	// withdrawn: the change was never made (the sink failed to apply it); no client is held
	// to it and it is left out of the results.
	withdrawn atomic.Bool
	regAt     int64 // offset of Expect: a response received earlier cannot observe the event

	observed, superseded, held, received, acked, earlyRecv atomic.Int64
	// Latency statistics in ns, updated once T0 is known.
	latCount, latSum, latMin, latMax atomic.Int64
	ackMax, recvMax                  atomic.Int64

	mu     sync.Mutex
	t0Time time.Time // as given, for reporting
	// groupMax is the largest push latency (ns) of each client group that observed the event:
	// its convergence within the group.
	groupMax map[string]int64
	early    []matchEarly    // observations before T0 was known
	lat      []time.Duration // every push latency, with KeepLatencies
}

// What an observation is: in effect (the push latency), received, its ACK written, or the
// client moved past it (superseded: a push latency too, to the moment the later state took
// effect).
type obsKind uint8

const (
	obsEffect obsKind = iota
	obsRecv
	obsAck
	obsSuperseded
)

type matchEarly struct {
	at    int64 // offset from the epoch
	kind  obsKind
	group string
}

type matchShard struct {
	mu      sync.Mutex
	clients map[int]*matchClient
	// push, recv and ack hold latencies by event kind and client group (KindGroup), µs.
	push map[KindGroup]*hdr.PackedHistogram
	recv map[KindGroup]*hdr.PackedHistogram
	ack  map[KindGroup]*hdr.PackedHistogram
	// byGroup counts the resolved observations (observed, already held, superseded) of each
	// event by client group, under the shard's lock (no lock shared across shards); outstanding
	// ones are classified by group at Results.
	byGroup map[egKey]*ProbeCounts
	// touched indexes the Touched names of the response being matched (Response).
	touched touchIndex
	// shown and moved are Response's subject sets, kept between responses (resetScratch):
	// a response carrying a push's events fills them with a subject per event.
	shown, moved map[uint32]bool
	// resp and eff are the response being matched and the client's effective view
	// (Response, effect), kept here so that taking their addresses (claim's heldBefore keeps
	// the response in a view) and boxing the view allocate nothing; cleared when done.
	resp probe.ResponseInfo
	eff  effectiveView
	_    [64]byte
}

type matchClient struct {
	group, ns string
	ptype     string      // Istio proxy type (probe.Reach.ProxyType); "" for a sidecar
	named     bool        // NamedOnly: every event is reached only through subscriptions
	cursor    int         // next log entry to claim
	pending   []matchPend // in registration order
	awaiting  []matchAwait
}

// matchPend is an expectation a client has claimed and not resolved.
type matchPend struct {
	ev *matchEvent
	// A copy of the event's typeMask, oneName and name0: a response skips the pending entries
	// it cannot touch without reaching their events (a client can have hundreds pending).
	tmask   uint8
	oneName bool
	name0   uint64
	// The event's subjects, when there are at most two (nsubj; manySubj: read ev.subj).
	subj  [2]uint32
	nsubj uint8
	// held: every predicate held when the client claimed it (provisionally already held).
	held bool
	// recvd: received (see the package comment) but not yet in effect.
	recvd bool
	// passed: a response showed the client past the event's state (superseded) while the state
	// that passed it was not yet in effect on the event's resources (a cluster warming for its
	// assignment): it resolves as superseded when that state takes effect (passedInEffect).
	passed bool
}

const manySubj = 0xff

// newPend is the pending entry of ev for a client, held or not when claimed.
func newPend(ev *matchEvent, held bool) matchPend {
	ev.claims.Add(1)
	p := matchPend{ev: ev, held: held, tmask: ev.typeMask, oneName: ev.oneName, name0: ev.name0, nsubj: manySubj}
	if len(ev.subj) <= len(p.subj) {
		p.nsubj = uint8(copy(p.subj[:], ev.subj))
	}
	return p
}

// subjects are the entry's event's subjects.
func (p *matchPend) subjects() []uint32 {
	if p.nsubj == manySubj {
		return p.ev.subj
	}
	return p.subj[:p.nsubj]
}

// matchAwait is a received expectation waiting for the ACK of the response that carried it.
type matchAwait struct {
	ev  *matchEvent
	seq uint64
}

// NewMatcher returns a matcher with no expectations.
func NewMatcher(cfg MatcherConfig) *Matcher {
	cfg = cfg.withDefaults()
	m := &Matcher{cfg: cfg, epoch: cfg.Now(), shards: make([]matchShard, cfg.Shards), nameSeed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].clients = make(map[int]*matchClient)
		m.shards[i].push = make(map[KindGroup]*hdr.PackedHistogram)
		m.shards[i].recv = make(map[KindGroup]*hdr.PackedHistogram)
		m.shards[i].ack = make(map[KindGroup]*hdr.PackedHistogram)
		m.shards[i].byGroup = make(map[egKey]*ProbeCounts)
	}
	return m
}

// off is t as an offset from the epoch: on the monotonic clock when both readings carry it.
func (m *Matcher) off(t time.Time) int64 { return int64(t.Sub(m.epoch)) }

func (m *Matcher) shard(index int) *matchShard {
	if index < 0 {
		index = -index
	}
	return &m.shards[index%len(m.shards)]
}

// Track makes client index (of group, in namespace) a target of every expectation registered
// from now on. The fleet calls it when it starts a client; tracking again (a churn restart)
// keeps the client's pending expectations. A client never tracked is tracked at its first hook.
func (m *Matcher) Track(index int, group, namespace string) {
	m.TrackNamed(index, group, namespace, false)
}

// TrackNamed is Track for a client that says whether it is NamedOnly (a proxyless gRPC client),
// so that events it never claims are counted as unresolved rather than missed.
func (m *Matcher) TrackNamed(index int, group, namespace string, namedOnly bool) {
	s := m.shard(index)
	s.mu.Lock()
	if s.clients[index] == nil {
		s.clients[index] = &matchClient{group: group, ns: namespace, named: namedOnly, cursor: int(m.logLen.Load())}
	}
	s.mu.Unlock()
}

// Expected is the handle of a registered expectation.
type Expected struct {
	m  *Matcher
	ev *matchEvent
}

// Expect registers e for every tracked client in its reach. Call it before applying the change
// (see the package comment on probe matching); leave e.T0 zero and call SetT0 after applying
// if T0 is not known yet.
func (m *Matcher) Expect(e probe.Expectation) (*Expected, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("measure: expect: %w", err)
	}
	// Registration time, log index and the subject chains are taken under one lock, so that
	// every chain is in registration order.
	m.logMu.Lock()
	ev := m.newMatchEvent(e, m.off(m.cfg.Now()))
	ev.latMin.Store(math.MaxInt64)
	if !e.T0.IsZero() {
		ev.t0Time = e.T0
		ev.t0.Store(m.off(e.T0))
		ev.hasT0.Store(true)
	}
	ev.idx = len(m.log)
	m.link(ev)
	m.log = append(m.log, ev)
	m.logLen.Store(int64(len(m.log)))
	m.logMu.Unlock()
	return &Expected{m: m, ev: ev}, nil
}

// subjLink is one registered event's predicates on one subject, in the chain of the events
// that read the subject (in All or Rest), in registration order.
type subjLink struct {
	subj  uint32
	ev    *matchEvent
	preds []probe.Predicate
	next  atomic.Pointer[subjLink]
}

// link appends ev to the chain of each subject it reads; logMu must be held.
func (m *Matcher) link(ev *matchEvent) {
	by := map[uint32]*subjLink{}
	add := func(ps []probe.Predicate, subj func(int) uint32) {
		for i, p := range ps {
			sj := subj(i)
			l := by[sj]
			if l == nil {
				l = &subjLink{subj: sj, ev: ev}
				by[sj] = l
				ev.links = append(ev.links, l)
			}
			l.preds = append(l.preds, p)
		}
	}
	add(ev.exp.All, func(i int) uint32 { return ev.subj[i] })
	if len(ev.exp.Rest) > 0 {
		m.subjMu.Lock()
		add(ev.exp.Rest, func(i int) uint32 { return m.subjectLocked(ev.exp.Rest[i].Subject()) })
		m.subjMu.Unlock()
	}
	slices.SortFunc(ev.links, func(a, b *subjLink) int { return cmp.Compare(a.subj, b.subj) })
	if m.lastLink == nil {
		m.lastLink = make(map[uint32]*subjLink)
	}
	for _, l := range ev.links {
		if prev := m.lastLink[l.subj]; prev != nil {
			prev.next.Store(l)
		}
		m.lastLink[l.subj] = l
	}
}

// subjectLocked is the number of subject sj; subjMu must be held.
func (m *Matcher) subjectLocked(sj string) uint32 {
	if m.subjects == nil {
		m.subjects = make(map[string]uint32)
	}
	id, ok := m.subjects[sj]
	if !ok {
		id = uint32(len(m.subjects))
		m.subjects[sj] = id
	}
	return id
}

// movedPast reports whether a response (received at recv, of the type rbit, its touched names
// in touched; whole: it shows every resource of its type) shows the client past ev's state on
// a subject of ev it touched: the predicates of
// an event registered after ev and before recv hold there (All or Rest) in accepted. The
// caller knows ev does not hold. Unlike the pending entries' own supersession, the later event
// need not be pending at the client: a zone failure samples its predicates (Rest holds the
// others), and its view for a namespace may read none of ev's subjects.
func movedPast(touched *touchIndex, whole bool, ev *matchEvent, accepted probe.View, recv int64, rbit uint8) bool {
	root := ev.stats()
	for i, p := range ev.exp.All {
		if ev.predType[i] != rbit || (!whole && touched.find(p.Resource, ev.names[i]) < 0) {
			continue
		}
		k, ok := slices.BinarySearchFunc(root.links, ev.subj[i], func(l *subjLink, sj uint32) int { return cmp.Compare(l.subj, sj) })
		if !ok {
			continue
		}
		for l := root.links[k].next.Load(); l != nil; l = l.next.Load() {
			if l.ev.regAt > recv {
				break // registered after the response was received: it cannot show its state, nor a later one's
			}
			if l.ev.withdrawn.Load() {
				continue
			}
			if !slices.ContainsFunc(l.preds, func(q probe.Predicate) bool { return !q.Holds(accepted) }) {
				return true
			}
		}
	}
	return false
}

func (m *Matcher) newMatchEvent(e probe.Expectation, regAt int64) *matchEvent {
	ev := &matchEvent{exp: e, types: e.TypeURLs(), regAt: regAt, subj: make([]uint32, len(e.All)), predType: make([]uint8, len(e.All)), names: make([]uint64, len(e.All))}
	m.subjMu.Lock()
	for i, p := range e.All {
		ev.subj[i] = m.subjectLocked(p.Subject())
		ev.predType[i] = typeBit(p.Op.TypeURL())
		ev.typeMask |= ev.predType[i]
		if sc, ok := p.Removes(); ok {
			ev.removes = append(ev.removes, m.subjectLocked("scope/"+sc))
		} else if sc := p.Scope(); sc != "" && p.Subject() != "cds/"+sc {
			ev.scopes = appendOnce(ev.scopes, m.subjectLocked("scope/"+sc))
		}
	}
	// A deletion of more service ports than the cap keeps the others' ClusterAbsent in Rest:
	// they are gone all the same, and what was about them can never be seen any more.
	for _, p := range e.Rest {
		if sc, ok := p.Removes(); ok {
			ev.removes = append(ev.removes, m.subjectLocked("scope/"+sc))
		}
	}
	m.subjMu.Unlock()
	slices.Sort(ev.removes) // supersedes searches it: a deletion of hundreds of ports costs a search, not a scan
	ev.removes = slices.Compact(ev.removes)
	for i, p := range e.All {
		ev.names[i] = maphash.String(m.nameSeed, p.Resource)
	}
	ev.oneName = !slices.ContainsFunc(e.All, func(p probe.Predicate) bool { return p.Resource != e.All[0].Resource })
	ev.name0 = ev.names[0]
	ev.oneKey = ev.oneName && !slices.ContainsFunc(e.All, func(p probe.Predicate) bool { return p.Op.TypeURL() != e.All[0].Op.TypeURL() })
	return ev
}

// holdsMemo is a message and whether an event's predicates hold over it.
type holdsMemo struct {
	m    proto.Message
	held bool
	// prev is the answer before this one: a client's claim asks about the message it held
	// before a response, and its response about the one it brought, so that the clients of a
	// push alternate between two messages.
	prev *holdsMemo
}

// holds is ev.exp.Holds(v), remembered for the last message when every predicate reads one
// resource (oneKey): a decoded message is immutable, so the same message gives the same answer.
func (ev *matchEvent) holds(v probe.View) bool {
	if !ev.oneKey {
		return ev.exp.Holds(v)
	}
	p0 := &ev.exp.All[0]
	return ev.holdsMsg(v.Resource(p0.Op.TypeURL(), p0.Resource))
}

// holdsMsg is holds for an event of one resource (oneKey) whose message is m.
func (ev *matchEvent) holdsMsg(m proto.Message) bool {
	last := ev.memo.Load()
	if last != nil {
		if last.m == m {
			return last.held
		}
		if prev := last.prev; prev != nil && prev.m == m {
			return prev.held
		}
	}
	held := true
	for i := range ev.exp.All {
		if !ev.exp.All[i].HoldsOn(m) {
			held = false
			break
		}
	}
	next := &holdsMemo{m: m, held: held}
	if last != nil {
		next.prev = &holdsMemo{m: last.m, held: last.held} // one back: not a chain
	}
	ev.memo.Store(next)
	return held
}

// typeBit is a bit for each type a predicate reads (probe.Op.TypeURL), 0 for any other.
func typeBit(url string) uint8 {
	switch url {
	case resource.EndpointType:
		return 1
	case resource.ClusterType:
		return 2
	case resource.ListenerType:
		return 4
	case resource.RouteType:
		return 8
	}
	return 0
}

// stats is the event whose counters and latencies an observation of ev goes to.
func (ev *matchEvent) stats() *matchEvent {
	if ev.root != nil {
		return ev.root
	}
	return ev
}

// forClient is the event as cl must meet it (probe.Expectation.For): the event itself, the
// shared view for cl's namespace holding only the predicates that apply there, or nil when
// none does. The caller holds cl's shard lock (ev.mu is taken after it, as everywhere).
func (ev *matchEvent) forClient(m *Matcher, cl *matchClient) *matchEvent {
	if len(ev.exp.Reach.PredicateNamespaces) == 0 || cl.ptype == probe.ProxyRouter {
		return ev
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if v, ok := ev.views[cl.ns]; ok {
		return v
	}
	var v *matchEvent
	if e, ok := ev.exp.For(cl.ns, cl.ptype); ok {
		v = m.newMatchEvent(e, ev.regAt)
		v.idx, v.root = ev.idx, ev
	}
	if ev.views == nil {
		ev.views = make(map[string]*matchEvent)
	}
	ev.views[cl.ns] = v
	return v
}

// SetT0 sets the event's T0 when Expect was called without one. It fails if T0 is already
// set or t is zero.
func (h *Expected) SetT0(t time.Time) error {
	m := h.m
	if t.IsZero() {
		return fmt.Errorf("measure: event %d: SetT0 with a zero time", h.ev.exp.EventID)
	}
	ev := h.ev
	ev.mu.Lock()
	if ev.hasT0.Load() {
		ev.mu.Unlock()
		return fmt.Errorf("measure: event %d: T0 already set", ev.exp.EventID)
	}
	t0 := m.off(t)
	ev.t0Time = t
	ev.t0.Store(t0)
	ev.hasT0.Store(true)
	early := ev.early
	ev.early = nil
	ev.mu.Unlock()
	if len(early) == 0 {
		return nil
	}
	// Record outside ev.mu: clients take their shard's lock before ev.mu.
	s := &m.shards[0]
	s.mu.Lock()
	for _, o := range early {
		m.record(s, ev, time.Duration(o.at-t0), o.kind, o.group)
	}
	s.mu.Unlock()
	return nil
}

// EventID returns the registered event's id.
func (h *Expected) EventID() uint64 { return h.ev.exp.EventID }

// Withdraw takes back an expectation whose change was never made (the sink failed to apply
// it): no client is held to it from now on, Drain does not wait for it, and Results leaves it
// out (the caller counts it as failed). Safe to call twice.
func (h *Expected) Withdraw() { h.ev.withdrawn.Store(true) }

// client returns c's state, tracking it on first sight; the shard lock must be held.
func (m *Matcher) client(s *matchShard, c probe.ClientInfo) *matchClient {
	cl := s.clients[c.Index]
	if cl == nil {
		cl = &matchClient{group: c.Group, ns: c.Namespace, ptype: c.ProxyType, named: c.NamedOnly, cursor: int(m.logLen.Load())}
		s.clients[c.Index] = cl
	}
	if cl.ptype == "" { // tracked before its first hook: learn the type now
		cl.ptype = c.ProxyType
	}
	return cl
}

// claim moves the expectations registered since the client's last hook into its pending list,
// deciding which already hold; r is the response being reported (nil for other hooks). The
// shard lock must be held.
func (m *Matcher) claim(s *matchShard, c probe.ClientInfo, r *probe.ResponseInfo) *matchClient {
	cl := m.client(s, c)
	n := int(m.logLen.Load())
	if n == cl.cursor {
		return cl
	}
	m.logMu.RLock()
	log := m.log[cl.cursor:n]
	m.logMu.RUnlock()
	cl.cursor = n
	for _, ev := range log {
		if ev.withdrawn.Load() || !ev.exp.Reach.Includes(cl.group, cl.ns, cl.ptype) {
			continue
		}
		if ev = ev.forClient(m, cl); ev == nil {
			continue // none of its predicates concerns this client
		}
		if (ev.exp.Reach.WatchersOnly || cl.named) && !watches(c, ev.exp) {
			continue
		}
		cl.pending = append(cl.pending, newPend(ev, m.heldBefore(s, c, r, ev)))
	}
	return cl
}

// heldBefore reports whether ev's predicates held in c's state as of ev's registration: the
// state before r when r was received after it, else the current one. When r is not nil, the
// shard's touched index is r's.
func (m *Matcher) heldBefore(s *matchShard, c probe.ClientInfo, r *probe.ResponseInfo, ev *matchEvent) bool {
	for _, t := range ev.types {
		if !c.State.Synced(t) {
			return false
		}
	}
	var v probe.View = c.State // what the client accepted
	if r != nil && r.Fresh && m.off(r.Recv) >= ev.regAt && slices.Contains(ev.types, r.TypeURL) {
		return false // before this response the client held nothing of the type
	}
	if r != nil && m.off(r.Recv) >= ev.regAt && len(r.Touched) > 0 {
		before := beforeView{c: c.State, r: r, x: &s.touched}
		if !ev.oneKey {
			v = before
		} else {
			// By the name's hash the event keeps, and no view boxed: a claim asks this of
			// every event registered since the client's last hook.
			p0 := &ev.exp.All[0]
			if m, ok := before.prev(p0.Op.TypeURL(), p0.Resource, ev.name0); ok {
				return ev.holdsMsg(m)
			}
		}
	}
	return ev.holds(v)
}

func watches(c probe.ClientInfo, e probe.Expectation) bool {
	for _, p := range e.All {
		if !c.State.Subscribed(p.Op.TypeURL(), p.Resource) {
			return false
		}
	}
	return true
}

// effectiveView is what a client has in effect, as a probe.View.
type effectiveView struct{ c probe.ClientState }

func (v effectiveView) Resource(typeURL, name string) proto.Message {
	return v.c.Effective(typeURL, name)
}

// beforeView is what the client accepted before response r, whose Touched names x indexes.
type beforeView struct {
	c probe.ClientState
	r *probe.ResponseInfo
	x *touchIndex
}

func (v beforeView) Resource(typeURL, name string) proto.Message {
	if m, ok := v.prev(typeURL, name, maphash.String(v.x.seed, name)); ok {
		return m
	}
	return v.c.Resource(typeURL, name)
}

// prev is the copy before r of a resource r touched (nil: r added it), named name with hash h
// under the index's seed; ok is false when r did not touch it.
func (v beforeView) prev(typeURL, name string, h uint64) (m proto.Message, ok bool) {
	if typeURL == v.r.TypeURL {
		if i := v.x.find(name, h); i >= 0 {
			return v.r.Touched[i].Prev, true
		}
	}
	return nil, false
}

// touches reports whether the response whose Touched names x indexes, of type bit rbit
// (typeBit of its type URL), added, changed or removed a resource one of ev's predicates reads.
func touches(x *touchIndex, rbit uint8, ev *matchEvent) bool {
	if rbit == 0 || ev.typeMask&rbit == 0 {
		return false // no predicate reads a type other than typeBit's
	}
	for i := range ev.exp.All {
		if ev.predType[i] == rbit && x.find(ev.exp.All[i].Resource, ev.names[i]) >= 0 {
			return true
		}
	}
	return false
}

// observe counts one observation and records its latency once T0 is known; the shard lock
// must be held.
func (m *Matcher) observe(s *matchShard, ev *matchEvent, at int64, kind obsKind, group string) {
	ev = ev.stats()
	switch kind {
	case obsEffect:
		ev.observed.Add(1)
		s.count(ev, group).Observed++
	case obsRecv:
		ev.received.Add(1)
	case obsAck:
		ev.acked.Add(1)
	}
	if !ev.hasT0.Load() {
		ev.mu.Lock()
		if !ev.hasT0.Load() {
			ev.early = append(ev.early, matchEarly{at: at, kind: kind, group: group})
			ev.mu.Unlock()
			return
		}
		ev.mu.Unlock()
	}
	m.record(s, ev, time.Duration(at-ev.t0.Load()), kind, group)
}

// record records latency d of ev in s's histograms; the shard lock must be held.
func (m *Matcher) record(s *matchShard, ev *matchEvent, d time.Duration, kind obsKind, group string) {
	if d < 0 {
		if kind == obsEffect || kind == obsSuperseded {
			ev.earlyRecv.Add(1)
		}
		d = 0
	}
	hists := s.push
	switch kind {
	case obsRecv:
		hists = s.recv
	case obsAck:
		hists = s.ack
	}
	key := KindGroup{Kind: ev.exp.Kind, Group: group}
	h := hists[key]
	if h == nil {
		h = hdr.NewPacked(histLowest, histHighest, histDigits)
		hists[key] = h
	}
	_ = h.RecordValue(max(min(d.Microseconds(), histHighest), histLowest))
	switch kind {
	case obsAck:
		casMax(&ev.ackMax, int64(d))
		return
	case obsRecv:
		casMax(&ev.recvMax, int64(d))
		return
	}
	ev.latCount.Add(1)
	ev.latSum.Add(int64(d))
	casMax(&ev.latMax, int64(d))
	casMin(&ev.latMin, int64(d))
	ev.mu.Lock()
	if ev.groupMax == nil {
		ev.groupMax = make(map[string]int64, 1)
	}
	if g, ok := ev.groupMax[group]; !ok || int64(d) > g {
		ev.groupMax[group] = int64(d)
	}
	ev.mu.Unlock()
	if m.cfg.KeepLatencies {
		ev.mu.Lock()
		ev.lat = append(ev.lat, d)
		ev.mu.Unlock()
	}
}

func casMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func casMin(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v >= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// supersedes is probe.Expectation.Supersedes over the precomputed subjects: later shares a
// subject with earlier under a different predicate, or removes a service port earlier reads
// (a service deleted after a change of its endpoints, lb policy or routes, before the client
// saw that change: the client can never see it any more). A deletion removes the ports of its
// Rest too (matchEvent.removes): the cap on its predicates samples what decides its own
// delivery, not what it takes away. The cost is a search of later's sorted removes per port
// earlier reads, however many ports later deleted.
func (later *matchEvent) supersedes(earlier *matchEvent) bool {
	for i, ps := range later.subj {
		for j, qs := range earlier.subj {
			if ps == qs && later.exp.All[i] != earlier.exp.All[j] {
				return true
			}
		}
	}
	return later.removesScope(earlier)
}

// removesScope reports whether later removes a service port earlier reads: a search of later's
// sorted removes per port earlier reads.
func (later *matchEvent) removesScope(earlier *matchEvent) bool {
	if len(later.removes) == 0 {
		return false
	}
	for _, sc := range earlier.scopes {
		if _, ok := slices.BinarySearch(later.removes, sc); ok {
			return true
		}
	}
	return false
}

// appendOnce appends v to s unless s holds it.
func appendOnce(s []uint32, v uint32) []uint32 {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// Hooks. Every hook claims new expectations; Response matches (every response, applied or
// not: an unchanged assignment can still warm a cluster), WarmingTimeout brings received
// changes into effect, AckSent records ACK latencies.

// Connected implements probe.Hooks.
func (m *Matcher) Connected(c probe.ClientInfo, _ time.Time, _ int) { m.touch(c) }

// Disconnected implements probe.Hooks: ACKs awaited on the dead stream will never come.
func (m *Matcher) Disconnected(c probe.ClientInfo, _ time.Time, _ error) {
	s := m.shard(c.Index)
	s.mu.Lock()
	cl := m.claim(s, c, nil)
	cl.awaiting = cl.awaiting[:0]
	s.mu.Unlock()
}

// ConnectFailed implements probe.Hooks.
func (m *Matcher) ConnectFailed(c probe.ClientInfo, _ time.Time, _ error) { m.touch(c) }

// WarmingTimeout implements probe.Hooks: a cluster or listener that stopped warming is in
// effect.
func (m *Matcher) WarmingTimeout(c probe.ClientInfo, _ string, at time.Time) { m.effect(c, at) }

// FirstFullConfig implements probe.Hooks.
func (m *Matcher) FirstFullConfig(c probe.ClientInfo, _ time.Time) { m.touch(c) }

// Applied implements probe.Hooks; Response has matched already.
func (m *Matcher) Applied(c probe.ClientInfo, _ probe.ResponseInfo, _ probe.View) { m.touch(c) }

func (m *Matcher) touch(c probe.ClientInfo) {
	s := m.shard(c.Index)
	s.mu.Lock()
	m.claim(s, c, nil)
	s.mu.Unlock()
}

// Response implements probe.Hooks: c's pending expectations are matched against response r.
//
// The entries r touches are taken latest-registered first: the state r shows on a subject
// belongs to the latest event whose predicates it satisfies. That one is received (or, held
// when claimed, confirmed held); earlier events on the same subjects were never seen by the
// client as such and are superseded (or, held when claimed, confirmed held). So a removal's
// state brought back by a later removal of the same endpoint is the later one's, not a 30 s
// latency of the first; a removal arriving after its restore was registered is the removal's.
func (m *Matcher) Response(c probe.ClientInfo, r probe.ResponseInfo) {
	s := m.shard(c.Index)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touched.reset(m.nameSeed, r.Touched)
	defer s.touched.release()
	s.resp, s.eff = r, effectiveView{c.State}
	defer s.releaseViews()
	cl := m.claim(s, c, &s.resp)
	recv := m.off(r.Recv)
	rbit := typeBit(r.TypeURL)
	// A new process's first accepted response of a full-state type (CDS, LDS) is its whole set
	// and shows every resource of the type, the ones it lacks as absent: it touches every
	// predicate of the type, so that a restarted client's pending deletion is seen in its new
	// config though no response ever names the deleted resource to it. Not a rejected one (the
	// client applied nothing, or not all of it: what it lacks is not what the server removed);
	// in Delta only the very first response of the type (after a rejected one the stream goes
	// on with increments). Not a NamedOnly client (proxyless gRPC): grpc-go's xDS client takes a
	// CDS or LDS resource a SotW response lacks as deleted only when it held it (xdsclient's
	// authority, AllResourcesRequiredInSotW: a name with no cached copy may be missing because
	// the response answers a request made before the client asked for it; the watch's expiry,
	// 15 s, says it does not exist). Its cache outlives a stream, so after a reconnect the
	// first response lacking a held resource removes it and touches it like any other; a new
	// process holds nothing, and its first response shows nothing absent.
	whole := r.Fresh && !r.Nacked && (!r.Delta || r.First) && !c.NamedOnly &&
		(r.TypeURL == resource.ClusterType || r.TypeURL == resource.ListenerType)
	// effective is a View once per response: as a struct value it would be boxed at each call
	// (and, boxed here, once per response: the shard's copy is not).
	var accepted, effective probe.View = c.State, &s.eff
	var reached, superseded []int // indices into pending of the events resolved here
	// s.shown holds the subjects whose shown state a later event has claimed (the shard's
	// scratch set, emptied when the response is done).
	defer s.resetScratch()
	claimedBy := func(ev *matchEvent) bool {
		for _, sj := range ev.subj {
			if s.shown[sj] {
				return true
			}
		}
		return false
	}
	// s.moved holds the subjects on which a later event's own predicates hold after r, for
	// those of its predicates r touched, though that event does not hold as a whole (another
	// of its subjects shows a still later change, or has not come yet): the client has moved
	// past every earlier state of such a subject. An earlier event that does not hold and
	// reads one of them can never be seen any more.
	movedBy := func(ev *matchEvent) bool {
		for _, sj := range ev.subj {
			if s.moved[sj] {
				return true
			}
		}
		return false
	}
	markMoved := func(ev *matchEvent) {
		var one proto.Message // an event of one resource: its message, read once
		if ev.oneKey {
			p0 := &ev.exp.All[0]
			one = accepted.Resource(p0.Op.TypeURL(), p0.Resource)
		}
		for i := range ev.exp.All {
			if ev.predType[i] != rbit || (!whole && s.touched.find(ev.exp.All[i].Resource, ev.names[i]) < 0) {
				continue // r did not show this predicate's resource
			}
			sj, ok := ev.subj[i], true
			for j := range ev.exp.All {
				if ev.subj[j] != sj {
					continue
				}
				var held bool
				if q := &ev.exp.All[j]; ev.oneKey {
					held = q.HoldsOn(one)
				} else {
					held = q.Holds(accepted)
				}
				if !held {
					ok = false
					break
				}
			}
			if ok {
				if s.moved == nil {
					s.moved = make(map[uint32]bool, len(ev.subj))
				}
				s.moved[sj] = true
			}
		}
	}
	for i := len(cl.pending) - 1; i >= 0 && (len(r.Touched) > 0 || whole) && rbit != 0; i-- {
		p := &cl.pending[i]
		if p.tmask&rbit == 0 || (!whole && p.oneName && !s.touched.hasHash(p.name0)) {
			continue
		}
		ev := p.ev
		if p.passed || (!whole && !touches(&s.touched, rbit, ev)) {
			continue // passed: superseded already, waiting for the state past it to take effect
		}
		holds := ev.holds(accepted)
		eligible := p.held || p.recvd || recv >= ev.regAt // r can show its state
		if holds && !eligible {
			// r was received before the event was registered and shows its state: the client
			// held it at registration. A claim at an earlier hook, made while r waited to be
			// read, saw the state before r.
			p.held, eligible = true, true
		}
		switch {
		case claimedBy(ev) || (!holds && (movedBy(ev) || movedPast(&s.touched, whole, ev, accepted, recv, rbit))):
			switch {
			case p.held:
				reached = append(reached, i) // it held when registered: the client was in it
			case p.recvd && holds:
				// Received and still in what the client accepted: it may yet take effect.
			case passedInEffect(c.State, ev):
				// Received or not, the client has moved past it without its state in effect:
				// superseded, its latency to now, when the state past it is in effect.
				superseded = append(superseded, i)
			default:
				p.passed = true // superseded once the state past it is in effect
			}
		case holds && eligible:
			if s.shown == nil {
				s.shown = make(map[uint32]bool, len(ev.subj))
			}
			for _, sj := range ev.subj {
				s.shown[sj] = true
			}
			switch {
			case p.held:
				reached = append(reached, i) // still held: confirmed, no latency
			case !p.recvd:
				p.recvd = true
				m.observe(s, ev, recv, obsRecv, c.Group)
				cl.awaiting = append(cl.awaiting, matchAwait{ev: ev, seq: r.Seq})
			}
		case p.held && !holds:
			p.held = false // the client has left that state: it must see it again
		}
		if !holds && eligible {
			markMoved(ev)
		}
	}
	reached, superseded = m.inEffect(s, cl, c, effective, reached, superseded, recv)
	m.resolve(s, cl, reached, superseded, recv)
}

// inEffect adds to reached the received entries of cl now in effect (observed at at) and to
// superseded the passed ones whose resources are now in effect, skipping those already
// superseded.
func (m *Matcher) inEffect(s *matchShard, cl *matchClient, c probe.ClientInfo, effective probe.View, reached, superseded []int, at int64) ([]int, []int) {
	n := len(superseded) // the entries superseded so far are the ones to skip
	for i := range cl.pending {
		p := &cl.pending[i]
		if p.held || !(p.recvd || p.passed) || slices.Contains(superseded[:n], i) {
			continue
		}
		switch {
		case p.passed:
			if passedInEffect(c.State, p.ev) {
				superseded = append(superseded, i)
			}
		case p.ev.holds(effective):
			m.observe(s, p.ev, at, obsEffect, c.Group)
			reached = append(reached, i)
		}
	}
	return reached, superseded
}

// passedInEffect reports whether what the client accepted of every resource ev reads is in
// effect: no cluster among them warms for its assignment, no listener waits for its routes.
// A client past ev's state is past it in effect only then: Envoy serves traffic with the copy
// a warming resource has not replaced yet.
func passedInEffect(st probe.ClientState, ev *matchEvent) bool {
	for i := range ev.exp.All {
		p := &ev.exp.All[i]
		if ev.predType[i]&(typeBit(resource.ClusterType)|typeBit(resource.ListenerType)) == 0 {
			continue // only clusters and listeners warm
		}
		t := p.Op.TypeURL()
		if st.Effective(t, p.Resource) != st.Resource(t, p.Resource) {
			return false
		}
	}
	return true
}

// effect brings c's received expectations that now hold in effect into effect at at, and
// supersedes at at the passed ones whose resources are now in effect.
func (m *Matcher) effect(c probe.ClientInfo, at time.Time) {
	s := m.shard(c.Index)
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := m.claim(s, c, nil)
	s.eff = effectiveView{c.State}
	defer s.releaseViews()
	reached, superseded := m.inEffect(s, cl, c, &s.eff, nil, nil, m.off(at))
	m.resolve(s, cl, reached, superseded, m.off(at))
}

// resolve removes the pending entries at indices reached (observed, or confirmed held) and
// superseded, and retires the earlier ones the reached supersede: the client reached a later
// state without having been in theirs (received or not: a received one not in effect was never
// applied). A superseded entry's push latency runs to at, when the client showed the later
// state in effect: until then the change (or a later one on its subjects) had not reached it,
// and a debounce that holds a busy service's changes back must show in the figures.
func (m *Matcher) resolve(s *matchShard, cl *matchClient, reached, superseded []int, at int64) {
	if len(reached) == 0 && len(superseded) == 0 {
		return
	}
	drop := make([]bool, len(cl.pending))
	anyHeld := -1 // whether some pending entry is held: looked at once, when first needed
	superseded1 := func(j int) {
		ev := cl.pending[j].ev
		if anyHeld < 0 {
			anyHeld = 0
			if slices.ContainsFunc(cl.pending, func(p matchPend) bool { return p.held }) {
				anyHeld = 1
			}
		}
		// A later change on its subjects that the client already held when it was registered
		// (a removal and its restore merged into no push at all) left nothing to push: the
		// client was past this one without the control plane's doing, and it has no latency.
		past := anyHeld == 1 && slices.ContainsFunc(cl.pending[j+1:], func(q matchPend) bool { return q.held && q.ev.supersedes(ev) })
		ev = ev.stats()
		ev.superseded.Add(1)
		s.count(ev, cl.group).Superseded++
		if !past {
			m.observe(s, ev, at, obsSuperseded, cl.group)
		}
	}
	held1 := func(ev *matchEvent) {
		ev.held.Add(1)
		s.count(ev, cl.group).AlreadyHeld++
	}
	for _, i := range superseded {
		drop[i] = true
		superseded1(i)
	}
	for _, i := range reached {
		drop[i] = true
		if p := cl.pending[i]; p.held {
			held1(p.ev.stats())
		}
	}
	retire := func(j int) {
		p := cl.pending[j]
		drop[j] = true
		if p.held {
			held1(p.ev.stats()) // it held when registered: the client was in its state
		} else {
			superseded1(j)
		}
	}
	if len(reached) <= 4 {
		retireQuadratic(cl.pending, reached, drop, retire)
	} else {
		retireIndexed(cl.pending, reached, drop, retire)
	}
	k := 0
	for i, p := range cl.pending {
		if !drop[i] {
			cl.pending[k] = p
			k++
		} else if p.ev.claims.Add(-1) == 0 {
			p.ev.memo.Store(nil) // a client claiming it later evaluates afresh
		}
	}
	clear(cl.pending[k:])
	cl.pending = cl.pending[:k]
}

// retireQuadratic calls retire for every entry not dropped that a later reached entry
// supersedes, comparing each reached entry with every earlier one.
func retireQuadratic(pending []matchPend, reached []int, drop []bool, retire func(int)) {
	for _, i := range reached {
		later := pending[i].ev
		for j := 0; j < i; j++ {
			if !drop[j] && later.supersedes(pending[j].ev) {
				retire(j)
			}
		}
	}
}

// retireIndexed is retireQuadratic for many reached entries at once (a client catching up):
// it indexes them by subject, so that each earlier entry is compared only with the reached
// entries it shares a subject with. A bit set of the reached subjects turns most earlier
// entries away before any lookup.
func retireIndexed(pending []matchPend, reached []int, drop []bool, retire func(int)) {
	var seen [16]uint64
	bit := func(sj uint32) (int, uint64) { return int(sj>>6) & 15, 1 << (sj & 63) }
	last := 0 // only entries before a reached one can be superseded by it
	// A reached entry supersedes through its subjects, indexed here, and through the service
	// ports it removes (supersedes): a deletion's removed ports, hundreds with its Rest, are
	// searched in its own sorted list for each port an earlier entry reads, not indexed.
	var removers []int
	for _, i := range reached {
		for _, sj := range pending[i].subjects() {
			w, b := bit(sj)
			seen[w] |= b
		}
		if len(pending[i].ev.removes) > 0 {
			removers = append(removers, i)
		}
		last = max(last, i)
	}
	var bySubj []subjEntry // the reached entries' subjects, sorted: one allocation, not a map of slices
	for j := range pending[:last] {
		if drop[j] {
			continue
		}
		p := &pending[j]
		earlier := p.ev
		if len(earlier.scopes) > 0 && slices.ContainsFunc(removers, func(i int) bool { return i > j && pending[i].ev.removesScope(earlier) }) {
			retire(j)
			continue
		}
		inSeen := func(sj uint32) bool { w, b := bit(sj); return seen[w]&b != 0 }
		if !slices.ContainsFunc(p.subjects(), inSeen) {
			continue
		}
		if bySubj == nil {
			n := 0
			for _, i := range reached {
				n += len(pending[i].subjects())
			}
			bySubj = make([]subjEntry, 0, n)
			for _, i := range reached {
				for _, sj := range pending[i].subjects() {
					bySubj = append(bySubj, subjEntry{sj: sj, i: int32(i)})
				}
			}
			slices.SortFunc(bySubj, func(a, b subjEntry) int { return cmp.Compare(a.sj, b.sj) })
		}
	find:
		for _, sj := range p.subjects() {
			k, _ := slices.BinarySearchFunc(bySubj, sj, func(e subjEntry, sj uint32) int { return cmp.Compare(e.sj, sj) })
			for ; k < len(bySubj) && bySubj[k].sj == sj; k++ {
				if i := int(bySubj[k].i); i > j && pending[i].ev.supersedes(earlier) {
					retire(j)
					break find
				}
			}
		}
	}
}

// subjEntry is a subject of a reached pending entry (its index i), for retireIndexed.
type subjEntry struct {
	sj uint32
	i  int32
}

// AckSent implements probe.Hooks.
func (m *Matcher) AckSent(c probe.ClientInfo, r probe.ResponseInfo, at time.Time) {
	s := m.shard(c.Index)
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := m.claim(s, c, nil)
	cl.awaiting = slices.DeleteFunc(cl.awaiting, func(a matchAwait) bool {
		if a.seq == r.Seq {
			m.observe(s, a.ev, m.off(at), obsAck, c.Group)
		}
		// An older response never ACKed (a NACK of a later one, a policy that skips) is gone.
		return a.seq <= r.Seq
	})
}

// EventResult is what one event produced across the fleet.
type EventResult struct {
	EventID   uint64
	Kind      string
	Scheduled time.Time
	T0        time.Time
	// Reached = Observed + AlreadyHeld + Superseded + Missed: the clients in the event's reach
	// (see the package comment for the classes).
	Reached     int
	Observed    int
	AlreadyHeld int
	Superseded  int
	// Missed counts clients in reach that had not observed the event when Results was called
	// (Received of them may have received it without it taking effect); MissedBy names the
	// lowest indices among them (probe.ClientInfo.Index), at most 3, to look into.
	Missed   int
	MissedBy []int
	// Unresolved counts WatchersOnly clients that never claimed the event (see the package
	// comment); they are not in Reached.
	Unresolved int
	// Received counts clients that received the change (in effect or not yet).
	Received int
	// Acked counts received observations whose ACK was sent.
	Acked int
	// EarlyReceives counts observations received before T0 (recorded as latency 0).
	EarlyReceives int
	// Convergence is the event's convergence time (see the package comment): the largest push
	// latency over the clients that observed or superseded it, and when Censored (some client
	// missed it or is unresolved) at least the time from T0 to Results. ReceiveConvergence and
	// AckConvergence are the largest receive and ACK latencies.
	Convergence time.Duration
	// PushLatencies counts the push latencies recorded (observed, and superseded by a
	// response): the event enters the convergence histogram when it has a T0 and some, or when
	// it is not Complete.
	PushLatencies      int
	Censored           bool
	ReceiveConvergence time.Duration
	AckConvergence     time.Duration
	MinLatency         time.Duration
	MeanLatency        time.Duration
	// Latencies lists every client's push latency (MatcherConfig.KeepLatencies), sorted.
	Latencies []time.Duration
}

// Complete reports whether every client in reach observed, already held or superseded the
// event.
func (r EventResult) Complete() bool { return r.Missed == 0 && r.Unresolved == 0 }

// MatchResults is the matcher's state at one moment.
type MatchResults struct {
	Events []EventResult // in registration order
	// PushLatency (in effect), ReceiveLatency and AckLatency by event kind, and over every
	// kind, in µs.
	PushLatency       map[string]*hdr.Histogram
	ReceiveLatency    map[string]*hdr.Histogram
	AckLatency        map[string]*hdr.Histogram
	PushLatencyAll    *hdr.Histogram
	ReceiveLatencyAll *hdr.Histogram
	AckLatencyAll     *hdr.Histogram
	// ConvergenceByKind holds each event's convergence time by kind, in µs; Convergence is
	// their merge.
	ConvergenceByKind map[string]*hdr.Histogram
	Convergence       *hdr.Histogram
	// PushLatencyByGroup, ReceiveLatencyByGroup and AckLatencyByGroup are the latencies of
	// each client group (over every kind), in µs. ConvergenceByGroup holds, per group, each
	// event's largest push latency over the group's clients that observed it; an incomplete
	// event is counted (censored) in Convergence, which is not split by group.
	PushLatencyByGroup    map[string]*hdr.Histogram
	ReceiveLatencyByGroup map[string]*hdr.Histogram
	AckLatencyByGroup     map[string]*hdr.Histogram
	ConvergenceByGroup    map[string]*hdr.Histogram
	// PushLatencyByKindGroup and AckLatencyByKindGroup split the push and ACK latencies by
	// event kind and client group at once: the partition /metrics exports (its kind and group
	// labels).
	PushLatencyByKindGroup, AckLatencyByKindGroup map[KindGroup]*hdr.Histogram
	// ProbesByGroup splits the observation totals below (less Received) by client group;
	// its counts of a field sum to the total.
	ProbesByGroup map[string]ProbeCounts
	// Totals over events.
	Observed, AlreadyHeld, Superseded, Missed, Unresolved, Received int
}

// ProbeCounts are client × event observations by class (see EventResult).
type ProbeCounts struct {
	Observed, AlreadyHeld, Superseded, Missed, Unresolved int
}

func (a ProbeCounts) plus(b ProbeCounts) ProbeCounts {
	return ProbeCounts{Observed: a.Observed + b.Observed, AlreadyHeld: a.AlreadyHeld + b.AlreadyHeld,
		Superseded: a.Superseded + b.Superseded, Missed: a.Missed + b.Missed, Unresolved: a.Unresolved + b.Unresolved}
}

// Kinds lists the event kinds with latencies, sorted.
func (r MatchResults) Kinds() []string {
	out := make([]string, 0, len(r.PushLatency))
	for k := range r.PushLatency {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// outstandingCounts is, per event index, how its unresolved claims stand right now; byGroup
// (when asked for) splits the same by client group.
type outstandingCounts struct {
	missed, unresolved, held, superseded []int
	byGroup                              []map[string]*ProbeCounts
	// missedBy holds, per event (with byGroup), the lowest indices of the clients that missed it.
	missedBy [][]int
}

// maxMissedBy is how many of an event's missing clients EventResult.MissedBy names.
const maxMissedBy = 3

// miss counts event idx missed by client index.
func (o *outstandingCounts) miss(idx, index int, group string) {
	o.missed[idx]++
	o.add(idx, group, func(c *ProbeCounts) { c.Missed++ })
	if o.missedBy == nil {
		return
	}
	by := o.missedBy[idx]
	k, _ := slices.BinarySearch(by, index)
	if k < maxMissedBy {
		by = slices.Insert(by, k, index)
		o.missedBy[idx] = by[:min(len(by), maxMissedBy)]
	}
}

// add counts one outstanding claim of event idx by a client of group.
func (o *outstandingCounts) add(idx int, group string, into func(*ProbeCounts)) {
	if o.byGroup == nil {
		return
	}
	m := o.byGroup[idx]
	if m == nil {
		m = map[string]*ProbeCounts{}
		o.byGroup[idx] = m
	}
	c := m[group]
	if c == nil {
		c = &ProbeCounts{}
		m[group] = c
	}
	into(c)
}

// outstanding classifies every client's unresolved entries without changing them: pending
// provisionally held ones count as already held, pending ones a later held one supersedes as
// superseded (the client sits in the later state), the rest as missed; unclaimed in-reach
// entries as missed (WatchersOnly ones as unresolved). Every shard is locked in turn. byGroup
// also splits the counts by client group (for Results; Drain's polls do not pay for it).
func (m *Matcher) outstanding(byGroup bool) outstandingCounts {
	n := int(m.logLen.Load())
	m.logMu.RLock()
	log := m.log[:n]
	m.logMu.RUnlock()
	o := outstandingCounts{missed: make([]int, n), unresolved: make([]int, n), held: make([]int, n), superseded: make([]int, n)}
	if byGroup {
		o.byGroup = make([]map[string]*ProbeCounts, n)
		o.missedBy = make([][]int, n)
	}
	// laterHeld indexes by subject the held entries registered later than the one being
	// classified: a client catching up can hold hundreds of merged changes. heldRemovers are
	// those of them that remove service ports, searched by the ports an entry reads
	// (removesScope) rather than indexed: a deletion can remove hundreds.
	laterHeld := map[uint32][]*matchEvent{}
	var heldRemovers []*matchEvent
	supersededByHeld := func(ev *matchEvent) bool {
		for _, sj := range ev.subj {
			for _, q := range laterHeld[sj] {
				if q.supersedes(ev) {
					return true
				}
			}
		}
		return len(ev.scopes) > 0 && slices.ContainsFunc(heldRemovers, func(q *matchEvent) bool { return q.removesScope(ev) })
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for index, cl := range s.clients {
			// Walk backwards so that the held entries registered later are known.
			clear(laterHeld)
			heldRemovers = heldRemovers[:0]
			for j := len(cl.pending) - 1; j >= 0; j-- {
				p := cl.pending[j]
				idx := p.ev.idx
				if idx >= n || p.ev.stats().withdrawn.Load() {
					continue
				}
				switch {
				case p.held:
					o.held[idx]++
					o.add(idx, cl.group, func(c *ProbeCounts) { c.AlreadyHeld++ })
					for _, sj := range p.ev.subj {
						laterHeld[sj] = append(laterHeld[sj], p.ev)
					}
					if len(p.ev.removes) > 0 {
						heldRemovers = append(heldRemovers, p.ev)
					}
				case supersededByHeld(p.ev):
					o.superseded[idx]++
					o.add(idx, cl.group, func(c *ProbeCounts) { c.Superseded++ })
				default:
					o.miss(idx, index, cl.group)
				}
			}
			for _, ev := range log[min(cl.cursor, n):] {
				if ev.withdrawn.Load() || !ev.exp.Reach.Includes(cl.group, cl.ns, cl.ptype) || ev.forClient(m, cl) == nil {
					continue
				}
				if ev.exp.Reach.WatchersOnly || cl.named {
					o.unresolved[ev.idx]++
					o.add(ev.idx, cl.group, func(c *ProbeCounts) { c.Unresolved++ })
				} else {
					o.miss(ev.idx, index, cl.group)
				}
			}
		}
		s.mu.Unlock()
	}
	return o
}

// Registered returns how many expectations were registered (withdrawn ones included).
func (m *Matcher) Registered() int { return int(m.logLen.Load()) }

// Outstanding returns how many client×event observations are still awaited (pending
// claims and unclaimed entries in reach; WatchersOnly entries nobody claimed are not awaited).
func (m *Matcher) Outstanding() int {
	n := 0
	for _, v := range m.outstanding(false).missed {
		n += v
	}
	return n
}

// Drain waits until no observation is outstanding or ctx is done, polling every poll (default
// 10ms) or, when a poll takes longer than a tenth of that, ten times the last poll's duration,
// so that polling takes at most about a tenth of a core from the clients it waits for. It
// returns what is still outstanding (0, nil when everything was observed).
func (m *Matcher) Drain(ctx context.Context, poll time.Duration) (int, error) {
	if poll <= 0 {
		poll = 10 * time.Millisecond
	}
	t := time.NewTimer(poll)
	defer t.Stop()
	for {
		start := time.Now()
		n := m.Outstanding()
		if n == 0 {
			return 0, nil
		}
		t.Reset(max(poll, 10*time.Since(start)))
		select {
		case <-ctx.Done():
			return m.Outstanding(), ctx.Err()
		case <-t.C:
		}
	}
}

// PushLatency returns the push latencies recorded so far over every kind and group: what
// Results().PushLatencyAll holds, without classifying what is still outstanding. A progress
// line reads it while the clients run; it takes each shard's lock only to merge its few
// histograms, where Results walks every client's pending entries under it.
func (m *Matcher) PushLatency() *hdr.Histogram {
	h := NewLatencyHistogram()
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for _, p := range s.push {
			p.MergeInto(h)
		}
		s.mu.Unlock()
	}
	return h
}

// Results returns every event's result and the merged histograms. Clients not yet observing an
// event count as missed: call it after Drain (or after the fleet stopped).
func (m *Matcher) Results() MatchResults {
	now := m.off(m.cfg.Now())
	o := m.outstanding(true)
	res := MatchResults{
		PushLatency:       map[string]*hdr.Histogram{},
		ReceiveLatency:    map[string]*hdr.Histogram{},
		AckLatency:        map[string]*hdr.Histogram{},
		PushLatencyAll:    NewLatencyHistogram(),
		ReceiveLatencyAll: NewLatencyHistogram(),
		AckLatencyAll:     NewLatencyHistogram(),
		ConvergenceByKind: map[string]*hdr.Histogram{},
		Convergence:       NewLatencyHistogram(),

		PushLatencyByGroup:     map[string]*hdr.Histogram{},
		ReceiveLatencyByGroup:  map[string]*hdr.Histogram{},
		AckLatencyByGroup:      map[string]*hdr.Histogram{},
		ConvergenceByGroup:     map[string]*hdr.Histogram{},
		ProbesByGroup:          map[string]ProbeCounts{},
		PushLatencyByKindGroup: map[KindGroup]*hdr.Histogram{},
		AckLatencyByKindGroup:  map[KindGroup]*hdr.Histogram{},
	}
	into := func(dst map[string]*hdr.Histogram, key string, p *hdr.PackedHistogram) {
		h := dst[key]
		if h == nil {
			h = NewLatencyHistogram()
			dst[key] = h
		}
		p.MergeInto(h)
	}
	intoKG := func(dst map[KindGroup]*hdr.Histogram, k KindGroup, p *hdr.PackedHistogram) {
		h := dst[k]
		if h == nil {
			h = NewLatencyHistogram()
			dst[k] = h
		}
		p.MergeInto(h)
	}
	merge := func(byKind, byGroup map[string]*hdr.Histogram, all *hdr.Histogram, src map[KindGroup]*hdr.PackedHistogram) {
		for k, p := range src {
			into(byKind, k.Kind, p)
			into(byGroup, k.Group, p)
			p.MergeInto(all)
		}
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		merge(res.PushLatency, res.PushLatencyByGroup, res.PushLatencyAll, s.push)
		merge(res.ReceiveLatency, res.ReceiveLatencyByGroup, res.ReceiveLatencyAll, s.recv)
		merge(res.AckLatency, res.AckLatencyByGroup, res.AckLatencyAll, s.ack)
		for k, p := range s.push {
			intoKG(res.PushLatencyByKindGroup, k, p)
		}
		for k, p := range s.ack {
			intoKG(res.AckLatencyByKindGroup, k, p)
		}
		for k, c := range s.byGroup {
			if !k.ev.withdrawn.Load() && k.ev.idx < len(o.missed) {
				res.ProbesByGroup[k.group] = res.ProbesByGroup[k.group].plus(*c)
			}
		}
		s.mu.Unlock()
	}
	m.logMu.RLock()
	log := m.log[:len(o.missed)]
	m.logMu.RUnlock()
	res.Events = make([]EventResult, 0, len(log))
	for i, ev := range log {
		if ev.withdrawn.Load() {
			continue
		}
		r := EventResult{
			EventID:       ev.exp.EventID,
			Kind:          ev.exp.Kind,
			Scheduled:     ev.exp.Scheduled,
			Observed:      int(ev.observed.Load()),
			AlreadyHeld:   int(ev.held.Load()) + o.held[i],
			Superseded:    int(ev.superseded.Load()) + o.superseded[i],
			Missed:        o.missed[i],
			MissedBy:      o.missedBy[i],
			Unresolved:    o.unresolved[i],
			Received:      int(ev.received.Load()),
			Acked:         int(ev.acked.Load()),
			EarlyReceives: int(ev.earlyRecv.Load()),
		}
		hasT0 := ev.hasT0.Load()
		if hasT0 {
			ev.mu.Lock()
			r.T0 = ev.t0Time.UTC()
			ev.mu.Unlock()
		}
		r.Reached = r.Observed + r.AlreadyHeld + r.Superseded + r.Missed
		r.PushLatencies = int(ev.latCount.Load())
		if n := ev.latCount.Load(); n > 0 {
			r.Convergence = time.Duration(ev.latMax.Load())
			r.MinLatency = time.Duration(ev.latMin.Load())
			r.MeanLatency = time.Duration(ev.latSum.Load() / n)
		}
		if !r.Complete() && hasT0 {
			r.Censored = true
			r.Convergence = max(r.Convergence, time.Duration(now-ev.t0.Load()))
		}
		if hasT0 && (r.PushLatencies > 0 || !r.Complete()) {
			h := res.ConvergenceByKind[r.Kind]
			if h == nil {
				h = NewLatencyHistogram()
				res.ConvergenceByKind[r.Kind] = h
			}
			recordDuration(h, r.Convergence)
		}
		for g, c := range o.byGroup[i] {
			res.ProbesByGroup[g] = res.ProbesByGroup[g].plus(*c)
		}
		if hasT0 {
			ev.mu.Lock()
			for g, d := range ev.groupMax {
				h := res.ConvergenceByGroup[g]
				if h == nil {
					h = NewLatencyHistogram()
					res.ConvergenceByGroup[g] = h
				}
				recordDuration(h, time.Duration(d))
			}
			ev.mu.Unlock()
		}
		r.ReceiveConvergence = time.Duration(ev.recvMax.Load())
		r.AckConvergence = time.Duration(ev.ackMax.Load())
		if m.cfg.KeepLatencies {
			ev.mu.Lock()
			r.Latencies = slices.Clone(ev.lat)
			ev.mu.Unlock()
			slices.Sort(r.Latencies)
		}
		res.Observed += r.Observed
		res.AlreadyHeld += r.AlreadyHeld
		res.Superseded += r.Superseded
		res.Missed += r.Missed
		res.Unresolved += r.Unresolved
		res.Received += r.Received
		res.Events = append(res.Events, r)
	}
	for _, h := range res.ConvergenceByKind {
		res.Convergence.Merge(h)
	}
	return res
}

// resetScratch empties the subject sets a Response filled. One grown large (a client catching
// up on hundreds of events) is dropped instead: clearing a map costs the room it has.
func (s *matchShard) resetScratch() {
	for _, set := range []*map[uint32]bool{&s.shown, &s.moved} {
		if len(*set) > maxScratch {
			*set = nil
		} else {
			clear(*set)
		}
	}
}

const maxScratch = 256

// releaseViews drops the response and client Response or effect held (s.resp, s.eff).
func (s *matchShard) releaseViews() { s.resp, s.eff = probe.ResponseInfo{}, effectiveView{} }

// egKey is an event (the stats event) and a client group: a cell of matchShard.byGroup.
type egKey struct {
	ev    *matchEvent
	group string
}

// count returns the shard's counts of ev (the stats event) for group; the shard lock must be held.
func (s *matchShard) count(ev *matchEvent, group string) *ProbeCounts {
	k := egKey{ev, group}
	c := s.byGroup[k]
	if c == nil {
		c = &ProbeCounts{}
		s.byGroup[k] = c
	}
	return c
}

// KindGroup is an event kind and a client group: the cell a latency is recorded in, and a key
// of MatchResults.PushLatencyByKindGroup.
type KindGroup struct{ Kind, Group string }
