package xds

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/push"
)

// pushItem is a connection's turn in a push: the merged request, when it was enqueued, and a
// channel the owner closes once every response of the push is written.
type pushItem struct {
	req      *model.PushRequest
	enqueued time.Time
	dequeued time.Time
	done     chan struct{}
}

// typeState is one type URL's protocol state on one stream. Only the owner goroutine touches it.
type typeState struct {
	typeURL  string
	wildcard bool
	names    map[string]struct{}
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
	sentResp   int
	// byHost indexes an EDS subscription by service hostname (built on first use after the
	// subscription changes), so an endpoint push finds its clusters without parsing every name.
	byHost map[string][]string

	// heldForce names the cluster assignments that must be re-sent with a push that flow
	// control holds (the held request itself lives in conn.flow).
	heldForce map[string]struct{}
}

// conn is one ADS stream. Its fields are owned by the stream's goroutine, except status, which
// /debug/syncz reads under statusMu.
type conn struct {
	id     string
	srv    *Server
	stream grpc.ServerStream
	proxy  *model.Proxy
	since  time.Time
	types  map[string]*typeState
	nonces uint64
	flow   *push.Flow
	// afterCDS is the listener and route part of pushes whose CDS flow control holds: they
	// would reference clusters the client does not have yet (make-before-break), so they go
	// out right after the held CDS does.
	afterCDS *model.PushRequest
	delta    bool // a Delta (incremental) xDS stream

	pushCh chan pushItem
	closed chan struct{}
	// With a send timeout, responses are written by a sender goroutine so the owner can give
	// up on a client that does not read (see sendMsg).
	sendq     chan any
	sendErr   chan error
	sendTimer *time.Timer
	wake      chan time.Time // flow-control ACK timeouts

	statusMu sync.Mutex
	status   ClientStatus
}

// isClosed reports whether the stream has ended (closeConn ran).
func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *conn) nextNonce() string {
	c.nonces++
	return strconv.FormatUint(c.nonces, 36)
}

// register records the proxy of a stream's first request and makes the stream reachable by
// pushes.
func (c *conn) register(p *model.Proxy) {
	p = c.srv.withIdentity(c.stream.Context(), p)
	c.proxy = p
	c.id = p.NodeID + "-" + strconv.FormatUint(c.srv.connSeq.Add(1), 10)
	c.setStatus(func(s *ClientStatus) {
		s.NodeID, s.Namespace, s.Generator, s.Delta = p.NodeID, p.Namespace, p.Generator, c.delta
	})
	c.srv.register(c)
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

// handleRequest applies one DiscoveryRequest. A returned error ends the stream.
func (c *conn) handleRequest(req *sotwRequest, now time.Time) error {
	if c.proxy == nil {
		p, err := parseProxy(&req.DiscoveryRequest)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		c.register(p)
	}
	typeURL := req.GetTypeUrl()
	if typeURL == "" {
		return status.Error(codes.InvalidArgument, "request without type_url: ADS requests must name their type")
	}
	ts := c.types[typeURL]
	nonce := req.GetResponseNonce()
	if ts != nil && nonce != "" && req.GetErrorDetail() != nil {
		c.rejected(ts, nonce, req.GetErrorDetail())
	}
	if ts != nil && nonce != "" && nonce != ts.nonce {
		c.srv.metrics.ExpiredNonce(typeURL)
		return nil
	}
	var release *model.PushRequest
	if nonce != "" && ts != nil {
		release = c.answered(ts, req.GetErrorDetail() != nil, now)
	}

	if ts != nil && nonce != "" && req.restates(ts.reqHash, ts.reqCount) {
		// The common case, an ACK restating the subscription: nothing to diff.
		return c.release(ts, release, now)
	}
	wildcard, names := subscription(typeURL, req.Names(), ts != nil && ts.named)
	if ts == nil || nonce == "" {
		// A new subscription, or one restated after a reconnect: answer it in full.
		if ts == nil {
			ts = &typeState{typeURL: typeURL, sent: map[string]uint64{}}
			c.types[typeURL] = ts
		} else {
			clear(ts.sent)
		}
		ts.wildcard, ts.names, ts.byHost = wildcard, names, nil
		ts.named = ts.named || req.namesCount > 0
		ts.reqHash, ts.reqCount = req.namesHash, req.namesCount
		_, err := c.respond(ts, nil, nil, true, now)
		return err
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
			removed = true
		}
	}
	changedWildcard := wildcard != ts.wildcard
	if len(added) > 0 || removed {
		ts.byHost = nil
	}
	ts.wildcard, ts.names = wildcard, names
	ts.named = ts.named || req.namesCount > 0
	ts.reqHash, ts.reqCount = req.namesHash, req.namesCount

	full := (allRequired(typeURL) && (len(added) > 0 || removed || changedWildcard)) ||
		(!allRequired(typeURL) && changedWildcard && wildcard)
	if full && release != nil {
		// The answer below covers the held push: send the type once, with what it had to carry.
		force := ts.heldForce
		ts.heldForce = nil
		changed, err := c.respond(ts, nil, force, true, now)
		if err != nil || ts.typeURL != gen.ClusterType {
			return err
		}
		return c.afterReleasedCDS(release, changed, now)
	}
	if err := c.release(ts, release, now); err != nil {
		return err
	}
	var err error
	switch {
	case full:
		_, err = c.respond(ts, nil, nil, true, now)
	case !allRequired(typeURL) && len(added) > 0:
		slices.Sort(added)
		force := make(map[string]struct{}, len(added))
		for _, n := range added {
			force[n] = struct{}{}
		}
		_, err = c.respond(ts, added, force, true, now)
	}
	return err
}

