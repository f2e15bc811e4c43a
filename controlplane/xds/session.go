package xds

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/push"
)

// source is what a session serves from: the latest push state (nil before the first
// snapshot) and the marshalled resources of a type for a proxy in that state (the whole set
// when wildcard, else the named ones that exist). The Server is the source of every stream.
type source interface {
	current() *pushState
	resources(p *model.Proxy, st *pushState, typeURL string, names []string, wildcard bool) ([]*cache.Resource, error)
}

// typeState is one type URL's protocol state on one stream.
type typeState struct {
	typeURL  string
	wildcard bool
	names    map[string]struct{}
	// set is a SotW subscription's names, shared with the streams that subscribe to the same
	// ones (names is set.names then, read-only); nil on Delta, whose names change one by one.
	set *nameSet
	// named: a SotW request of this type has named resources (or "*"), so an empty list no
	// longer means wildcard.
	named bool

	nonce   string // latest nonce sent; requests with another nonce are stale
	version string // version of the latest response sent
	sentAt  time.Time
	acked   string
	nacked  string
	lastErr string
	nacks   int
	// lastNack is the nonce (as a number) of the latest NACK logged and counted, so a NACK
	// the client repeats is counted once.
	lastNack uint64
	// SotW: the hash and count of the resource_names of the request that set the subscription,
	// exactly as sent ("*" and duplicates included), to recognise a request that restates it.
	reqHash  uint64
	reqCount int
	// unanswered marks a request that came before the first snapshot: the first push must
	// answer it even when the answer is empty.
	unanswered bool
	sent       map[string]uint64 // resource name → hash of the bytes last sent
	// sentList is what the last SotW CDS or LDS response carried (every resource, as the
	// protocol wants): the cache's own slice, shared by every stream that got it, so those
	// types keep nothing per stream (sent stays empty for them).
	sentList []*cache.Resource
	// sentBase is, for a named SotW subscription of another type (EDS, RDS), the shared answer
	// to the whole subscription the client last got (sorted by name): it holds those bytes,
	// except where sent, which then only records what went out since, says otherwise.
	sentBase []*cache.Resource
	sentResp int
	// heldList is, for a Delta wildcard subscription, the list of its last whole answer while
	// the client holds exactly it (sent then records the same names and hashes); nil once
	// anything else was sent or dropped. A push compares it with the new list (listDiffs).
	heldList []*cache.Resource
	// byHost indexes a Delta EDS subscription by service hostname (kept up to date from the
	// first request), so an endpoint push finds its clusters without parsing every name;
	// SotW uses set.hosts.
	byHost map[string][]string

	// heldForce names the cluster assignments that must be re-sent with a push that flow
	// control holds (the held request itself lives in session.flow).
	heldForce map[string]struct{}
}

// response is one response a session asks its shell to write.
type response struct {
	typeURL, version, nonce string
	resources               []*cache.Resource
	removed                 []string // Delta only
	delta                   bool
}

// encode returns the response in wire form (see codec.go).
func (r *response) encode() *encodedResponse {
	if r.delta {
		return &encodedResponse{resources: r.resources, tail: deltaTail(r.version, r.typeURL, r.nonce, r.removed), delta: true}
	}
	return &encodedResponse{resources: r.resources, tail: responseTail(r.version, r.typeURL, r.nonce)}
}

// noteKind is a measurement or log record a session asks its shell to make.
type noteKind uint8

const (
	// noteExpiredNonce: a request carried a stale nonce (pilot_xds_expired_nonce{type}).
	noteExpiredNonce noteKind = iota
	// noteAcked: the latest response of a type was answered after wait
	// (xdslab_cp_ack_latency_seconds).
	noteAcked
	// noteRejected: a NACK not seen before (pilot_total_xds_rejects{type} and a warning log
	// with nonce, version, code and message).
	noteRejected
	// noteGenError: generating resources failed for some of them (a warning log with msg).
	noteGenError
)

type note struct {
	kind    noteKind
	typeURL string
	wait    time.Duration
	nonce   string
	version string
	code    codes.Code
	msg     string
}

