package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/machine"
	"github.com/xdslab/xdslab/internal/clock"
	"github.com/xdslab/xdslab/internal/h2client"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/probe"
)

// MaxRecvMsgSize is the largest response a fleet client accepts: Envoy takes big responses, so
// a server's full-config CDS must not be refused by the harness.
const MaxRecvMsgSize = 256 << 20

// connBufferSize is the read and write buffer size of the fleet's connections (grpc-go's
// default, 32 KiB); Config.DialOptions can override it. An idle connection holds neither:
// the transport takes its read buffer from the pool only when the socket is readable, and the
// write buffer is shared. It was 4 KiB: a SotW ACK naming a thousand clusters (about 60 KB)
// then took fifteen write calls, and the fleet spent 216–248 µs of CPU per pushed response
// against 126–154 µs with 32 KiB (BenchmarkFleetHeapPerClient), for the same idle heap.
const connBufferSize = 32 << 10

// fleetDialOptions are the options every fleet connection is dialled with, before
// Config.DialOptions.
func fleetDialOptions(pool mem.BufferPool) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxRecvMsgSize)),
		// The write buffer is shared (released between writes); frames larger than the read
		// buffer are read straight into their own buffer.
		grpc.WithSharedWriteBuffer(true),
		grpc.WithReadBufferSize(connBufferSize),
		grpc.WithWriteBufferSize(connBufferSize),
		bufferPoolOption(pool),
		// Envoy's fixed windows (as h2client's): grpc-go's default probes the bandwidth with a
		// PING after each response it reads, which Envoy never sends, so a control plane
		// measured through TLS or shared connections would answer PINGs no Envoy sends.
		grpc.WithInitialWindowSize(h2client.DefaultWindow),
		grpc.WithInitialConnWindowSize(h2client.DefaultWindow),
	}
}

// Group is a set of identical clients (a scenario client group).
type Group struct {
	// Name is the group name reported to hooks and used by probe.Reach.Groups.
	Name string
	// Count clients, numbered consecutively across the fleet's groups.
	Count int
	// Identity builds each client's node from its fleet index.
	Identity fakeenvoy.IdentityTemplate
	// Client is the template of every client's configuration; Index, Group, Node, Seed and
	// Clock are set per client by the fleet.
	Client fakeenvoy.ClientConfig
	// Auth, when set, gives each client a credential for its namespace (a secure ADS
	// listener); nil dials with the fleet's options (insecure unless DialOptions say else).
	Auth *ClientAuth
	// Target, when set, is where this group's clients dial instead of Config.Target
	// (a control plane's secure listener beside its plaintext one).
	Target string
	// StreamsPerConn, when > 0, is how many of this group's clients share one
	// grpc.ClientConn (one HTTP/2 connection: many ADS streams, as pilot-load multiplexes
	// them); 1 gives each client its own connection, as Envoy. 0 takes
	// Config.StreamsPerConn. A group's clients share connections only among themselves,
	// in the order of their indices; with a Segment, among the clients of that segment.
	StreamsPerConn int
	// Window and WindowUpdate, when set, are the HTTP/2 receive windows of this group's
	// connections and how much of them each WINDOW_UPDATE gives back (fakeenvoy.Profile: the
	// bootstrap istio profile's are istio-agent's 1 MiB and a quarter); zero keeps Envoy's
	// (256 MiB, half). grpc-go connections give back a quarter whatever WindowUpdate says.
	Window, WindowUpdate uint32
	// KeepaliveTime, when > 0, pings the server once one of this group's connections has read
	// nothing for that long, and gives the connection up when nothing is read within
	// KeepaliveTimeout (0: grpc-go's 20s) of the PING: grpc-go's client keepalive, which
	// istio-agent runs with 30s and 10s (fakeenvoy.Profile). Zero: none, as Envoy. grpc-go
	// connections (TLS, shared) raise a KeepaliveTime under 10s to 10s; the fleet's own
	// transport takes it as it is.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// AgentIssueDelay, when set, is the emulated istio-agent's issue delay for this group's
	// clients (the fleet's Agent config otherwise); negative serves at once.
	AgentIssueDelay time.Duration
	// Churn, when Every > 0, reconnects this group's clients periodically; the zero value
	// takes Config.Churn. A group without churn in a fleet whose Config.Churn is set cannot
	// opt out: leave Config.Churn zero and set each group's.
	Churn Churn
}