// release sends a push that flow control held for ts until the client answered (nil: none),
// with the assignments that had to be re-sent with it.
func (c *conn) release(ts *typeState, req *model.PushRequest, now time.Time) error {
	if req == nil {
		return nil
	}
	force := ts.heldForce
	ts.heldForce = nil
	changed, err := c.pushType(ts.typeURL, req, force, now)
	if err != nil || ts.typeURL != gen.ClusterType {
		return err
	}
	return c.afterReleasedCDS(req, changed, now)
}

// afterReleasedCDS follows a CDS response that flow control had held: the assignments of the
// clusters that changed (a changed cluster warms until its ClusterLoadAssignment comes), then
// the listeners and routes held behind it (make-before-break).
func (c *conn) afterReleasedCDS(req *model.PushRequest, changed map[string]struct{}, now time.Time) error {
	if len(changed) > 0 {
		if _, err := c.pushType(gen.EndpointType, req, changed, now); err != nil {
			return err
		}
	}
	if c.afterCDS == nil || c.flow.Holding(gen.ClusterType) {
		return nil
	}
	after := c.afterCDS
	c.afterCDS = nil
	for _, t := range []string{gen.ListenerType, gen.RouteType} {
		if _, err := c.pushType(t, after, nil, now); err != nil {
			return err
		}
	}
	return nil
}

// answered records the ACK or NACK of ts's latest response and returns a push that flow
// control held meanwhile. A repeated answer to the same response changes nothing. (A NACK is
// logged and counted by rejected, whatever its nonce.)
func (c *conn) answered(ts *typeState, nack bool, now time.Time) *model.PushRequest {
	ar := c.flow.Ack(ts.typeURL, ts.nonce, now)
	if !nack {
		ts.acked = ts.version
	}
	if !ar.Matched {
		return nil
	}
	c.srv.metrics.Acked(ts.typeURL, ar.Wait)
	c.updateTypeStatus(ts, now)
	return ar.Release
}