// effects is what the shell must do after feeding its session one input, in this order:
// register the stream when register (the first request named the proxy), write out in
// order (calling session.written after each), record notes, publish the status when status,
// set the flow-control timer to deadline (zero: none; when it fires, call Tick), and end the
// stream with err when it is not nil. The slices are reused by the next input.
type effects struct {
	register bool
	out      []response
	notes    []note
	status   bool
	deadline time.Time
	err      error
}

// session is one ADS stream's protocol state: a pure core with no goroutines, no clock and no
// gRPC. Its inputs are Request (SotW) or DeltaRequest, Push (a push turn), Tick (a flow-control
// deadline passed) and written (a response went out); each returns the effects to perform. The
// shell (conn.go) feeds it from one goroutine.
type session struct {
	src   source
	delta bool // a Delta (incremental) xDS stream
	// identity is the stream's verified identity (mTLS or JWT; "" for none), stamped on the
	// proxy: SDS secrets are issued for it, never for what the node claims.
	identity string
	proxy    *model.Proxy
	types    map[string]*typeState
	// nonces counts responses; a nonce is the count in base 36.
	nonces uint64
	flow   *push.Flow
	// sets interns SotW subscriptions across the server's streams (nil: none shared).
	sets *nameSets
	// afterCDS is the listener and route part of pushes whose CDS flow control holds: they
	// would reference clusters the client does not have yet (make-before-break), so they go
	// out right after the held CDS does.
	afterCDS *model.PushRequest
	// rest is the listener and route part of the push turn begun by PushClusters.
	rest *model.PushRequest

	eff effects
}

func newSession(src source, delta bool, flow push.FlowOptions) *session {
	return &session{src: src, delta: delta, types: map[string]*typeState{}, flow: push.NewFlow(flow)}
}

// begin starts the effects of one input.
func (s *session) begin() {
	clear(s.eff.out)
	clear(s.eff.notes)
	s.eff = effects{out: s.eff.out[:0], notes: s.eff.notes[:0]}
}

// end finishes the effects of one input.
func (s *session) end(err error) *effects {
	s.eff.err = err
	s.eff.deadline = s.flow.Deadline()
	return &s.eff
}

func (s *session) note(n note) { s.eff.notes = append(s.eff.notes, n) }

func (s *session) nextNonce() string {
	s.nonces++
	return strconv.FormatUint(s.nonces, 36)
}

// identify parses the proxy of a stream's first request.
func (s *session) identify(node func() (*model.Proxy, error)) error {
	if s.proxy != nil {
		return nil
	}
	p, err := node()
	if err != nil {
		return status.Error(codes.InvalidArgument, "first request: "+err.Error())
	}
	if s.identity != "" {
		p.Identity = s.identity
	}
	s.proxy = p
	s.eff.register = true
	return nil
}

// allRequired reports whether a type's SotW responses must list every subscribed resource
// (a missing one is deleted).
func allRequired(typeURL string) bool {
	return typeURL == gen.ClusterType || typeURL == gen.ListenerType
}

// subscription reads a SotW request's resource_names. An empty list for CDS/LDS is the legacy
// wildcard only while the client has never named a resource of the type on this stream
// (named); after that it means "unsubscribe from everything" (xDS protocol, "How the client
// specifies what resources to return").
func subscription(typeURL string, names []string, named bool) (wildcard bool, set map[string]struct{}) {
	set = make(map[string]struct{}, len(names))
	for _, n := range names {
		if n == "*" {
			wildcard = true
			continue
		}
		set[n] = struct{}{}
	}
	if len(names) == 0 && allRequired(typeURL) && !named {
		wildcard = true
	}
	return wildcard, set
}

// accept checks what every request must carry, SotW or Delta: a node on the stream's first
// request (identifying the proxy) and a type URL, which it returns.
func (s *session) accept(node *corev3.Node, typeURL string) (string, error) {
	if err := s.identify(func() (*model.Proxy, error) { return model.ParseProxy(node) }); err != nil {
		return "", err
	}
	if typeURL == "" {
		return "", errNoType
	}
	return typeURL, nil
}

var errNoType = status.Error(codes.InvalidArgument, "request without type_url: ADS requests must name their type")

// Request applies one SotW DiscoveryRequest received at now.
func (s *session) Request(req *sotwRequest, now time.Time) *effects {
	s.begin()
	return s.end(s.request(req, now))
}

