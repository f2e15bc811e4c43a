package stream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/probe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a shard's handler; block, when set, holds Expect of the given event until closed.
type recorder struct {
	mu       sync.Mutex
	expected []uint64
	t0s      map[uint64]time.Time
	measure  time.Time
	entered  chan uint64
	block    chan struct{}
	fail     bool
}

func (r *recorder) Expect(e probe.Expectation) error {
	if r.entered != nil {
		r.entered <- e.EventID
	}
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("refused")
	}
	r.expected = append(r.expected, e.EventID)
	return nil
}

func (r *recorder) T0(id uint64, t0 time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.t0s == nil {
		r.t0s = map[uint64]time.Time{}
	}
	r.t0s[id] = t0
}

func (r *recorder) Measure(at time.Time) {
	r.mu.Lock()
	r.measure = at
	r.mu.Unlock()
}

func expectation(id uint64) probe.Expectation {
	return probe.Expectation{EventID: id, Kind: "endpoint-flap",
		All: []probe.Predicate{{Op: probe.EndpointPresent, Resource: "outbound|80||a.ns.svc.cluster.local", Address: "10.0.0.1", Port: 80}}}
}

// start serves a publisher and subscribes each handler as shard i; the returned wait gives
// each shard's Run error.
func start(t *testing.T, p *Publisher, offset time.Duration, hs ...Handler) (base string, wait func() []error) {
	t.Helper()
	srv, ctx := serve(t, p)
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		s, err := Dial(ctx, SubscriberConfig{Base: srv.URL, Shard: i, Client: srv.Client(), Clock: Offset{Offset: offset}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = s.Run(ctx, h) })
	}
	if err := p.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	return srv.URL, func() []error { wg.Wait(); return errs }
}

// serve serves p, opened, until the test ends, and returns the server and a context canceled
// then.
func serve(t *testing.T, p *Publisher) (*httptest.Server, context.Context) {
	t.Helper()
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	p.Open()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return srv, ctx
}

// TestStreamAckBarrier: Expect does not return (the change is not written) while a shard has
// not registered the expectation; it returns once every shard acknowledged it, and t0, measure
// and end reach every shard on its own clock.
func TestStreamAckBarrier(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Shards: 2, AckTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	slow := &recorder{entered: make(chan uint64, 1), block: make(chan struct{})}
	fast := &recorder{}
	_, wait := start(t, p, 2*time.Second, fast, slow)

	done := make(chan int, 1)
	go func() { done <- p.Expect(context.Background(), expectation(1)) }()
	if id := <-slow.entered; id != 1 {
		t.Fatalf("slow shard got event %d, want 1", id)
	}
	select {
	case n := <-done:
		t.Fatalf("Expect returned (%d acks) while shard 1 had not registered the event", n)
	default:
	}
	close(slow.block)
	if n := <-done; n != 2 {
		t.Fatalf("Expect: %d acks, want 2", n)
	}
	slow.entered = nil
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	p.Applied(1, t0)
	p.Measure(t0.Add(-time.Second))
	p.End(context.Background())
	for i, err := range wait() {
		if err != nil {
			t.Errorf("shard %d: %v", i, err)
		}
	}
	for i, r := range []*recorder{fast, slow} {
		if len(r.expected) != 1 || !r.t0s[1].Equal(t0.Add(-2*time.Second)) || !r.measure.Equal(t0.Add(-3*time.Second)) {
			t.Errorf("shard %d: expected %v t0 %v measure %v; want [1], t0 and measure on the shard's clock (2s behind)", i, r.expected, r.t0s, r.measure)
		}
	}
	if p.BarrierTimeouts() != 0 {
		t.Errorf("barrier timeouts %d, want 0", p.BarrierTimeouts())
	}
}

// TestStreamAckTimeout: a shard that does not acknowledge holds the change for the ack timeout
// only, and the event is counted.
func TestStreamAckTimeout(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Shards: 2, AckTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ok, refusing := &recorder{}, &recorder{fail: true}
	_, wait := start(t, p, 0, ok, refusing)
	if n := p.Expect(context.Background(), expectation(7)); n != 1 {
		t.Errorf("Expect: %d acks, want 1 (shard 1 refuses)", n)
	}
	p.End(context.Background())
	wait()
	if p.BarrierTimeouts() != 1 {
		t.Errorf("barrier timeouts %d, want 1", p.BarrierTimeouts())
	}
}

