package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/controlplane/metrics"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
	"github.com/xdslab/xdslab/controlplane/security"
	"github.com/xdslab/xdslab/controlplane/xds"
	"github.com/xdslab/xdslab/internal/mcp"
	"github.com/xdslab/xdslab/istioconfig"
)

// Pusher receives every snapshot the server builds, in order, one call at a time (the
// debouncer runs one push at a time), and should return once the push is queued. report says
// what changed; req agrees with it: req.Full == report.Full, and req.ConfigsUpdated names
// exactly what the report lists (KindService keys for added, removed and changed services,
// KindEndpoint keys for hosts whose endpoints changed, and the changed config keys); Reasons
// and Start are those of the events the debouncer merged. req.Full false means an
// endpoint-only (EDS) push. The server always pushes to its own ADS server; Options.Pusher, when
// set, receives the same calls after it (tests use it to observe the pipeline).
type Pusher interface {
	Push(snap *model.Snapshot, req *model.PushRequest, report model.ChangeReport)
}

// Source is an external feed the server runs beside its own parts: a registry of services and
// endpoints that also writes Istio config into the server's config store.
type Source interface {
	registry.Registry
	// Run feeds the source until ctx ends; Istio objects go to configs.
	Run(ctx context.Context, configs *config.Memory) error
	// Synced is closed once the source's initial content has been delivered.
	Synced() <-chan struct{}
}

// xdsMetrics records the ADS server's measurements into the control plane's metrics.
type xdsMetrics struct{ *metrics.Metrics }

var _ xds.Metrics = xdsMetrics{}

func (m xdsMetrics) CacheRead(typeURL string, r cache.Result) { m.CacheReadResult(typeURL, string(r)) }
func (m xdsMetrics) CacheReads(typeURL string, r cache.Result, n int) {
	m.CacheReadResults(typeURL, string(r), n)
}

func (m xdsMetrics) PushSkipped(reason string, n int) { m.PushSkippedTriggers(reason, n) }

// Server is the control plane: config sources, registries, the aggregate, the debouncer and the
// snapshot builder, with its metrics and debug endpoints. Create it with New, then Start; Stop
// ends it.
type Server struct {
	opts     Options
	log      *slog.Logger
	metrics  *metrics.Metrics
	gatherer prometheus.Gatherer

	store    *config.Memory
	files    *config.FileSource // nil without ConfigDir
	registry *registry.Memory
	agg      atomic.Pointer[registry.Aggregate] // set by Start
	deb      *debounce.Debouncer
	reqs     chan *model.PushRequest

	snap    atomic.Pointer[model.Snapshot]
	changed atomic.Pointer[chan struct{}] // closed and replaced on every new snapshot
	seq     uint64                        // owned by the push goroutine
	loaded  bool                          // the initial push was taken (owned by the push goroutine)
	// cfgApplied counts the store's events the aggregate has applied (config-events goroutine).
	cfgApplied atomic.Uint64
	synced     chan struct{}

	ctx       context.Context // ends when the server stops
	cancel    context.CancelFunc
	started   atomic.Bool
	stopOnce  sync.Once
	wg        sync.WaitGroup
	metricsLn net.Listener
	httpSrv   *http.Server
	xds       *xds.Server
	grpcLn    net.Listener
	grpcSrv   *grpc.Server
	secureLn  net.Listener // nil unless Options.Secure.Addr is set
	secureSrv *grpc.Server
	authFails *prometheus.CounterVec
	secrets   workloadSecrets // SDS for the secure listener's streams
	mcp       *mcp.Server     // the config store served over MCP; nil unless Options.ServeMCP
	errMu     sync.Mutex
	err       error // the failure that stopped the server, if any
}

