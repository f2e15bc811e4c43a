package xds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/push"
	"github.com/xdslab/xdslab/controlplane/xds/sotw"
	"github.com/xdslab/xdslab/istioconfig"
)

// Options configures the ADS server. The zero value is not useful: start from DefaultOptions.
type Options struct {
	// API, when set, serves the SotW streams whose first request's node metadata says
	// GENERATOR=api (MCP clients, as istiod's api generator does); nil serves them as proxies.
	API APIServer
	// FlowControl holds newer pushes of a type while its last response is unanswered.
	FlowControl bool
	// AckTimeout releases a held push when the client has not answered for this long; zero
	// waits forever.
	AckTimeout time.Duration
	// PushThrottle is the number of connections pushed concurrently.
	PushThrottle int
	// AdmissionRate limits new streams per second (ResourceExhausted beyond); 0 disables.
	AdmissionRate float64
	// AdmissionBurst is how many streams may arrive at once.
	AdmissionBurst int
	// AdmissionWait is how long a new stream may wait for an admission token before it is
	// refused with ResourceExhausted; zero refuses at once.
	AdmissionWait time.Duration
	// SendTimeout closes a stream whose client has not taken a response for this long (its
	// HTTP/2 window stays full), so a client that stops reading cannot hold a push worker;
	// zero disables it (like Istio's PILOT_XDS_SEND_TIMEOUT).
	SendTimeout time.Duration
	// Secrets serves SDS to authenticated streams; nil serves no secrets (sds.go).
	Secrets Secrets
	Metrics Metrics
	Cache   *cache.Cache
	Logger  *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultSendTimeout is how long a response may wait for a client to read it.
const DefaultSendTimeout = 30 * time.Second

// DefaultOptions returns the defaults for a machine with cores CPUs: Istio's throttle
// min(15 + 5 × cores, 100), admission at the same rate per second, flow control on with
// push.DefaultAckTimeout.
func DefaultOptions(cores int) Options {
	t := push.DefaultConcurrency(cores)
	return Options{FlowControl: true, AckTimeout: push.DefaultAckTimeout, PushThrottle: t, AdmissionRate: float64(t),
		AdmissionBurst: t, AdmissionWait: DefaultAdmissionWait, SendTimeout: DefaultSendTimeout}
}

// DefaultAdmissionWait is how long a new stream waits for an admission token (istiod waits a
// second on its stream limiter too).
const DefaultAdmissionWait = time.Second

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.PushThrottle < 1 {
		errs = append(errs, fmt.Errorf("push throttle %d: must be at least 1", o.PushThrottle))
	}
	if o.AckTimeout < 0 {
		errs = append(errs, fmt.Errorf("ack timeout %v: must be positive, or 0 to wait for the client forever", o.AckTimeout))
	}
	if o.SendTimeout < 0 {
		errs = append(errs, fmt.Errorf("send timeout %v: must be positive, or 0 to wait for slow clients forever", o.SendTimeout))
	}
	if o.AdmissionRate < 0 {
		errs = append(errs, fmt.Errorf("admission rate %v: must be >= 0", o.AdmissionRate))
	}
	if o.AdmissionWait < 0 {
		errs = append(errs, fmt.Errorf("admission wait %v: must be >= 0", o.AdmissionWait))
	}
	return errors.Join(errs...)
}

// pushState is what pushes read: the latest snapshot and the generation of its last full change
// (cache entries of clusters, listeners and routes are stamped with it).
type pushState struct {
	snap    *model.Snapshot
	fullGen uint64

	ipOnce sync.Once
	ips    map[string]struct{}

	// sets holds the answers to whole SotW subscriptions shared by the streams that subscribe
	// to the same names (sharedanswer.go).
	setsMu sync.Mutex
	sets   map[setKey]*setAnswer

	// diffs compares the lists streams hold with the current ones once per pair (listdiff.go).
	diffs listDiffs
}

// endpointIP reports whether ip is the address of some endpoint (then a proxy with that IP has
// inbound config of its own and cannot share cluster and listener bytes with others).
func (st *pushState) endpointIP(ip string) bool {
	st.ipOnce.Do(func() {
		st.ips = make(map[string]struct{})
		for _, svc := range st.snap.Services() {
			for _, ep := range st.snap.Endpoints(svc.Hostname) {
				st.ips[ep.Address] = struct{}{}
			}
		}
	})
	_, ok := st.ips[ip]
	return ok
}

