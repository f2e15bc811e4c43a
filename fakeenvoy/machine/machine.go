package machine

import (
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/probe"
)

// checkMode is how resources are validated when decoded: not at all, as Envoy does
// (policy.Nack.Realistic), or as grpc-go's xDS client does (Config.GRPC).
type checkMode uint8

const (
	checkNone checkMode = iota
	checkEnvoy
	checkGRPC
)

// hashSeed is fixed for the process so that equal bytes hash equally in every client.
var hashSeed = maphash.MakeSeed()

// entry is one accepted resource: its Delta version and the decoded resource (the hash of its
// bytes for no-op and identical-resend detection, the message for probe.View, references),
// shared with other clients through the Interner.
type entry struct {
	version string
	d       *decoded
}

// refs is what the resource references; nil for a missing entry.
func (e entry) refs() []string {
	if e.d == nil {
		return nil
	}
	return e.d.refs
}

// typeState is what the client keeps per type. subscribed, version, names and res survive a
// reconnect; nonce is per stream.
type typeState struct {
	subscribed bool
	accepted   bool     // an accepted response arrived at least once
	received   bool     // a response was applied (accepted or not) at least once
	version    string   // SotW: last accepted version_info
	nonce      string   // latest nonce received on this stream
	names      []string // named types: sorted subscription (replaced, never mutated in place)
	// res is read only: it belongs to set (shared with other clients, see resset.go) or, with
	// no Interner, to the client; changes go through commit.
	res map[string]entry
	set *resSet
}

// Machine is one client's pure protocol state machine: no I/O, no clock reads, no goroutines.
// Its owner (the client) calls Start on every new stream, OnSotw, OnSotwRead or OnDelta per
// response and OnTimer when NextDeadline passes, and performs the returned Step. It is not
// safe for concurrent use: its accessors (Resource, Effective, Synced, Subscribed, LocalSecret,
// Blocked) are for its owner only, while it acts.
type Machine struct {
	node          *corev3.Node
	wire          wire // the protocol: sotwWire, deltaWire or grpcWire
	nodeFirstOnly bool
	grpc          bool          // a proxyless gRPC client: grpc-go's rules, not Envoy's
	targets       []string      // gRPC: the API listeners ("host:port") it asks for, sorted
	ift           time.Duration // the bootstrap CDS and LDS's; <= 0: no initial fetch timeout
	srcIft        time.Duration // a config source's that gives none; <= 0: none
	nack          policy.Nack
	ack           policy.Ack
	interner      *Interner // nil: private decoding

	types [numTypes]typeState
	init  initState // the init manager's state (warming.go)
	// agent serves the secrets that are not on ADS (nil: none can arrive); workload is who the
	// client is to it. local holds those secrets, requested once per client process, and
	// localPending counts the ones still being issued.
	agent        *istioagent.Agent
	workload     istioagent.Workload
	local        map[secretRef]*localSecret
	localPending int
	// localGen counts the local secrets that arrived; secretMemo is hasSecrets' last answer
	// for a list of local secrets as of localGen (see hasSecrets).
	localGen   uint32
	secretMemo secretMemo
	// secretsGained: a local secret arrived since the last rewarmSecrets. Until one does (or an
	// SDS response comes), every resource waiting for secrets still lacks one: warmSecrets
	// only puts a resource there while it does.
	secretsGained bool
	// subs are the client's SDS subscriptions (sds.go: secretSub), sorted by key, kept while
	// a cluster or listener names them: a slice, as a client has a few.
	subs         []secretSub
	deadlineMemo deadlineMemo
	started      bool
	nodeSent     bool   // node already sent on this stream
	seq          uint64 // responses over the client's life
	streamResp   int    // responses on this stream

	rng   *rand.Rand    // NACK probability; nil when unused
	delay *dist.Sampler // ACK delay; nil when none

	// drainFor is how long a removed or replaced listener drains (Config.ListenerDrain); drain
	// holds, per type (RDS, SDS), until when, the route configurations and secrets only
	// draining listeners still use (drain.go). drainedSecrets are the secrets on ADS that the
	// listeners an LDS change is removing or replacing named, until followUpSecrets reads them.
	drainFor       time.Duration
	drain          [numTypes]map[string]time.Time
	drainedSecrets []string

	// Scratch reused from one response to the next, so that a steady push allocates none of
	// it: the SotW update being handled (onSotwItemsTo), and the storage of apply's list of
	// edits and of its touched list (empty between responses).
	upd      update
	editList []namedEdit
	touched  []probe.Touched
}