// Churn reconnects every client periodically: each run lasts Every ± Jitter×Every (uniform),
// then the client's stream and connection are closed and it starts again, as a restarted pod.
type Churn struct {
	Every  time.Duration
	Jitter float64
}

func (ch Churn) validate() error {
	if ch.Every < 0 || ch.Jitter < 0 || ch.Jitter >= 1 {
		return fmt.Errorf("fleet: churn needs every >= 0 and 0 <= jitter < 1, got %s and %g", ch.Every, ch.Jitter)
	}
	return nil
}

// Config configures a Fleet. Zero values take the documented defaults.
type Config struct {
	// Target is the ADS server, host:port, dialled with insecure credentials.
	Target string
	Groups []Group
	// Ramp starts clients at this many per second, paced from their scheduled start times;
	// 0 starts them all at once.
	Ramp float64
	// Churn, when Every > 0, reconnects the clients of every group that sets no churn of its
	// own (Group.Churn) periodically.
	Churn Churn
	// StreamsPerConn is the default of Group.StreamsPerConn for groups that leave it 0: > 1
	// makes that many clients of a group share one grpc.ClientConn (one HTTP/2 connection),
	// for large fleets; 0 or 1 gives every client its own connection, as Envoy.
	StreamsPerConn int
	// DialOptions are appended to the fleet's (insecure credentials, 256 MiB max receive size,
	// shared write buffers, 32 KiB read and write buffers, a buffer pool with a
	// tier at every power of two from 256 B to 16 MiB). Setting any puts every client on
	// grpc-go's transport: clients on connections of their own otherwise run on the fleet's
	// (internal/h2client), which takes no dial options.
	DialOptions []grpc.DialOption
	// Seed drives every client's random choices (client i uses Seed and i).
	Seed uint64
	// Segment, when Count > 1, makes this fleet shard Index of Count of the configured fleet:
	// it runs only the clients k (numbered across the groups) with k mod Count == Index, with
	// the identity, seed and ramp slot (k/Ramp after Start) they have in the whole fleet, so
	// Count shards started together behave as one fleet.
	Segment Segment
	// Clock is injected for tests; nil means the real clock.
	Clock clock.Clock
	// Progress receives live progress (connected, responses/s, NACKs) every ProgressInterval
	// (default 1s): one rewritten line when ProgressTTY, else one log line per interval. Nil
	// writes nothing.
	Progress         io.Writer
	ProgressTTY      bool
	ProgressInterval time.Duration
	Observer         measure.ObserverConfig
	Matcher          measure.MatcherConfig
	// Agent configures the emulated istio-agent that serves every client the secrets whose
	// sds_config is not ADS (a client template's own Agent wins).
	Agent istioagent.Config
	// Hooks, if set, also receives every client's observations (after the observer and the
	// matcher).
	Hooks probe.Hooks
}

// Segment selects one shard of a fleet (see Config.Segment). The zero value is the whole
// fleet.
type Segment struct {
	Index, Count int
}

// Has reports whether client k belongs to the segment.
func (s Segment) Has(k int) bool { return s.Count <= 1 || k%s.Count == s.Index }

// Size is how many of n clients belong to the segment.
func (s Segment) Size(n int) int {
	if s.Count <= 1 {
		return n
	}
	if n <= s.Index {
		return 0
	}
	return (n-1-s.Index)/s.Count + 1
}

// Validate checks 0 <= Index < Count (or the zero value).
func (s Segment) Validate() error {
	if s.Count == 0 && s.Index == 0 {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("fleet: segment %d/%d: want 0 <= index < count", s.Index, s.Count)
	}
	return nil
}

// Clients is the total client count over the groups.
func (c Config) Clients() int {
	n := 0
	for _, g := range c.Groups {
		n += g.Count
	}
	return n
}

// streamsPerConn is how many of group g's clients share a connection (1: each its own).
func (c Config) streamsPerConn(g Group) int {
	if g.StreamsPerConn > 0 {
		return g.StreamsPerConn
	}
	return max(c.StreamsPerConn, 1)
}