// Server is the ADS server.
type Server struct {
	discoverygrpc.UnimplementedAggregatedDiscoveryServiceServer

	opts    Options
	metrics Metrics
	cache   *cache.Cache
	log     *slog.Logger
	now     func() time.Time
	admit   *admission

	state   atomic.Pointer[pushState]
	connSeq atomic.Uint64
	sets    *sotw.NameSets
	queue   *push.Queue[*conn]

	mu    sync.Mutex
	conns map[*conn]struct{}

	// beforeRegister, when set (tests only), runs after a stream's first answer is built and
	// before the stream joins conns.
	beforeRegister func()

	// draining is done once Drain was called; each stream's owner learns it through its own
	// context (serve), so that no channel is shared by every stream's wait.
	draining context.Context
	drain    context.CancelFunc
}

// ErrDraining is the status a stream ends with when the server drains: clients reconnect (to
// another instance) with backoff, as after any Unavailable.
var ErrDraining = status.Error(codes.Unavailable, "xds: control plane shutting down (drained); reconnect")

// Drain ends every stream with ErrDraining once its owner is free (a stream blocked sending
// to a client that does not read ends when the send does) and refuses new ones. Call it after
// grpc.Server.GracefulStop has sent GOAWAY, so that clients see a GOAWAY, then their stream's
// status, never an abrupt transport close. Safe to call more than once.
func (s *Server) Drain() { s.drain() }

// Streams is the number of open xDS streams.
func (s *Server) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// New returns a server; call Run to start its push workers and Register to serve it.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, metrics: opts.Metrics, cache: opts.Cache, log: opts.Logger, now: opts.Now,
		conns: make(map[*conn]struct{}), admit: newAdmission(opts.AdmissionRate, opts.AdmissionBurst), sets: sotw.NewNameSets()}
	s.draining, s.drain = context.WithCancel(context.Background())
	if s.metrics == nil {
		s.metrics = NopMetrics{}
	}
	if s.cache == nil {
		s.cache = cache.New(s.metrics)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.queue = push.NewQueue[*conn](s.now)
	return s, nil
}

// Register adds the ADS service to a gRPC server.
func (s *Server) Register(g *grpc.Server) {
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, s)
}

// ServerOptions returns the gRPC server options the ADS server needs: its pass-through codec,
// generous message sizes, a buffer pool with a tier for every power of two, and write buffers
// shared between writes. grpc-go's default pool jumps from 32 KiB to 1 MiB, so every request
// just over 32 KiB (an EDS ACK naming a thousand clusters) would take, and clear, a 1 MiB
// buffer; and each connection would keep a 32 KiB write buffer while idle, which is what ten
// thousand sidecars between pushes are.
//
// The receive windows are fixed (serverRecvWindow), which turns off grpc-go's BDP estimation:
// with it, every request the server read (each ACK) made the server send a connection
// WINDOW_UPDATE and a PING, and read the PING's ACK: two more segments a response on the
// wire, and a write and a read more for the server and for every client. An xDS server
// receives small requests only, so there is no bandwidth to probe for.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(serverRecvWindow),
		grpc.InitialConnWindowSize(serverRecvWindow),
		grpc.SharedWriteBuffer(true),
		experimental.BufferPool(FineBufferPool()),
		grpc.ForceServerCodecV2(newCodec()),
		grpc.MaxRecvMsgSize(16 << 20),
		grpc.MaxConcurrentStreams(1 << 20),
		// istiod's keepalive (pilot/pkg/grpc ServerOptions, pkg/keepalive's defaults): a
		// client may ping every 15s (istio-agent pings a connection idle for 30s; grpc-go's
		// default policy, 5 minutes, sends it away at its fourth PING of an idle stream), and
		// the server pings a connection it has read nothing from for 30s.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}
}

// serverRecvWindow is the ADS server's HTTP/2 receive window, per stream and per connection:
// what a client may send before the server has read it. Requests are small (the largest, a
// Delta subscription or an EDS ACK naming thousands of clusters, is some hundreds of KiB), and
// grpc-go gives window back as the server reads, so 1 MiB never holds a client up.
const serverRecvWindow = 1 << 20

