package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/xdslab/xdslab/probe"
)

// Message types on the probe stream (one JSON object per line).
const (
	TypeExpect  = "expect"  // an event's expectation, before the change is written
	TypeT0      = "t0"      // the event's t0 (simulator clock), right after it was written
	TypeMeasure = "measure" // churn starts now (At, simulator clock)
	TypeEnd     = "end"     // churn is over: drain and write the summary
)

// Message is one line of the probe stream.
type Message struct {
	Type        string             `json:"type"`
	Expectation *probe.Expectation `json:"expectation,omitempty"`
	ID          uint64             `json:"id,omitempty"`
	At          time.Time          `json:"at,omitzero"`
}

// Decode parses one stream line strictly (unknown fields and types are errors).
func Decode(line []byte) (Message, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var m Message
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("probe stream: %w", err)
	}
	if dec.More() {
		return Message{}, errors.New("probe stream: more than one JSON value on a line")
	}
	switch m.Type {
	case TypeExpect:
		if m.Expectation == nil {
			return Message{}, errors.New("probe stream: expect message without an expectation")
		}
		if err := m.Expectation.Validate(); err != nil {
			return Message{}, fmt.Errorf("probe stream: %w", err)
		}
	case TypeT0, TypeMeasure:
		if m.At.IsZero() {
			return Message{}, fmt.Errorf("probe stream: %s message without at", m.Type)
		}
	case TypeEnd:
	default:
		return Message{}, fmt.Errorf("probe stream: unknown message type %q (want expect, t0, measure or end)", m.Type)
	}
	return m, nil
}

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Shards is how many fleet shards subscribe (indices 0..Shards-1).
	Shards int
	// AckTimeout bounds how long Expect waits for every shard's ack (default 5s).
	AckTimeout time.Duration
	// Now is the simulator's clock (default time.Now).
	Now func() time.Time
	// Queue is each subscriber's buffer of unsent messages (default 65536); a subscriber
	// that falls that far behind is disconnected (its missing events are counted at merge).
	Queue int
	// Scenario is the name of the scenario the simulator runs ("": not checked): a shard
	// that says it runs another one is refused at subscribe, not at merge.
	Scenario string
}

// Publisher is the simulator's side: it serves the probe stream to each shard over HTTP and
// holds each event until every shard has acknowledged it (the ack barrier), so no shard can
// miss a client's response to a change it has not registered yet.
type Publisher struct {
	cfg PublisherConfig

	mu      sync.Mutex
	subs    map[int]*subscriber
	ready   map[int]bool
	changed chan struct{} // closed and replaced when subs or ready change
	acks    map[uint64]*barrier
	open    bool // /probes accepts subscribers
	ended   bool

	timeouts int
}

// barrier is one event's ack state: the shards subscribed when it was published, and those
// that acknowledged it.
type barrier struct {
	want, got map[int]bool
	done      chan struct{}
}

func (b *barrier) check() {
	for i := range b.want {
		if !b.got[i] {
			return
		}
	}
	select {
	case <-b.done:
	default:
		close(b.done)
	}
}

type subscriber struct {
	ch   chan Message
	gone chan struct{}
}

// NewPublisher returns a publisher that accepts no subscriber until Open.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if cfg.Shards < 1 {
		return nil, fmt.Errorf("probe stream: shards %d must be at least 1", cfg.Shards)
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 1 << 16
	}
	return &Publisher{cfg: cfg, subs: map[int]*subscriber{}, ready: map[int]bool{}, changed: make(chan struct{}),
		acks: map[uint64]*barrier{}}, nil
}

// Open starts accepting subscribers (call it once the initial topology is written, so no
// shard connects its clients before the control plane could have it).
func (p *Publisher) Open() {
	p.mu.Lock()
	p.open = true
	p.mu.Unlock()
}