func (s *session) request(req *sotwRequest, now time.Time) error {
	typeURL, err := s.accept(req.GetNode(), req.GetTypeUrl())
	if err != nil {
		return err
	}
	ts := s.types[typeURL]
	nonce := req.GetResponseNonce()
	if ts != nil && nonce != "" && req.GetErrorDetail() != nil {
		s.rejected(ts, nonce, req.GetErrorDetail())
	}
	if ts != nil && nonce != "" && nonce != ts.nonce {
		s.note(note{kind: noteExpiredNonce, typeURL: typeURL})
		return nil
	}
	var release *model.PushRequest
	if nonce != "" && ts != nil {
		release = s.answered(ts, req.GetErrorDetail() != nil, now)
	}

	if ts != nil && nonce != "" && req.restates(ts.reqHash, ts.reqCount) {
		// The common case, an ACK restating the subscription: nothing to diff.
		s.release(ts, release, now)
		return nil
	}
	// Most subscriptions are some other stream's too: found without decoding the names.
	set, wildcard := s.sets.lookup(req), false
	if set == nil {
		var fresh map[string]struct{}
		wildcard, fresh = subscription(typeURL, req.Names(), ts != nil && ts.named)
		set = s.sets.intern(fresh)
		if !wildcard && len(fresh) == req.namesCount {
			set.rememberOrder(req.namesOrder) // no "*", no duplicate: exactly the set, in this order
		}
	}
	names := set.names
	if ts == nil || nonce == "" {
		// A new subscription, or one restated after a reconnect: answer it in full.
		if ts == nil {
			ts = &typeState{typeURL: typeURL, sent: map[string]uint64{}}
			s.types[typeURL] = ts
		} else {
			clear(ts.sent)
			ts.sentList, ts.sentBase = nil, nil
		}
		ts.wildcard, ts.names, ts.set, ts.byHost = wildcard, names, set, nil
		ts.named = ts.named || req.namesCount > 0
		ts.reqHash, ts.reqCount = req.namesHash, req.namesCount
		s.respond(ts, nil, nil, true, false, now)
		return nil
	}

	var added []string
	for n := range names {
		if _, ok := ts.names[n]; !ok {
			added = append(added, n)
		}
	}
	removed := false
	for n := range ts.names {
		if _, ok := names[n]; !ok {
			delete(ts.sent, n) // the client dropped it: a re-subscription must send it again
			ts.sentList = withoutName(ts.sentList, n)
			removed = true
		}
	}
	changedWildcard := wildcard != ts.wildcard
	if len(added) > 0 || removed {
		ts.byHost = nil
	}
	ts.wildcard, ts.names, ts.set = wildcard, names, set
	ts.named = ts.named || req.namesCount > 0
	ts.reqHash, ts.reqCount = req.namesHash, req.namesCount

	full := (allRequired(typeURL) && (len(added) > 0 || removed || changedWildcard)) ||
		(!allRequired(typeURL) && changedWildcard && wildcard)
	if full && release != nil {
		// The answer below covers the held push: send the type once, with what it had to carry.
		force := ts.heldForce
		ts.heldForce = nil
		changed := s.respond(ts, nil, force, true, true, now)
		if ts.typeURL == gen.ClusterType {
			s.afterReleasedCDS(release, changed, now)
		}
		return nil
	}
	s.release(ts, release, now)
	switch {
	case full:
		s.respond(ts, nil, nil, true, false, now)
	case !allRequired(typeURL) && len(added) > 0:
		slices.Sort(added)
		force := make(map[string]struct{}, len(added))
		for _, n := range added {
			force[n] = struct{}{}
		}
		s.respond(ts, added, force, true, false, now)
	}
	return nil
}

// DeltaRequest applies one DeltaDiscoveryRequest received at now. Subscription changes are
// honoured even when the nonce is stale; ACK and NACK are judged by the nonce alone.
func (s *session) DeltaRequest(req *discoveryv3.DeltaDiscoveryRequest, now time.Time) *effects {
	s.begin()
	return s.end(s.deltaRequest(req, now))
}

