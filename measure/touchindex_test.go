package measure

import (
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/probe"
)

// TestTouchIndexFind checks the index against a linear search, below and above linearMax.
func TestTouchIndexFind(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, n := range []int{0, 1, linearMax, linearMax + 1, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			touched := make([]probe.Touched, n)
			for i := range touched {
				touched[i].Name = fmt.Sprintf("outbound|80||svc-%03d.ns.svc.cluster.local", i*2)
			}
			var x touchIndex
			x.reset(seed, touched)
			for i := 0; i < 2*n+2; i++ {
				name := fmt.Sprintf("outbound|80||svc-%03d.ns.svc.cluster.local", i)
				want := -1
				for j := range touched {
					if touched[j].Name == name {
						want = j
					}
				}
				h := maphash.String(seed, name)
				if got := x.find(name, h); got != want {
					t.Errorf("find(%q) = %d, want %d", name, got, want)
				}
				if want >= 0 && !x.hasHash(h) {
					t.Errorf("hasHash(%q) = false for a touched name", name)
				}
			}
			x.release()
			if x.find("outbound|80||svc-000.ns.svc.cluster.local", 0) != -1 {
				t.Error("a released index still finds names")
			}
		})
	}
}

// TestTouchIndexBloomReset: an index reset for the next response finds its names, and not the
// last response's, whose bits its bloom no longer has.
func TestTouchIndexBloomReset(t *testing.T) {
	seed := maphash.MakeSeed()
	names := func(prefix string) []probe.Touched {
		ts := make([]probe.Touched, 4*linearMax)
		for i := range ts {
			ts[i].Name = fmt.Sprintf("%s-%d", prefix, i)
		}
		return ts
	}
	var x touchIndex
	first, second := names("first"), names("second")
	x.reset(seed, first)
	if !x.hasHash(maphash.String(seed, first[5].Name)) {
		t.Fatal("a touched name's hash is not found")
	}
	x.reset(seed, second)
	for i, e := range second {
		if got := x.find(e.Name, maphash.String(seed, e.Name)); got != i {
			t.Fatalf("after a reset: find(%q) = %d, want %d", e.Name, got, i)
		}
	}
	missed := 0
	for _, e := range first {
		if x.hasHash(maphash.String(seed, e.Name)) {
			missed++ // a hash collision on 64 bits: not expected
		}
	}
	if missed != 0 {
		t.Fatalf("%d names of the previous response still found after a reset", missed)
	}
	rejected := 0
	for i := range 1000 {
		if w, b := bloomBit(maphash.String(seed, fmt.Sprint("absent-", i))); x.bloom[w]&b == 0 {
			rejected++
		}
	}
	if rejected < 900 { // 32 of 1,024 bits set: about 970 of 1,000 absent names turned away
		t.Fatalf("the bloom turned away %d of 1,000 absent names", rejected)
	}
}

// TestTouchIndexCollision: entries whose hashes are equal are told apart by their names.
func TestTouchIndexCollision(t *testing.T) {
	for _, n := range []int{3, linearMax + 3} {
		touched := make([]probe.Touched, n)
		x := touchIndex{touched: touched}
		for i := range touched {
			touched[i].Name = fmt.Sprint("r", i)
			x.byHash = append(x.byHash, touchHash{h: uint64(i / 2), i: int32(i)}) // pairs collide
		}
		x.index()
		for i := range touched {
			if got := x.find(touched[i].Name, uint64(i/2)); got != i {
				t.Errorf("n=%d: find(%q) = %d, want %d", n, touched[i].Name, got, i)
			}
		}
		if got := x.find("absent", 0); got != -1 {
			t.Errorf("n=%d: find(absent) = %d on a colliding hash", n, got)
		}
	}
}

// TestHoldsMemoPerMessage: an event of one resource remembers its answer per message, for the
// last two messages it was asked about (clients alternate between the message before a push,
// at the claim, and the one after it, at the response); any other message (a new version of
// the resource) is evaluated afresh.
func TestHoldsMemoPerMessage(t *testing.T) {
	m := NewMatcher(MatcherConfig{})
	e := probe.Expectation{EventID: 1, Kind: "scale", All: []probe.Predicate{
		{Op: probe.EndpointCount, Resource: "c", Count: 1},
		{Op: probe.EndpointPresent, Resource: "c", Address: "10.0.0.1", Port: 80},
	}}
	ev := m.newMatchEvent(e, 0)
	if !ev.oneKey {
		t.Fatal("an event whose predicates read one assignment is not oneKey")
	}
	one, two := mtCLA("c", "10.0.0.1"), mtCLA("c", "10.0.0.1", "10.0.0.2")
	for i, c := range []struct {
		m     proto.Message
		want  bool
		store bool // not one of the last two: evaluated and a new answer stored
	}{{one, true, true}, {one, true, false}, {two, false, true}, {one, true, false}, {two, false, false}, {nil, false, true}, {two, false, false}, {one, true, true}} {
		last := ev.memo.Load()
		if got := ev.holds(oneView{c.m}); got != c.want {
			t.Errorf("step %d: holds = %v, want %v", i, got, c.want)
		}
		if stored := ev.memo.Load() != last; stored != c.store {
			t.Errorf("step %d: stored a new answer %v, want %v", i, stored, c.store)
		}
	}
	if p := ev.memo.Load().prev; p == nil || p.prev != nil {
		t.Error("the memo keeps more than two answers")
	}
	mixed := m.newMatchEvent(probe.Expectation{EventID: 2, Kind: "add", All: []probe.Predicate{
		{Op: probe.ClusterPresent, Resource: "c"}, {Op: probe.EndpointCount, Resource: "c", Count: 1},
	}}, 0)
	if mixed.oneKey || !mixed.oneName {
		t.Errorf("cluster and assignment predicates of one name: oneKey %v, oneName %v; want false, true", mixed.oneKey, mixed.oneName)
	}
}

// TestHoldsMemoReleased: once every client that claimed an event resolved it, the event lets
// its remembered message go (a long run registers thousands of events).
func TestHoldsMemoReleased(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	a := &mtClient{index: 0, group: "g", ns: "ns-0"}
	b := &mtClient{index: 1, group: "g", ns: "ns-0"}
	m.Track(0, "g", "ns-0")
	m.Track(1, "g", "ns-0")
	h, err := m.Expect(probe.Expectation{EventID: 1, Kind: "endpoint-add", T0: at(100),
		All: []probe.Predicate{present("c", "10.0.0.1"), {Op: probe.EndpointCount, Resource: "c", Count: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	ev := h.ev
	m.Connected(b.info(), at(105), 0) // b claims the event now, a at its response
	a.push(m, resource.EndpointType, at(110), at(111), map[string]proto.Message{"c": mtCLA("c", "10.0.0.1")})
	if ev.memo.Load() == nil || ev.claims.Load() != 1 {
		t.Fatalf("after one of two clients: memo %v, claims %d; want a memo and b's claim", ev.memo.Load(), ev.claims.Load())
	}
	b.push(m, resource.EndpointType, at(120), at(121), map[string]proto.Message{"c": mtCLA("c", "10.0.0.1")})
	if ev.memo.Load() != nil || ev.claims.Load() != 0 {
		t.Fatalf("after both clients: memo %v, claims %d; want none", ev.memo.Load(), ev.claims.Load())
	}
	if r := m.Results(); r.Observed != 2 || r.Missed != 0 {
		t.Fatalf("observed %d, missed %d; want 2, 0", r.Observed, r.Missed)
	}
}

// oneView shows one message under every name.
type oneView struct{ m proto.Message }

func (v oneView) Resource(string, string) proto.Message { return v.m }
