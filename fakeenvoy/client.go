package fakeenvoy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy/machine"
	"github.com/xdslab/xdslab/internal/clock"
	"github.com/xdslab/xdslab/probe"
)

// ErrPolicyDisconnect is the error Disconnected reports when policy.Ack.DisconnectAfter closed
// the stream.
var ErrPolicyDisconnect = errors.New("fakeenvoy: disconnected by policy after N responses")

// Client is one fake Envoy: a protocol state machine owned by the goroutine that calls Run
// (see owner for the goroutines of a stream).
type Client struct {
	index     int
	group     string
	nodeID    string
	namespace string
	delta     bool
	backoff   Backoff
	clock     clock.Clock
	info      probe.ClientInfo // what hooks are told of the client (State: the client)
	hooks     probe.Hooks
	backlog   probe.BacklogHook // hooks, when they take the receive backlog; nil otherwise
	resync    probe.ResyncHook  // hooks, when they take resyncs; nil otherwise
	rng       *rand.Rand        // reconnect jitter
	m         *machine.Machine
	mcfg      machine.Config // what m was built from: Restart builds a fresh one
	restarts  uint64
	codec     *machine.Codec
	stamped   bool // the codec takes kernel receive stamps (ClientConfig.Stamps): see runInline
	attempts  int
	running   bool
	blocked   blockedCell // why it has no full config (see blocked.go)
	connErr   connErrCell // the code of its last failed connect, until it connects
}

var _ probe.ClientState = (*Client)(nil)

// NewClient validates cfg, applies Envoy's defaults and returns a client ready to Run. A nil
// hooks means probe.NopHooks.
func NewClient(cfg ClientConfig, hooks probe.Hooks) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	nack, err := cfg.Nack.Compile()
	if err != nil {
		return nil, fmt.Errorf("fakeenvoy: client %d: %w", cfg.Index, err)
	}
	cfg.Nack = nack
	// The client keeps its node encoded (see machine.Codec); the machine's requests carry a
	// stand-in.
	mcfg := cfg.machineConfig()
	cd, err := machine.NewCodec(machine.CodecConfig{Machine: mcfg, Now: cfg.Clock.Now, Pool: cfg.BufferPool, Stamps: cfg.Stamps})
	if err != nil {
		return nil, fmt.Errorf("fakeenvoy: client %d: %w", cfg.Index, err)
	}
	mcfg.Node = cd.Node()
	m, err := machine.New(mcfg)
	if err != nil {
		return nil, fmt.Errorf("fakeenvoy: client %d: %w", cfg.Index, err)
	}
	if hooks == nil {
		hooks = probe.NopHooks{}
	}
	backlog, _ := hooks.(probe.BacklogHook)
	resync, _ := hooks.(probe.ResyncHook)
	ns := ""
	if f := cfg.Node.GetMetadata().GetFields()["NAMESPACE"]; f != nil {
		ns = f.GetStringValue()
	}
	c := &Client{
		index:     cfg.Index,
		group:     cfg.Group,
		nodeID:    cfg.Node.GetId(),
		namespace: ns,
		delta:     cfg.Delta,
		backoff:   cfg.Backoff,
		clock:     cfg.Clock,
		hooks:     hooks,
		backlog:   backlog,
		resync:    resync,
		rng:       jitterRand(cfg.Seed, cfg.Index),
		m:         m,
		mcfg:      mcfg,
		codec:     cd,
		stamped:   cfg.Stamps != nil,
	}
	c.info = probe.ClientInfo{Index: c.index, Group: c.group, NodeID: c.nodeID, ProxyType: probe.ProxyTypeOf(c.nodeID),
		Namespace: ns, NamedOnly: cfg.GRPC, State: c}
	return c, nil
}