// Validate reports a configuration the fleet cannot run, naming the field and the fix.
func (c Config) Validate() error {
	var errs []error
	if c.Target == "" {
		errs = append(errs, errors.New("fleet: target is required (host:port of the ADS server)"))
	}
	if len(c.Groups) == 0 || c.Clients() == 0 {
		errs = append(errs, errors.New("fleet: at least one client is required"))
	}
	names := map[string]bool{}
	for i, g := range c.Groups {
		if g.Count < 0 {
			errs = append(errs, fmt.Errorf("fleet: group %d (%s): count %d must be >= 0", i, g.Name, g.Count))
		}
		if names[g.Name] {
			errs = append(errs, fmt.Errorf("fleet: group %d: duplicate group name %q", i, g.Name))
		}
		names[g.Name] = true
		if err := g.Identity.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("fleet: group %s: %w", g.Name, err))
		}
		if g.Auth != nil {
			if err := g.Auth.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("fleet: group %s: %w", g.Name, err))
			}
		}
		if err := g.Churn.validate(); err != nil {
			errs = append(errs, fmt.Errorf("fleet: group %s: %w", g.Name, err))
		}
		if g.Window != 0 && (g.Window < 65535 || g.Window > math.MaxInt32) {
			errs = append(errs, fmt.Errorf("fleet: group %s: window %d must be 0 (Envoy's) or between 65,535 (HTTP/2's initial window) and 2^31-1", g.Name, g.Window))
		}
		if lim := cmp.Or(g.Window, h2client.DefaultWindow); g.WindowUpdate > lim {
			errs = append(errs, fmt.Errorf("fleet: group %s: window update %d must be at most the window", g.Name, g.WindowUpdate))
		}
		if g.KeepaliveTime < 0 || g.KeepaliveTimeout < 0 {
			errs = append(errs, fmt.Errorf("fleet: group %s: keepalive %v and its timeout %v must be >= 0 (0: none; the timeout's 0: 20s)", g.Name, g.KeepaliveTime, g.KeepaliveTimeout))
		}
		if g.StreamsPerConn < 0 {
			errs = append(errs, fmt.Errorf("fleet: group %s: streams per connection %d must be >= 0 (0: the fleet's)", g.Name, g.StreamsPerConn))
		}
		if n := c.streamsPerConn(g); n > 1 && (g.Auth != nil || g.Target != "") {
			errs = append(errs, fmt.Errorf("fleet: group %s: %d streams per connection: auth and a group target give clients connections of their own: set the group's streams per connection to 1", g.Name, n))
		}
	}
	if c.Ramp < 0 {
		errs = append(errs, fmt.Errorf("fleet: ramp %g clients/s must be >= 0 (0 starts all at once)", c.Ramp))
	}
	if err := c.Churn.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Segment.Validate(); err != nil {
		errs = append(errs, err)
	} else if c.Segment.Size(c.Clients()) == 0 && c.Clients() > 0 {
		errs = append(errs, fmt.Errorf("fleet: segment %d/%d of %d clients holds no client: use at most %d segments", c.Segment.Index, c.Segment.Count, c.Clients(), c.Clients()))
	}
	if c.StreamsPerConn < 0 {
		errs = append(errs, fmt.Errorf("fleet: streams per connection %d must be >= 0", c.StreamsPerConn))
	}
	return errors.Join(errs...)
}

// Fleet runs many clients against one ADS server and observes them.
type Fleet struct {
	cfg     Config
	clock   clock.Clock
	obs     *measure.Observer
	groups  groupObservers // per client group, for a fleet of several; nil otherwise
	match   *measure.Matcher
	hooks   probe.Hooks
	clients []*fleetClient
	conns   []*fleetConn     // shared connections (groups with StreamsPerConn > 1)
	own     int              // clients with a connection of their own
	shared  *h2client.Shared // the own connections' shared copies of large messages

	mu      sync.Mutex // guards cancel, started state
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	began   time.Time
	stopped bool

	launched atomic.Int64 // clients started by the ramp
	rampDone atomic.Bool
	gauge    fleetGauge
	full     fleetGauge // connected clients holding a full config
}

type fleetClient struct {
	c     *fakeenvoy.Client
	group string
	ns    string
	conn  *fleetConn // this client's own connection, or a shared one
	own   bool
	rng   *rand.Rand // churn jitter; used only by the client's runner goroutine
	churn Churn      // its group's, or the fleet's
}