// rejected handles a NACK of ts's response with nonce: like istiod, it logs the client's error
// at warning level and counts pilot_total_xds_rejects{type}, once per nonce (a client repeats
// its NACK with every request until a new version comes; those are not new rejections). A
// NACK of the latest response also records the rejected version for /debug/syncz. Nonces are
// a per-connection counter, so "not yet counted" is "newer than the last one counted"; a nonce
// this connection never sent is ignored.
func (c *conn) rejected(ts *typeState, nonce string, detail *rpcstatus.Status) {
	n, err := strconv.ParseUint(nonce, 36, 64)
	if err != nil || n == 0 || n > c.nonces || n <= ts.lastNack {
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
	c.srv.metrics.Rejected(ts.typeURL)
	c.srv.log.Warn("xDS client rejected a response (NACK)", "conn", c.id, "node", c.proxy.NodeID, "type", ts.typeURL,
		"nonce", nonce, "version", version, "code", codes.Code(detail.GetCode()).String(), "error", detail.GetMessage())
	c.updateTypeStatus(ts, c.srv.now())
}

// pushAll handles one push turn: the affected types in Envoy's order, each cluster that changed
// followed by its ClusterLoadAssignment.
func (c *conn) pushAll(req *model.PushRequest, now time.Time) error {
	if c.proxy == nil {
		return nil
	}
	if only, err := c.pushSecrets(req, now); only || err != nil {
		return err
	}
	if !req.Full {
		_, err := c.pushType(gen.EndpointType, req, nil, now)
		return err
	}
	changedClusters, err := c.pushType(gen.ClusterType, req, nil, now)
	if err != nil {
		return err
	}
	if _, err := c.pushType(gen.EndpointType, req, changedClusters, now); err != nil {
		return err
	}
	if c.flow.Holding(gen.ClusterType) {
		c.afterCDS = c.afterCDS.Merge(req)
		return nil
	}
	for _, t := range []string{gen.ListenerType, gen.RouteType} {
		if _, err := c.pushType(t, req, nil, now); err != nil {
			return err
		}
	}
	return nil
}

// pushType pushes one type for req. force names resources that must be sent even when the
// client holds the same bytes. It returns the names of resources that changed.
func (c *conn) pushType(typeURL string, req *model.PushRequest, force map[string]struct{}, now time.Time) (map[string]struct{}, error) {
	ts := c.types[typeURL]
	if ts == nil {
		return nil, nil
	}
	if len(ts.heldForce) > 0 {
		// Anything forced for an earlier held push goes out with this one.
		f := ts.heldForce
		maps.Copy(f, force)
		force, ts.heldForce = f, nil
	}
	if req = c.flow.Push(typeURL, req, now); req == nil {
		if len(force) > 0 {
			ts.heldForce = force
		}
		c.srv.timers.arm(c, c.flow.Deadline())
		c.updateTypeStatus(ts, now)
		return nil, nil
	}
	var names []string
	if !req.Full && typeURL == gen.EndpointType && !ts.wildcard {
		if ts.byHost == nil {
			ts.byHost = make(map[string][]string)
			for n := range ts.names {
				if p, err := gen.ParseClusterName(n); err == nil {
					ts.byHost[p.Host] = append(ts.byHost[p.Host], n)
				}
			}
		}
		for k := range req.ConfigsUpdated {
			if k.Kind == model.KindEndpoint || k.Kind == model.KindService {
				names = append(names, ts.byHost[k.Name]...)
			}
		}
		if len(names) == 0 && len(force) == 0 {
			return nil, nil
		}
		slices.Sort(names)
	}
	return c.respond(ts, names, force, false, now)
}

// respond generates ts's resources (names nil: the whole subscription), keeps what the client
// does not already hold (all of it for CDS/LDS when anything changed) and sends one response.
// With always set, a response is sent even when nothing changed (answering a request).
func (c *conn) respond(ts *typeState, names []string, force map[string]struct{}, always bool, now time.Time) (map[string]struct{}, error) {
	st := c.srv.state.Load()
	if st == nil {
		// No snapshot yet: the first push answers, even with an empty response.
		ts.unanswered = ts.unanswered || always
		return nil, nil
	}
	always = always || ts.unanswered
	full := names == nil // the whole subscription, not only some names
	if full && !ts.wildcard {
		names = slices.Sorted(maps.Keys(ts.names))
		if len(names) == 0 && !always {
			return nil, nil
		}
	}
	if !(full && ts.wildcard) { // a full wildcard answer already holds every forced name
		for n := range force {
			if _, ok := ts.names[n]; ok || ts.wildcard {
				names = appendUnique(names, n)
			}
		}
	}
	res, err := c.srv.resources(c, st, ts.typeURL, names, ts.wildcard && names == nil)
	if err != nil {
		c.srv.log.Warn("generating resources", "node", c.proxy.NodeID, "type", ts.typeURL, "error", err)
	}
	changed := make(map[string]struct{})
	for _, r := range res {
		if h, ok := ts.sent[r.Name]; !ok || h != r.Hash {
			changed[r.Name] = struct{}{}
		}
	}
	var out []*cache.Resource
	var removed []string
	if !c.delta && allRequired(ts.typeURL) {
		gone := len(ts.sent) > len(res)-len(changed)
		if len(changed) == 0 && !gone && !always && len(force) == 0 {
			return nil, nil
		}
		out = res
		clear(ts.sent)
	} else {
		for _, r := range res {
			_, ch := changed[r.Name]
			_, f := force[r.Name]
			if ch || f {
				out = append(out, r)
			}
		}
		if c.delta {
			removed = deltaRemoved(ts, res, names, full, always)
		}
		if len(out) == 0 && len(removed) == 0 && !always {
			return nil, nil
		}
	}
	if err := c.send(ts, st.snap.Version, out, removed, now); err != nil {
		return nil, err
	}
	ts.unanswered = false
	for _, r := range out {
		ts.sent[r.Name] = r.Hash
	}
	for _, n := range removed {
		delete(ts.sent, n)
	}
	return changed, nil
}

// deltaRemoved lists what a Delta response must remove: for a wildcard subscription answered in
// full, what the client holds that no longer exists; for named resources that were asked for,
// those that do not exist and that the client holds (or, answering a request, that it asked
// for: removed_resources also means "does not exist").
func deltaRemoved(ts *typeState, res []*cache.Resource, names []string, full, answering bool) []string {
	present := make(map[string]struct{}, len(res))
	for _, r := range res {
		present[r.Name] = struct{}{}
	}
	var out []string
	if ts.wildcard && full {
		for n := range ts.sent {
			if _, ok := present[n]; !ok {
				out = append(out, n)
			}
		}
	}
	for _, n := range names {
		if _, ok := present[n]; ok || slices.Contains(out, n) {
			continue
		}
		if _, held := ts.sent[n]; held || answering {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func appendUnique(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// send writes one response and records it.
func (c *conn) send(ts *typeState, version string, res []*cache.Resource, removed []string, start time.Time) error {
	nonce := c.nextNonce()
	resp := &encodedResponse{resources: res, tail: responseTail(version, ts.typeURL, nonce)}
	if c.delta {
		resp = &encodedResponse{resources: res, tail: deltaTail(version, ts.typeURL, nonce, removed), delta: true}
	}
	if err := c.sendMsg(resp); err != nil {
		return err
	}
	now := c.srv.now()
	ts.nonce, ts.version, ts.sentAt = nonce, version, now
	ts.sentResp++
	c.flow.Sent(ts.typeURL, nonce, now)
	c.srv.metrics.ResponseSent(ts.typeURL, resp.size(), now.Sub(start))
	c.updateTypeStatus(ts, now)
	return nil
}

// sendMsg writes m to the stream. With a send timeout it hands m to the connection's sender
// goroutine and gives up after the timeout: the error ends the stream, which unblocks the
// sender, and the push worker waiting on this connection is released.
func (c *conn) sendMsg(m any) error {
	timeout := c.srv.opts.SendTimeout
	if timeout <= 0 {
		return c.stream.SendMsg(m)
	}
	if c.sendq == nil {
		c.sendq, c.sendErr = make(chan any), make(chan error, 1)
		c.sendTimer = time.NewTimer(timeout)
		go func(q <-chan any, errs chan<- error) {
			for m := range q {
				errs <- c.stream.SendMsg(m)
			}
		}(c.sendq, c.sendErr)
	} else {
		c.sendTimer.Reset(timeout)
	}
	c.sendq <- m // the sender is idle: the previous send finished or ended the stream
	select {
	case err := <-c.sendErr:
		c.sendTimer.Stop()
		return err
	case <-c.sendTimer.C:
		c.srv.log.Warn("closing a stream whose client does not read", "node", c.proxy.NodeID, "timeout", timeout)
		return status.Errorf(codes.DeadlineExceeded, "the client did not read a response for %v; closing the stream", timeout)
	}
}

// flowTimeout releases held pushes whose ACK did not come within the timeout.
func (c *conn) flowTimeout(now time.Time) error {
	for _, r := range c.flow.Expire(now) {
		ts := c.types[r.TypeURL]
		if ts == nil {
			continue
		}
		if err := c.release(ts, r.Req, now); err != nil {
			return err
		}
	}
	if d := c.flow.Deadline(); !d.IsZero() {
		c.srv.timers.arm(c, d)
	}
	return nil
}

func (c *conn) sortedTypes() []string { return slices.Sorted(maps.Keys(c.types)) }

// streamEnded maps a receive error to the handler's return value.
func streamEnded(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Canceled {
		return nil
	}
	return err
}

func parseProxy(req *discoveryv3.DiscoveryRequest) (*model.Proxy, error) {
	p, err := model.ParseProxy(req.GetNode())
	if err != nil {
		return nil, fmt.Errorf("first request: %w", err)
	}
	return p, nil
}