func (s *session) deltaRequest(req *discoveryv3.DeltaDiscoveryRequest, now time.Time) error {
	typeURL, err := s.accept(req.GetNode(), req.GetTypeUrl())
	if err != nil {
		return err
	}
	ts := s.types[typeURL]
	first := ts == nil
	if first {
		ts = &typeState{typeURL: typeURL, sent: map[string]uint64{}, names: map[string]struct{}{}}
		if typeURL == gen.EndpointType {
			// Indexed as names come, so an endpoint push does not parse a thousand names.
			ts.byHost = map[string][]string{}
		}
		s.types[typeURL] = ts
		// What the client already holds (after a reconnect): not re-sent while unchanged.
		for name, v := range req.GetInitialResourceVersions() {
			if h, err := strconv.ParseUint(v, 16, 64); err == nil {
				ts.sent[name] = h
			} else {
				ts.sent[name] = 0 // unknown version: sent again
			}
		}
		// Legacy wildcard: the first CDS/LDS request subscribes to nothing in particular.
		ts.wildcard = allRequired(typeURL) && len(req.GetResourceNamesSubscribe()) == 0
	}

	// added: names to answer now. A name the client subscribes to again while the server thinks
	// it is subscribed (Envoy does this after removing and re-adding interest) must still be
	// sent: the client may have forgotten its copy (force). Only the first request's names may
	// be skipped when initial_resource_versions says the client holds them.
	var added []string
	addedSet := map[string]struct{}{} // added without duplicates, in one pass
	addOnce := func(n string) {
		if _, ok := addedSet[n]; !ok {
			addedSet[n] = struct{}{}
			added = append(added, n)
		}
	}
	force := map[string]struct{}{}
	wildcardOn := false
	for _, n := range req.GetResourceNamesSubscribe() {
		if n == "*" {
			wildcardOn = wildcardOn || !ts.wildcard
			ts.wildcard = true
			continue
		}
		if _, ok := ts.names[n]; !ok && ts.byHost != nil {
			hostIndexAdd(ts.byHost, n) // kept up to date: a thousand names are not parsed again
		}
		ts.names[n] = struct{}{}
		addOnce(n)
		if !first {
			force[n] = struct{}{}
		}
	}
	unsub := req.GetResourceNamesUnsubscribe()
	if slices.Contains(unsub, "*") {
		ts.wildcard = false
	}
	for _, n := range unsub {
		if n == "*" {
			continue
		}
		if _, ok := ts.names[n]; ok && ts.byHost != nil {
			hostIndexRemove(ts.byHost, n)
		}
		delete(ts.names, n)
		if ts.wildcard {
			// Still covered by the wildcard: the protocol asks for a response carrying it in
			// resources (it exists) or removed_resources (it does not).
			addOnce(n)
			force[n] = struct{}{}
			continue
		}
		delete(ts.sent, n)
		ts.heldList = nil
	}
	var release *model.PushRequest
	if nonce := req.GetResponseNonce(); nonce != "" {
		if req.GetErrorDetail() != nil {
			s.rejected(ts, nonce, req.GetErrorDetail())
		}
		if nonce != ts.nonce {
			s.note(note{kind: noteExpiredNonce, typeURL: typeURL})
		} else {
			release = s.answered(ts, req.GetErrorDetail() != nil, now)
		}
	}
	s.release(ts, release, now)

	switch {
	case first || wildcardOn:
		s.respond(ts, nil, nil, true, false, now)
	case len(added) > 0:
		slices.Sort(added)
		s.respond(ts, added, force, true, false, now)
	}
	return nil
}

// release sends a push that flow control held for ts until the client answered (nil: none),
// with the assignments that had to be re-sent with it.
func (s *session) release(ts *typeState, req *model.PushRequest, now time.Time) {
	if req == nil {
		return
	}
	force := ts.heldForce
	ts.heldForce = nil
	changed := s.pushType(ts.typeURL, req, force, now)
	if ts.typeURL == gen.ClusterType {
		s.afterReleasedCDS(req, changed, now)
	}
}

// afterReleasedCDS follows a CDS response that flow control had held: the assignments of the
// clusters that changed (a changed cluster warms until its ClusterLoadAssignment comes), then
// the listeners and routes held behind it (make-before-break).
func (s *session) afterReleasedCDS(req *model.PushRequest, changed map[string]struct{}, now time.Time) {
	if len(changed) > 0 {
		s.pushType(gen.EndpointType, req, changed, now)
	}
	if s.afterCDS == nil || s.flow.Holding(gen.ClusterType) {
		return
	}
	after := s.afterCDS
	s.afterCDS = nil
	for _, t := range afterClusterTypes {
		s.pushType(t, after, nil, now)
	}
}