// fleetConn is a lazily dialled grpc.ClientConn, or a client's own connection on the fleet's
// transport (lean).
type fleetConn struct {
	target string
	opts   []grpc.DialOption
	lean   *h2client.Conn
	mu     sync.Mutex
	cc     *grpc.ClientConn
}

func (fc *fleetConn) get() (grpc.ClientConnInterface, error) {
	if fc.lean != nil {
		return fc.lean, nil
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.cc == nil {
		cc, err := grpc.NewClient(fc.target, fc.opts...)
		if err != nil {
			return nil, err
		}
		fc.cc = cc
	}
	return fc.cc, nil
}

func (fc *fleetConn) close() {
	if fc.lean != nil {
		fc.lean.Disconnect() // the next run dials again
		return
	}
	fc.mu.Lock()
	cc := fc.cc
	fc.cc = nil
	fc.mu.Unlock()
	if cc != nil {
		cc.Close()
	}
}

// fleetGauge samples the connected count once the ramp is done, for the gauge's min.
type fleetGauge struct {
	mu      sync.Mutex
	sampled bool // min holds a steady-state sample
	min     int
	hasLast bool
	last    int
	final   bool // Stop took the last sample; the reporter's late ticks are ignored
}

// sample records the current value; steady (the ramp is done) samples also update the min.
func (g *fleetGauge) sample(v int, steady bool) { g.record(v, steady, false) }

// sampleFinal records the value at Stop, while the clients still run; no later sample
// (a reporter tick racing with the clients' shutdown) replaces it.
func (g *fleetGauge) sampleFinal(v int, steady bool) { g.record(v, steady, true) }

func (g *fleetGauge) record(v int, steady, final bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.final {
		return
	}
	g.final = final
	if steady && (!g.sampled || v < g.min) {
		g.min, g.sampled = v, true
	}
	g.last, g.hasLast = v, true
}

// New builds every client (validating their configurations) without connecting.
func New(cfg Config) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Matcher.Now == nil && cfg.Clock != nil {
		cfg.Matcher.Now = cfg.Clock.Now // registrations and receive times on one clock
	}
	f := &Fleet{cfg: cfg, clock: cfg.Clock, obs: measure.NewObserver(cfg.Observer), match: measure.NewMatcher(cfg.Matcher)}
	if f.clock == nil {
		f.clock = clock.Real()
	}
	if f.cfg.ProgressInterval <= 0 {
		f.cfg.ProgressInterval = time.Second
	}
	f.groups = newGroupObservers(cfg)
	f.hooks = fakeenvoy.Tee{f.obs, f.match}
	if f.groups != nil {
		f.hooks = fakeenvoy.Tee{f.obs, f.groups, f.match}
	}
	if cfg.Hooks != nil {
		f.hooks = append(f.hooks.(fakeenvoy.Tee), cfg.Hooks)
	}
	pool := newBufferPool()
	leanPool := h2client.NewPool() // the own-transport connections' (it does not clear)
	// One copy of a large message that reaches many clients alike (a full config) instead of
	// one per client while it arrives.
	leanShared := h2client.NewShared()
	f.shared = leanShared
	opts := append(fleetDialOptions(pool), cfg.DialOptions...)
	// One table for the whole fleet: clients with the same config share decoded resources.
	interner := machine.NewInterner()
	// One istio-agent CA for the whole fleet, one workload certificate per client.
	agent, err := istioagent.New(cfg.Agent)
	if err != nil {
		return nil, err
	}
	index := 0
	for _, g := range cfg.Groups {
		gopts := opts
		if g.Window > 0 || g.KeepaliveTime > 0 { // before the fleet's DialOptions, which have the last word
			gopts = fleetDialOptions(pool)
			if g.Window > 0 {
				w := int32(min(g.Window, math.MaxInt32))
				gopts = append(gopts, grpc.WithInitialWindowSize(w), grpc.WithInitialConnWindowSize(w))
			}
			if g.KeepaliveTime > 0 {
				gopts = append(gopts, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: g.KeepaliveTime, Timeout: g.KeepaliveTimeout}))
			}
			gopts = append(gopts, cfg.DialOptions...)
		}
		authOpts := map[string][]grpc.DialOption{} // namespace → the group's dial options
		spc := cfg.streamsPerConn(g)
		var shared *fleetConn // the group's connection being filled
		member := 0           // this group's clients in the segment so far
		g.Identity = g.Identity.WithGroupStart(index)
		churn := g.Churn
		if churn.Every <= 0 {
			churn = cfg.Churn
		}
		for range g.Count {
			if !cfg.Segment.Has(index) {
				index++
				continue
			}
			cc := g.Client
			if cc.Interner == nil {
				cc.Interner = interner
			}
			if cc.Agent == nil {
				cc.Agent = groupAgent(agent, g.AgentIssueDelay)
			}
			cc.BufferPool = pool
			cc.Index, cc.Group, cc.Node = index, g.Name, g.Identity.Node(index)
			if g.Auth != nil {
				claimServiceAccount(cc.Node, g.Auth.serviceAccount())
			}
			cc.Seed, cc.Clock = cfg.Seed, cfg.Clock
			// A client on a plaintext connection of its own runs on the fleet's own transport
			// (package internal/h2client), which stamps its responses with the kernel's receive
			// time; with a fake clock, or dial options to honour, grpc-go's and the clock's.
			target := cfg.Target
			if g.Target != "" {
				target = g.Target
			}
			var lean *h2client.Conn
			if spc <= 1 && g.Auth == nil && cfg.Clock == nil && len(cfg.DialOptions) == 0 {
				lean, err = h2client.New(h2client.Config{Target: target, Pool: leanPool, Shared: leanShared, MaxRecvMsgSize: MaxRecvMsgSize,
					Window: g.Window, WindowUpdate: g.WindowUpdate, KeepaliveTime: g.KeepaliveTime, KeepaliveTimeout: g.KeepaliveTimeout})
				if err != nil {
					return nil, fmt.Errorf("fleet: group %s: %w", g.Name, err)
				}
				cc.Stamps = lean
			}
			c, err := fakeenvoy.NewClient(cc, f.hooks)
			if err != nil {
				return nil, fmt.Errorf("fleet: group %s: %w", g.Name, err)
			}
			fc := &fleetClient{c: c, group: g.Name, ns: c.Namespace(), churn: churn,
				rng: rand.New(rand.NewPCG(cfg.Seed, uint64(index)^0xc4ceb9fe1a85ec53))}
			if spc > 1 {
				if member%spc == 0 {
					shared = &fleetConn{target: cfg.Target, opts: gopts}
					f.conns = append(f.conns, shared)
				}
				fc.conn = shared
			} else {
				copts := gopts
				if g.Auth != nil {
					ao, ok := authOpts[fc.ns]
					if !ok {
						extra, err := g.Auth.dialOptions(fc.ns)
						if err != nil {
							return nil, fmt.Errorf("fleet: group %s: %w", g.Name, err)
						}
						ao = append(slices.Clip(gopts), extra...)
						authOpts[fc.ns] = ao
					}
					copts = ao
				}
				fc.conn, fc.own = &fleetConn{target: target, opts: copts, lean: lean}, true
				f.own++
			}
			f.clients = append(f.clients, fc)
			member++
			index++
		}
	}
	return f, nil
}