// New validates opts and builds a Server. Nothing runs until Start.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("control plane options: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Registerer == nil {
		reg := prometheus.NewRegistry()
		// A registry of the server's own also carries the Go runtime and process collectors, as
		// istiod's does, so the CPU, memory and goroutine panels work on a standalone server.
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts.Registerer, opts.Gatherer = reg, reg
	}
	if opts.Gatherer == nil {
		opts.Gatherer = opts.Registerer.(prometheus.Gatherer) // checked by Validate
	}
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		metrics:  metrics.New(),
		gatherer: opts.Gatherer,
		store:    config.NewMemory(config.MemoryOptions{Now: opts.Now}),
		registry: registry.NewMemory("memory"),
		reqs:     make(chan *model.PushRequest),
		synced:   make(chan struct{}),
	}
	if err := s.metrics.Register(opts.Registerer); err != nil {
		return nil, fmt.Errorf("control plane metrics: %w", err)
	}
	if opts.Secure.Addr != "" {
		s.authFails = security.NewAuthFailures()
		if err := opts.Registerer.Register(s.authFails); err != nil {
			return nil, fmt.Errorf("control plane metrics: %w", err)
		}
	}
	if err := s.addMCPSources(); err != nil {
		return nil, err
	}
	if opts.ConfigDir != "" {
		guard := opts.ConfigDeleteGuard
		guard.Held = s.metrics.ConfigMassDeletesHeld
		files, err := config.NewFileSource(s.store, config.FileOptions{
			Dir: opts.ConfigDir, RescanInterval: opts.ConfigRescan, DeleteGuard: guard, Logger: opts.Logger.With("component", "config-files"),
			Errors: s.metrics.ConfigFileErrors, Skipped: s.metrics.ConfigObjectsSkipped, Now: opts.Now,
		})
		if err != nil {
			return nil, err
		}
		s.files = files
	}
	policy, _ := debounce.ParsePolicy(string(opts.Debounce.Policy)) // Validate checked it
	deb, err := debounce.New(debounce.Config{
		Options: opts.Debounce,
		Push:    s.push,
		Observe: func(st debounce.Stats) {
			s.metrics.ObserveDebounce(st.Delay.Seconds(), st.Events)
			s.metrics.ObserveDebounceWindow(string(policy), st.Quiet.Seconds())
		},
	})
	if err != nil {
		return nil, err
	}
	s.deb = deb
	xo := xds.Options{
		FlowControl:    opts.FlowControl,
		AckTimeout:     opts.AckTimeout,
		PushThrottle:   opts.EffectivePushThrottle(),
		AdmissionRate:  opts.EffectiveAdmissionRate(),
		AdmissionBurst: opts.EffectivePushThrottle(),
		AdmissionWait:  opts.AdmissionWait,
		SendTimeout:    opts.SendTimeout,
		Metrics:        xdsMetrics{s.metrics},
		Logger:         opts.Logger.With("component", "xds"),
	}
	if opts.Secure.Addr != "" {
		xo.Secrets = &s.secrets
	}
	if opts.ServeMCP {
		s.mcp = mcp.NewServer(mcp.ServerOptions{Logger: opts.Logger.With("component", "mcp-server")})
		xo.API = s.mcp
	}
	if s.xds, err = xds.New(xo); err != nil {
		return nil, err
	}
	s.snap.Store(model.NewSnapshot(0, model.SnapshotInput{}))
	ch := make(chan struct{})
	s.changed.Store(&ch)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Start binds the metrics address and starts every part. It returns once they run; the server
