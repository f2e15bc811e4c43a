package fakeenvoy

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/probe"
)

// The types a client watches, in Envoy's subscription order; SDS (secrets referenced by TLS
// transport sockets) is subscribed when a cluster or listener first names a secret.
const (
	tCDS = iota
	tEDS
	tLDS
	tRDS
	tSDS
	numTypes
)

var typeURLs = [numTypes]string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType, resource.SecretType}

func typeIndex(url string) int {
	for i, u := range typeURLs {
		if u == url {
			return i
		}
	}
	return -1
}

// wildcard types hold the state of the world: a resource missing from a SotW response is
// deleted, and they are subscribed without names (Envoy; a gRPC client names them, see named).
func wildcard(t int) bool { return t == tCDS || t == tLDS }

// checkMode is how resources are validated when decoded: not at all, as Envoy does
// (NackPolicy.Realistic), or as grpc-go's xDS client does (ClientConfig.GRPC).
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
	names      []string // EDS/RDS: sorted subscription (replaced, never mutated in place)
	// res is read only: it belongs to set (shared with other clients, see resset.go) or, with
	// no Interner, to the client; changes go through commit.
	res map[string]entry
	set *resSet
}

// phase is the client's initialization, as Envoy's init managers run it:
//
//	phaseCDS:       CDS requested, waiting for its first response (or initial_fetch_timeout)
//	phaseClusters:  waiting until every cluster has warmed (fresh ClusterLoadAssignment) or
//	                timed out; then LDS is requested
//	phaseLDS:       waiting for the first LDS response (or timeout)
//	phaseListeners: waiting until every listener has its routes (or timed out)
//	phaseDone:      initialized
type phase uint8

const (
	phaseCDS phase = iota
	phaseClusters
	phaseLDS
	phaseListeners
	phaseDone
)

// machine is a client's pure protocol state machine: no I/O, no clock reads, no goroutines.
// The shell calls start on every new stream, onSotw/onDelta per response and onTimer when
// nextDeadline passes, and performs the returned step.
type machine struct {
	node          *corev3.Node
	delta         bool
	nodeFirstOnly bool
	grpc          bool          // a proxyless gRPC client (see grpc.go)
	targets       []string      // gRPC: the API listeners ("host:port") it asks for, sorted
	ift           time.Duration // <= 0: no initial fetch timeout
	nack          NackPolicy
	ack           AckPolicy
	interner      *Interner // nil: private decoding

	types        [numTypes]typeState
	warmC, warmL map[string]time.Time // warming clusters / listeners → deadline (zero: none)
	// prevC and prevL hold, per warming cluster / listener, the copy in effect while the new
	// one warms (nil: none, the resource is new). Envoy keeps serving that copy until warming
	// ends, so it is what Effective returns.
	prevC, prevL map[string]*decoded
	// secC and secL are the clusters / listeners waiting for the SDS secrets their transport
	// sockets name (→ deadline, zero: none), as Envoy's SDS init targets; a resource is
	// warming while it is in warmC/warmL or secC/secL.
	secC, secL map[string]time.Time
	// agent serves the secrets that are not on ADS (nil: none can arrive); workload is who the
	// client is to it. local holds those secrets, requested once per client process, and
	// localPending counts the ones still being issued.
	agent         *Agent
	workload      workload
	local         map[secretRef]*localSecret
	localPending  int
	phase         phase
	phaseDeadline time.Time
	started       bool
	nodeSent      bool // node already sent on this stream
	fullDone      bool
	// resyncing: a stream after the first full config started at resyncAt; the types in
	// resyncWait have not answered on it yet. Once all have and the configuration is complete,
	// the client holds a full config again (step.resynced).
	resyncing  bool
	resyncAt   time.Time
	resyncWait uint32
	seq        uint64 // responses over the client's life
	streamResp int    // responses on this stream

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
		delta:         cfg.Delta,
		nodeFirstOnly: cfg.NodeOnFirstOnly,
		grpc:          cfg.GRPC,
		ift:           cfg.InitialFetchTimeout,
		nack:          cfg.Nack,
		ack:           cfg.Ack,
		interner:      cfg.Interner,
		agent:         cfg.Agent,
		workload:      cfg.workload,
	}
	if cfg.workload == (workload{}) {
		m.workload = workloadOf(cfg.Node)
	}
	if m.grpc {
		m.targets = slices.Sorted(slices.Values(cfg.GRPCTargets))
		m.targets = slices.Compact(m.targets)
	}
	if m.nack.Probability > 0 {
		m.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5bd1e995))
	}
	if cfg.Ack.hasDelay() {
		s, err := dist.New(cfg.Ack.Delay, cfg.Seed^0x2545f4914f6cdd1d)
		if err != nil {
			return nil, err
		}
		m.delay = s
	}
	return m, nil
}

