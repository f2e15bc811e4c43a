package fakeenvoy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// Client is one fake Envoy: a protocol state machine owned by the goroutine that calls Run.
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
// valid inside hooks (on the client goroutine).
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
	r, err := s.Recv()
	return recvEvent{sotw: r}, err
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
		stream = sotwStream{s}
	}

	events := make(chan recvEvent)
	done := make(chan struct{})
	go c.receive(sctx, stream, events, done)
	defer func() {
		cancel()
		<-done
	}()

	o := owner{c: c, stream: stream}
	defer o.stopTimers()
	first := c.m.Start(c.clock.Now())
	if err := stream.send(&first); err != nil {
		// The real cause arrives on Recv; let the loop report it.
		o.sendErr = err
	}
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
		ev, err := s.recv()
		ev.at = c.codec.LastRecv()
		ev.res, ev.read = c.codec.LastRead()
		if ev.at.IsZero() {
			ev.at = c.clock.Now()
		}
		if err != nil {
			forward(recvEvent{err: err, at: ev.at})
			return
		}
		if !forward(ev) {
			return
		}
	}
}

// owner is the per-stream part of the client's goroutine: the machine, the delayed step and
// the timers.
type owner struct {
	c         *Client
	stream    adsStream
	connected bool
	received  int
	sendErr   error
	pending   *machine.Step // waiting for its ACK delay
	deadline  clock.Timer
	delayT    clock.Timer
	// freeAt is when the last scripted ACK delay ended: a response that arrived during it
	// waited by design, and its receive backlog counts from then.
	freeAt time.Time
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
			o.markConnected(ev.at)
			o.received++
			var st machine.Step
			switch {
			case ev.sotw != nil && ev.read:
				st = c.m.OnSotwRead(ev.sotw, ev.res, ev.at)
			case ev.sotw != nil:
				st = c.m.OnSotw(ev.sotw, ev.at)
			default:
				st = c.m.OnDelta(ev.delta, ev.at)
			}
			ok := o.perform(&st)
			o.reportBacklog(ev.at)
			if !ok {
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