// Step is what the owner must do after feeding the machine one event, in this order: call the
// Response hook (when Response), Applied (when Applied), WarmingTimeout for each of Timeouts,
// FirstFullConfig (when FirstFull), Resynced (when Resynced), wait Delay, send the requests
// (the last is the ACK/NACK of the response when Acked), call AckSent, and close the stream
// when Disconnect.
type Step struct {
	// Sotw and Delta are the requests to send, in order (one protocol's: the other is empty).
	Sotw  []*discoveryv3.DiscoveryRequest
	Delta []*discoveryv3.DeltaDiscoveryRequest
	// Response: the event was a response, described by Info.
	Response bool
	Info     probe.ResponseInfo
	// Acked: the requests hold the response's ACK or NACK (not when the client never ACKs).
	Acked bool
	// Applied: the response changed what the client holds (the Applied hook).
	Applied bool
	// Timeouts are the type URLs whose initial_fetch_timeout or warming expired.
	Timeouts []string
	// FirstFull: the client holds its first full (warmed) config.
	FirstFull bool
	// Resynced: the client holds a full config again after a reconnect, Resync after the
	// stream started (the Resynced hook). Start's step has it when the server owes the new
	// stream nothing (Delta: see wire.owed); the owner reports it once the stream connects.
	Resynced bool
	Resync   time.Duration
	// Delay is the scripted ACK delay (policy.Ack) to wait before sending.
	Delay time.Duration
	// Disconnect: the stream must be closed once the requests are sent (policy.Ack).
	Disconnect bool
	// reuse: the step is its caller's, handed to the machine again for each event
	// (OnSotwReadTo), and the requests its Sotw list held the last time are reused.
	reuse bool
}

// Requests is how many requests the step sends.
func (s *Step) Requests() int { return len(s.Sotw) + len(s.Delta) }

// reset readies a step its caller hands back for another event: a zero Step that keeps its
// Sotw list's storage, and the requests in it, for request.
func (s *Step) reset() { *s = Step{Sotw: s.Sotw[:0], reuse: true} }

// request returns a SotW request for s to append next (its fields are the caller's to set):
// when s is reused, the one its list held at that place the last time, if any.
func (s *Step) request() *discoveryv3.DiscoveryRequest {
	if n := len(s.Sotw); s.reuse && n < cap(s.Sotw) {
		if r := s.Sotw[: n+1 : n+1][n]; r != nil {
			return r
		}
	}
	return &discoveryv3.DiscoveryRequest{}
}

// Config configures a machine. The client shell builds it from its own configuration, with
// Envoy's defaults applied.
type Config struct {
	// Node goes on the requests (on every one, or the first of each stream with
	// NodeOnFirstOnly, or with GRPC: grpc-go sends it only there). Its namespace and service
	// account are the Workload unless set.
	Node            *corev3.Node
	NodeOnFirstOnly bool
	// Delta selects incremental xDS; GRPC a proxyless gRPC client (SotW, named subscriptions
	// from the GRPCTargets listeners down, grpc-go's rules; Delta must be false).
	Delta       bool
	GRPC        bool
	GRPCTargets []string
	// InitialFetchTimeout bounds how long a bootstrap subscription (CDS, LDS) waits: the
	// bootstrap's cds_config and lds_config initial_fetch_timeout; <= 0 waits forever.
	InitialFetchTimeout time.Duration
	// SourceFetchTimeout bounds how long a warming cluster or listener waits for what a config
	// source that gives no initial_fetch_timeout serves (its eds_config, RDS config_source, a
	// secret's sds_config): Envoy's ConfigSource default, 15s, whatever the bootstrap says. 0
	// takes InitialFetchTimeout; < 0 waits forever.
	SourceFetchTimeout time.Duration
	// Nack (compiled: policy.Nack.Compile) and Ack are the client's scripted behaviour.
	Nack policy.Nack
	Ack  policy.Ack
	// Seed drives the NACK probability and the ACK delay.
	Seed uint64
	// Interner shares decoded resources and accepted sets with the other clients given the
	// same one; nil decodes privately.
	Interner *Interner
	// Agent serves the secrets whose sds_config is not ADS (nil: they never arrive); Workload
	// is who the client is to it (zero: read from Node).
	Agent    *istioagent.Agent
	Workload istioagent.Workload
	// ListenerDrain is Envoy's --drain-time-s: a listener an LDS update removes or replaces
	// drains that long, and keeps its route configurations and its secrets on ADS subscribed
	// meanwhile (drain.go); <= 0 unsubscribes them at once. Proxyless gRPC clients do not drain.
	ListenerDrain time.Duration
}