// deadline returns when a bootstrap subscription (CDS, LDS) that starts waiting at now times
// out.
func (m *machine) deadline(now time.Time) time.Time {
	if m.ift <= 0 {
		return time.Time{}
	}
	return now.Add(m.ift)
}

// deadlineFor returns when a cluster or listener d that starts warming at now times out: after
// the initial_fetch_timeout of the config source it names (0s waits forever, as in Envoy), or
// after the client's default when that config source gives none.
func (m *machine) deadlineFor(now time.Time, d *decoded) time.Time {
	if d == nil || !d.hasFetch {
		return m.deadline(now)
	}
	if d.fetchTimeout <= 0 {
		return time.Time{}
	}
	return now.Add(d.fetchTimeout)
}

// start begins a new stream: nonces are cleared and every subscription is restated in order
// with the last accepted versions (the very first stream subscribes to CDS only).
func (m *machine) start(now time.Time) step {
	var s step
	m.nodeSent = false
	m.streamResp = 0
	for t := range m.types {
		m.types[t].nonce = ""
	}
	if !m.started {
		m.started = true
		if m.grpc {
			// grpc-go starts from its targets' listeners and has no init phases.
			m.types[tLDS].subscribed = true
			m.types[tLDS].names = m.targets
			m.phase = phaseDone
		} else {
			m.types[tCDS].subscribed = true
			m.phaseDeadline = m.deadline(now)
		}
	}
	m.resyncing, m.resyncWait = m.fullDone, 0
	if m.resyncing {
		m.resyncAt = now
		for t := range m.types {
			if ts := &m.types[t]; ts.subscribed && (!m.named(t) || len(ts.names) > 0) {
				m.resyncWait |= 1 << t
			}
		}
	}
	for t := range m.types {
		if !m.types[t].subscribed {
			continue
		}
		if m.delta {
			ts := &m.types[t]
			r := m.deltaReq(t)
			if !wildcard(t) {
				r.ResourceNamesSubscribe = ts.names
			}
			if len(ts.res) > 0 {
				r.InitialResourceVersions = make(map[string]string, len(ts.res))
				for name, e := range ts.res {
					if e.version != "" {
						r.InitialResourceVersions[name] = e.version
					}
				}
			}
			s.delta = append(s.delta, r)
		} else {
			s.sotw = append(s.sotw, m.sotwReq(t, nil))
		}
	}
	return s
}

func (m *machine) attachNode() *corev3.Node {
	if m.nodeFirstOnly && m.nodeSent {
		return nil
	}
	m.nodeSent = true
	return m.node
}

func (m *machine) sotwReq(t int, nack *status.Status) *discoveryv3.DiscoveryRequest {
	ts := &m.types[t]
	r := &discoveryv3.DiscoveryRequest{
		VersionInfo:   ts.version,
		TypeUrl:       typeURLs[t],
		ResponseNonce: ts.nonce,
		ErrorDetail:   nack,
		Node:          m.attachNode(),
	}
	if m.named(t) {
		r.ResourceNames = ts.names
	}
	return r
}

// named reports whether type t is subscribed by name (every type of a gRPC client).
func (m *machine) named(t int) bool { return m.grpc || !wildcard(t) }

// deltaReq starts a Delta subscription request; like Envoy, only ACKs and NACKs carry a nonce.
func (m *machine) deltaReq(t int) *discoveryv3.DeltaDiscoveryRequest {
	return &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURLs[t], Node: m.attachNode()}
}

func nackStatus(msg string) *status.Status {
	return &status.Status{Code: int32(codes.Internal), Message: msg}
}

// item is one resource of a response, before it is applied.
//
// A SotW response's items are built by the codec, while the bytes are still in the transport's
// buffer (codec.readSotw), or by onSotw from the response's Anys.
type item struct {
	name    string // field 1 of the resource (see readName); SotW: "" when !nameOK
	raw     []byte // nil when hit holds the bytes
	version string
	typeURL string // SotW: the Any's type URL
	size    int    // bytes of the resource
	nameOK  bool
	hashed  bool // hash is already set
	hash    uint64
	hit     *decoded // the interned resource with these bytes, when the codec found it
	d       *decoded // nil when identical to the held resource
	err     error
}

// onSotw handles one SotW DiscoveryResponse received at recv.
func (m *machine) onSotw(r *discoveryv3.DiscoveryResponse, recv time.Time) step {
	res := make([]item, len(r.GetResources()))
	for i, a := range r.GetResources() {
		res[i] = item{typeURL: a.GetTypeUrl(), size: len(a.GetValue()), raw: a.GetValue()}
		res[i].name, res[i].nameOK = readName(a.GetValue())
	}
	return m.onSotwRead(r, res, recv)
}

