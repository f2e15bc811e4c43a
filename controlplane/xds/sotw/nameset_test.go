package sotw

import (
	"runtime"
	"testing"
	"time"
	"weak"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/gen"
)

func set(names ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

func TestNameSetsIntern(t *testing.T) {
	tab := NewNameSets()
	a := tab.Intern(set("b", "a", "c"))
	b := tab.Intern(set("c", "b", "a"))
	c := tab.Intern(set("a", "b"))
	if a != b {
		t.Error("equal subscriptions were not shared")
	}
	if a == c || a.id == c.id {
		t.Error("different subscriptions share a set")
	}
	if got := a.sorted; len(got) != 3 || got[0] != "a" || got[2] != "c" || cap(got) != 3 {
		t.Errorf("sorted = %q (cap %d), want [a b c] clipped", got, cap(got))
	}
	// Two sets with equal sums but other names must stay apart: force one under the other's sum.
	d := newNameSet(set("x"), a.sum)
	tab.sets[a.sum] = append(tab.sets[a.sum], weakOf(d))
	if e := tab.Intern(set("a", "b", "c")); e != a {
		t.Error("lookup under a shared sum picked the wrong set")
	}
	runtime.KeepAlive(d)

	var nilTab *NameSets
	if x, y := nilTab.Intern(set("a")), nilTab.Intern(set("a")); x == y {
		t.Error("a nil table shared a set")
	}

	// Sets no stream holds are forgotten.
	tab2 := NewNameSets()
	tab2.Intern(set("gone"))
	deadline := time.Now().Add(5 * time.Second)
	for tab2.len() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := tab2.len(); n != 0 {
		t.Errorf("%d collected sets still listed", n)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(c)
}

func TestNameSetHosts(t *testing.T) {
	a := gen.ClusterName(gen.Outbound, 8080, "", "a.ns.svc.cluster.local")
	a2 := gen.ClusterName(gen.Outbound, 9090, "v1", "a.ns.svc.cluster.local")
	b := gen.ClusterName(gen.Outbound, 8080, "", "b.ns.svc.cluster.local")
	s := newNameSet(set(a, a2, b, "not-a-cluster"), 0)
	h := s.Hosts()
	if len(h["a.ns.svc.cluster.local"]) != 2 || len(h["b.ns.svc.cluster.local"]) != 1 || len(h) != 2 {
		t.Errorf("hosts = %v", h)
	}
}

func weakOf(s *NameSet) weak.Pointer[NameSet] { return weak.Make(s) }

func TestNameSetsLookup(t *testing.T) {
	tab := NewNameSets()
	s := tab.Intern(set("a", "b", "c"))
	req := func(names ...string) *Request {
		b, err := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: gen.EndpointType, ResourceNames: names})
		if err != nil {
			t.Fatal(err)
		}
		r := &Request{}
		if err := r.Decode(b, true); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		names []string
		hit   bool
	}{
		{[]string{"c", "a", "b"}, true},
		{[]string{"a", "b"}, false},
		{[]string{"a", "b", "c", "d"}, false},
		{[]string{"a", "a", "c"}, false},
		{[]string{"*", "a", "b"}, false},
		{nil, false},
	} {
		got := tab.Lookup(req(tc.names...))
		if (got == s) != tc.hit || (!tc.hit && got != nil) {
			t.Errorf("%q: lookup = %p, want hit %v (set %p)", tc.names, got, tc.hit, s)
		}
	}
	// Decoded names are read the same way.
	r := req("b", "c", "a")
	r.Names()
	if tab.Lookup(r) != s {
		t.Error("a request whose names were decoded is not found")
	}
}

// TestNameSetsLookupByOrder: a request naming a set in an order already checked name by name is
// found from its fingerprints alone; another order of the same names is checked, then known too;
// the fingerprint tells orders apart, also across the codec's one-piece and multi-piece reads.
func TestNameSetsLookupByOrder(t *testing.T) {
	tab := NewNameSets()
	s := tab.Intern(set("a", "b", "c"))
	wire := func(names ...string) []byte {
		b, err := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: gen.EndpointType, ResourceNames: names})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := func(names ...string) *Request {
		r := &Request{}
		if err := r.Decode(wire(names...), true); err != nil {
			t.Fatal(err)
		}
		return r
	}
	abc, cba := req("a", "b", "c"), req("c", "b", "a")
	if abc.namesHash != cba.namesHash || abc.namesOrder == cba.namesOrder || abc.namesOrder == 0 {
		t.Fatalf("fingerprints: sums %x %x (want equal), orders %x %x (want different, not 0)",
			abc.namesHash, cba.namesHash, abc.namesOrder, cba.namesOrder)
	}
	// The same request split into pieces at every byte hashes the same.
	b := wire("a", "b", "c")
	for cut := 1; cut < len(b); cut++ {
		r := &Request{}
		if err := r.scan([][]byte{b[:cut], b[cut:]}); err != nil {
			t.Fatal(err)
		}
		if r.namesHash != abc.namesHash || r.namesOrder != abc.namesOrder {
			t.Fatalf("cut at %d: fingerprints %x/%x, want %x/%x", cut, r.namesHash, r.namesOrder, abc.namesHash, abc.namesOrder)
		}
	}
	if s.knowsOrder(abc.namesOrder) {
		t.Fatal("an order is known before any request was checked")
	}
	if tab.Lookup(abc) != s || !s.knowsOrder(abc.namesOrder) {
		t.Fatal("a checked order is not remembered")
	}
	// Found by the order alone: its names are not read again (here they would not match).
	again := req("a", "b", "c")
	again.raw = wire("x", "y", "z")
	if tab.Lookup(again) != s {
		t.Error("a known order is not found without reading the names")
	}
	// An order not yet known is checked name by name (the same substitution fails), then known.
	if s.knowsOrder(cba.namesOrder) {
		t.Error("the reversed order is known without being checked")
	}
	forged := req("c", "b", "a")
	forged.raw = wire("x", "y", "z")
	if got := tab.Lookup(forged); got != nil {
		t.Errorf("an unknown order was not checked name by name: lookup = %p", got)
	}
	if tab.Lookup(cba) != s || !s.knowsOrder(cba.namesOrder) {
		t.Error("the reversed order is not found and remembered")
	}
	// A set with the same count but other names never matches by order.
	other := tab.Intern(set("a", "b", "d"))
	if got := tab.Lookup(req("a", "b", "d")); got != other {
		t.Errorf("lookup(a, b, d) = %p, want %p", got, other)
	}
	// The ring keeps the last few orders.
	for i := 0; i < 2*len(s.orders); i++ {
		s.rememberOrder(uint64(1000 + 2*i + 1))
	}
	if s.knowsOrder(abc.namesOrder) || !s.knowsOrder(uint64(1000+2*(2*len(s.orders)-1)+1)) {
		t.Error("the order ring does not replace its oldest entries")
	}
}