// groupAgent is the fleet's agent, with a group's own issue delay when it sets one (the CA is
// shared).
func groupAgent(a *istioagent.Agent, delay time.Duration) *istioagent.Agent {
	if delay == 0 {
		return a
	}
	return a.WithIssueDelay(delay)
}

// Observer returns the fleet's observer.
func (f *Fleet) Observer() *measure.Observer { return f.obs }

// Matcher returns the fleet's probe matcher.
func (f *Fleet) Matcher() *measure.Matcher { return f.match }

// Expect registers an expectation with the matcher (see measure.Matcher.Expect).
func (f *Fleet) Expect(e probe.Expectation) (*measure.Expected, error) { return f.match.Expect(e) }

// Size is the number of clients.
func (f *Fleet) Size() int { return len(f.clients) }

// NodeID is the node id of the client with index (probe.ClientInfo.Index), false when this
// fleet (or segment) runs none. Clients are built in index order.
func (f *Fleet) NodeID(index int) (string, bool) {
	k, ok := slices.BinarySearchFunc(f.clients, index, func(fc *fleetClient, i int) int { return cmp.Compare(fc.c.Index(), i) })
	if !ok {
		return "", false
	}
	return f.clients[k].c.NodeID(), true
}

// Connections is the number of gRPC connections the fleet's clients use once all run: one per
// client, and one per StreamsPerConn clients of a group that shares them.
func (f *Fleet) Connections() int { return f.own + len(f.conns) }