// onSotwRead handles a SotW response received at recv whose resources are res (read by the
// codec: r's own are ignored). It owns res.
func (m *machine) onSotwRead(r *discoveryv3.DiscoveryResponse, res []item, recv time.Time) step {
	m.seq++
	m.streamResp++
	s := step{response: true}
	s.info = probe.ResponseInfo{Seq: m.seq, TypeURL: r.GetTypeUrl(), Version: r.GetVersionInfo(), Nonce: r.GetNonce(), Recv: recv, Resources: len(res)}
	for i := range res {
		s.info.Bytes += res[i].size
	}
	t := typeIndex(r.GetTypeUrl())
	if t >= 0 {
		m.types[t].nonce = r.GetNonce()
	}
	if t < 0 || !m.types[t].subscribed {
		// Envoy with no watch for the type: an empty response is ACKed with its version, one
		// with resources is answered with the old version and the new nonce, no error_detail.
		req := &discoveryv3.DiscoveryRequest{TypeUrl: r.GetTypeUrl(), ResponseNonce: r.GetNonce(), Node: m.attachNode()}
		if t >= 0 {
			if len(res) == 0 {
				m.types[t].version = r.GetVersionInfo()
			}
			req.VersionInfo = m.types[t].version
		} else if len(res) == 0 {
			req.VersionInfo = r.GetVersionInfo()
		}
		s.info.NoOp = true
		m.finishAck(&s, req, nil)
		return s
	}
	var respErr error
	items := res
	for i := range res {
		w := &res[i]
		if w.typeURL != r.GetTypeUrl() {
			respErr = fmt.Errorf("resource type %s does not match the response type %s", w.typeURL, r.GetTypeUrl())
		} else if !w.nameOK {
			respErr = fmt.Errorf("%s resource %d does not decode", shortType(r.GetTypeUrl()), i)
		}
		if respErr != nil {
			items = res[:i]
			break
		}
	}
	m.process(&s, t, items, nil, respErr, recv)
	var nack *status.Status
	if s.info.Nacked {
		nack = nackStatus(s.info.Error)
	} else {
		m.types[t].version = r.GetVersionInfo()
	}
	m.finishAck(&s, m.sotwReq(t, nack), nil)
	return s
}

// onDelta handles one DeltaDiscoveryResponse received at recv.
func (m *machine) onDelta(r *discoveryv3.DeltaDiscoveryResponse, recv time.Time) step {
	m.seq++
	m.streamResp++
	s := step{response: true}
	s.info = probe.ResponseInfo{Seq: m.seq, TypeURL: r.GetTypeUrl(), Nonce: r.GetNonce(), Delta: true, Recv: recv, Resources: len(r.GetResources())}
	for _, res := range r.GetResources() {
		s.info.Bytes += len(res.GetResource().GetValue())
	}
	t := typeIndex(r.GetTypeUrl())
	if t < 0 || !m.types[t].subscribed {
		// Envoy drops a Delta response for a type it has no subscription for, unanswered.
		s.info.NoOp = true
		m.finishDisconnect(&s)
		return s
	}
	m.types[t].nonce = r.GetNonce()
	var respErr error
	items := make([]item, 0, len(r.GetResources()))
	for _, res := range r.GetResources() {
		a := res.GetResource()
		if a == nil {
			continue // a TTL heartbeat: nothing to apply
		}
		if a.GetTypeUrl() != r.GetTypeUrl() {
			respErr = fmt.Errorf("resource %s type %s does not match the response type %s", res.GetName(), a.GetTypeUrl(), r.GetTypeUrl())
			break
		}
		name := res.GetName()
		if name == "" {
			name, _ = readName(a.GetValue())
		}
		items = append(items, item{name: name, raw: a.GetValue(), version: res.GetVersion()})
	}
	m.process(&s, t, items, r.GetRemovedResources(), respErr, recv)
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURLs[t], ResponseNonce: r.GetNonce(), Node: m.attachNode()}
	if s.info.Nacked {
		req.ErrorDetail = nackStatus(s.info.Error)
	}
	m.finishAck(&s, nil, req)
	return s
}