func (p *Publisher) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Handler serves GET /time, GET /probes?shard=I, POST /ack?shard=I&id=N and
// POST /ready?shard=I.
func (p *Publisher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /time", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"unixNano\":%d}\n", p.cfg.Now().UnixNano())
	})
	mux.HandleFunc("GET /probes", p.serveProbes)
	mux.HandleFunc("POST /ack", p.serveAck)
	mux.HandleFunc("POST /ready", func(w http.ResponseWriter, r *http.Request) {
		i, ok := p.shardParam(w, r)
		if !ok {
			return
		}
		p.mu.Lock()
		p.ready[i] = true
		p.notify()
		p.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func (p *Publisher) shardParam(w http.ResponseWriter, r *http.Request) (int, bool) {
	i, err := strconv.Atoi(r.URL.Query().Get("shard"))
	if err != nil || i < 0 || i >= p.cfg.Shards {
		http.Error(w, fmt.Sprintf("shard must be an integer in [0,%d)", p.cfg.Shards), http.StatusBadRequest)
		return 0, false
	}
	return i, true
}

func (p *Publisher) serveProbes(w http.ResponseWriter, r *http.Request) {
	if n := r.URL.Query().Get("shards"); n != "" && n != strconv.Itoa(p.cfg.Shards) {
		// Checked before the index: shard 2/3 of a 2-shard simulator is told the counts differ.
		http.Error(w, fmt.Sprintf("shard %s of %s shards, the simulator runs %d: give every shard --segment I/%d, or the simulator --shards %s",
			r.URL.Query().Get("shard"), n, p.cfg.Shards, p.cfg.Shards, n), http.StatusConflict)
		return
	}
	i, ok := p.shardParam(w, r)
	if !ok {
		return
	}
	if sc := r.URL.Query().Get("scenario"); sc != "" && p.cfg.Scenario != "" && sc != p.cfg.Scenario {
		http.Error(w, fmt.Sprintf("shard %d runs scenario %q, the simulator %q: give both the same scenario", i, sc, p.cfg.Scenario), http.StatusConflict)
		return
	}
	p.mu.Lock()
	switch {
	case !p.open:
		p.mu.Unlock()
		http.Error(w, "the simulator is still writing the initial topology: retry", http.StatusServiceUnavailable)
		return
	case p.ended:
		p.mu.Unlock()
		http.Error(w, "the run is over", http.StatusGone)
		return
	case p.subs[i] != nil:
		p.mu.Unlock()
		http.Error(w, fmt.Sprintf("shard %d is already subscribed", i), http.StatusConflict)
		return
	}
	sub := &subscriber{ch: make(chan Message, p.cfg.Queue), gone: make(chan struct{})}
	p.subs[i] = sub
	p.notify()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.subs[i] == sub {
			delete(p.subs, i)
			p.notify()
			p.dropped(i)
		}
		p.mu.Unlock()
		close(sub.gone)
	}()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case m, ok := <-sub.ch:
			if !ok {
				return
			}
			if err := enc.Encode(m); err != nil {
				return
			}
			// Flush when nothing else is queued: one write per burst.
			if len(sub.ch) == 0 && fl != nil {
				fl.Flush()
			}
			if m.Type == TypeEnd {
				return
			}
		}
	}
}

