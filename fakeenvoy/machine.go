package fakeenvoy

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

// The client's protocol state machine, by concern:
//
//	machine.go      the state, the events (start, a timer; a response enters through its
//	                wire adapter: onSotw, onDelta) and what the client reports of its state
//	wire.go         the wire adapters (SotW, Delta, proxyless gRPC): a response becomes one
//	                update, requests are built in the protocol's shape
//	apply.go        applying an update: decode, accept or reject, commit, follow-up requests
//	rules.go        what Envoy rejects (package validate: the checks of a resource, Envoy's
//	                and grpc-go's)
//	warming.go      the init manager: initial fetch, cluster and listener warming, full config
//	sds.go          SDS secrets and the warming on them
//	decode.go       decoding resources and reading raw protobuf
//	resset.go, intern.go   sharing decoded resources and accepted sets among a fleet's clients

// checkMode is how resources are validated when decoded: not at all, as Envoy does
// (policy.Nack.Realistic), or as grpc-go's xDS client does (ClientConfig.GRPC).
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
	version    string   // SotW: last accepted version_info
	nonce      string   // latest nonce received on this stream
	names      []string // named types: sorted subscription (replaced, never mutated in place)
	// res is read only: it belongs to set (shared with other clients, see resset.go) or, with
	// no Interner, to the client; changes go through commit.
	res map[string]entry
	set *resSet
}

// machine is a client's pure protocol state machine: no I/O, no clock reads, no goroutines.
// The shell calls start on every new stream, onSotw/onDelta per response and onTimer when
// nextDeadline passes, and performs the returned step.
type machine struct {
	node          *corev3.Node
	wire          wire // the protocol: sotwWire, deltaWire or grpcWire
	nodeFirstOnly bool
	grpc          bool          // a proxyless gRPC client: grpc-go's rules, not Envoy's
	targets       []string      // gRPC: the API listeners ("host:port") it asks for, sorted
	ift           time.Duration // <= 0: no initial fetch timeout
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
	started      bool
	nodeSent     bool   // node already sent on this stream
	seq          uint64 // responses over the client's life
	streamResp   int    // responses on this stream

	rng   *rand.Rand    // NACK probability; nil when unused
	delay *dist.Sampler // ACK delay; nil when none
}

// step is what the shell must do after feeding the machine one event, in this order: call the
// Response hook (when response), Applied (when applied), WarmingTimeout for each timeout,
// FirstFullConfig (when firstFull), wait delay, send the requests (one of them is the ACK/NACK
// of the response when acked: the last in SotW, the first in Delta), call AckSent, and close
// the stream when disconnect.
type step struct {
	sotw      []*discoveryv3.DiscoveryRequest
	delta     []*discoveryv3.DeltaDiscoveryRequest
	response  bool
	info      probe.ResponseInfo
	acked     bool
	applied   bool
	timeouts  []string
	firstFull bool
	// resynced: the client holds a full config again after a reconnect, resync after the
	// stream started (the Resynced hook).
	resynced   bool
	resync     time.Duration
	delay      time.Duration
	disconnect bool
}

func (s *step) requests() int { return len(s.sotw) + len(s.delta) }

func newMachine(cfg ClientConfig) (*machine, error) {
	m := &machine{
		node:          cfg.Node,
		wire:          sotwWire{},
		nodeFirstOnly: cfg.NodeOnFirstOnly,
		grpc:          cfg.GRPC,
		ift:           cfg.InitialFetchTimeout,
		nack:          cfg.Nack,
		ack:           cfg.Ack,
		interner:      cfg.Interner,
		agent:         cfg.Agent,
		workload:      cfg.workload,
	}
	if cfg.workload == (istioagent.Workload{}) {
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

// start begins a new stream: nonces are cleared and every subscription is restated in order
// with the last accepted versions (the very first stream makes the protocol's first
// subscription: CDS for Envoy, the targets' listeners for gRPC).
func (m *machine) start(now time.Time) step {
	var s step
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
	return s
}

// attachNode is the node for the next request: every request carries it, or only the first of
// a stream (NodeOnFirstOnly).
func (m *machine) attachNode() *corev3.Node {
	if m.nodeFirstOnly && m.nodeSent {
		return nil
	}
	m.nodeSent = true
	return m.node
}

// handle applies the update a wire adapter made of a response and has the adapter append its
// ACK or NACK (unless the client never ACKs), then draws the ACK delay and decides the
// disconnect.
func (m *machine) handle(s *step, u *update, now time.Time) {
	if u.unwatched == dropUnwatched {
		s.info.NoOp = true
		m.finishDisconnect(s)
		return
	}
	if u.unwatched == ackUnwatched {
		s.info.NoOp = true
	} else {
		m.apply(s, u, now)
		if !s.info.Nacked {
			m.types[u.t].version = u.version // SotW's version_info ("" in Delta)
		}
	}
	if !m.ack.NeverAck {
		m.wire.ack(m, s, u)
		s.acked = true
	}
	if m.delay != nil {
		s.delay = secondsToDuration(m.delay.Float())
	}
	m.finishDisconnect(s)
}

func (m *machine) finishDisconnect(s *step) {
	if m.ack.DisconnectAfter > 0 && m.streamResp >= m.ack.DisconnectAfter {
		s.disconnect = true
	}
}

// onTimer expires initial fetch timeouts and warming at now.
func (m *machine) onTimer(now time.Time) step {
	var s step
	m.expireInit(&s, now)
	if m.deliverLocal(now) {
		m.rewarmSecrets()
	}
	if a, b := expire(m.init.secC, now), expire(m.init.secL, now); a || b {
		s.timeouts = append(s.timeouts, tSDS.url())
	}
	m.advance(&s, now)
	return s
}

// nextDeadline is when onTimer must next run; zero when nothing waits.
func (m *machine) nextDeadline() time.Time {
	next := m.init.nextDeadline()
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
func (m *machine) Resource(typeURL, name string) proto.Message {
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
func (m *machine) Effective(typeURL, name string) proto.Message {
	if t, ok := typeOf(typeURL); ok && t.wildcard() && m.warming(t, name) {
		return m.init.prev(t)[name].message()
	}
	return m.Resource(typeURL, name)
}

// synced reports whether the client holds an accepted state of typeURL (on this process).
func (m *machine) synced(typeURL string) bool {
	t, ok := typeOf(typeURL)
	return ok && m.types[t].accepted
}

// subscribedName reports whether the client watches name of type t.
func (m *machine) subscribedName(t rtype, name string) bool {
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

// subscribeNames makes type t's subscription names (sorted, unique), the wire adapter sending
// the request that changes it.
func (m *machine) subscribeNames(s *step, t rtype, names []string) {
	m.wire.resubscribe(m, s, t, names)
}

// setNames records t's new subscription names and drops the held resources unsub names.
func (m *machine) setNames(t rtype, names, unsub []string) {
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
func (m *machine) followUp(s *step, t rtype) {
	dep, ok := m.wire.dependent(t)
	if !ok {
		return
	}
	var names []string
	if set := m.types[t].set; set != nil {
		names = set.refs // shared, computed once per set
	} else {
		names = setRefs(m.types[t].res)
	}
	m.subscribeNames(s, dep, names)
}

func secondsToDuration(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