// finishAck appends the ACK/NACK (unless the client never ACKs), then the delay and the
// disconnect decision.
func (m *machine) finishAck(s *step, sotw *discoveryv3.DiscoveryRequest, delta *discoveryv3.DeltaDiscoveryRequest) {
	if !m.ack.NeverAck {
		if sotw != nil {
			s.sotw = append(s.sotw, sotw)
		}
		if delta != nil {
			// Envoy's Delta mux sends every ACK before plain updates (NewGrpcMuxImpl::
			// whoWantsToSendDiscoveryRequest): the ACK goes ahead of the subscriptions this
			// response caused. SotW's legacy mux sends the EDS/RDS request first.
			s.delta = append([]*discoveryv3.DeltaDiscoveryRequest{delta}, s.delta...)
		}
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

// process validates and applies one response's resources of type t (SotW when removed is nil
// and t is wildcard: missing resources are deleted) and fills s with the decision, follow-up
// requests and init progress. The ACK/NACK itself is appended by the caller.
func (m *machine) process(s *step, t int, items []item, removed []string, respErr error, now time.Time) {
	ts := &m.types[t]
	s.info.Fresh = !ts.accepted
	sotwFull := !m.delta && wildcard(t) // grpc-go too: a named LDS/CDS resource left out is gone
	realistic := m.nack.Realistic
	mode := checkNone
	switch {
	case m.grpc:
		mode = checkGRPC
	case realistic:
		mode = checkEnvoy
	}

	// Response-level checks: they reject everything.
	if respErr == nil && realistic {
		seen := make(map[string]struct{}, len(items))
		for _, it := range items {
			if _, dup := seen[it.name]; dup {
				respErr = fmt.Errorf("duplicate %s %q in one response", kindName(t), it.name)
				break
			}
			seen[it.name] = struct{}{}
		}
		if respErr == nil {
			for _, name := range removed {
				if _, both := seen[name]; both {
					respErr = fmt.Errorf("%s %q is both added and removed", kindName(t), name)
					break
				}
			}
		}
	}
	if respErr == nil && m.nack.EveryN > 0 && m.seq%uint64(m.nack.EveryN) == 0 {
		respErr = fmt.Errorf("rejected by policy: every %d responses", m.nack.EveryN)
	}
	if m.rng != nil && m.rng.Float64() < m.nack.Probability && respErr == nil {
		respErr = fmt.Errorf("rejected by policy: probability %g", m.nack.Probability)
	}

	// Per-resource decoding and checks.
	var itemErrs []string
	var present map[string]struct{} // SotW CDS/LDS: what the response holds
	if sotwFull {
		present = make(map[string]struct{}, len(items))
	}
	for i := range items {
		it := &items[i]
		if sotwFull {
			present[it.name] = struct{}{}
		}
		if m.named(t) && !m.subscribedName(t, it.name) {
			it.err = errIgnored // unrequested names: ignored, as Envoy and grpc-go do
			continue
		}
		if !it.hashed {
			it.hash = maphash.Bytes(hashSeed, it.raw)
		}
		if held, ok := ts.res[it.name]; ok && held.d.hash == it.hash {
			continue // identical: skipped
		}
		s.info.Changed++
		if m.nack.matchName(it.name) {
			it.err = fmt.Errorf("rejected by policy: name matches %q", m.nack.NamePattern)
		} else if it.hit != nil {
			it.d = it.hit
		} else {
			it.d, it.err = m.interner.decode(t, mode, it.hash, it.name, it.raw)
		}
		if it.err == nil && mode == checkEnvoy && len(it.d.secrets) > 0 {
			if err := m.secretSourceErr(it.d); err != nil {
				it.d, it.err = nil, err
			}
		}
		if it.err != nil {
			itemErrs = append(itemErrs, fmt.Sprintf("%s %s: %v", kindName(t), it.name, it.err))
		}
	}

	if realistic && t == tLDS && respErr == nil {
		itemErrs = append(itemErrs, m.addressConflicts(items, removed)...)
	}

	// Deletions: SotW CDS/LDS drop what the response lacks; Delta drops removed_resources.
	var gone []string
	if sotwFull {
		for name := range ts.res {
			if _, ok := present[name]; !ok {
				gone = append(gone, name)
			}
		}
	} else {
		for _, name := range removed {
			if _, ok := ts.res[name]; ok {
				gone = append(gone, name)
			}
		}
	}
	s.info.Removed = len(gone)
	if m.delta {
		s.info.Removed = len(removed) // as on the wire; NoOp counts only what was held
	}
	s.info.NoOp = s.info.Changed == 0 && len(gone) == 0

	nacked := respErr != nil || len(itemErrs) > 0
	if nacked {
		s.info.Nacked = true
		msgs := itemErrs
		if respErr != nil {
			msgs = []string{respErr.Error()}
		}
		s.info.Error = joinErrors(msgs)
	}
	// CDS and LDS apply their valid resources even when the response is NACKed; grpc-go does
	// so for every type.
	apply := respErr == nil && (len(itemErrs) == 0 || wildcard(t) || m.grpc)
	if !apply {
		m.afterResponse(s, t, now)
		return
	}
	ed := newEdits(ts.res, s.info.Changed+len(gone)) // applied by commit, below (see resset.go)
	if n := s.info.Changed + len(gone); n > 0 {
		s.info.Touched = make([]probe.Touched, 0, n)
	}
	changed := false
	for i := range items {
		it := &items[i]
		if it.err != nil {
			continue
		}
		if it.d == nil { // identical
			if !nacked && m.delta {
				e, _ := ed.get(it.name)
				e.version = it.version
				ed.put(it.name, e)
			}
			continue
		}
		version := it.version
		if nacked {
			version = "" // Envoy records Delta versions only when the whole response is accepted
		}
		name := it.name
		if it.d.name == name {
			name = it.d.name // the shared copy: the per-response one becomes garbage
		}
		held, _ := ed.get(name)
		old := held.d
		ed.put(name, entry{version: version, d: it.d})
		changed = true
		s.info.Touched = append(s.info.Touched, probe.Touched{Name: name, Prev: old.message()})
		m.warmStored(t, name, it.d, old, now)
	}
	for _, name := range gone {
		held, _ := ed.get(name)
		s.info.Touched = append(s.info.Touched, probe.Touched{Name: name, Prev: held.d.message()})
		ed.del(name)
		changed = true
		switch t {
		case tCDS:
			delete(m.warmC, name)
			delete(m.secC, name)
		case tLDS:
			delete(m.warmL, name)
			delete(m.secL, name)
		}
	}
	m.commit(t, ed)
	if !nacked {
		ts.accepted = true
	}
	// Warming driven by EDS/RDS content: a ClusterLoadAssignment received (even unchanged)
	// warms its clusters; a removed one means "does not exist" and warms them too.
	switch t {
	case tEDS:
		if len(m.warmC) == 0 {
			break
		}
		warmed := make(map[string]struct{}, len(items)+len(removed))
		for _, it := range items {
			if it.err == nil {
				warmed[it.name] = struct{}{}
			}
		}
		for _, name := range removed {
			warmed[name] = struct{}{}
		}
		for c := range m.warmC {
			if e, ok := m.types[tCDS].res[c]; ok && len(e.refs()) > 0 {
				if _, ok := warmed[e.refs()[0]]; ok {
					delete(m.warmC, c)
				}
			}
		}
	case tRDS:
		m.rewarmListeners()
	case tSDS:
		m.rewarmSecrets()
	}
	if changed {
		s.applied = true
		m.followUp(s, t)
		if t == tCDS || t == tLDS {
			m.followUpSecrets(s, now)
			m.rewarmSecrets() // secrets the agent served at once
		}
	}
	m.afterResponse(s, t, now)
}

var errIgnored = fmt.Errorf("not subscribed")

// addressConflicts marks new or changed listeners that bind the address of another listener
// of the resulting set (Envoy: "has duplicate address ... as existing listener").
func (m *machine) addressConflicts(items []item, removed []string) []string {
	owner := make(map[string]string)
	inResp := make(map[string]struct{}, len(items))
	claim := func(name string, l *listenerv3.Listener) string {
		k := bindKey(l)
		if k == "" {
			return ""
		}
		if other, ok := owner[k]; ok && other != name {
			return other
		}
		owner[k] = name
		return ""
	}
	// Unchanged listeners keep their addresses first; in Delta, so do held ones not touched.
	for i := range items {
		it := &items[i]
		inResp[it.name] = struct{}{}
		if it.err == nil && it.d == nil {
			if e, ok := m.types[tLDS].res[it.name]; ok {
				claim(it.name, e.d.msg.(*listenerv3.Listener))
			}
		}
	}
	if m.delta {
		for name, e := range m.types[tLDS].res {
			if _, ok := inResp[name]; !ok && !slices.Contains(removed, name) {
				claim(name, e.d.msg.(*listenerv3.Listener))
			}
		}
	}
	var errs []string
	for i := range items {
		it := &items[i]
		if it.err != nil || it.d == nil {
			continue
		}
		l := it.d.msg.(*listenerv3.Listener)
		if other := claim(it.name, l); other != "" {
			it.err = fmt.Errorf("duplicate address %s as listener %s", bindKey(l), other)
			errs = append(errs, fmt.Sprintf("listener %s: %v", it.name, it.err))
		}
	}
	return errs
}

// bindKey is the address a listener binds ("" when it does not bind: bind_to_port false,
// a pipe, an api_listener).
func bindKey(l *listenerv3.Listener) string {
	if b := l.GetBindToPort(); b != nil && !b.GetValue() {
		return ""
	}
	sa := l.GetAddress().GetSocketAddress()
	if sa == nil {
		return ""
	}
	return fmt.Sprintf("%s:%s:%d", sa.GetProtocol(), sa.GetAddress(), sa.GetPortValue())
}

// duplicateFilterChain reports two filter chains of l with the same match (Envoy rejects
// "multiple filter chains with the same matching rules").
func duplicateFilterChain(l *listenerv3.Listener) error {
	seen := make(map[string]string, len(l.GetFilterChains()))
	for i, fc := range l.GetFilterChains() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fc.GetFilterChainMatch())
		if err != nil {
			return err
		}
		name := fc.GetName()
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if other, ok := seen[string(b)]; ok {
			return fmt.Errorf("filter chains %s and %s have the same matching rules", other, name)
		}
		seen[string(b)] = name
	}
	return nil
}