func (p *Publisher) serveAck(w http.ResponseWriter, r *http.Request) {
	i, ok := p.shardParam(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		http.Error(w, "id must be an event id", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	if b := p.acks[id]; b != nil {
		b.got[i] = true
		b.check()
	}
	p.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// WaitSubscribed waits until every shard is subscribed, or ctx is done.
func (p *Publisher) WaitSubscribed(ctx context.Context) error {
	return p.wait(ctx, func() bool { return len(p.subs) == p.cfg.Shards })
}

// WaitReady waits until every shard reported ready (its clients hold their first full config)
// or ctx is done, and returns how many did.
func (p *Publisher) WaitReady(ctx context.Context) int {
	_ = p.wait(ctx, func() bool { return len(p.ready) == p.cfg.Shards })
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready)
}

func (p *Publisher) wait(ctx context.Context, done func() bool) error {
	for {
		p.mu.Lock()
		ok, ch := done(), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Subscribed is the number of shards subscribed now.
func (p *Publisher) Subscribed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs)
}

// broadcast queues m to every subscriber; a subscriber whose queue is full is dropped.
func (p *Publisher) broadcast(m Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.broadcastLocked(m)
}

func (p *Publisher) broadcastLocked(m Message) {
	for i, s := range p.subs {
		select {
		case s.ch <- m:
		default:
			close(s.ch)
			delete(p.subs, i)
			p.notify()
			p.dropped(i)
		}
	}
}

// dropped stops waiting for shard i's acks (it left).
func (p *Publisher) dropped(i int) {
	for _, b := range p.acks {
		delete(b.want, i)
		b.check()
	}
}

// Expect publishes e and waits until every subscribed shard acknowledged it (registered it
// with its matcher), the shards that have not left, or the ack timeout passed; it returns how
// many shards acknowledged. The caller writes the change after it returns. An event a
// subscribed shard did not acknowledge within the ack timeout counts as a barrier timeout; a
// shard not subscribed (not started, gone) holds nothing up, and the merge counts the events
// it has no record of.
func (p *Publisher) Expect(ctx context.Context, e probe.Expectation) int {
	b := &barrier{want: map[int]bool{}, got: map[int]bool{}, done: make(chan struct{})}
	p.mu.Lock()
	for i := range p.subs {
		b.want[i] = true
	}
	p.acks[e.EventID] = b
	p.broadcastLocked(Message{Type: TypeExpect, Expectation: &e})
	b.check()
	p.mu.Unlock()
	t := time.NewTimer(p.cfg.AckTimeout)
	defer t.Stop()
	timedOut := false
	select {
	case <-b.done:
	case <-t.C:
		timedOut = true
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b.got)
	if timedOut {
		select {
		case <-b.done: // the last ack came with the timer
		default:
			p.timeouts++
		}
	}
	delete(p.acks, e.EventID)
	return n
}

// Applied publishes an event's t0.
func (p *Publisher) Applied(id uint64, t0 time.Time) {
	p.broadcast(Message{Type: TypeT0, ID: id, At: t0})
}

// Measure publishes the start of churn.
func (p *Publisher) Measure(at time.Time) { p.broadcast(Message{Type: TypeMeasure, At: at}) }

// End publishes the end of churn and waits (until ctx is done) for every stream to be
// written out and closed.
func (p *Publisher) End(ctx context.Context) {
	p.broadcast(Message{Type: TypeEnd})
	p.mu.Lock()
	p.ended = true
	var gone []chan struct{}
	for _, s := range p.subs {
		gone = append(gone, s.gone)
	}
	p.mu.Unlock()
	for _, g := range gone {
		select {
		case <-g:
		case <-ctx.Done():
			return
		}
	}
}

// BarrierTimeouts is how many events some shard did not acknowledge within the ack timeout.
func (p *Publisher) BarrierTimeouts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.timeouts
}

// Offset is a measured clock offset: reference minus local, with its uncertainty.
type Offset struct {
	Offset, Uncertainty time.Duration
	Samples             int
}

// ToLocal converts a reference-clock time to the local clock.
func (o Offset) ToLocal(t time.Time) time.Time { return t.Add(-o.Offset) }

// MeasureClock estimates the offset of base's clock (GET base/time) from the local one, NTP
// style: of samples round trips, the one with the shortest round trip gives offset = server
// time - midpoint, uncertainty = half that round trip.
func MeasureClock(ctx context.Context, client *http.Client, base string, samples int, now func() time.Time) (Offset, error) {
	if now == nil {
		now = time.Now
	}
	samples = max(samples, 1)
	best := Offset{Uncertainty: -1}
	for range samples {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/time", nil)
		if err != nil {
			return Offset{}, err
		}
		t1 := now()
		resp, err := client.Do(req)
		if err != nil {
			return Offset{}, err
		}
		var body struct {
			UnixNano int64 `json:"unixNano"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<10)).Decode(&body)
		resp.Body.Close()
		t2 := now()
		switch {
		case resp.StatusCode != http.StatusOK:
			// Something answers, and it is not a publisher's clock (a 503 is one starting).
			return Offset{}, &StatusError{Code: resp.StatusCode, Msg: fmt.Sprintf("GET %s/time: not a simulator's probe stream (xdslab sim --publish)", base)}
		case err != nil || body.UnixNano == 0:
			return Offset{}, &StatusError{Code: resp.StatusCode, Msg: fmt.Sprintf("GET %s/time: not a simulator's clock (want {\"unixNano\": …}): %v", base, err)}
		}
		rtt := t2.Sub(t1)
		mid := t1.Add(rtt / 2)
		o := Offset{Offset: time.Unix(0, body.UnixNano).Sub(mid), Uncertainty: rtt / 2}
		if best.Uncertainty < 0 || o.Uncertainty < best.Uncertainty {
			best = o
		}
		best.Samples++
	}
	return best, nil
}

// Handler receives a shard's stream (on the goroutine of Subscribe). Times are already on the
// local clock.
type Handler interface {
	// Expect registers the expectation; an error leaves the event unacknowledged.
	Expect(e probe.Expectation) error
	T0(id uint64, t0 time.Time)
	Measure(at time.Time)
}

// SubscriberConfig configures Subscribe.
type SubscriberConfig struct {
	// Base is the publisher's URL (http://host:port).
	Base   string
	Shard  int
	Client *http.Client
	// Clock converts the simulator's times to local ones.
	Clock Offset
	// Scenario is the name of the scenario the shard runs ("": not said); the publisher
	// refuses a subscription of another scenario than its own.
	Scenario string
	// Shards is the shard count the shard is one of (0: not said); the publisher refuses a
	// subscription from a run of another count than its own.
	Shards int
}

// Stream is a shard's open subscription.
type Stream struct {
	cfg  SubscriberConfig
	resp *http.Response
}

// Dial subscribes the shard: when it returns, the publisher sends it every later event. A
// *StatusError with Retryable means the publisher is not open yet.
func Dial(ctx context.Context, cfg SubscriberConfig) (*Stream, error) {
	resp, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Stream{cfg: cfg, resp: resp}, nil
}

// Close closes the stream (Run returns).
func (s *Stream) Close() error { return s.resp.Body.Close() }

// Run feeds h until the end message (nil), ctx is done or the stream breaks (an error). Each
// expectation is acknowledged after h registered it.
func (s *Stream) Run(ctx context.Context, h Handler) error {
	cfg := s.cfg
	defer s.resp.Body.Close()
	stop := context.AfterFunc(ctx, func() { s.resp.Body.Close() })
	defer stop()
	sc := bufio.NewScanner(s.resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		m, err := Decode(sc.Bytes())
		if err != nil {
			return err
		}
		switch m.Type {
		case TypeExpect:
			e := *m.Expectation
			if !e.Scheduled.IsZero() {
				e.Scheduled = cfg.Clock.ToLocal(e.Scheduled)
			}
			if err := h.Expect(e); err != nil {
				continue
			}
			// A lost ack only costs the simulator its ack timeout (and is counted there): keep
			// reading, or every later event would be lost to this shard too.
			if err := ack(ctx, cfg, e.EventID); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		case TypeT0:
			h.T0(m.ID, cfg.Clock.ToLocal(m.At))
		case TypeMeasure:
			h.Measure(cfg.Clock.ToLocal(m.At))
		case TypeEnd:
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("probe stream %s: %w", cfg.Base, err)
	}
	return fmt.Errorf("probe stream %s: closed before the end of the run", cfg.Base)
}

func open(ctx context.Context, cfg SubscriberConfig) (*http.Response, error) {
	u := cfg.Base + "/probes?shard=" + strconv.Itoa(cfg.Shard)
	if cfg.Scenario != "" {
		u += "&scenario=" + url.QueryEscape(cfg.Scenario)
	}
	if cfg.Shards > 0 {
		u += "&shards=" + strconv.Itoa(cfg.Shards)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, &StatusError{Code: resp.StatusCode, Msg: string(bytes.TrimSpace(b))}
	}
	return resp, nil
}

// StatusError is a refused subscription or request.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return fmt.Sprintf("probe stream: HTTP %d: %s", e.Code, e.Msg) }

// Retryable reports whether the publisher asked to retry (still writing the topology).
func (e *StatusError) Retryable() bool { return e.Code == http.StatusServiceUnavailable }

// ack acknowledges event id, retrying a few times: acks are idempotent (the publisher counts
// each shard once), and a keep-alive connection closed under the request is no reason to lose
// one.
func ack(ctx context.Context, cfg SubscriberConfig, id uint64) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt) * 50 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if err = post(ctx, cfg, "/ack?shard="+strconv.Itoa(cfg.Shard)+"&id="+strconv.FormatUint(id, 10)); err == nil {
			return nil
		}
	}
	return err
}

// Ready tells the publisher that the shard's clients hold their first full config.
func Ready(ctx context.Context, cfg SubscriberConfig) error {
	return post(ctx, cfg, "/ready?shard="+strconv.Itoa(cfg.Shard))
}

func post(ctx context.Context, cfg SubscriberConfig, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Base+path, nil)
	if err != nil {
		return err
	}
	// Marks the POST idempotent, so the transport retries it on a connection closed under it.
	req.Header.Set("Idempotency-Key", path)
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &StatusError{Code: resp.StatusCode, Msg: path}
	}
	return nil
}

// ParseBase checks a publisher URL (http://host:port, no path).
func ParseBase(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("%q: want http://HOST:PORT (the simulator's --publish address)", s)
	}
	return "http://" + u.Host, nil
}