// stops when ctx is done or Stop is called. The first snapshot is built once the config
// directory has been read (Synced).
func (s *Server) Start(ctx context.Context) error {
	if s.started.Swap(true) {
		return errors.New("control plane: Start called twice")
	}
	ln, err := net.Listen("tcp", s.opts.MetricsAddr)
	if err != nil {
		s.cancel()
		return fmt.Errorf("control plane: listen on metrics address %s: %w: pick a free port with --metrics-addr", s.opts.MetricsAddr, err)
	}
	s.metricsLn = ln
	s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	gln, err := net.Listen("tcp", s.opts.GRPCAddr)
	if err != nil {
		_ = ln.Close()
		s.cancel()
		return fmt.Errorf("control plane: listen on gRPC address %s: %w: pick a free port with --grpc-addr", s.opts.GRPCAddr, err)
	}
	gnl := newNotifyListener(gln)
	s.grpcLn = gln
	s.grpcSrv = grpc.NewServer(xds.ServerOptions()...)
	s.xds.Register(s.grpcSrv)
	// A part that fails stops the whole server: a control plane without its config source or
	// its debouncer would serve stale config silently.
	run := func(name string, fn func() error) {
		s.wg.Go(func() {
			if err := fn(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("control plane part failed; stopping", "part", name, "err", err)
				s.errMu.Lock()
				if s.err == nil {
					s.err = fmt.Errorf("control plane %s: %w", name, err)
				}
				s.errMu.Unlock()
				s.cancel()
			}
		})
	}
	// Stop when the caller's context ends.
	s.wg.Go(func() {
		select {
		case <-ctx.Done():
			s.cancel()
		case <-s.ctx.Done():
		}
	})
	run("http", func() error { return s.httpSrv.Serve(ln) })
	run("grpc", func() error { return s.grpcSrv.Serve(gnl) })
	s.wg.Go(func() { s.xds.Run(s.ctx) })
	s.wg.Go(func() {
		<-s.ctx.Done()
		s.drain("grpc", s.grpcSrv, gnl)
	})
	// The caller's Stop ends what already runs when the secure listener cannot start.
	if s.opts.Secure.Addr != "" {
		if err := s.startSecure(run); err != nil {
			s.cancel()
			return fmt.Errorf("control plane: secure ADS: %w", err)
		}
	}
	run("debouncer", func() error { return s.deb.Run(s.ctx, s.reqs) })
	run("config-store", func() error { return s.store.Run(s.ctx) })
	agg := registry.NewAggregate(registry.AggregateOptions{
		Registries: s.registries(),
		Convert:    registry.ConvertOptions{TrustDomain: s.opts.TrustDomain},
		Now:        s.opts.Now,
		OnChange:   s.onChange,
		OnError: func(key istioconfig.Key, err error) {
			s.log.Warn("ServiceEntry rejected; keeping its previous services", "config", key.String(), "err", err)
		},
	})
	s.agg.Store(agg)
	run("config-events", func() error {
		for ev := range s.store.Events() {
			s.logNotGeneratedRoutes(ev)                 // notgenerated_routes.go
			agg.ConfigChanged(ev.Old, ev.New, ev.State) // Memory sets State on every event
			if s.mcp != nil {
				s.serveMCP(ev)
			}
			s.cfgApplied.Add(1)
		}
		return nil
	})
	if s.files != nil {
		run("config-files", func() error { return s.files.Run(s.ctx) })
	}
	for _, src := range s.opts.Sources {
		run("source-"+src.Name(), func() error { return src.Run(s.ctx, s.store) })
	}
	s.wg.Go(s.initialPush)
	s.log.Info("control plane started", "grpc", gln.Addr().String(), "metrics", ln.Addr().String(), "configDir", s.opts.ConfigDir,
		"minQuiet", s.opts.Debounce.MinQuiet, "maxDelay", s.opts.Debounce.MaxDelay, "debounceEDS", s.opts.Debounce.DebounceEDS,
		"debouncePolicy", cmp.Or(string(s.opts.Debounce.Policy), string(debounce.PolicyFixed)),
		"pushThrottle", s.opts.EffectivePushThrottle())
	return nil
}

// serveMCP hands one config store event to the MCP server.
func (s *Server) serveMCP(ev config.Event) {
	var err error
	if ev.New == nil {
		err = s.mcp.Apply(nil, []istioconfig.Key{ev.Key()})
	} else {
		err = s.mcp.Apply([]*istioconfig.Config{ev.New}, nil)
	}
	if err != nil {
		s.log.Warn("config object not served over MCP", "config", ev.Key().String(), "err", err)
	}
}

// addMCPSources builds the MCP config sources of Options.MCP, with the server's metrics and
// logger, and runs them as Sources.
func (s *Server) addMCPSources() error {
	if len(s.opts.MCP) == 0 {
		return nil
	}
	srcs := slices.Clone(s.opts.Sources)
	for _, o := range s.opts.MCP {
		o.Logger = s.log.With("component", "config-mcp")
		o.Rejected, o.Disconnects = s.metrics.MCPRejected, s.metrics.MCPDisconnects
		o.Connected = s.metrics.MCPConnected.WithLabelValues(o.Addr)
		src, err := mcpsource.New(o)
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
	}
	s.opts.Sources = srcs
	return nil
}

// drain stops a gRPC server as istiod does, and ends its xDS streams on top: GracefulStop
// closes the listener and sends GOAWAY on every connection, then the ADS streams end with
// xds.ErrDraining; whatever has not ended after Options.DrainTimeout (a stream blocked
// sending to a client that does not read) is closed by Stop.
func (s *Server) drain(name string, g *grpc.Server, ln *notifyListener) {
	start := time.Now()
	streams := s.xds.Streams()
	if s.opts.DrainTimeout <= 0 {
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			g.Stop()
		}()
		<-ln.closed
		ln.closeConns() // those still in their handshake, which Stop waits for
		<-stopped
		s.log.Info("gRPC server stopped without draining", "server", name, "streams", streams)
		return
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		g.GracefulStop()
	}()
	timer := time.NewTimer(s.opts.DrainTimeout)
	defer timer.Stop()
	// GOAWAY follows the listener's close at once: end the streams after it.
	select {
	case <-ln.closed:
	case <-stopped:
	case <-timer.C:
	}
	s.xds.Drain()
	select {
	case <-stopped:
		s.log.Info("gRPC server drained", "server", name, "streams", streams, "took", time.Since(start).Round(time.Millisecond))
	case <-timer.C:
		left := s.xds.Streams()
		forced := make(chan struct{})
		go func() {
			defer close(forced)
			g.Stop()
		}()
		conns := ln.closeConns() // also those still in their handshake, which Stop waits for
		<-stopped
		<-forced
		s.log.Warn("gRPC server drain timed out; closed what was left", "server", name, "streams", streams,
			"streamsLeft", left, "connsClosed", conns, "drainTimeout", s.opts.DrainTimeout)
	}
}