// warmStored puts a new or changed cluster or listener d into warming; old is the copy it
// replaces (nil: none), which stays in effect until d has warmed. gRPC clients do not warm.
//
// A cluster warms when a ClusterLoadAssignment for it arrives. In Delta the client cannot ask
// again for an assignment it already watches, and the one it holds is used only when the
// cluster's initial_fetch_timeout expires (Envoy's EDS resources cache, used on FetchTimedout
// only): until then the cluster waits for the server to send one.
func (m *machine) warmStored(t int, name string, d, old *decoded, now time.Time) {
	if m.grpc {
		return
	}
	m.warmSecrets(t, name, d, old, now)
	switch t {
	case tCDS:
		if len(d.refs) == 0 {
			delete(m.warmC, name) // not EDS: ready at once
			return
		}
		if m.warmC == nil {
			m.warmC = make(map[string]time.Time)
		}
		m.keepPrev(t, name, old)
		m.warmC[name] = m.deadlineFor(now, d)
	case tLDS:
		if m.hasRoutes(d.refs) {
			delete(m.warmL, name)
			return
		}
		if m.warmL == nil {
			m.warmL = make(map[string]time.Time)
		}
		m.keepPrev(t, name, old)
		m.warmL[name] = m.deadlineFor(now, d)
	}
}

