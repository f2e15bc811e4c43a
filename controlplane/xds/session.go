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
	"github.com/xdslab/xdslab/controlplane/xds/sotw"
	"github.com/xdslab/xdslab/istioconfig"
)

// source is what a session serves from. The Server is the source of every stream.
type source interface {
	// current is the latest push state (nil before the first snapshot).
	current() *pushState
	// resources returns the marshalled resources of a type for a proxy in st: the whole set
	// when wildcard, else the named ones that exist.
	resources(p *model.Proxy, st *pushState, typeURL string, names []string, wildcard bool) ([]*cache.Resource, error)
	// subscribed returns the resources of a whole SotW subscription (the ones of set that
	// exist) for a proxy in st, sorted by name. The Server answers it once per push state for
	// every stream whose proxy gets the same bytes and that subscribes to the same set
	// (pushState.sharedAnswer), and the streams keep that shared list as what they hold.
	subscribed(p *model.Proxy, st *pushState, typeURL string, set *sotw.NameSet) ([]*cache.Resource, error)
}

// typeState is one type URL's protocol state on one stream.
type typeState struct {
	typeURL  string
	wildcard bool
	names    map[string]struct{}
	// set is a SotW subscription's names, shared with the streams that subscribe to the same
	// ones (names is set.Names() then, read-only); nil on Delta, whose names change one by one.
	set *sotw.NameSet
	// named: a SotW request of this type has named resources (or "*"), so an empty list no
	// longer means wildcard.
	named bool

	// held is what the client holds of the type and what it was last sent.
	held    holdings
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
	sentResp   int
	// byHost indexes a Delta EDS subscription by service hostname (kept up to date from the
	// first request), so an endpoint push finds its clusters without parsing every name;
	// SotW uses set.Hosts.
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
	// proxy is the stream's client as its node describes it (immutable: the push goroutine
	// reads it); effProxy is it with the labels of its workload in effSnap (effective), the
	// one every answer is generated for.
	proxy    *model.Proxy
	effProxy *model.Proxy
	effSnap  *model.Snapshot
	types    map[string]*typeState
	// nonces counts responses; a nonce is the count in base 36.
	nonces uint64
	flow   *push.Flow
	// sets interns SotW subscriptions across the server's streams (nil: none shared).
	sets *sotw.NameSets
	// afterCDS is the listener and route part of pushes whose CDS flow control holds: they
	// would reference clusters the client does not have yet (make-before-break), so they go
	// out right after the held CDS does.
	afterCDS *model.PushRequest
	// rest is the listener and route part of the push turn begun by PushClusters.
	rest *model.PushRequest
	// base is the push state current when the first request named the proxy: every answer of
	// that request is at least as new. A push published after it may have missed the stream,
	// which registers only after the answer (see conn.apply).
	base *pushState

	eff effects
}

// newSession returns the session of a new stream served from src, interning its SotW
// subscriptions in sets (nil: none shared).
func newSession(src source, sets *sotw.NameSets, delta bool, flow push.FlowOptions) *session {
	return &session{src: src, sets: sets, delta: delta, types: map[string]*typeState{}, flow: push.NewFlow(flow)}
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
	s.base = s.src.current()
	s.eff.register = true
	return nil
}