// notifyListener is a listener that says when it was closed (by GracefulStop) and can close
// every connection it accepted: a connection that never finishes the HTTP/2 handshake holds
// grpc.Server.Stop for the server's 120s connection timeout otherwise.
type notifyListener struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
}

func newNotifyListener(ln net.Listener) *notifyListener {
	return &notifyListener{Listener: ln, closed: make(chan struct{}), conns: make(map[*trackedConn]struct{})}
}

func (l *notifyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, ln: l}
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

func (l *notifyListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
}

// closeConns closes every accepted connection still open and returns how many there were.
func (l *notifyListener) closeConns() int {
	l.mu.Lock()
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return len(conns)
}

type trackedConn struct {
	net.Conn
	ln   *notifyListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.ln.mu.Lock()
		delete(c.ln.conns, c)
		c.ln.mu.Unlock()
	})
	return c.Conn.Close()
}

// registries are the in-process registry, then every source's, in priority order.
func (s *Server) registries() []registry.Registry {
	regs := []registry.Registry{s.registry}
	for _, src := range s.opts.Sources {
		regs = append(regs, src)
	}
	return regs
}

// initialPush asks for a full push once the config directory has been read, so a first
// snapshot exists even when nothing changes, then reports what was loaded.
func (s *Server) initialPush() {
	for _, src := range s.opts.Sources {
		select {
		case <-src.Synced():
		case <-s.ctx.Done():
			return
		}
	}
	if s.files != nil {
		select {
		case <-s.files.Synced():
		case <-s.ctx.Done():
			return
		}
	}
	// The store hands its events to the aggregate on the config-events goroutine: wait until
	// it has applied every one the initial loads wrote, so that the initial push's view holds
	// them all (a first snapshot of part of the mesh, with a short debounce, otherwise).
	for {
		pending, taken := s.store.Backlog()
		if pending == 0 && s.cfgApplied.Load() >= taken {
			break
		}
		select {
		case <-time.After(time.Millisecond):
		case <-s.ctx.Done():
			return
		}
	}
	// In order with the aggregate's changes, so that the snapshot is built from the View every
	// change before the request is in and none after it.
	sent := false
	s.agg.Load().InOrder(func(v *registry.View) {
		req := &model.PushRequest{Full: true, Initial: true, Reasons: map[model.TriggerReason]int{model.ReasonGlobalUpdate: 1}, Start: s.opts.Now(), Source: v}
		select {
		case s.reqs <- req:
			sent = true
		case <-s.ctx.Done():
		}
	})
	if !sent {
		return
	}
	close(s.synced)
	if s.files != nil {
		st := s.files.Status()
		failed := 0
		for _, f := range st.Files {
			if f.LastError != "" {
				failed++
				s.log.Warn("config file not loaded", "file", f.Path, "err", f.LastError)
			}
		}
		for _, f := range st.Files {
			s.log.Debug("config file loaded", "file", f.Path, "objects", len(f.Objects))
		}
		s.log.Info("config directory loaded", "dir", st.Dir, "files", len(st.Files), "objects", st.Objects, "failedFiles", failed)
	}
}

// onChange is the aggregate's consumer: count the update and hand it to the debouncer.
func (s *Server) onChange(c registry.Change) {
	typ := metrics.InboundService
	switch {
	case c.Reason() == model.ReasonConfigUpdate:
		typ = metrics.InboundConfig
	case c.EndpointsOnly():
		typ = metrics.InboundEDS
	case c.ServicesRemoved > 0 && c.ServicesAdded == 0:
		typ = metrics.InboundServiceDelete
	}
	s.metrics.InboundUpdates.WithLabelValues(typ).Inc()
	select {
	case s.reqs <- c.PushRequest():
	case <-s.ctx.Done():
	}
}