// message is d's decoded message; nil for a nil d.
func (d *decoded) message() proto.Message {
	if d == nil {
		return nil
	}
	return d.msg
}

func (m *machine) hasRoutes(refs []string) bool {
	for _, r := range refs {
		if _, ok := m.types[tRDS].res[r]; !ok {
			return false
		}
	}
	return true
}

func (m *machine) rewarmListeners() {
	for l := range m.warmL {
		if m.hasRoutes(m.types[tLDS].res[l].refs()) {
			delete(m.warmL, l)
		}
	}
}

// followUp sends, after a CDS or LDS change, the EDS or RDS request naming every resource
// the clusters or listeners now reference (before the ACK of the CDS/LDS response); a gRPC
// client also follows an RDS change with the CDS request naming the routes' clusters.
func (m *machine) followUp(s *step, t int) {
	var dep int
	switch {
	case t == tCDS:
		dep = tEDS
	case t == tLDS:
		dep = tRDS
	case t == tRDS && m.grpc:
		dep = tCDS
	default:
		return
	}
	var names []string
	if set := m.types[t].set; set != nil {
		names = set.refs // shared, computed once per set
	} else {
		names = setRefs(t, m.types[t].res, m.grpc)
	}
	m.subscribeNames(s, dep, names)
}

// subscribeNames makes type dep's subscription names (sorted, unique), sending the request
// that changes it: in Delta the diff, in SotW the whole list.
func (m *machine) subscribeNames(s *step, dep int, names []string) {
	ds := &m.types[dep]
	if m.delta {
		sub, unsub := diffSorted(ds.names, names)
		if len(sub) == 0 && len(unsub) == 0 {
			return
		}
		m.setNames(dep, names, unsub)
		r := m.deltaReq(dep)
		r.ResourceNamesSubscribe = sub
		r.ResourceNamesUnsubscribe = unsub
		s.delta = append(s.delta, r)
		return
	}
	if len(names) == 0 && !ds.subscribed {
		return
	}
	_, unsub := diffSorted(ds.names, names)
	m.setNames(dep, names, unsub)
	s.sotw = append(s.sotw, m.sotwReq(dep, nil))
}

