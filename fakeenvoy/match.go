package fakeenvoy

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/probe"
)

// Probe matching: when is a push observed?
//
// An expectation (a simulator event's predicates) is observed by a client at the first accepted
// response that satisfies all three:
//   - it was received after the expectation was registered with Expect;
//   - its type is one the expectation's predicates read (probe.Expectation.TypeURLs), so an
//     unrelated response never counts;
//   - after applying it, every predicate holds in the client's view.
//
// The push latency is that response's receive time (ResponseInfo.Recv) minus T0; the ACK
// latency is the time the client wrote the ACK for the same response (same Seq) minus T0.
//
// No push can be missed if the caller registers the expectation BEFORE it applies the change to
// the source: no response can carry a change that does not exist yet, so every response carrying
// it is received after registration. T0 — the moment the change was applied — may be unknown at
// registration: leave Expectation.T0 zero and call SetT0 on the returned handle right after
// applying. Observations that arrive before SetT0 are counted at once and their latencies
// computed when T0 is set; a response received before T0 (T0 taken late) counts as latency 0 and
// is reported in EventResult.EarlyReceives.
//
// The caller must register only real changes: an expectation that already holds at every
// client is matched by the next response of its type, whatever it carries.
//
// Registration is lazy per client: Expect appends to an append-only log, and each client claims
// the new entries on its own goroutine at its next hook call (every hook claims). Reach by group
// and namespace is fixed per client; Reach.WatchersOnly is decided with Client.Subscribed when
// the client claims the entry — its subscriptions as of its first hook after registration. A
// newly claimed expectation supersedes the client's unobserved ones it conflicts with
// (probe.Expectation.Supersedes): those are counted as superseded for that client.
//
// Results counts, per event, the clients that observed it, superseded it, and missed it (in
// reach but not observed when Results is called — call Drain first). A WatchersOnly event that a
// client in its groups/namespaces never claimed (the client had no hook call since) cannot be
// classified without the client's subscriptions: it is counted as Unresolved, never dropped.

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
// Hooks; the fleet tees it with the Observer.
type Matcher struct {
	cfg    MatcherConfig
	logMu  sync.RWMutex
	log    []*matchEvent
	logLen atomic.Int64
	shards []matchShard
}

var _ Hooks = (*Matcher)(nil)

// matchee is the part of *Client the matcher reads (an interface so tests can drive the
// matcher with synthetic clients).
type matchee interface {
	Index() int
	Group() string
	Namespace() string
	Subscribed(typeURL, name string) bool
}

var _ matchee = (*Client)(nil)

type matchEvent struct {
	idx   int
	exp   probe.Expectation
	types []string

	t0    atomic.Int64 // Unix ns; 0 while unknown
	regAt int64        // Unix ns of Expect: a response received earlier cannot observe the event

	observed, superseded, acked, earlyRecv atomic.Int64
	// Latency statistics in ns, updated once T0 is known.
	latCount, latSum, latMin, latMax atomic.Int64
	ackMax                           atomic.Int64

	mu    sync.Mutex
	early []matchEarly    // observations before T0 was known
	lat   []time.Duration // every push latency, with KeepLatencies
}

type matchEarly struct {
	at  time.Time
	ack bool
}

type matchShard struct {
	mu      sync.Mutex
	clients map[int]*matchClient
	push    map[string]*hdr.PackedHistogram // by kind, µs
	ack     map[string]*hdr.PackedHistogram
	_       [64]byte
}

type matchClient struct {
	group, ns string
	cursor    int // next log entry to claim
	pending   []*matchEvent
	awaiting  []matchAwait
}

// matchAwait is an observed expectation waiting for the ACK of the response that showed it.
type matchAwait struct {
	ev  *matchEvent
	seq uint64
}

// NewMatcher returns a matcher with no expectations.
func NewMatcher(cfg MatcherConfig) *Matcher {
	cfg = cfg.withDefaults()
	m := &Matcher{cfg: cfg, shards: make([]matchShard, cfg.Shards)}
	for i := range m.shards {
		m.shards[i].clients = make(map[int]*matchClient)
		m.shards[i].push = make(map[string]*hdr.PackedHistogram)
		m.shards[i].ack = make(map[string]*hdr.PackedHistogram)
	}
	return m
}

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
	s := m.shard(index)
	s.mu.Lock()
	if s.clients[index] == nil {
		s.clients[index] = &matchClient{group: group, ns: namespace, cursor: int(m.logLen.Load())}
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
		return nil, fmt.Errorf("fakeenvoy: expect: %w", err)
	}
	ev := &matchEvent{exp: e, types: e.TypeURLs(), regAt: m.cfg.Now().UnixNano()}
	ev.latMin.Store(math.MaxInt64)
	if !e.T0.IsZero() {
		ev.t0.Store(e.T0.UnixNano())
	}
	m.logMu.Lock()
	ev.idx = len(m.log)
	m.log = append(m.log, ev)
	m.logLen.Store(int64(len(m.log)))
	m.logMu.Unlock()
	return &Expected{m: m, ev: ev}, nil
}