// afterClusterTypes are pushed after CDS and EDS, in Envoy's order; they reference clusters.
var afterClusterTypes = []string{gen.ListenerType, gen.RouteType}

// answered records the ACK or NACK of ts's latest response and returns a push that flow
// control held meanwhile. A repeated answer to the same response changes nothing. (A NACK is
// logged and counted by rejected, whatever its nonce.)
func (s *session) answered(ts *typeState, nack bool, now time.Time) *model.PushRequest {
	ar := s.flow.Ack(ts.typeURL, ts.nonce, now)
	if !nack {
		ts.acked = ts.version
	}
	if !ar.Matched {
		return nil
	}
	s.note(note{kind: noteAcked, typeURL: ts.typeURL, wait: ar.Wait})
	s.eff.status = true
	return ar.Release
}

// rejected handles a NACK of ts's response with nonce: like istiod, it is logged at warning
// level with the client's error and counted (pilot_total_xds_rejects{type}), once per nonce (a
// client repeats its NACK with every request until a new version comes; those are not new
// rejections). A NACK of the latest response also records the rejected version for
// /debug/syncz. Nonces are a per-session counter, so "not yet counted" is "newer than the last
// one counted"; a nonce this session never sent is ignored.
func (s *session) rejected(ts *typeState, nonce string, detail *rpcstatus.Status) {
	n, err := strconv.ParseUint(nonce, 36, 64)
	if err != nil || n == 0 || n > s.nonces || n <= ts.lastNack {
		return
	}
	ts.lastNack = n
	version := ""
	if nonce == ts.nonce {
		version = ts.version
		ts.nacked = version
	}
	ts.lastErr = detail.GetMessage()
	ts.nacks++
	s.note(note{kind: noteRejected, typeURL: ts.typeURL, nonce: nonce, version: version,
		code: codes.Code(detail.GetCode()), msg: detail.GetMessage()})
	s.eff.status = true
}

// Push handles one push turn at now: the affected types in Envoy's order (secrets first, which
// clusters and listeners reference), each cluster that changed followed by its
// ClusterLoadAssignment, listeners and routes last.
func (s *session) Push(req *model.PushRequest, now time.Time) *effects {
	s.begin()
	s.pushAll(req, now, false)
	return s.end(nil)
}

// PushClusters is the first half of a push turn: Push up to the clusters and their
// assignments; the listeners and routes wait for PushRest, which the shell calls next, before
// any other input (so the stream sees the same responses in the same order as with Push). The
// shell writes this half while it holds a push worker and the rest after letting it go.
func (s *session) PushClusters(req *model.PushRequest, now time.Time) *effects {
	s.begin()
	s.pushAll(req, now, true)
	return s.end(nil)
}

// PushRest is the second half of a push turn begun with PushClusters: its listeners and routes.
func (s *session) PushRest(now time.Time) *effects {
	s.begin()
	if r := s.rest; r != nil {
		s.rest = nil
		for _, t := range afterClusterTypes {
			s.pushType(t, r, nil, now)
		}
	}
	return s.end(nil)
}

func (s *session) pushAll(req *model.PushRequest, now time.Time, split bool) {
	if s.proxy == nil {
		return
	}
	if s.pushSecrets(req, now) {
		return
	}
	if !req.Full {
		s.pushType(gen.EndpointType, req, nil, now)
		return
	}
	changedClusters := s.pushType(gen.ClusterType, req, nil, now)
	s.pushType(gen.EndpointType, req, changedClusters, now)
	if s.flow.Holding(gen.ClusterType) {
		s.afterCDS = s.afterCDS.Merge(req)
		return
	}
	if split {
		s.rest = req
		return
	}
	for _, t := range afterClusterTypes {
		s.pushType(t, req, nil, now)
	}
}

// Tick releases held pushes whose ACK did not come within the timeout by now.
func (s *session) Tick(now time.Time) *effects {
	s.begin()
	for _, r := range s.flow.Expire(now) {
		if ts := s.types[r.TypeURL]; ts != nil {
			s.release(ts, r.Req, now)
		}
	}
	s.eff.status = true
	return s.end(nil)
}