func (m *machine) setNames(t int, names, unsub []string) {
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

// afterResponse advances initialization after a response of type t.
func (m *machine) afterResponse(s *step, t int, now time.Time) {
	if (m.phase == phaseCDS && t == tCDS) || (m.phase == phaseLDS && t == tLDS) {
		m.phase++
	}
	m.resyncWait &^= 1 << t
	m.advance(s, now)
}

// advance moves initialization forward as far as it can go and reports the first full config.
func (m *machine) advance(s *step, now time.Time) {
	// An emptied map keeps its buckets: drop it, an idle client warms nothing.
	if len(m.warmC) == 0 {
		m.warmC = nil
	}
	if len(m.secC) == 0 {
		m.secC = nil
	}
	if m.warmC == nil && m.secC == nil {
		m.prevC = nil
	}
	if len(m.warmL) == 0 {
		m.warmL = nil
	}
	if len(m.secL) == 0 {
		m.secL = nil
	}
	if m.warmL == nil && m.secL == nil {
		m.prevL = nil
	}
	if m.phase == phaseClusters && len(m.warmC) == 0 && len(m.secC) == 0 {
		m.phase = phaseLDS
		m.phaseDeadline = m.deadline(now)
		m.types[tLDS].subscribed = true
		if m.delta {
			s.delta = append(s.delta, m.deltaReq(tLDS))
		} else {
			s.sotw = append(s.sotw, m.sotwReq(tLDS, nil))
		}
	}
	if m.phase == phaseListeners && len(m.warmL) == 0 && len(m.secL) == 0 {
		m.phase = phaseDone
	}
	if m.phase == phaseDone && !m.fullDone && m.complete() {
		m.fullDone = true
		s.firstFull = true
	}
	if m.resyncing && m.resyncWait == 0 && m.phase == phaseDone && m.complete() {
		m.resyncing = false
		s.resynced, s.resync = true, max(0, now.Sub(m.resyncAt))
	}
}

// complete reports whether the client holds a whole warmed configuration: CDS and LDS
// accepted, every EDS cluster with its assignment, every listener with its routes (for a gRPC
// client: every target's listener, its routes, their clusters and those clusters' assignments).
func (m *machine) complete() bool {
	if m.grpc {
		return m.completeGRPC()
	}
	if !m.types[tCDS].accepted || !m.types[tLDS].accepted || len(m.warmC) > 0 || len(m.warmL) > 0 || len(m.secC) > 0 || len(m.secL) > 0 {
		return false
	}
	for _, e := range m.types[tCDS].res {
		for _, r := range e.refs() {
			if _, ok := m.types[tEDS].res[r]; !ok {
				return false
			}
		}
	}
	for _, e := range m.types[tLDS].res {
		if !m.hasRoutes(e.refs()) {
			return false
		}
	}
	return true
}

func (m *machine) completeGRPC() bool {
	for _, l := range m.targets {
		e, ok := m.types[tLDS].res[l]
		if !ok || !m.hasRoutes(e.refs()) {
			return false
		}
		for _, r := range e.refs() {
			for _, c := range m.types[tRDS].res[r].refs() {
				ce, ok := m.types[tCDS].res[c]
				if !ok {
					return false
				}
				for _, a := range ce.refs() {
					if _, ok := m.types[tEDS].res[a]; !ok {
						return false
					}
				}
			}
		}
	}
	return true
}

// onTimer expires initial fetch timeouts and warming at now.
func (m *machine) onTimer(now time.Time) step {
	var s step
	if (m.phase == phaseCDS || m.phase == phaseLDS) && !m.phaseDeadline.IsZero() && !now.Before(m.phaseDeadline) {
		if m.phase == phaseCDS {
			s.timeouts = append(s.timeouts, typeURLs[tCDS])
		} else {
			s.timeouts = append(s.timeouts, typeURLs[tLDS])
		}
		m.phase++
	}
	if expire(m.warmC, now) {
		s.timeouts = append(s.timeouts, typeURLs[tEDS])
	}
	if expire(m.warmL, now) {
		s.timeouts = append(s.timeouts, typeURLs[tRDS])
	}
	if m.deliverLocal(now) {
		m.rewarmSecrets()
	}
	if a, b := expire(m.secC, now), expire(m.secL, now); a || b {
		s.timeouts = append(s.timeouts, typeURLs[tSDS])
	}
	m.advance(&s, now)
	return s
}

func expire(w map[string]time.Time, now time.Time) bool {
	any := false
	for k, d := range w {
		if !d.IsZero() && !now.Before(d) {
			delete(w, k)
			any = true
		}
	}
	return any
}

// nextDeadline is when onTimer must next run; zero when nothing waits.
func (m *machine) nextDeadline() time.Time {
	var next time.Time
	consider := func(d time.Time) {
		if !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	if m.phase == phaseCDS || m.phase == phaseLDS {
		consider(m.phaseDeadline)
	}
	for _, d := range m.warmC {
		consider(d)
	}
	for _, d := range m.warmL {
		consider(d)
	}
	for _, d := range m.secC {
		consider(d)
	}
	for _, d := range m.secL {
		consider(d)
	}
	if m.localPending > 0 {
		for _, l := range m.local {
			if !l.held && l.err == nil {
				consider(l.ready)
			}
		}
	}
	return next
}

// Resource implements probe.View over the accepted resources (what the client received,
// warming or not).
func (m *machine) Resource(typeURL, name string) proto.Message {
	t := typeIndex(typeURL)
	if t < 0 {
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
	switch typeIndex(typeURL) {
	case tCDS:
		if m.warming(tCDS, name) {
			return m.prevC[name].message()
		}
	case tLDS:
		if m.warming(tLDS, name) {
			return m.prevL[name].message()
		}
	}
	return m.Resource(typeURL, name)
}

// synced reports whether the client holds an accepted state of typeURL (on this process).
func (m *machine) synced(typeURL string) bool {
	t := typeIndex(typeURL)
	return t >= 0 && m.types[t].accepted
}

func (m *machine) subscribedName(t int, name string) bool {
	ts := &m.types[t]
	if !ts.subscribed {
		return false
	}
	if !m.named(t) {
		return true
	}
	_, ok := slices.BinarySearch(ts.names, name)
	return ok
}

// decode unmarshals a resource of type t, validates it as mode says, and extracts what it
// references (for gRPC clients, also a route configuration's clusters, and an assignment as
// grpc-go uses it).
func decode(t int, raw []byte, mode checkMode) (proto.Message, []string, error) {
	realistic := mode == checkEnvoy
	var msg proto.Message
	switch t {
	case tCDS:
		msg = &clusterv3.Cluster{}
	case tEDS:
		msg = &endpointv3.ClusterLoadAssignment{}
	case tLDS:
		msg = &listenerv3.Listener{}
	case tRDS:
		msg = &routev3.RouteConfiguration{}
	case tSDS:
		msg = &tlsv3.Secret{}
	}
	if err := proto.Unmarshal(raw, msg); err != nil {
		return nil, nil, err
	}
	if realistic {
		if err := validateDeep(msg); err != nil {
			return nil, nil, err
		}
	}
	if mode == checkGRPC {
		if err := grpcValidate(t, msg); err != nil {
			return nil, nil, err
		}
		switch v := msg.(type) {
		case *routev3.RouteConfiguration:
			return v, routeClusters(v), nil
		case *endpointv3.ClusterLoadAssignment:
			return grpcInUse(v), nil, nil
		}
	}
	var refs []string
	switch v := msg.(type) {
	case *clusterv3.Cluster:
		if v.GetType() == clusterv3.Cluster_EDS {
			n := v.GetEdsClusterConfig().GetServiceName()
			if n == "" {
				n = v.GetName()
			}
			refs = []string{n}
		}
	case *listenerv3.Listener:
		var err error
		refs, _, err = routeNames(v)
		if realistic && err == nil {
			err = duplicateFilterChain(v)
		}
		if err != nil && realistic {
			return nil, nil, err
		}
	}
	return msg, refs, nil
}

// routeNames lists the RDS route config names of every HTTP connection manager of l: in all
// filter chains, the default chain and the api_listener.
func routeNames(l *listenerv3.Listener) ([]string, []*corev3.ConfigSource, error) {
	var names []string
	var sources []*corev3.ConfigSource
	var firstErr error
	add := func(a *anypb.Any) {
		if a.GetTypeUrl() != hcmType {
			return
		}
		hcm := &hcmv3.HttpConnectionManager{}
		if err := a.UnmarshalTo(hcm); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("http connection manager: %w", err)
			}
			return
		}
		if n := hcm.GetRds().GetRouteConfigName(); n != "" {
			names = append(names, n)
			sources = append(sources, hcm.GetRds().GetConfigSource())
		}
	}
	chains := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(slices.Clip(chains), d)
	}
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			add(f.GetTypedConfig())
		}
	}
	add(l.GetApiListener().GetApiListener())
	sort.Strings(names)
	return slices.Compact(names), sources, firstErr
}