// SetT0 sets the event's T0 when Expect was called without one. It fails if T0 is already
// set or t is zero.
func (h *Expected) SetT0(t time.Time) error {
	m := h.m
	if t.IsZero() {
		return fmt.Errorf("fakeenvoy: event %d: SetT0 with a zero time", h.ev.exp.EventID)
	}
	ev := h.ev
	ev.mu.Lock()
	if ev.t0.Load() != 0 {
		ev.mu.Unlock()
		return fmt.Errorf("fakeenvoy: event %d: T0 already set", ev.exp.EventID)
	}
	ev.t0.Store(t.UnixNano())
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
		m.record(s, ev, o.at.Sub(t), o.ack)
	}
	s.mu.Unlock()
	return nil
}

// EventID returns the registered event's id.
func (h *Expected) EventID() uint64 { return h.ev.exp.EventID }

// client returns c's state, tracking it on first sight; the shard lock must be held.
func (m *Matcher) client(s *matchShard, c matchee) *matchClient {
	cl := s.clients[c.Index()]
	if cl == nil {
		cl = &matchClient{group: c.Group(), ns: c.Namespace(), cursor: int(m.logLen.Load())}
		s.clients[c.Index()] = cl
	}
	return cl
}

// claim moves the expectations registered since the client's last hook into its pending list;
// the shard lock must be held.
func (m *Matcher) claim(s *matchShard, c matchee) *matchClient {
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
		if !ev.exp.Reach.Includes(cl.group, cl.ns) {
			continue
		}
		if ev.exp.Reach.WatchersOnly && !watches(c, ev.exp) {
			continue
		}
		cl.pending = slices.DeleteFunc(cl.pending, func(p *matchEvent) bool {
			if ev.exp.Supersedes(p.exp) {
				p.superseded.Add(1)
				return true
			}
			return false
		})
		cl.pending = append(cl.pending, ev)
	}
	return cl
}

func watches(c matchee, e probe.Expectation) bool {
	for _, p := range e.All {
		if !c.Subscribed(p.Op.TypeURL(), p.Resource) {
			return false
		}
	}
	return true
}

// observe counts one observation (push, or its ACK) and records its latency once T0 is known;
// the shard lock must be held.
func (m *Matcher) observe(s *matchShard, ev *matchEvent, at time.Time, ack bool) {
	if ack {
		ev.acked.Add(1)
	} else {
		ev.observed.Add(1)
	}
	t0 := ev.t0.Load()
	if t0 == 0 {
		ev.mu.Lock()
		if t0 = ev.t0.Load(); t0 == 0 {
			ev.early = append(ev.early, matchEarly{at: at, ack: ack})
			ev.mu.Unlock()
			return
		}
		ev.mu.Unlock()
	}
	m.record(s, ev, time.Duration(at.UnixNano()-t0), ack)
}