// Restart makes the client a new Envoy process: the next Run starts from nothing (no
// versions, no resources, no initial_resource_versions, initialization from CDS), as a
// restarted pod does. Its random choices continue on a new stream of the client's seed. It
// must not be called while Run runs.
func (c *Client) Restart() error {
	if c.running {
		return fmt.Errorf("fakeenvoy: client %d: Restart while running", c.index)
	}
	c.restarts++
	cfg := c.mcfg
	cfg.Seed ^= c.restarts * 0x9e3779b97f4a7c15
	m, err := machine.New(cfg)
	if err != nil {
		return fmt.Errorf("fakeenvoy: client %d: %w", c.index, err)
	}
	c.m = m
	c.blocked.Store(nil)
	return nil
}

// Index is the client's position in the fleet.
func (c *Client) Index() int { return c.index }

// Group is the client's fleet group (scenario client name).
func (c *Client) Group() string { return c.group }

// NodeID is the node id the client sends.
func (c *Client) NodeID() string { return c.nodeID }

// Namespace is the NAMESPACE of the client's node metadata.
func (c *Client) Namespace() string { return c.namespace }

// Delta reports whether the client speaks incremental xDS.
func (c *Client) Delta() bool { return c.delta }

// Subscribed reports whether the client watches resource name of typeURL (an Envoy client's
// CDS and LDS are wildcard: every name once subscribed; a gRPC client names every type). Only
// valid inside hooks (while the client acts on its stream).
func (c *Client) Subscribed(typeURL, name string) bool { return c.m.Subscribed(typeURL, name) }

// Resource returns the accepted resource (probe.View), warming or not. Only valid inside hooks.
func (c *Client) Resource(typeURL, name string) proto.Message { return c.m.Resource(typeURL, name) }

// Effective returns the resource in effect: a warming cluster or listener has not replaced
// the copy held before it. Only valid inside hooks.
func (c *Client) Effective(typeURL, name string) proto.Message {
	return c.m.Effective(typeURL, name)
}

// NamedOnly reports whether the client subscribes to every type by name (ClientConfig.GRPC).
func (c *Client) NamedOnly() bool { return c.mcfg.GRPC }

// Synced reports whether the client holds an accepted state of typeURL since it (re)started.
// Only valid inside hooks.
func (c *Client) Synced(typeURL string) bool { return c.m.Synced(typeURL) }

// LocalSecret returns a secret the client got outside ADS (from the emulated istio-agent or a
// file), nil when it does not hold it. Only valid inside hooks.
func (c *Client) LocalSecret(name string) *tlsv3.Secret { return c.m.LocalSecret(name) }

// Run connects, follows the protocol and reconnects with Envoy's backoff until ctx is done;
// it returns nil then. Connect failures are reported to hooks, never returned. Run must not be
// called twice at once.
func (c *Client) Run(ctx context.Context, connect Connector) error {
	if c.running {
		return fmt.Errorf("fakeenvoy: client %d: Run called twice", c.index)
	}
	c.running = true
	defer func() { c.running = false }()
	retry := 0
	for ctx.Err() == nil {
		got := c.runStream(ctx, connect)
		if ctx.Err() != nil {
			break
		}
		if got > 0 {
			retry = 0
		}
		wait := c.backoff.Next(retry, c.rng)
		retry++
		if !c.sleep(ctx, wait) {
			break
		}
	}
	return nil
}

// jitterRand is the source of a client's reconnect jitter, drawn from its seed and index.
func jitterRand(seed uint64, index int) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(index)))
}

func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// recvEvent is what the receive goroutine forwards: server headers (the stream is
// established), a response stamped with its receive time, or the error that ended the stream.
type recvEvent struct {
	header bool
	sotw   *discoveryv3.DiscoveryResponse
	delta  *discoveryv3.DeltaDiscoveryResponse
	res    machine.Resources // the SotW response's resources when read (by the codec)
	read   bool
	at     time.Time
	err    error
}

// adsStream is what the shell needs of either ADS stream.
type adsStream interface {
	Header() (md map[string][]string, err error)
	send(s *machine.Step) error
	recv() (recvEvent, error)
}