// FineBufferPool returns a gRPC buffer pool with tiers at every power of two from 256 B to
// 16 MiB; clients that receive large xDS responses benefit from it too
// (experimental.WithBufferPool).
func FineBufferPool() mem.BufferPool {
	exps := make([]uint8, 0, 17)
	for e := uint8(8); e <= 24; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		panic(err) // the exponents above are valid by construction
	}
	return p
}

// pushTurn performs one push turn. Its worker is let go once the clusters and assignments are
// written and the listeners and routes generated: writing those (cached bytes, often the
// largest response: one RouteConfiguration holds every virtual host of a port) does not hold
// a worker, so one client's route write does not delay every other client's clusters. The
// stream still gets its responses in order, and the convergence time (pilot_proxy_convergence_time)
// runs to the last of them.
func (c *conn) pushTurn(item pushItem) error {
	now := c.srv.now()
	err := c.apply(c.sess.PushClusters(item.req, now), now)
	var rest *effects
	if err == nil {
		rest = c.sess.PushRest(now)
	}
	close(item.done)
	if rest != nil {
		err = c.apply(rest, now)
	}
	c.srv.metrics.Converged(item.dequeued.Sub(item.enqueued), c.srv.now().Sub(item.enqueued))
	return err
}

// Run runs the push workers until ctx is done.
func (s *Server) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range s.opts.PushThrottle {
		wg.Go(func() { s.worker(ctx) })
	}
	<-ctx.Done()
	s.queue.Close()
	wg.Wait()
}

func (s *Server) worker(ctx context.Context) {
	for {
		it, err := s.queue.Dequeue(ctx)
		if err != nil {
			return
		}
		c := it.Conn
		item := pushItem{req: it.Req, enqueued: it.Enqueued, dequeued: s.now(), done: make(chan struct{})}
		select {
		case c.pushCh <- item:
			select {
			case <-item.done:
			case <-c.closed:
			case <-ctx.Done():
			}
		case <-c.closed:
		case <-ctx.Done():
		}
		s.queue.MarkDone(c)
		if c.isClosed() {
			// A push enqueued as the connection closed (after unregister's Remove) would
			// leave an entry pinning the connection: drop it.
			s.queue.Remove(c)
		}
	}
}