// written records that the response of typeURL with nonce finished writing at now: the ACK
// wait (and its timeout) runs from then.
func (s *session) written(typeURL, nonce string, now time.Time) {
	ts := s.types[typeURL]
	if ts == nil || ts.nonce != nonce {
		return
	}
	ts.sentAt = now
	s.flow.Sent(typeURL, nonce, now)
}

// pushType pushes one type for req. force names resources that must be sent even when the
// client holds the same bytes. It returns the names of resources that changed.
func (s *session) pushType(typeURL string, req *model.PushRequest, force map[string]struct{}, now time.Time) map[string]struct{} {
	ts := s.types[typeURL]
	if ts == nil {
		return nil
	}
	if len(ts.heldForce) > 0 {
		// Anything forced for an earlier held push goes out with this one.
		f := ts.heldForce
		maps.Copy(f, force)
		force, ts.heldForce = f, nil
	}
	if req = s.flow.Push(typeURL, req, now); req == nil {
		if len(force) > 0 {
			ts.heldForce = force
		}
		s.eff.status = true
		return nil
	}
	var names []string
	if typeURL == gen.EndpointType && !ts.wildcard && (!req.Full || assignmentsByHost(req)) {
		if ts.set != nil {
			ts.byHost = ts.set.hosts()
		} else if ts.byHost == nil {
			ts.byHost = make(map[string][]string)
			for n := range ts.names {
				hostIndexAdd(ts.byHost, n)
			}
		}
		for k := range req.ConfigsUpdated {
			if k.Kind == model.KindEndpoint || k.Kind == model.KindService {
				names = append(names, ts.byHost[k.Name]...)
			}
		}
		if len(names) == 0 && len(force) == 0 {
			return nil
		}
		slices.Sort(names)
		names = slices.Compact(names) // a host named by both a service and an endpoint key
		if names == nil {
			names = []string{} // only the forced names, not the whole subscription
		}
	}
	return s.respond(ts, names, force, false, true, now)
}

// hostIndexAdd and hostIndexRemove keep an index of cluster names by host (typeState.byHost).
func hostIndexAdd(ix map[string][]string, name string) {
	if p, err := gen.ParseClusterName(name); err == nil {
		ix[p.Host] = append(ix[p.Host], name)
	}
}

func hostIndexRemove(ix map[string][]string, name string) {
	p, err := gen.ParseClusterName(name)
	if err != nil {
		return
	}
	names := slices.DeleteFunc(slices.Clone(ix[p.Host]), func(n string) bool { return n == name })
	if len(names) == 0 {
		delete(ix, p.Host)
		return
	}
	ix[p.Host] = names
}

// assignmentsByHost reports whether a full push can change only the assignments of the hosts it
// names (KindService and KindEndpoint keys): a named ClusterLoadAssignment depends on its
// service, its endpoints, for subsets the DestinationRule, and its workloads' PeerAuthentication
// (genOf), so a push that names no DestinationRule or PeerAuthentication (nor a ServiceEntry or
// WorkloadEntry, which do not say which hosts) leaves
// every other assignment as it was, and EDS need not diff the whole subscription.
func assignmentsByHost(req *model.PushRequest) bool {
	if len(req.ConfigsUpdated) == 0 {
		return false // everything
	}
	for k := range req.ConfigsUpdated {
		switch k.Kind {
		case model.KindService, model.KindEndpoint, model.KindVirtualService, model.KindGateway, model.KindSidecar,
			model.KindSecret, model.KindAuthorizationPolicy, model.KindRequestAuthentication:
		default:
			return false
		}
	}
	return true
}