// checkMode is how a machine of this configuration validates the resources it decodes.
func (c Config) checkMode() checkMode {
	switch {
	case c.GRPC:
		return checkGRPC
	case c.Nack.Realistic:
		return checkEnvoy
	}
	return checkNone
}

func New(cfg Config) (*Machine, error) {
	m := &Machine{
		node:          cfg.Node,
		wire:          sotwWire{},
		nodeFirstOnly: cfg.NodeOnFirstOnly || cfg.GRPC, // grpc-go: a stream's first request only
		grpc:          cfg.GRPC,
		ift:           cfg.InitialFetchTimeout,
		srcIft:        cfg.SourceFetchTimeout,
		nack:          cfg.Nack,
		ack:           cfg.Ack,
		interner:      cfg.Interner,
		agent:         cfg.Agent,
		workload:      cfg.Workload,
	}
	if cfg.SourceFetchTimeout == 0 {
		m.srcIft = cfg.InitialFetchTimeout
	}
	if !cfg.GRPC {
		m.drainFor = max(0, cfg.ListenerDrain)
	}
	if cfg.Workload == (istioagent.Workload{}) {
		m.workload = istioagent.WorkloadOf(cfg.Node)
	}
	switch {
	case cfg.Delta:
		m.wire = deltaWire{}
	case cfg.GRPC:
		m.wire = grpcWire{}
		m.targets = slices.Sorted(slices.Values(cfg.GRPCTargets))
		m.targets = slices.Compact(m.targets)
	}
	if m.nack.Probability > 0 {
		m.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5bd1e995))
	}
	if cfg.Ack.HasDelay() {
		s, err := dist.New(cfg.Ack.Delay, cfg.Seed^0x2545f4914f6cdd1d)
		if err != nil {
			return nil, err
		}
		m.delay = s
	}
	return m, nil
}

// Start begins a new stream: nonces are cleared and every subscription is restated in order
// with the last accepted versions (the very first stream makes the protocol's first
// subscription: CDS for Envoy, the targets' listeners for gRPC).
func (m *Machine) Start(now time.Time) Step {
	var s Step
	m.nodeSent = false
	m.streamResp = 0
	for t := range m.types {
		m.types[t].nonce = ""
	}
	if !m.started {
		m.started = true
		m.wire.first(m, now)
	}
	m.startResync(now)
	for t := range numTypes {
		if m.types[t].subscribed {
			m.wire.restate(m, &s, t)
		}
	}
	m.checkResync(&s, now) // nothing owed (Delta): the full config held all along
	return s
}

// attachNode is the node for the next request: every request carries it, or only the first of
// a stream (NodeOnFirstOnly).
func (m *Machine) attachNode() *corev3.Node {
	if m.nodeFirstOnly && m.nodeSent {
		return nil
	}
	m.nodeSent = true
	return m.node
}

// handle applies the update a wire adapter made of a response and has the adapter append its
// ACK or NACK (unless the client never ACKs), then draws the ACK delay and decides the
// disconnect.
func (m *Machine) handle(s *Step, u *update, now time.Time) {
	if u.unwatched == dropUnwatched {
		s.Info.NoOp = true
		m.finishDisconnect(s)
		return
	}
	if u.unwatched == ackUnwatched {
		s.Info.NoOp = true
	} else {
		m.apply(s, u, now)
		if !s.Info.Nacked {
			m.types[u.t].version = u.version // SotW's version_info ("" in Delta)
		}
	}
	if !m.ack.NeverAck {
		m.wire.ack(m, s, u)
		s.Acked = true
	}
	if m.delay != nil {
		s.Delay = secondsToDuration(m.delay.Float())
	}
	m.finishDisconnect(s)
}

func (m *Machine) finishDisconnect(s *Step) {
	if m.ack.DisconnectAfter > 0 && m.streamResp >= m.ack.DisconnectAfter {
		s.Disconnect = true
	}
}

// OnTimer expires initial fetch timeouts and warming at now.
func (m *Machine) OnTimer(now time.Time) Step {
	var s Step
	m.expireInit(&s, now)
	if m.deliverLocal(now) {
		m.rewarmSecrets(now)
	}
	if a, b := expire(m.init.secC, now), expire(m.init.secL, now); a || b {
		s.Timeouts = append(s.Timeouts, tSDS.url())
	}
	m.endDrains(&s, now)
	m.advance(&s, now)
	return s
}