func TestPublisherRefuses(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	ctx := context.Background()
	cfg := SubscriberConfig{Base: srv.URL, Shard: 0, Client: srv.Client()}
	var se *StatusError
	if _, err := Dial(ctx, cfg); !errors.As(err, &se) || !se.Retryable() {
		t.Errorf("before Open: %v, want a retryable 503", err)
	}
	p.Open()
	cfg.Shard = 3
	if _, err := Dial(ctx, cfg); !errors.As(err, &se) || se.Code != http.StatusBadRequest {
		t.Errorf("shard 3 of 1: %v, want 400", err)
	}
	if _, err := NewPublisher(PublisherConfig{}); err == nil {
		t.Error("0 shards accepted")
	}
}

func TestMeasureClock(t *testing.T) {
	ref := time.Date(2026, 12, 3, 16, 0, 10, 0, time.UTC)
	p, err := NewPublisher(PublisherConfig{Shards: 1, Now: func() time.Time { return ref }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	// The local clock reads 16:00:00 before each request and +4ms after: offset 10s - 2ms.
	local := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	calls := 0
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls%2 == 1 {
			return local
		}
		return local.Add(4 * time.Millisecond)
	}
	o, err := MeasureClock(context.Background(), srv.Client(), srv.URL, 3, now)
	if err != nil {
		t.Fatal(err)
	}
	if o.Offset != 10*time.Second-2*time.Millisecond || o.Uncertainty != 2*time.Millisecond || o.Samples != 3 {
		t.Errorf("offset %+v, want 9.998s ± 2ms over 3 samples", o)
	}
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"type":"end"}`, ""},
		{`{"type":"t0","id":1,"at":"2026-01-01T00:00:00Z"}`, ""},
		{`{"type":"t0","id":1}`, "without at"},
		{`{"type":"expect"}`, "without an expectation"},
		{`{"type":"expect","expectation":{"id":1,"kind":"k","all":[]}}`, "no predicates"},
		{`{"type":"bogus"}`, "unknown message type"},
		{`{"type":"end","extra":1}`, "unknown field"},
		{`{"type":"end"} {}`, "more than one"},
		{`{`, "unexpected EOF"},
	} {
		_, err := Decode([]byte(tc.line))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err %v, want %q", tc.line, err, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"expect","expectation":{"id":1,"kind":"endpoint-flap","all":[{"op":"endpoint-present","resource":"c","address":"10.0.0.1","port":80}]}}`))
	f.Add([]byte(`{"type":"expect","expectation":{"id":2,"kind":"zone-failure","all":[{"op":"cluster-present","resource":"a"},{"op":"cluster-present","resource":"b"}],"reach":{"namespaces":["x","y"],"predicateNamespaces":[["x"],null]}}}`))
	f.Add([]byte(`{"type":"measure","at":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"type":"end"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		if m.Type == TypeExpect && m.Expectation.Validate() != nil {
			t.Fatal("decoded an invalid expectation")
		}
		if m.Type == TypeExpect {
			// A client's view of it (Reach.PredicateNamespaces applied) never panics and keeps
			// only predicates of the event.
			for _, ns := range []string{"x", "y", ""} {
				if e, ok := m.Expectation.For(ns, "sidecar"); ok && len(e.All) > len(m.Expectation.All) {
					t.Fatalf("For(%q) has %d predicates of %d", ns, len(e.All), len(m.Expectation.All))
				}
			}
		}
	})
}

func TestParseBase(t *testing.T) {
	for in, want := range map[string]string{"http://sim:15080": "http://sim:15080", "http://1.2.3.4:80/": "http://1.2.3.4:80", "sim:80": "", "https://x": "", "http://x/p": ""} {
		got, err := ParseBase(in)
		if (want == "") != (err != nil) || got != want {
			t.Errorf("ParseBase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestStreamSurvivesLostAck: an ack that cannot be delivered (the connection is closed under
// every attempt) costs that event its ack timeout only; the shard keeps reading and
// acknowledges the next event. The timeout is long enough for event 2's ack to make its
// round trip under the race detector on a loaded machine (100 ms was not: "0 acks, want 1").
func TestStreamSurvivesLostAck(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Shards: 1, AckTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	dropped := 0
	h := p.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ack" && r.URL.Query().Get("id") == "1" {
			mu.Lock()
			dropped++
			mu.Unlock()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	p.Open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Dial(ctx, SubscriberConfig{Base: srv.URL, Shard: 0, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, rec) }()
	if err := p.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.Expect(ctx, expectation(1)); n != 0 {
		t.Errorf("event 1: %d acks, want 0 (every ack dropped)", n)
	}
	if n := p.Expect(ctx, expectation(2)); n != 1 {
		t.Errorf("event 2: %d acks, want 1: the stream must survive a lost ack", n)
	}
	p.End(ctx)
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if dropped < 2 {
		t.Errorf("the ack of event 1 was tried %d times, want retries", dropped)
	}
	if p.BarrierTimeouts() != 1 {
		t.Errorf("barrier timeouts %d, want 1", p.BarrierTimeouts())
	}
}

// TestStreamAbsentShardNoTimeout: a shard that never subscribed holds no event up and is not
// counted as a barrier timeout (the merge counts the events it has no record of); before, every
// event of a run with a shard missing counted as one.
func TestStreamAbsentShardNoTimeout(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Shards: 2, AckTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv, ctx := serve(t, p)
	s, err := Dial(ctx, SubscriberConfig{Base: srv.URL, Shard: 0, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, &recorder{}) }()
	for p.Subscribed() < 1 {
		time.Sleep(time.Millisecond)
	}
	for id := range uint64(3) {
		if n := p.Expect(ctx, expectation(id+1)); n != 1 {
			t.Errorf("event %d: %d acks, want 1", id+1, n)
		}
	}
	p.End(ctx)
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if got := p.BarrierTimeouts(); got != 0 {
		t.Errorf("barrier timeouts %d, want 0 (shard 1 never subscribed: nothing was held)", got)
	}
}

// TestPublisherRefusesOtherScenario: a shard that runs another scenario than the simulator is
// refused when it subscribes (HTTP 409, not to be retried), not only at merge; one that does
// not say which it runs is let in.
func TestPublisherRefusesOtherScenario(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Shards: 2, Scenario: "small"})
	if err != nil {
		t.Fatal(err)
	}
	srv, ctx := serve(t, p)
	_, err = Dial(ctx, SubscriberConfig{Base: srv.URL, Shard: 0, Client: srv.Client(), Scenario: "small2"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusConflict || se.Retryable() || !strings.Contains(se.Msg, `shard 0 runs scenario "small2", the simulator "small"`) {
		t.Fatalf("Dial of another scenario: %v, want a 409 naming both", err)
	}
	for i, name := range []string{"small", ""} {
		s, err := Dial(ctx, SubscriberConfig{Base: srv.URL, Shard: i, Client: srv.Client(), Scenario: name})
		if err != nil {
			t.Fatalf("Dial of scenario %q: %v", name, err)
		}
		s.Close()
	}
}

// TestPublisherRefusesOtherShardCount: a shard of a run split another way than the simulator's
// --shards is refused when it subscribes (HTTP 409 naming both counts), whatever its index; one
// that does not say its count is let in.
func TestPublisherRefusesOtherShardCount(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Shards: 2, Scenario: "small"})
	if err != nil {
		t.Fatal(err)
	}
	srv, ctx := serve(t, p)
	for _, tc := range []struct {
		shard, shards int
		want          string // "" accepted
	}{
		{0, 3, "shard 0 of 3 shards, the simulator runs 2"},
		{2, 3, "shard 2 of 3 shards, the simulator runs 2"},
		{0, 1, "shard 0 of 1 shards, the simulator runs 2"},
		{0, 2, ""},
		{1, 0, ""},
	} {
		s, err := Dial(ctx, SubscriberConfig{Base: srv.URL, Shard: tc.shard, Shards: tc.shards, Client: srv.Client(), Scenario: "small"})
		if tc.want == "" {
			if err != nil {
				t.Errorf("shard %d/%d: %v, want it subscribed", tc.shard, tc.shards, err)
			} else {
				s.Close()
			}
			continue
		}
		var se *StatusError
		if !errors.As(err, &se) || se.Code != http.StatusConflict || se.Retryable() || !strings.Contains(se.Msg, tc.want) {
			t.Errorf("shard %d/%d: %v, want a 409 saying %q", tc.shard, tc.shards, err, tc.want)
		}
	}
}