type sotwStream struct {
	grpc.BidiStreamingClient[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]
	// reuse, when set, is the one response message every recv decodes into (reset first),
	// instead of a new one each: only when each response is done with before the next is read
	// (runInline). Nothing of a response is kept past its handling (the machine copies what it
	// keeps; the strings and slices the codec set are its own, not the message's).
	reuse *discoveryv3.DiscoveryResponse
}

func (s sotwStream) Header() (map[string][]string, error) {
	md, err := s.BidiStreamingClient.Header()
	return md, err
}

func (s sotwStream) send(st *machine.Step) error {
	for _, r := range st.Sotw {
		if err := s.Send(r); err != nil {
			return err
		}
	}
	return nil
}

func (s sotwStream) recv() (recvEvent, error) {
	if s.reuse == nil {
		r, err := s.Recv()
		return recvEvent{sotw: r}, err
	}
	proto.Reset(s.reuse)
	if err := s.RecvMsg(s.reuse); err != nil {
		return recvEvent{}, err
	}
	return recvEvent{sotw: s.reuse}, nil
}

type deltaStream struct {
	grpc.BidiStreamingClient[discoveryv3.DeltaDiscoveryRequest, discoveryv3.DeltaDiscoveryResponse]
}

func (s deltaStream) Header() (map[string][]string, error) {
	md, err := s.BidiStreamingClient.Header()
	return md, err
}

func (s deltaStream) send(st *machine.Step) error {
	for _, r := range st.Delta {
		if err := s.Send(r); err != nil {
			return err
		}
	}
	return nil
}

func (s deltaStream) recv() (recvEvent, error) {
	r, err := s.Recv()
	return recvEvent{delta: r}, err
}

// runStream runs one stream to its end and returns how many responses it received.
func (c *Client) runStream(ctx context.Context, connect Connector) int {
	cc, err := connect(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.connectFailed(c.clock.Now(), err)
		}
		return 0
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(cc)
	var stream adsStream
	if c.delta {
		s, err := ads.DeltaAggregatedResources(sctx, c.codec.CallOption())
		if err != nil {
			if ctx.Err() == nil {
				c.connectFailed(c.clock.Now(), err)
			}
			return 0
		}
		stream = deltaStream{s}
	} else {
		s, err := ads.StreamAggregatedResources(sctx, c.codec.CallOption())
		if err != nil {
			if ctx.Err() == nil {
				c.connectFailed(c.clock.Now(), err)
			}
			return 0
		}
		ss := sotwStream{BidiStreamingClient: s}
		if c.stamped {
			ss.reuse = &discoveryv3.DiscoveryResponse{} // runInline handles each response before reading the next
		}
		stream = ss
	}

	o := owner{c: c, stream: stream}
	defer o.stopTimers()
	first := c.m.Start(c.clock.Now())
	// A Delta client the server owes nothing holds its full config again from the stream's
	// start: reported once the stream is connected (a stream that never is did not resync).
	o.resynced = first.Resynced
	if err := stream.send(&first); err != nil {
		// The real cause arrives on Recv; let the loop report it.
		o.sendErr = err
	}
	if c.stamped {
		return o.runInline(ctx, sctx, cancel)
	}
	events := make(chan recvEvent)
	done := make(chan struct{})
	go c.receive(sctx, stream, events, done)
	defer func() {
		cancel()
		<-done
	}()
	return o.loop(ctx, events)
}

// receive only forwards: it takes the receive time the codec stamped when the message's bytes
// arrived, before they were decoded (the clock right after Recv returns if none).
func (c *Client) receive(ctx context.Context, s adsStream, out chan<- recvEvent, done chan<- struct{}) {
	defer close(done)
	forward := func(ev recvEvent) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if md, err := s.Header(); err == nil && md != nil {
		if !forward(recvEvent{header: true, at: c.clock.Now()}) {
			return
		}
	}
	for {
		ev := c.next(s)
		if ev.err != nil {
			forward(recvEvent{err: ev.err, at: ev.at})
			return
		}
		if !forward(ev) {
			return
		}
	}
}