// NextDeadline is when OnTimer must next run; zero when nothing waits.
func (m *Machine) NextDeadline() time.Time {
	next := m.init.nextDeadline()
	if d := m.nextDrainEnd(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
		next = d
	}
	if m.localPending > 0 {
		for _, l := range m.local {
			if !l.held && l.err == nil && !l.ready.IsZero() && (next.IsZero() || l.ready.Before(next)) {
				next = l.ready
			}
		}
	}
	return next
}

// Resource implements probe.View over the accepted resources (what the client received,
// warming or not).
func (m *Machine) Resource(typeURL, name string) proto.Message {
	t, ok := typeOf(typeURL)
	if !ok {
		return nil
	}
	e, ok := m.types[t].res[name]
	if !ok {
		return nil
	}
	return e.d.msg
}

// Effective returns the resource in effect, as Envoy serves traffic with it: a cluster still
// warming (waiting for its assignment) or a listener waiting for its routes has not replaced
// the copy held before it (nil when it is new).
func (m *Machine) Effective(typeURL, name string) proto.Message {
	if t, ok := typeOf(typeURL); ok && t.wildcard() && m.warming(t, name) {
		return m.init.prev(t)[name].message()
	}
	return m.Resource(typeURL, name)
}

// Synced reports whether the client holds an accepted state of typeURL (on this process).
func (m *Machine) Synced(typeURL string) bool {
	t, ok := typeOf(typeURL)
	return ok && m.types[t].accepted
}

// Subscribed reports whether the client watches resource name of typeURL (an Envoy client's
// CDS and LDS are wildcard: every name once subscribed; a gRPC client names every type).
func (m *Machine) Subscribed(typeURL, name string) bool {
	t, ok := typeOf(typeURL)
	return ok && m.subscribedName(t, name)
}

// subscribedName reports whether the client watches name of type t.
func (m *Machine) subscribedName(t rtype, name string) bool {
	ts := &m.types[t]
	if !ts.subscribed {
		return false
	}
	if !m.wire.named(t) {
		return true
	}
	_, ok := slices.BinarySearch(ts.names, name)
	return ok
}

// namesSet returns the shared set whose references are type t's subscription names (the
// same slice: the set is alive, so the slice is not another one's), nil when none is.
func (m *Machine) namesSet(t rtype) *resSet {
	names := m.types[t].names
	if len(names) == 0 {
		return nil
	}
	for p := range numTypes {
		if s := m.types[p].set; s != nil && s.hasRefs && len(s.refs) == len(names) && &s.refs[0] == &names[0] {
			return s
		}
	}
	return nil
}

// subscribeNames makes type t's subscription names (sorted, unique), the wire adapter sending
// the request that changes it.
func (m *Machine) subscribeNames(s *Step, t rtype, names []string) {
	m.wire.resubscribe(m, s, t, names)
}

// setNames records t's new subscription names and drops the held resources unsub names.
func (m *Machine) setNames(t rtype, names, unsub []string) {
	ts := &m.types[t]
	ts.subscribed = true
	ts.names = names
	if len(ts.res) == 0 {
		return
	}
	ed := newEdits(ts.res, len(unsub))
	for _, n := range unsub {
		if _, ok := ts.res[n]; ok {
			ed.del(n)
		}
	}
	m.commit(t, ed)
}

// followUp sends, after a change of type t, the request naming every resource of its
// dependent type the changed set now references (Envoy: CDS → EDS, LDS → RDS, before the ACK
// of the CDS/LDS response; gRPC also RDS → CDS).
func (m *Machine) followUp(s *Step, t rtype, now time.Time) {
	dep, ok := m.wire.dependent(t)
	if !ok {
		return
	}
	names := m.refsOf(t)
	if dep == tRDS && m.drainFor > 0 {
		names = m.draining(tRDS, names, nil, now)
	}
	m.subscribeNames(s, dep, names)
}

// refsOf is what type t's held resources reference, sorted: its shared set's (computed once
// per set, never modified) or, held privately, computed now.
func (m *Machine) refsOf(t rtype) []string {
	if set := m.types[t].set; set != nil {
		return set.refs
	}
	return setRefs(m.types[t].res)
}

func secondsToDuration(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