// effective returns the proxy with the labels istiod gives it in st's snapshot: its
// workload's in the registry (model.WithWorkloadLabels), recomputed when the snapshot changes.
func (s *session) effective(st *pushState) *model.Proxy {
	if s.effProxy == nil || s.effSnap != st.snap {
		s.effProxy, s.effSnap = model.WithWorkloadLabels(s.proxy, st.snap), st.snap
	}
	return s.effProxy
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
func (s *session) Request(req *sotw.Request, now time.Time) *effects {
	s.begin()
	return s.end(s.request(req, now))
}

func (s *session) request(req *sotw.Request, now time.Time) error {
	typeURL, err := s.accept(req.GetNode(), req.GetTypeUrl())
	if err != nil {
		return err
	}
	ts := s.types[typeURL]
	nonce := req.GetResponseNonce()
	if ts != nil && nonce != "" && req.GetErrorDetail() != nil {
		s.rejected(ts, nonce, req.GetErrorDetail())
	}
	if ts != nil && nonce != "" && nonce != ts.held.nonce {
		s.note(note{kind: noteExpiredNonce, typeURL: typeURL})
		return nil
	}
	var release *model.PushRequest
	if nonce != "" && ts != nil {
		release = s.answered(ts, req.GetErrorDetail() != nil, now)
	}

	if ts != nil && nonce != "" && req.Restates(ts.reqHash, ts.reqCount) {
		// The common case, an ACK restating the subscription: nothing to diff.
		s.release(ts, release, now)
		return nil
	}
	// Most subscriptions are some other stream's too: found without decoding the names.
	set, wildcard := s.sets.Lookup(req), false
	if set == nil {
		var fresh map[string]struct{}
		wildcard, fresh = subscription(typeURL, req.Names(), ts != nil && ts.named)
		set = s.sets.Intern(fresh)
		if !wildcard && len(fresh) == req.NamesCount() {
			set.RememberOrder(req) // no "*", no duplicate: exactly the set, in this order
		}
	}
	names := set.Names()
	if ts == nil || nonce == "" {
		// A new subscription, or one restated after a reconnect: answer it in full.
		if ts == nil {
			ts = &typeState{typeURL: typeURL, held: newHoldings(false, typeURL)}
			s.types[typeURL] = ts
		} else {
			ts.held.forget()
		}
		ts.wildcard, ts.names, ts.set, ts.byHost = wildcard, names, set, nil
		ts.named = ts.named || req.NamesCount() > 0
		ts.reqHash, ts.reqCount = req.NamesHash(), req.NamesCount()
		s.respond(ts, answer{scope: wholeSubscription, request: true}, now)
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
			ts.held.drop(n) // a re-subscription must send it again
			removed = true
		}
	}
	changedWildcard := wildcard != ts.wildcard
	if len(added) > 0 || removed {
		ts.byHost = nil
	}
	ts.wildcard, ts.names, ts.set = wildcard, names, set
	ts.named = ts.named || req.NamesCount() > 0
	ts.reqHash, ts.reqCount = req.NamesHash(), req.NamesCount()

	full := (allRequired(typeURL) && (len(added) > 0 || removed || changedWildcard)) ||
		(!allRequired(typeURL) && changedWildcard && wildcard)
	if full && release != nil {
		// The answer below covers the held push: send the type once, with what it had to carry.
		force := ts.heldForce
		ts.heldForce = nil
		changed := s.respond(ts, answer{scope: wholeSubscription, force: force, request: true, push: true}, now)
		if ts.typeURL == gen.ClusterType {
			s.afterReleasedCDS(release, changed, now)
		}
		return nil
	}
	s.release(ts, release, now)
	switch {
	case full:
		s.respond(ts, answer{scope: wholeSubscription, request: true}, now)
	case !allRequired(typeURL) && len(added) > 0:
		slices.Sort(added)
		force := make(map[string]struct{}, len(added))
		for _, n := range added {
			force[n] = struct{}{}
		}
		s.respond(ts, answer{scope: someNames(added), force: force, request: true}, now)
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
		ts = &typeState{typeURL: typeURL, held: newHoldings(true, typeURL), names: map[string]struct{}{}}
		if typeURL == gen.EndpointType {
			// Indexed as names come, so an endpoint push does not parse a thousand names.
			ts.byHost = map[string][]string{}
		}
		s.types[typeURL] = ts
		// What the client already holds (after a reconnect): not re-sent while unchanged.
		for name, v := range req.GetInitialResourceVersions() {
			if h, err := strconv.ParseUint(v, 16, 64); err == nil {
				ts.held.assume(name, h)
			} else {
				ts.held.assume(name, 0) // unknown version: sent again
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
		ts.held.drop(n)
	}
	if len(unsub) > 0 && len(added) > 0 && !ts.wildcard {
		// A name subscribed and unsubscribed in one request ends unsubscribed: not sent.
		added = slices.DeleteFunc(added, func(n string) bool {
			_, sub := ts.names[n]
			return !sub
		})
	}
	var release *model.PushRequest
	if nonce := req.GetResponseNonce(); nonce != "" {
		if req.GetErrorDetail() != nil {
			s.rejected(ts, nonce, req.GetErrorDetail())
		}
		if nonce != ts.held.nonce {
			s.note(note{kind: noteExpiredNonce, typeURL: typeURL})
		} else {
			release = s.answered(ts, req.GetErrorDetail() != nil, now)
		}
	}
	s.release(ts, release, now)

	switch {
	case first || wildcardOn:
		s.respond(ts, answer{scope: wholeSubscription, request: true}, now)
	case len(added) > 0:
		slices.Sort(added)
		s.respond(ts, answer{scope: someNames(added), force: force, request: true}, now)
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
	ar := s.flow.Ack(ts.typeURL, ts.held.nonce, now)
	if !nack {
		ts.held.acked = ts.held.version
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
	if nonce == ts.held.nonce {
		version = ts.held.version
		ts.held.nacked = version
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
	if ts == nil || ts.held.nonce != nonce {
		return
	}
	ts.held.sentAt = now
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
	sc := wholeSubscription
	if typeURL == gen.EndpointType && !ts.wildcard && (!req.Full || assignmentsByHost(req)) {
		if ts.set != nil {
			ts.byHost = ts.set.Hosts()
		} else if ts.byHost == nil {
			ts.byHost = make(map[string][]string)
			for n := range ts.names {
				hostIndexAdd(ts.byHost, n)
			}
		}
		var names []string
		for k := range req.ConfigsUpdated {
			if k.Kind == model.KindEndpoint || k.Kind == model.KindService {
				names = append(names, ts.byHost[k.Name]...)
			}
		}
		if len(names) == 0 && len(force) == 0 {
			return nil
		}
		slices.Sort(names)
		sc = someNames(slices.Compact(names)) // a host named by both a service and an endpoint key
	}
	return s.respond(ts, answer{scope: sc, force: force, push: true}, now)
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
		case model.KindService, model.KindEndpoint, istioconfig.KindVirtualService, istioconfig.KindGateway, istioconfig.KindSidecar,
			model.KindSecret, istioconfig.KindAuthorizationPolicy, istioconfig.KindRequestAuthentication:
		default:
			return false
		}
	}
	return true
}

// scope is the part of a subscription a response covers.
type scope struct {
	all   bool
	names []string // sorted, each subscribed; when not all
}

// wholeSubscription covers every resource the stream subscribes to (for a wildcard, every one
// that exists).
var wholeSubscription = scope{all: true}

// someNames covers the named resources (sorted, each subscribed): names a request added, or the
// assignments of the hosts a push names. None: only the forced ones (answer.force).
func someNames(names []string) scope { return scope{names: names} }

// answer is what respond is asked to send of a type.
type answer struct {
	scope scope
	// force names resources sent even when the client holds the same bytes: those subscribed
	// join a scope of some names (a whole answer holds them already).
	force map[string]struct{}
	// request: the response answers a request, so one goes out even when nothing changed.
	request bool
	// push: the response carries a push; respond then returns the clusters whose bytes changed
	// (CDS), which their assignments must follow.
	push bool
}

// respond generates ts's resources in a's scope, keeps what the client does not already hold
// (all of them for SotW CDS/LDS when anything changed) and sends one response, unless nothing
// changed and a answers no request. For a push of CDS it returns the names of the clusters that
// changed (nil otherwise).
func (s *session) respond(ts *typeState, a answer, now time.Time) map[string]struct{} {
	st := s.src.current()
	if st == nil {
		// No snapshot yet: the first push answers, even with an empty response.
		ts.unanswered = ts.unanswered || a.request
		return nil
	}
	always := a.request || ts.unanswered
	full, names, force := a.scope.all, a.scope.names, a.force
	if full && !ts.wildcard {
		if ts.set != nil {
			names = ts.set.Sorted() // shared: clipped, so the appends below copy it
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
	if full && !ts.wildcard && ts.set != nil {
		res, err = s.src.subscribed(s.effective(st), st, ts.typeURL, ts.set) // the whole shared subscription
	} else {
		res, err = s.src.resources(s.effective(st), st, ts.typeURL, names, full && ts.wildcard)
	}
	if err != nil {
		s.note(note{kind: noteGenError, typeURL: ts.typeURL, msg: err.Error()})
	}
	wantChanged := a.push && ts.typeURL == gen.ClusterType
	wholeWildcard := s.delta && full && ts.wildcard
	switch list, ok := ts.held.whole(); {
	case ok && !s.delta:
		// SotW CDS and LDS carry every resource whenever anything changed.
		return s.respondList(ts, st, list, res, always || len(force) > 0, wantChanged, now)
	case ok && wholeWildcard && len(force) == 0:
		return s.respondList(ts, st, list, res, always, wantChanged, now)
	}
	held := ts.held.lookup()
	var changed map[string]struct{}
	if wantChanged {
		changed = make(map[string]struct{})
	}
	var out []*cache.Resource
	heldInRes := 0 // Delta: how many of res the client holds (all it holds, when equal to its count)
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
	sent := len(out) > 0 || len(removed) > 0 || always
	if sent {
		s.send(ts, st.snap.Version, out, removed, now)
		ts.unanswered = false
	}
	switch {
	case wholeWildcard, sent && !s.delta && full && !ts.wildcard && held.sorted():
		// The client now holds the whole answer: keep the shared list, not each name.
		ts.held.gotWhole(res, out, removed)
	default:
		ts.held.got(out, removed) // nothing, when nothing was sent
	}
	return changed
}

// respondList is respond when the client holds exactly the list held and res is the whole
// current answer: what changed comes from the push state's shared comparison of the two lists,
// not from a lookup per resource per stream. SotW sends all of res when they differ (or when
// always), Delta what differs.
func (s *session) respondList(ts *typeState, st *pushState, held, res []*cache.Resource, always, wantChanged bool, now time.Time) map[string]struct{} {
	d := st.diffs.get(held, res)
	var changed map[string]struct{}
	if wantChanged && len(d.out) > 0 {
		changed = d.changedSet()
	}
	out, removed := d.out, d.removed
	if !s.delta {
		out, removed = res, nil
	}
	if d.differ() || always {
		s.send(ts, st.snap.Version, out, removed, now)
		ts.unanswered = false
	}
	ts.held.gotWhole(res, out, removed)
	return changed
}

func byName(a, b *cache.Resource) int { return strings.Compare(a.Name, b.Name) }

// deltaRemoved lists what a Delta response must remove: for a wildcard subscription answered in
// full, what the client holds that no longer exists; for named resources that were asked for,
// those that do not exist and that the client holds (or, answering a request, that it asked
// for: removed_resources also means "does not exist").
func deltaRemoved(ts *typeState, res []*cache.Resource, names []string, full, answering bool, heldInRes int) []string {
	wildGone := ts.wildcard && full && heldInRes < ts.held.count() // the client holds something res lacks
	missing := len(res) < len(names)                               // names are unique: one lacks a resource
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
		for n := range ts.held.names() {
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
			if ts.held.holds(n) || answering {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// send emits one response and records it as sent at now (written moves that to when the
// shell finished writing it).
func (s *session) send(ts *typeState, version string, res []*cache.Resource, removed []string, now time.Time) {
	nonce := s.nextNonce()
	s.eff.out = append(s.eff.out, response{typeURL: ts.typeURL, version: version, nonce: nonce,
		resources: res, removed: removed, delta: s.delta})
	ts.held.nonce, ts.held.version, ts.held.sentAt = nonce, version, now
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
			Sent: ts.held.version, Acked: ts.held.acked, Nacked: ts.held.nacked, LastError: ts.lastErr, Nacks: ts.nacks,
			Responses: ts.sentResp, Pending: s.flow.Awaiting(ts.typeURL), Held: s.flow.Holding(ts.typeURL),
			LastPush: ts.held.sentAt})
	}
	slices.SortFunc(out, func(a, b TypeStatus) int { return strings.Compare(a.TypeURL, b.TypeURL) })
	return out
}