// next receives the stream's next response (or the error that ended it) with its receive
// time: the codec's stamp, else the clock right after Recv returned.
func (c *Client) next(s adsStream) recvEvent {
	ev, err := s.recv()
	ev.err = err
	ev.at = c.codec.LastRecv()
	ev.res, ev.read = c.codec.LastRead()
	if ev.at.IsZero() {
		ev.at = c.clock.Now()
	}
	return ev
}

// owner is the per-stream part of the client: the machine, the delayed step and the timers.
// A stream runs in one of two ways:
//   - loop: a receive goroutine reads each response and hands it to the client's goroutine,
//     which owns everything else. The response's receive time is taken as it is read, on the
//     receive goroutine, while the owner may still be busy with the one before.
//   - runInline, when the codec takes kernel receive stamps: the client's goroutine reads each
//     response itself, since a kernel stamp does not depend on when the bytes are read; that
//     saves a hand-off between goroutines per response. The machine's deadline, while one is
//     armed, fires on a goroutine of its own (runDeadline); mu keeps the two apart.
type owner struct {
	c         *Client
	stream    adsStream
	connected bool
	resynced  bool // the stream's start resynced: report it when connected
	received  int
	sendErr   error
	pending   *machine.Step // waiting for its ACK delay
	// step is the step of the last SotW response the codec read, handed back to the machine
	// for the next (Machine.OnSotwReadTo): no response is handled while a step is pending.
	step     machine.Step
	deadline clock.Timer
	delayT   clock.Timer
	// freeAt is when the last scripted ACK delay ended: a response that arrived during it
	// waited by design, and its receive backlog counts from then.
	freeAt time.Time

	// runInline only.
	mu       sync.Mutex         // held while either goroutine acts on the stream
	armed    bool               // the deadline timer is armed
	ticking  bool               // runDeadline runs
	ended    bool               // the stream is over: nothing more is done on it
	wake     chan struct{}      // tells runDeadline the deadline was disarmed
	cancel   context.CancelFunc // ends the stream's context
	deadGoes sync.WaitGroup     // runDeadline
}

func (o *owner) stopTimers() {
	if o.deadline != nil {
		o.deadline.Stop()
	}
	if o.delayT != nil {
		o.delayT.Stop()
	}
}

func (o *owner) loop(ctx context.Context, events <-chan recvEvent) int {
	c := o.c
	for {
		deadlineC := o.armDeadline()
		recvC := events
		var delayC <-chan time.Time
		if o.pending != nil {
			// Envoy is busy applying: later responses and timers wait.
			recvC, deadlineC = nil, nil
			delayC = o.delayT.C()
		}
		select {
		case <-ctx.Done():
			if o.connected {
				c.hooks.Disconnected(c.info, c.clock.Now(), nil)
			}
			return o.received
		case ev := <-recvC:
			if ev.header {
				o.markConnected(ev.at)
				continue
			}
			if ev.err != nil {
				if o.connected {
					c.hooks.Disconnected(c.info, ev.at, ev.err)
				} else {
					c.connectFailed(ev.at, ev.err)
				}
				return o.received
			}
			if !o.response(ev) {
				return o.received
			}
		case <-deadlineC:
			st := c.m.OnTimer(c.clock.Now())
			if !o.perform(&st) {
				return o.received
			}
		case fired := <-delayC:
			st := o.pending
			o.pending = nil
			o.freeAt = fired
			if !o.send(st) {
				return o.received
			}
		}
	}
}

// response hands a response to the machine and performs its step; it returns false when the
// stream must end.
func (o *owner) response(ev recvEvent) bool {
	c := o.c
	o.markConnected(ev.at)
	o.received++
	var st *machine.Step
	switch {
	case ev.sotw != nil && ev.read:
		// The owner's own step, reused: the step before it was sent (or is held by no one:
		// pending is only ever the step of the last event, sent before the next is handled).
		st = &o.step
		c.m.OnSotwReadTo(st, ev.sotw, ev.res, ev.at)
	case ev.sotw != nil:
		s := c.m.OnSotw(ev.sotw, ev.at)
		st = &s
	default:
		s := c.m.OnDelta(ev.delta, ev.at)
		st = &s
	}
	ok := o.perform(st)
	o.reportBacklog(ev.at)
	return ok
}