// fetchTimeoutOf returns the initial_fetch_timeout of the config source through which msg
// gets what it references: a cluster's eds_config, a listener's RDS config_source (the
// largest of its connection managers', as the listener waits for all of them; 0 wins: wait
// forever). ok is false when no config source sets one.
func fetchTimeoutOf(msg proto.Message) (d time.Duration, ok bool) {
	switch v := msg.(type) {
	case *clusterv3.Cluster:
		if ift := v.GetEdsClusterConfig().GetEdsConfig().GetInitialFetchTimeout(); ift != nil {
			return ift.AsDuration(), true
		}
	case *listenerv3.Listener:
		_, sources, _ := routeNames(v)
		for _, cs := range sources {
			ift := cs.GetInitialFetchTimeout()
			if ift == nil {
				continue
			}
			td := ift.AsDuration()
			switch {
			case !ok:
				d, ok = td, true
			case d > 0 && (td <= 0 || td > d):
				d = td
			}
		}
	}
	return d, ok
}

const hcmType = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

// readName reads field 1 (the name of a Cluster, Listener and RouteConfiguration, the
// cluster_name of a ClusterLoadAssignment) without decoding the rest.
func readName(b []byte) (string, bool) {
	name, ok := readNameBytes(b)
	return string(name), ok
}

// readNameBytes is readName without the copy: the name's bytes inside b.
func readNameBytes(b []byte) ([]byte, bool) {
	var name []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, false
			}
			name = v // the last occurrence wins, as in proto decoding
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	return name, true
}

// diffSorted returns what is in b and not a (subscribe) and in a and not b (unsubscribe).
func diffSorted(a, b []string) (added, removed []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			removed = append(removed, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			added = append(added, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return added, removed
}

func kindName(t int) string {
	switch t {
	case tCDS:
		return "cluster"
	case tEDS:
		return "cluster load assignment"
	case tLDS:
		return "listener"
	case tSDS:
		return "secret"
	default:
		return "route config"
	}
}

func joinErrors(msgs []string) string {
	const max = 5
	if len(msgs) > max {
		return strings.Join(msgs[:max], "; ") + fmt.Sprintf("; and %d more", len(msgs)-max)
	}
	return strings.Join(msgs, "; ")
}