// Launched is the number of clients the ramp has started so far.
func (f *Fleet) Launched() int { return int(f.launched.Load()) }

// Began is when Start was called.
func (f *Fleet) Began() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.began
}

// Start launches the ramp and returns at once; clients run until ctx is done or Stop.
func (f *Fleet) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil || f.stopped {
		return errors.New("fleet: already started")
	}
	ctx, f.cancel = context.WithCancel(ctx)
	f.began = f.clock.Now()
	f.wg.Add(2)
	go f.ramp(ctx)
	go f.report(ctx)
	return nil
}

// Stop stops every client, waits for them and closes the connections. Safe to call twice
// and before Start.
func (f *Fleet) Stop() {
	f.mu.Lock()
	first := !f.stopped
	f.stopped = true
	cancel := f.cancel
	f.mu.Unlock()
	if cancel != nil && first {
		// The gauge's last value is the connected count of the running fleet.
		f.gauge.sampleFinal(f.obs.ConnectedNow(), f.rampDone.Load())
		f.full.sampleFinal(f.obs.FullConfigNow(), f.rampDone.Load())
		cancel()
	}
	f.wg.Wait()
	for _, c := range f.conns {
		c.close()
	}
}

// fleetLabels mark the clients' goroutines (and those they start) in CPU profiles, so the
// fleet's share of a process that also runs a control plane can be told apart:
// go tool pprof -tagfocus xdslab=fleet.
var fleetLabels = pprof.Labels("xdslab", "fleet")

// ramp starts client i (its index in the whole fleet) at began + i/Ramp.
func (f *Fleet) ramp(ctx context.Context) {
	defer f.wg.Done()
	defer f.rampDone.Store(true)
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for _, fc := range f.clients {
		due := f.began // without a ramp every client is due at once
		if f.cfg.Ramp > 0 {
			due = f.began.Add(time.Duration(float64(fc.c.Index()) / f.cfg.Ramp * float64(time.Second)))
			if d := due.Sub(f.clock.Now()); d > 0 {
				if timer == nil {
					timer = f.clock.NewTimer(d)
				} else {
					timer.Reset(d)
				}
				select {
				case <-ctx.Done():
					return
				case <-timer.C():
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		now := f.clock.Now()
		f.obs.Started(fc.c.Index(), due, now)
		f.groups.started(fc.group, fc.c.Index(), due, now)
		f.match.TrackNamed(fc.c.Index(), fc.group, fc.ns, fc.c.NamedOnly())
		f.wg.Add(1)
		go pprof.Do(ctx, fleetLabels, func(ctx context.Context) { f.runClient(ctx, fc) })
		f.launched.Add(1)
	}
}

// runClient runs one client until ctx is done, restarting it on churn.
func (f *Fleet) runClient(ctx context.Context, fc *fleetClient) {
	defer f.wg.Done()
	connect := func(context.Context) (grpc.ClientConnInterface, error) {
		cc, err := fc.conn.get()
		if err != nil {
			return nil, err
		}
		return cc, nil
	}
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			// A churn restart is a new Envoy process: it keeps nothing of the last one.
			_ = fc.c.Restart() // fails only while running, which it is not
		}
		runCtx, stopChurn := f.churnContext(ctx, fc)
		_ = fc.c.Run(runCtx, connect) // Run only fails when called twice, which we never do
		stopChurn()
		if fc.own {
			fc.conn.close()
		}
	}
}

// churnContext returns the context of one client run: ctx itself without churn (its group's,
// or the fleet's), else ctx cancelled after a jittered period.
func (f *Fleet) churnContext(ctx context.Context, fc *fleetClient) (context.Context, func()) {
	ch := fc.churn
	if ch.Every <= 0 {
		return ctx, func() {}
	}
	d := ch.Every
	if ch.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + ch.Jitter*(2*fc.rng.Float64()-1)))
	}
	runCtx, cancel := context.WithCancel(ctx)
	t := f.clock.NewTimer(d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-runCtx.Done():
		case <-t.C():
			cancel()
		}
	}()
	return runCtx, func() {
		cancel()
		t.Stop()
		<-done
	}
}