// record records latency d of ev in s's histograms; the shard lock must be held.
func (m *Matcher) record(s *matchShard, ev *matchEvent, d time.Duration, ack bool) {
	if d < 0 {
		if !ack {
			ev.earlyRecv.Add(1)
		}
		d = 0
	}
	hists := s.push
	if ack {
		hists = s.ack
	}
	h := hists[ev.exp.Kind]
	if h == nil {
		h = hdr.NewPacked(histLowest, histHighest, histDigits)
		hists[ev.exp.Kind] = h
	}
	us := max(min(d.Microseconds(), histHighest), histLowest)
	_ = h.RecordValue(us)
	if ack {
		casMax(&ev.ackMax, int64(d))
		return
	}
	ev.latCount.Add(1)
	ev.latSum.Add(int64(d))
	casMax(&ev.latMax, int64(d))
	casMin(&ev.latMin, int64(d))
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

// Hooks. Every hook claims new expectations; Applied matches, AckSent records ACK latencies.

// Connected implements Hooks.
func (m *Matcher) Connected(c *Client, _ time.Time, _ int) { m.touch(c) }

// Disconnected implements Hooks: ACKs awaited on the dead stream will never come.
func (m *Matcher) Disconnected(c *Client, _ time.Time, _ error) { m.disconnected1(c) }

func (m *Matcher) disconnected1(c matchee) {
	s := m.shard(c.Index())
	s.mu.Lock()
	cl := m.claim(s, c)
	cl.awaiting = cl.awaiting[:0]
	s.mu.Unlock()
}

// ConnectFailed implements Hooks.
func (m *Matcher) ConnectFailed(c *Client, _ time.Time, _ error) { m.touch(c) }

// Response implements Hooks.
func (m *Matcher) Response(c *Client, _ ResponseInfo) { m.touch(c) }

// WarmingTimeout implements Hooks.
func (m *Matcher) WarmingTimeout(c *Client, _ string, _ time.Time) { m.touch(c) }

// FirstFullConfig implements Hooks.
func (m *Matcher) FirstFullConfig(c *Client, _ time.Time) { m.touch(c) }

func (m *Matcher) touch(c matchee) {
	s := m.shard(c.Index())
	s.mu.Lock()
	m.claim(s, c)
	s.mu.Unlock()
}

// Applied implements Hooks: pending expectations of r's type are evaluated against view.
func (m *Matcher) Applied(c *Client, r ResponseInfo, view probe.View) { m.applied1(c, r, view) }

func (m *Matcher) applied1(c matchee, r ResponseInfo, view probe.View) {
	s := m.shard(c.Index())
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := m.claim(s, c)
	cl.pending = slices.DeleteFunc(cl.pending, func(ev *matchEvent) bool {
		// A response received before the event was registered was not caused by it, even if
		// the predicates hold after it (a flap's restore overtaking an unseen removal).
		if r.Recv.UnixNano() < ev.regAt || !slices.Contains(ev.types, r.TypeURL) || !ev.exp.Holds(view) {
			return false
		}
		m.observe(s, ev, r.Recv, false)
		cl.awaiting = append(cl.awaiting, matchAwait{ev: ev, seq: r.Seq})
		return true
	})
}

// AckSent implements Hooks.
func (m *Matcher) AckSent(c *Client, r ResponseInfo, at time.Time) { m.ackSent1(c, r, at) }

func (m *Matcher) ackSent1(c matchee, r ResponseInfo, at time.Time) {
	s := m.shard(c.Index())
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := m.claim(s, c)
	cl.awaiting = slices.DeleteFunc(cl.awaiting, func(a matchAwait) bool {
		if a.seq == r.Seq {
			m.observe(s, a.ev, at, true)
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
	// Reached = Observed + Superseded + Missed: the clients in the event's reach.
	Reached    int
	Observed   int
	Superseded int
	// Missed counts clients in reach that had not observed the event when Results was called.
	Missed int
	// Unresolved counts WatchersOnly clients that never claimed the event (see the package
	// comment); they are not in Reached.
	Unresolved int
	// Acked counts observations whose ACK was sent.
	Acked int
	// EarlyReceives counts observations received before T0 (recorded as latency 0).
	EarlyReceives int
	// Convergence is the largest push latency over the clients that observed the event (the
	// convergence time when Missed is 0); AckConvergence the same up to the ACK.
	Convergence    time.Duration
	AckConvergence time.Duration
	MinLatency     time.Duration
	MeanLatency    time.Duration
	// Latencies lists every client's push latency (MatcherConfig.KeepLatencies), sorted.
	Latencies []time.Duration
}

// Complete reports whether every client in reach observed or superseded the event.
func (r EventResult) Complete() bool { return r.Missed == 0 && r.Unresolved == 0 }

// MatchResults is the matcher's state at one moment.
type MatchResults struct {
	Events []EventResult // in registration order
	// PushLatency and AckLatency by event kind, and over every kind, in µs.
	PushLatency    map[string]*hdr.Histogram
	AckLatency     map[string]*hdr.Histogram
	PushLatencyAll *hdr.Histogram
	AckLatencyAll  *hdr.Histogram
	// Convergence holds each complete event's convergence time, in µs.
	Convergence *hdr.Histogram
	// Totals over events.
	Observed, Superseded, Missed, Unresolved int
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

// outstanding counts, per event index, the clients still pending (missed so far) and the
// WatchersOnly claims nobody made; every shard is locked in turn.
func (m *Matcher) outstanding() (missed, unresolved []int) {
	n := int(m.logLen.Load())
	m.logMu.RLock()
	log := m.log[:n]
	m.logMu.RUnlock()
	missed = make([]int, n)
	unresolved = make([]int, n)
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for _, cl := range s.clients {
			for _, ev := range cl.pending {
				if ev.idx < n {
					missed[ev.idx]++
				}
			}
			for _, ev := range log[min(cl.cursor, n):] {
				if !ev.exp.Reach.Includes(cl.group, cl.ns) {
					continue
				}
				if ev.exp.Reach.WatchersOnly {
					unresolved[ev.idx]++
				} else {
					missed[ev.idx]++
				}
			}
		}
		s.mu.Unlock()
	}
	return missed, unresolved
}

// Outstanding returns how many client×event observations are still awaited (pending
// claims and unclaimed entries in reach; WatchersOnly entries nobody claimed are not awaited).
func (m *Matcher) Outstanding() int {
	missed, _ := m.outstanding()
	n := 0
	for _, v := range missed {
		n += v
	}
	return n
}

// Drain waits until no observation is outstanding or ctx is done, polling every poll (default
// 10ms), and returns what is still outstanding (0, nil when everything was observed).
func (m *Matcher) Drain(ctx context.Context, poll time.Duration) (int, error) {
	if poll <= 0 {
		poll = 10 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		n := m.Outstanding()
		if n == 0 {
			return 0, nil
		}
		select {
		case <-ctx.Done():
			return m.Outstanding(), ctx.Err()
		case <-t.C:
		}
	}
}

// Results returns every event's result and the merged histograms. Clients not yet observing an
// event count as missed: call it after Drain (or after the fleet stopped).
func (m *Matcher) Results() MatchResults {
	missed, unresolved := m.outstanding()
	res := MatchResults{
		PushLatency:    map[string]*hdr.Histogram{},
		AckLatency:     map[string]*hdr.Histogram{},
		PushLatencyAll: NewLatencyHistogram(),
		AckLatencyAll:  NewLatencyHistogram(),
		Convergence:    NewLatencyHistogram(),
	}
	merge := func(dst map[string]*hdr.Histogram, all *hdr.Histogram, src map[string]*hdr.PackedHistogram) {
		for kind, p := range src {
			h := dst[kind]
			if h == nil {
				h = NewLatencyHistogram()
				dst[kind] = h
			}
			p.MergeInto(h)
			p.MergeInto(all)
		}
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		merge(res.PushLatency, res.PushLatencyAll, s.push)
		merge(res.AckLatency, res.AckLatencyAll, s.ack)
		s.mu.Unlock()
	}
	m.logMu.RLock()
	log := m.log[:len(missed)]
	m.logMu.RUnlock()
	res.Events = make([]EventResult, len(log))
	for i, ev := range log {
		r := EventResult{
			EventID:       ev.exp.EventID,
			Kind:          ev.exp.Kind,
			Scheduled:     ev.exp.Scheduled,
			Observed:      int(ev.observed.Load()),
			Superseded:    int(ev.superseded.Load()),
			Missed:        missed[i],
			Unresolved:    unresolved[i],
			Acked:         int(ev.acked.Load()),
			EarlyReceives: int(ev.earlyRecv.Load()),
		}
		if t0 := ev.t0.Load(); t0 != 0 {
			r.T0 = time.Unix(0, t0).In(time.UTC)
		}
		r.Reached = r.Observed + r.Superseded + r.Missed
		if n := ev.latCount.Load(); n > 0 {
			r.Convergence = time.Duration(ev.latMax.Load())
			r.MinLatency = time.Duration(ev.latMin.Load())
			r.MeanLatency = time.Duration(ev.latSum.Load() / n)
			if r.Complete() && int(n) == r.Observed {
				recordDuration(res.Convergence, r.Convergence)
			}
		}
		r.AckConvergence = time.Duration(ev.ackMax.Load())
		if m.cfg.KeepLatencies {
			ev.mu.Lock()
			r.Latencies = slices.Clone(ev.lat)
			ev.mu.Unlock()
			slices.Sort(r.Latencies)
		}
		res.Observed += r.Observed
		res.Superseded += r.Superseded
		res.Missed += r.Missed
		res.Unresolved += r.Unresolved
		res.Events[i] = r
	}
	return res
}