// runInline runs the stream with the client's goroutine reading each response itself (see
// owner) and returns how many responses it received. It alone reports how the stream ended.
// A scripted ACK delay is waited out holding mu: Envoy is busy applying, so later responses
// stay unread (their kernel stamps say when they arrived) and the deadline waits.
func (o *owner) runInline(ctx, sctx context.Context, cancel context.CancelFunc) int {
	c := o.c
	o.cancel = cancel
	defer func() {
		cancel() // first: a runDeadline waiting out a delay lets go of mu
		o.mu.Lock()
		o.ended = true
		o.mu.Unlock()
		o.deadGoes.Wait()
	}()
	o.mu.Lock()
	o.armInline(sctx) // the initial fetch timeout runs from the first request
	o.mu.Unlock()
	if md, err := o.stream.Header(); err == nil && md != nil {
		at := c.clock.Now()
		o.mu.Lock()
		o.markConnected(at)
		o.mu.Unlock()
	}
	for {
		ev := c.next(o.stream)
		o.mu.Lock()
		ok := !o.ended && o.inlineEvent(ctx, sctx, ev)
		n := o.received
		o.mu.Unlock()
		if !ok {
			return n
		}
	}
}

// inlineEvent handles what runInline read; o.mu is held. It returns false when the stream
// must end. A stream runDeadline ended (ended set) was reported there.
func (o *owner) inlineEvent(ctx, sctx context.Context, ev recvEvent) bool {
	c := o.c
	if ev.err != nil {
		switch {
		case ctx.Err() != nil: // Run's context ended the stream, as in loop
			if o.connected {
				c.hooks.Disconnected(c.info, c.clock.Now(), nil)
			}
		case o.connected:
			c.hooks.Disconnected(c.info, ev.at, ev.err)
		default:
			c.connectFailed(ev.at, ev.err)
		}
		return false
	}
	if !o.response(ev) {
		return false
	}
	switch o.settle(ctx) {
	case settleEnd:
		return false
	case settleCancelled:
		if o.connected {
			c.hooks.Disconnected(c.info, c.clock.Now(), nil)
		}
		return false
	}
	o.armInline(sctx)
	return true
}

// What settle did.
const (
	settleDone      = iota // nothing held, or the held step sent
	settleEnd              // the held step ended the stream (its hooks told)
	settleCancelled        // ctx ended first; nothing reported
)

// settle waits out a step held for its ACK delay, if any, and sends it; o.mu is held.
func (o *owner) settle(ctx context.Context) int {
	if o.pending == nil {
		return settleDone
	}
	select {
	case <-ctx.Done():
		return settleCancelled
	case fired := <-o.delayT.C():
		st := o.pending
		o.pending = nil
		o.freeAt = fired
		if !o.send(st) {
			return settleEnd
		}
		return settleDone
	}
}