// respond generates ts's resources (names nil: the whole subscription), keeps what the client
// does not already hold (all of it for CDS/LDS when anything changed) and sends one response.
// With always set, a response is sent even when nothing changed (answering a request). With
// want set it returns the names of the CDS resources that changed (nil otherwise).
func (s *session) respond(ts *typeState, names []string, force map[string]struct{}, always, want bool, now time.Time) map[string]struct{} {
	st := s.src.current()
	if st == nil {
		// No snapshot yet: the first push answers, even with an empty response.
		ts.unanswered = ts.unanswered || always
		return nil
	}
	always = always || ts.unanswered
	full := names == nil // the whole subscription, not only some names
	if full && !ts.wildcard {
		if ts.set != nil {
			names = ts.set.sorted // shared: clipped, so the appends below copy it
		} else {
			names = slices.Sorted(maps.Keys(ts.names))
		}
		if len(names) == 0 && !always {
			return nil
		}
	}
	if !full && len(force) > 0 { // a whole answer already holds every subscribed forced name
		have := make(map[string]struct{}, len(names)+len(force))
		for _, n := range names {
			have[n] = struct{}{}
		}
		grew := false
		for n := range force {
			_, sub := ts.names[n]
			if _, dup := have[n]; !dup && (sub || ts.wildcard) {
				have[n] = struct{}{}
				names = append(names, n)
				grew = true
			}
		}
		if grew {
			slices.Sort(names)
		}
	}
	var res []*cache.Resource
	var err error
	if ss, ok := s.src.(setSource); ok && full && !ts.wildcard && ts.set != nil && len(names) == len(ts.set.sorted) {
		res, err = ss.subscribed(s.proxy, st, ts.typeURL, ts.set) // the whole shared subscription
	} else {
		res, err = s.src.resources(s.proxy, st, ts.typeURL, names, ts.wildcard && names == nil)
	}
	if err != nil {
		s.note(note{kind: noteGenError, typeURL: ts.typeURL, msg: err.Error()})
	}
	if !s.delta && allRequired(ts.typeURL) {
		// SotW CDS and LDS carry every resource whenever anything changed.
		d := st.diffs.get(ts.sentList, res)
		var changed map[string]struct{}
		if want && len(d.out) > 0 {
			changed = d.changedSet()
		}
		if !d.differ() && !always && len(force) == 0 {
			return changed
		}
		s.send(ts, st.snap.Version, res, nil, now)
		ts.unanswered = false
		ts.sentList = res
		return changed
	}
	wholeWildcard := s.delta && full && ts.wildcard
	if wholeWildcard && ts.heldList != nil && len(force) == 0 {
		return s.respondHeldList(ts, st, res, always, want, now)
	}
	ts.heldList = nil
	held := heldCursor{ts: ts}
	var changed map[string]struct{} // only CDS callers use it (Delta CDS)
	if want && ts.typeURL == gen.ClusterType {
		changed = make(map[string]struct{})
	}
	var out []*cache.Resource
	heldInRes := 0 // Delta: how many of res the client holds (all it holds, when equal to len(sent))
	for _, r := range res {
		h, ok := held.hash(r.Name)
		if ok {
			heldInRes++
		}
		ch := !ok || h != r.Hash
		if ch && changed != nil {
			changed[r.Name] = struct{}{}
		}
		if _, f := force[r.Name]; ch || f {
			out = append(out, r)
		}
	}
	var removed []string
	if s.delta {
		removed = deltaRemoved(ts, res, names, full, always, heldInRes)
	}
	if wholeWildcard {
		ts.heldList = res // below, sent comes to hold exactly res
	}
	if len(out) == 0 && len(removed) == 0 && !always {
		return nil
	}
	s.send(ts, st.snap.Version, out, removed, now)
	ts.unanswered = false
	if !s.delta && full && !ts.wildcard && !held.unsorted {
		// The client now holds the whole answer: remember the shared list, not each name.
		ts.sentBase = res
		clear(ts.sent)
		return changed
	}
	ts.recordSent(out, removed)
	return changed
}

// recordSent notes that the client now holds out and no longer holds removed.
func (ts *typeState) recordSent(out []*cache.Resource, removed []string) {
	for _, r := range out {
		ts.sent[r.Name] = r.Hash
	}
	for _, n := range removed {
		delete(ts.sent, n)
	}
}

// respondHeldList is respond for a Delta wildcard subscription answered in full while the
// client holds exactly ts.heldList: what changed comes from the push state's shared comparison
// of the two lists, not from a lookup per resource per stream.
func (s *session) respondHeldList(ts *typeState, st *pushState, res []*cache.Resource, always, want bool, now time.Time) map[string]struct{} {
	d := st.diffs.get(ts.heldList, res)
	ts.heldList = res
	var changed map[string]struct{}
	if want && ts.typeURL == gen.ClusterType {
		changed = d.changedSet()
	}
	if !d.differ() && !always {
		return changed
	}
	s.send(ts, st.snap.Version, d.out, d.removed, now)
	ts.unanswered = false
	ts.recordSent(d.out, d.removed)
	return changed
}