// Push publishes snap and enqueues with req every connection whose scoped view the change
// reaches (pushFilter, istiod's ProxyNeedsPush). It must be called by one goroutine at a time
// (the debouncer's), with snapshots in increasing Seq order.
func (s *Server) Push(snap *model.Snapshot, req *model.PushRequest) {
	prev := s.state.Load()
	full := req.Full || prev == nil
	st := &pushState{snap: snap, fullGen: snap.Seq}
	if !full {
		st.fullGen = prev.fullGen
	}
	s.state.Store(st)
	if full && prev != nil {
		// Named assignments keep their own generations (genOf): only those that are stale or
		// whose service is gone go; everything else is of the previous full change.
		s.cache.Evict(func(k cache.Key, g uint64) bool {
			if k.TypeURL != gen.EndpointType || k.Name == "" {
				return g < st.fullGen
			}
			p, err := gen.ParseClusterName(k.Name)
			return err != nil || st.snap.Service(p.Host) == nil || g < assignmentGen(st.snap, p)
		})
	}
	filter := newPushFilter(prev, snap, req)
	if prev == nil {
		// The first snapshot: everything is new to every stream. (A full request keeps what
		// it names: EDS uses it to diff only the named hosts' assignments.)
		req = req.Merge(&model.PushRequest{Full: true})
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	skipped := 0
	for _, c := range conns {
		need, full := filter.needsPush(c.proxy())
		if !need {
			skipped++
			continue
		}
		r := req
		if full {
			// Its workload's labels changed (an endpoint update): what selects it may have,
			// so everything is regenerated for it, also when req is a full push scoped to
			// some keys (a full push without keys is everything), as istiod's proxy update
			// is a forced full push. So for a router at a changed endpoint: its listen
			// ports may have changed.
			r = req.Merge(&model.PushRequest{Full: true})
		}
		s.queue.Enqueue(c, r)
		if c.isClosed() {
			// c closed after the copy above: its unregister may have run Remove before this
			// Enqueue, which then made a new entry. closeConn closes c.closed before
			// unregistering, so checking after Enqueue cannot miss it.
			s.queue.Remove(c)
		}
	}
	s.countTriggers(req, len(conns)-skipped, skipped)
}

// catchUp enqueues a full push for c alone: a snapshot published while c's first answer was
// being built may have missed it (conn.apply).
func (s *Server) catchUp(c *conn) {
	req := &model.PushRequest{Full: true, Reasons: map[model.TriggerReason]int{model.ReasonProxyRequest: 1}, Start: s.now()}
	s.queue.Enqueue(c, req)
	if c.isClosed() {
		s.queue.Remove(c) // as in Push
	}
}

func (s *Server) register(c *conn) {
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.metrics.ConnectedClients(1)
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	_, ok := s.conns[c]
	delete(s.conns, c)
	s.mu.Unlock()
	if ok {
		s.metrics.ConnectedClients(-1)
	}
	s.queue.Remove(c)
}

// admitStream takes an admission token for a new stream, waiting up to AdmissionWait for one.
func (s *Server) admitStream(ctx context.Context) error {
	if s.draining.Err() != nil {
		return ErrDraining
	}
	wait, ok := s.admit.reserve(s.now(), s.opts.AdmissionWait)
	if !ok {
		s.metrics.StreamRejected()
		return status.Error(codes.ResourceExhausted, "too many new xDS streams per second; retry with backoff")
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// APIServer serves MCP streams (internal/mcp.Server implements it): first is the stream's
// first request, already read.
type APIServer interface {
	Serve(ctx context.Context, first *discoverygrpc.DiscoveryRequest,
		recv func() (*discoverygrpc.DiscoveryRequest, error), send func(*discoverygrpc.DiscoveryResponse) error) error
}

// plainRequest copies a request with its names decoded and releases the transport's buffers.
func plainRequest(r *sotw.Request) *discoverygrpc.DiscoveryRequest {
	out := proto.Clone(&r.DiscoveryRequest).(*discoverygrpc.DiscoveryRequest)
	out.ResourceNames = r.Names()
	r.Release()
	return out
}

// StreamAggregatedResources serves one SotW ADS stream.
func (s *Server) StreamAggregatedResources(stream discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	if err := s.admitStream(stream.Context()); err != nil {
		return err
	}
	var first *sotw.Request
	if s.opts.API != nil {
		first = &sotw.Request{}
		if err := stream.RecvMsg(first); err != nil {
			return streamEnded(err)
		}
		if first.GetNode().GetMetadata().GetFields()["GENERATOR"].GetStringValue() == "api" {
			recv := func() (*discoverygrpc.DiscoveryRequest, error) {
				r := &sotw.Request{}
				if err := stream.RecvMsg(r); err != nil {
					return nil, err
				}
				return plainRequest(r), nil
			}
			return streamEnded(s.opts.API.Serve(stream.Context(), plainRequest(first), recv, stream.Send))
		}
	}
	c := s.newConn(stream, false)
	defer s.closeConn(c)
	recv := func() (*sotw.Request, error) {
		if first != nil {
			r := first
			first = nil
			return r, nil
		}
		r := &sotw.Request{}
		return r, stream.RecvMsg(r)
	}
	return serve(s, stream.Context(), c, recv, func(r *sotw.Request, now time.Time) error {
		defer r.Release() // the transport's buffers, when the names were not needed
		c.unread.answered(r.GetResponseNonce())
		return c.apply(c.sess.Request(r, now), now)
	})
}

// DeltaAggregatedResources serves one Delta (incremental) ADS stream.
func (s *Server) DeltaAggregatedResources(stream discoverygrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	if err := s.admitStream(stream.Context()); err != nil {
		return err
	}
	c := s.newConn(stream, true)
	defer s.closeConn(c)
	return serve(s, stream.Context(), c, stream.Recv, func(r *discoverygrpc.DeltaDiscoveryRequest, now time.Time) error {
		c.unread.answered(r.GetResponseNonce())
		return c.apply(c.sess.DeltaRequest(r, now), now)
	})
}

func (s *Server) newConn(stream grpc.ServerStream, delta bool) *conn {
	c := &conn{srv: s, stream: stream, since: s.now(), pushCh: make(chan pushItem), closed: make(chan struct{}),
		sess: newSession(s, s.sets, delta, push.FlowOptions{Enabled: s.opts.FlowControl, AckTimeout: s.opts.AckTimeout})}
	if stream != nil {
		c.sess.identity = s.streamIdentity(stream.Context())
	}
	return c
}

func (s *Server) closeConn(c *conn) {
	close(c.closed)
	if c.sendq != nil {
		close(c.sendq) // the sender exits once a blocked SendMsg returns with the stream
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	s.unregister(c)
}

// maxRequestStreak is how many ready requests the owner serves in a row before it lets a
// waiting push in.
const maxRequestStreak = 16

// serve is a stream's owner loop: a receive goroutine forwards requests; the owner serves
// requests before pushes (so a push sees the latest ACKs and subscriptions), at most
// maxRequestStreak in a row, and ticks the session when its flow-control timer fires. handle
// feeds one request to the session and performs its effects.
func serve[Req any](s *Server, ctx context.Context, c *conn, recv func() (Req, error), handle func(Req, time.Time) error) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	defer context.AfterFunc(s.draining, func() { stop(ErrDraining) })()
	reqs := make(chan Req)
	recvErr := make(chan error, 1)
	go func() {
		for {
			req, err := recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	streak := 0 // requests served in a row ahead of anything else
	for {
		if streak < maxRequestStreak {
			select {
			case req := <-reqs:
				streak++
				if err := handle(req, s.now()); err != nil {
					return err
				}
				continue
			default:
			}
		} else {
			// A client that keeps requests coming must not starve its own push, whose worker
			// is held until the owner takes it.
			streak = 0
			select {
			case item := <-c.pushCh:
				if err := c.pushTurn(item); err != nil {
					return err
				}
				continue
			default:
			}
		}
		streak = 0
		select {
		case req := <-reqs:
			if err := handle(req, s.now()); err != nil {
				return err
			}
		case item := <-c.pushCh:
			if err := c.pushTurn(item); err != nil {
				return err
			}
		case <-c.timerC():
			c.armed = time.Time{} // fired
			now := s.now()
			if err := c.apply(c.sess.Tick(now), now); err != nil {
				return err
			}
		case err := <-recvErr:
			return streamEnded(err)
		case <-ctx.Done(): // the stream ended, or the server drains
			if context.Cause(ctx) == ErrDraining {
				return ErrDraining
			}
			return nil
		}
	}
}

// current is the latest push state (nil before the first Push); sessions read it.
func (s *Server) current() *pushState { return s.state.Load() }

// resources returns the marshalled resources of typeURL for p: the whole set when wildcard,
// else the named ones, from the cache or generated and stored.
func (s *Server) resources(p *model.Proxy, st *pushState, typeURL string, names []string, wildcard bool) ([]*cache.Resource, error) {
	if !gen.Cacheable(typeURL) {
		return s.secretResources(p, names, s.now())
	}
	g := gen.ForType(typeURL, p)
	if g == nil {
		return nil, nil // a type we do not serve: answered with an empty response
	}
	class := s.class(p, st, typeURL, wildcard)
	build := func(names []string) ([]*cache.Resource, error) {
		rs, err := g.Generate(p, st.snap, names)
		ns, values := make([]string, 0, len(rs)), make([][]byte, 0, len(rs))
		for _, r := range rs {
			b, merr := gen.Marshal(r.Message)
			if merr != nil {
				err = errors.Join(err, fmt.Errorf("marshal %s %s: %w", typeURL, r.Name, merr))
				continue
			}
			ns, values = append(ns, r.Name), append(values, b)
		}
		// Framed end to end: a response carrying them in this order writes one buffer.
		return cache.NewResources(typeURL, ns, values), err
	}
	if wildcard {
		g := st.fullGen
		if typeURL == gen.EndpointType {
			g = st.snap.Seq // a wildcard endpoint list changes with every endpoint change
		}
		res, _, err := s.cache.Get(cache.Key{TypeURL: typeURL, Class: class}, g, func() ([]*cache.Resource, error) { return build(nil) })
		return res, err
	}
	out := make([]*cache.Resource, 0, len(names))
	var missing []string
	gens := make(map[string]uint64, len(names))
	nameClass := func(string) string { return class }
	if typeURL == gen.ListenerType && p.IsGRPC() {
		// A gRPC workload's server listeners are its own (its IP and labels); its client
		// listeners stay shared by the class.
		if srv := gen.GRPCServerKey(p, st.snap); srv != "" {
			srvClass := class + "|srv=" + srv
			nameClass = func(n string) string {
				if strings.HasPrefix(n, gen.GRPCServerListenerPrefix) {
					return srvClass
				}
				return class
			}
		}
	}
	if typeURL == gen.EndpointType {
		// Only the assignments that locality load balancing makes the proxy's are cached per
		// locality class; the rest stay shared by every proxy with the same view of the
		// DestinationRules (its view key: its namespace when that namespace's own rules come
		// first, which rules exported to a list of namespaces it sees). Each assignment's key
		// also names what the rule's TLS mode makes of it (gen.AssignmentRuleKey), so a rule
		// change is never served the old bytes.
		view := class
		if class != "" {
			view = gen.ViewKey(typeURL, p, st.snap, false)
		}
		ruleKey := gen.AssignmentRuleKey(p, st.snap)
		if class != "" || ruleKey != nil {
			var keys []ruleClass // the classes with a rule key, built once per call
			nameClass = func(n string) string {
				k := view
				if class != view {
					if cn, err := gen.ParseClusterName(n); err == nil && gen.LocalityDependent(st.snap, cn.Host) {
						k = class
					}
				}
				if ruleKey == nil {
					return k
				}
				r := ruleKey(n)
				if r == "" {
					return k
				}
				for _, c := range keys {
					if c.base == k && c.rule == r {
						return c.key
					}
				}
				c := ruleClass{base: k, rule: r, key: k + "|" + r}
				keys = append(keys, c)
				return c.key
			}
		}
	}
	for _, n := range names {
		g := s.genOf(st, typeURL, n)
		gens[n] = g
		if res, ok := s.cache.Peek(cache.Key{TypeURL: typeURL, Class: nameClass(n), Name: n}, g); ok {
			out = append(out, res...)
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	built, err := build(missing)
	byName := make(map[string]*cache.Resource, len(built))
	for _, r := range built {
		byName[r.Name] = r
	}
	for _, n := range missing {
		r, ok := byName[n]
		if !ok {
			continue // the generator has no such resource
		}
		s.cache.Put(cache.Key{TypeURL: typeURL, Class: nameClass(n), Name: n}, gens[n], []*cache.Resource{r})
		out = append(out, r)
	}
	return out, err
}

// ruleClass is the cache class of a named assignment whose class base the rule key rule
// (gen.AssignmentRuleKey) extends.
type ruleClass struct{ base, rule, key string }

// genOf is the generation of one named resource: for an assignment assignmentGen, everything
// else changes with the last full change.
func (s *Server) genOf(st *pushState, typeURL, name string) uint64 {
	if typeURL != gen.EndpointType {
		return st.fullGen
	}
	p, err := gen.ParseClusterName(name)
	if err != nil {
		return st.snap.Seq
	}
	return assignmentGen(st.snap, p)
}

// assignmentGen is the generation of a named ClusterLoadAssignment. It is built from its
// service, the service's endpoints, for a subset or locality load balancing the
// DestinationRule, and the PeerAuthentications of its workloads (gen.endpoints), so it changes
// only with those: a full push for another service keeps every other assignment's bytes. The
// rule's TLS mode, which decides the endpoints' tlsMode, is in the assignment's cache key
// instead (gen.AssignmentRuleKey): a rule change that changes it moves the assignment to
// another key, and the proxies that see the same outcome keep sharing one entry.
func assignmentGen(snap *model.Snapshot, p gen.ClusterNameParts) uint64 {
	g := max(snap.ServiceGen(p.Host), snap.EndpointGen(p.Host))
	// With PeerAuthentications, an endpoint's tlsMode metadata depends on its workload's policy.
	if p.Subset != "" || len(snap.Configs(istioconfig.KindPeerAuthentication)) > 0 || gen.LocalityDependent(snap, p.Host) {
		g = max(g, snap.ConfigGen()) // its DestinationRule, or one that now defines it
	}
	return g
}

// class names the proxies that receive identical bytes for typeURL: the generators' key scope
// (the proxy family; for routes also the namespace and labels), the proxy's view of the mesh
// (gen.ViewKey: its Sidecar and namespace, when they restrict what it sees), the proxy type,
// for a sidecar whose IPs (INSTANCE_IPS, else the node id's) are endpoints', those IPs (its
// inbound clusters and listeners are its own; a router's IP is usually an endpoint of its gateway Service, and it has no inbound
// config), for a sidecar under a Sidecar with ingress listeners its IPs, interception mode,
// UNPRIVILEGED_POD and agent ports (gen.InboundIPScope: those listeners bind to its IP whether or
// not it is an endpoint, and the last two decide which ports istiod leaves out), for an IPv6-only
// sidecar or router its family (gen.LoopbackKey: loopback listeners and endpoints take ::1,
// wildcard listeners ::, DNS clusters resolve IPv6 only), whether its stream authenticated an
// identity (gen.SecretsKey: where its ISTIO_MUTUAL secrets come from), and for a sidecar's listeners the PeerAuthentications that select it (gen.InboundScope:
// every sidecar's virtualInbound has catch-all chains of its mode). For EDS and CDS, also the
// proxy's locality class (gen.LocalityClass) when locality load balancing makes assignments
// depend on it; a named assignment that does not depend on it is still shared by every proxy
// (resources).
func (s *Server) class(p *model.Proxy, st *pushState, typeURL string, wildcard bool) string {
	view := gen.ViewKey(typeURL, p, st.snap, wildcard)
	loc := gen.LocalityClass(typeURL, p, st.snap)
	if typeURL == gen.EndpointType {
		if loc != "" {
			return view + "|" + loc
		}
		return view
	}
	k := gen.KeyScope(typeURL, p) + "|" + string(p.Type)
	if view != "" {
		k += "|" + view
	}
	if loc != "" {
		k += "|" + loc
	}
	if p.Type == model.Router && (typeURL == gen.ListenerType || typeURL == gen.RouteType) {
		// A router listens on a service's target port when its address is that service's
		// endpoint (gatewayListenPort): its listeners and route configuration names follow.
		if pk := gen.RouterPortKey(p, st.snap); pk != "" {
			k += "|gwport=" + pk
		}
	}
	if !p.IsGRPC() && p.Type != model.Router && (typeURL == gen.ClusterType || typeURL == gen.ListenerType) {
		// Its addresses that are endpoints' (its inbound ports; no listener to itself), each
		// in its place: INSTANCE_IPS may give a proxy several. The first, the usual one alone,
		// goes in as it is, with no allocation beyond the key's.
		sep := "|"
		for i, ip := range p.IPAddresses {
			if !st.endpointIP(ip) {
				continue
			}
			if i == 0 {
				k += sep + ip
			} else {
				k += sep + strconv.Itoa(i) + "=" + ip
			}
			sep = "+"
		}
		if sep == "+" && p.NodeNamespace == "" {
			// Without a node NAMESPACE, ServiceEntries of every namespace are its service
			// targets (model.IsServiceTarget), not only its config namespace's.
			k += "|nons"
		}
	}
	if !p.IsGRPC() && p.Type != model.Router && (typeURL == gen.ClusterType || typeURL == gen.ListenerType) {
		// A Sidecar's ingress listeners read the proxy's own IP and interception mode,
		// whether or not it is an endpoint; interception mode NONE changes every sidecar's.
		if in := gen.InboundIPScope(p, st.snap); in != "" {
			k += "|" + in
		}
		if v6 := gen.LoopbackKey(p); v6 != "" {
			k += "|" + v6
		}
	}
	if !p.IsGRPC() && (typeURL == gen.ClusterType || typeURL == gen.ListenerType && p.Type != model.Router) {
		// An authenticated stream's ISTIO_MUTUAL (clusters) and PeerAuthentication (a
		// sidecar's inbound listeners) secrets come over ADS, the others' from the istio-agent.
		if sk := gen.SecretsKey(p); sk != "" {
			k += "|" + sk
		}
	}
	if !p.IsGRPC() && p.Type == model.Router && (typeURL == gen.ClusterType || typeURL == gen.ListenerType) {
		// An IPv6-only router's DNS clusters resolve IPv6 only, and its listeners without
		// bind are on ::. (A dual-stack router's are an IPv4 one's: istiod adds the other
		// family's addresses to a gateway's listeners only with its dual stack support on.)
		if v6 := gen.LoopbackKey(p); v6 == "v6" {
			k += "|" + v6
		}
	}
	if !p.IsGRPC() && p.Type != model.Router && typeURL == gen.ListenerType {
		// Its PeerAuthentication's selection: the mode of its inbound ports, and of the
		// catch-all inbound chains every sidecar has.
		k += "|" + gen.InboundScope(p, st.snap)
	}
	return k
}