// armInline (re)arms the machine's deadline and starts runDeadline when none runs; o.mu is
// held. A running runDeadline waits on the same timer, so a new deadline reaches it by itself;
// a disarmed one is told, so that it ends.
func (o *owner) armInline(sctx context.Context) {
	was := o.armed
	o.armed = o.armDeadline() != nil
	switch {
	case o.armed && !o.ticking:
		o.ticking = true
		if o.wake == nil {
			o.wake = make(chan struct{}, 1)
		}
		o.deadGoes.Add(1)
		go o.runDeadline(sctx)
	case was && !o.armed && o.ticking:
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
}

// runDeadline serves the machine's deadline while one is armed (runInline). When a step it
// performs ends the stream (policy.Ack.DisconnectAfter: reported by send), it marks the stream
// ended and cancels it, so that runInline's read fails and it returns without a report of its
// own. When the stream's context ends, runInline reports.
func (o *owner) runDeadline(sctx context.Context) {
	defer o.deadGoes.Done()
	c := o.c
	stop := func() {
		o.ticking = false
		o.mu.Unlock()
	}
	for {
		o.mu.Lock()
		if o.ended || !o.armed || sctx.Err() != nil {
			stop()
			return
		}
		fire := o.deadline.C()
		o.mu.Unlock()
		select {
		case <-sctx.Done():
			o.mu.Lock()
			stop()
			return
		case <-o.wake:
			continue
		case <-fire:
		}
		o.mu.Lock()
		if o.ended || sctx.Err() != nil {
			stop()
			return
		}
		o.armed = false // it fired
		st := c.m.OnTimer(c.clock.Now())
		if !o.perform(&st) {
			o.ended = true
			o.cancel()
			stop()
			return
		}
		switch o.settle(sctx) {
		case settleEnd:
			o.ended = true
			o.cancel()
			stop()
			return
		case settleCancelled:
			stop()
			return
		}
		o.armed = o.armDeadline() != nil
		o.mu.Unlock()
	}
}

// reportBacklog reports the receive backlog of the response received at recv, now that the
// client has finished with it (see BacklogHook): one clock reading per response.
func (o *owner) reportBacklog(recv time.Time) {
	c := o.c
	if c.backlog == nil {
		return
	}
	from := recv
	if o.freeAt.After(from) {
		from = o.freeAt
	}
	c.backlog.ReceiveBacklog(c.info, max(0, c.clock.Now().Sub(from)))
}

func (o *owner) markConnected(at time.Time) {
	if o.connected {
		return
	}
	o.c.connErr.Store(nil)
	o.connected = true
	o.c.attempts++
	o.c.hooks.Connected(o.c.info, at, o.c.attempts)
	if o.resynced && o.c.resync != nil {
		o.c.resync.Resynced(o.c.info, at, 0)
	}
	o.resynced = false
}

// perform reports a step to the hooks, then sends it now or after its delay. It returns false
// when the stream must end.
func (o *owner) perform(st *machine.Step) bool {
	c := o.c
	if st.Response {
		c.hooks.Response(c.info, st.Info)
		if st.Applied {
			c.hooks.Applied(c.info, st.Info, c.m)
		}
	}
	now := time.Time{}
	for _, t := range st.Timeouts {
		if now.IsZero() {
			now = c.clock.Now()
		}
		c.hooks.WarmingTimeout(c.info, t, now)
	}
	if st.FirstFull {
		c.hooks.FirstFullConfig(c.info, c.clock.Now())
	}
	if st.Resynced && c.resync != nil {
		c.resync.Resynced(c.info, c.clock.Now(), st.Resync)
	}
	c.publishBlocked()
	if st.Delay > 0 && (st.Requests() > 0 || st.Disconnect) {
		o.pending = st
		if o.delayT == nil {
			o.delayT = c.clock.NewTimer(st.Delay)
		} else {
			o.delayT.Reset(st.Delay)
		}
		return true
	}
	return o.send(st)
}

func (o *owner) send(st *machine.Step) bool {
	c := o.c
	if st.Requests() > 0 {
		if o.sendErr == nil {
			o.sendErr = o.stream.send(st)
		}
		if o.sendErr != nil {
			// The stream is broken; Recv reports why. Keep reading until it does.
			return true
		}
		if st.Acked {
			c.hooks.AckSent(c.info, st.Info, c.clock.Now())
		}
	}
	if st.Disconnect {
		c.hooks.Disconnected(c.info, c.clock.Now(), ErrPolicyDisconnect)
		return false
	}
	return true
}

// armDeadline (re)arms the machine's timer and returns its channel, or nil when nothing waits.
func (o *owner) armDeadline() <-chan time.Time {
	next := o.c.m.NextDeadline()
	if next.IsZero() {
		if o.deadline != nil {
			o.deadline.Stop()
		}
		return nil
	}
	d := next.Sub(o.c.clock.Now())
	if d < 0 {
		d = 0
	}
	if o.deadline == nil {
		o.deadline = o.c.clock.NewTimer(d)
	} else {
		o.deadline.Stop()
		o.deadline.Reset(d)
	}
	return o.deadline.C()
}