// push runs one push cycle on the debouncer's push goroutine: build the next snapshot from the
// view the batch's newest change published (the aggregate's latest for a request without one:
// the initial push), publish it and hand it to the Pusher.
func (s *Server) push(ctx context.Context, req *model.PushRequest) {
	if !s.loaded {
		if !req.Initial {
			// A change the sources delivered while loading their initial content: the first
			// snapshot, built from the initial push's view, holds it. A snapshot built now
			// would serve proxies a mesh read in part.
			s.log.Debug("push: before the initial load completed, left to the first push", "events", req.Count())
			return
		}
		s.loaded = true
	}
	src := req.Source
	if src == nil { // every request the server sends has one; a nil one reads the latest
		src = s.agg.Load().View()
	}
	prev := s.snap.Load()
	start := time.Now()
	next, rep := model.BuildSnapshot(prev, s.seq+1, req, src)
	s.metrics.PushContextInitSeconds.Observe(time.Since(start).Seconds())
	if rep.Empty() {
		if prev.Seq != 0 {
			s.log.Debug("push: nothing changed", "events", req.Count())
			return
		}
		// The first snapshot is published even when it holds nothing (no config yet): streams
		// wait for it, and istiod serves an empty mesh (its passthrough and blackhole
		// clusters, its virtual listeners) once its sources are synced.
		next, rep.Full = prev.Apply(s.seq+1, model.SnapshotDelta{}), true
	}
	s.seq = next.Seq
	s.snap.Store(next)
	fresh := make(chan struct{})
	close(*s.changed.Swap(&fresh))
	s.metrics.Services.Set(float64(next.ServiceCount()))
	if prev.Seq == 0 {
		sum := next.Summary()
		s.log.Info("first snapshot built", "version", next.Version, "services", sum.Services, "endpoints", sum.Endpoints, "configs", sum.Configs)
	}
	s.log.Debug("push", "version", next.Version, "full", rep.Full, "events", req.Count(),
		"servicesAdded", len(rep.ServicesAdded), "servicesRemoved", len(rep.ServicesRemoved),
		"servicesChanged", len(rep.ServicesChanged), "endpointsChanged", len(rep.EndpointsChanged),
		"configsChanged", len(rep.ConfigsChanged))
	if ctx.Err() != nil {
		return
	}
	preq := rep.Applied(req)
	s.xds.Push(next, preq)
	if s.opts.Pusher != nil {
		s.opts.Pusher.Push(next, preq, rep)
	}
}

// Stop stops every part and waits for them. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		if s.httpSrv != nil {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.httpSrv.Shutdown(shutdownCtx)
		}
		s.wg.Wait()
	})
}

// Done is closed when the server stops (Stop, the context given to Start ends, or a part
// failed: see Err).
func (s *Server) Done() <-chan struct{} { return s.ctx.Done() }

// Err returns the failure that stopped the server, or nil.
func (s *Server) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Synced is closed once the config directory has been read and the first push requested.
func (s *Server) Synced() <-chan struct{} { return s.synced }

// Snapshot returns the latest snapshot (an empty one at version "0" before the first push).
func (s *Server) Snapshot() *model.Snapshot { return s.snap.Load() }

// WaitForSnapshot waits until the latest snapshot satisfies ok, and returns it.
func (s *Server) WaitForSnapshot(ctx context.Context, ok func(*model.Snapshot) bool) (*model.Snapshot, error) {
	for {
		ch := *s.changed.Load()
		if snap := s.snap.Load(); ok(snap) {
			return snap, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s.snap.Load(), fmt.Errorf("wait for snapshot (latest version %s): %w", s.snap.Load().Version, ctx.Err())
		case <-s.ctx.Done():
			return s.snap.Load(), errors.New("wait for snapshot: the server stopped")
		}
	}
}

// GRPCAddr is the address the ADS server listens on (the bound port when GRPCAddr had port 0);
// empty before Start.
func (s *Server) GRPCAddr() string {
	if s.grpcLn == nil {
		return ""
	}
	return s.grpcLn.Addr().String()
}

// XDS is the ADS server (connections, push cycles, cache statistics, /debug/syncz).
func (s *Server) XDS() *xds.Server { return s.xds }

// Registry is the in-process memory registry (for the lab's in-process sink and tests).
func (s *Server) Registry() *registry.Memory { return s.registry }

// ConfigStore is the Istio config store the file source writes to; in-process writers may
// write to it too.
func (s *Server) ConfigStore() *config.Memory { return s.store }

// Aggregate is the merged view of services and endpoints; nil before Start.
func (s *Server) Aggregate() *registry.Aggregate { return s.agg.Load() }

// Metrics are the server's metric handles (the ADS server records into them).
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// MetricsAddr is the address /metrics is served on (the bound port when MetricsAddr had port
// 0); empty before Start.
func (s *Server) MetricsAddr() string {
	if s.metricsLn == nil {
		return ""
	}
	return s.metricsLn.Addr().String()
}

// FileStatus is the config file source's status (zero without a config directory).
func (s *Server) FileStatus() config.Status {
	if s.files == nil {
		return config.Status{}
	}
	return s.files.Status()
}