func byName(a, b *cache.Resource) int { return strings.Compare(a.Name, b.Name) }

// heldCursor says which bytes of a resource the client holds: what sent records, else what
// sentBase has. Asked in increasing name order (a response's resources, sorted by name) it walks
// sentBase once; the first name out of order switches it to searching, and unsorted records
// that the names asked were not sorted.
type heldCursor struct {
	ts       *typeState
	i        int
	last     string
	unsorted bool
}

func (c *heldCursor) hash(name string) (uint64, bool) {
	if name < c.last {
		c.unsorted = true
	}
	c.last = name
	if h, ok := c.ts.sent[name]; ok {
		return h, true
	}
	b := c.ts.sentBase
	if len(b) == 0 {
		return 0, false
	}
	if !c.unsorted {
		for c.i < len(b) && b[c.i].Name < name {
			c.i++
		}
		if c.i < len(b) && b[c.i].Name == name {
			return b[c.i].Hash, true
		}
		return 0, false
	}
	if i, ok := slices.BinarySearchFunc(b, name, func(r *cache.Resource, n string) int { return strings.Compare(r.Name, n) }); ok {
		return b[i].Hash, true
	}
	return 0, false
}

// deltaRemoved lists what a Delta response must remove: for a wildcard subscription answered in
// full, what the client holds that no longer exists; for named resources that were asked for,
// those that do not exist and that the client holds (or, answering a request, that it asked
// for: removed_resources also means "does not exist").
func deltaRemoved(ts *typeState, res []*cache.Resource, names []string, full, answering bool, heldInRes int) []string {
	wildGone := ts.wildcard && full && heldInRes < len(ts.sent) // the client holds something res lacks
	missing := len(res) < len(names)                            // names are unique: one lacks a resource
	if !wildGone && !missing {
		return nil
	}
	present := make(map[string]struct{}, len(res))
	for _, r := range res {
		present[r.Name] = struct{}{}
	}
	var out []string
	gone := map[string]struct{}{}
	if wildGone {
		for n := range ts.sent {
			if _, ok := present[n]; !ok {
				out = append(out, n)
				gone[n] = struct{}{}
			}
		}
	}
	if missing {
		for _, n := range names {
			if _, ok := present[n]; ok {
				continue
			}
			if _, ok := gone[n]; ok {
				continue
			}
			if _, held := ts.sent[n]; held || answering {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// withoutName returns list without the resource called name (a copy when it was there).
func withoutName(list []*cache.Resource, name string) []*cache.Resource {
	i := slices.IndexFunc(list, func(r *cache.Resource) bool { return r.Name == name })
	if i < 0 {
		return list
	}
	return slices.Concat(list[:i], list[i+1:])
}

// send emits one response and records it as sent at now (written moves that to when the
// shell finished writing it).
func (s *session) send(ts *typeState, version string, res []*cache.Resource, removed []string, now time.Time) {
	nonce := s.nextNonce()
	s.eff.out = append(s.eff.out, response{typeURL: ts.typeURL, version: version, nonce: nonce,
		resources: res, removed: removed, delta: s.delta})
	ts.nonce, ts.version, ts.sentAt = nonce, version, now
	ts.sentResp++
	s.flow.Sent(ts.typeURL, nonce, now)
	s.eff.status = true
}

// typeStatuses returns every type's state for /debug/syncz, sorted by type URL, in dst's
// storage when it is large enough.
func (s *session) typeStatuses(dst []TypeStatus) []TypeStatus {
	out := dst[:0]
	for _, ts := range s.types {
		out = append(out, TypeStatus{TypeURL: ts.typeURL, Subscribed: len(ts.names), Wildcard: ts.wildcard,
			Sent: ts.version, Acked: ts.acked, Nacked: ts.nacked, LastError: ts.lastErr, Nacks: ts.nacks,
			Responses: ts.sentResp, Pending: s.flow.Awaiting(ts.typeURL), Held: s.flow.Holding(ts.typeURL),
			LastPush: ts.sentAt})
	}
	slices.SortFunc(out, func(a, b TypeStatus) int { return strings.Compare(a.TypeURL, b.TypeURL) })
	return out
}
