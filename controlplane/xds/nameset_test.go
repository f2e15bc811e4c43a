package xds

import (
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
)

func set(names ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

func TestNameSetsIntern(t *testing.T) {
	tab := newNameSets()
	a := tab.intern(set("b", "a", "c"))
	b := tab.intern(set("c", "b", "a"))
	c := tab.intern(set("a", "b"))
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
	if e := tab.intern(set("a", "b", "c")); e != a {
		t.Error("lookup under a shared sum picked the wrong set")
	}
	runtime.KeepAlive(d)

	var nilTab *nameSets
	if x, y := nilTab.intern(set("a")), nilTab.intern(set("a")); x == y {
		t.Error("a nil table shared a set")
	}

	// Sets no stream holds are forgotten.
	tab2 := newNameSets()
	tab2.intern(set("gone"))
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
	h := s.hosts()
	if len(h["a.ns.svc.cluster.local"]) != 2 || len(h["b.ns.svc.cluster.local"]) != 1 || len(h) != 2 {
		t.Errorf("hosts = %v", h)
	}
}

// TestSubscribedSharesAnswers: streams of one class subscribed to the same names get one answer
// per push state (the same slice), equal to what the per-name path builds; a new push state
// builds afresh.
func TestSubscribedSharesAnswers(t *testing.T) {
	s, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := topology(20, 3)
	st := &pushState{snap: model.NewSnapshot(1, in), fullGen: 1}
	var names []string
	for _, svc := range in.Services {
		names = append(names, gen.ClusterName(gen.Outbound, 8080, "", svc.Hostname))
	}
	ns := s.sets.intern(set(names...))
	p1, p2 := benchProxy(1), benchProxy(2)
	r1, err := s.subscribed(p1, st, gen.EndpointType, ns)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := s.subscribed(p2, st, gen.EndpointType, ns)
	if len(r1) != len(names) || &r1[0] != &r2[0] {
		t.Fatalf("answers not shared: %d resources, %p vs %p", len(r1), &r1[0], &r2[0])
	}
	direct, err := s.resources(p1, st, gen.EndpointType, ns.sorted, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range direct {
		if direct[i].Name != r1[i].Name || direct[i].Hash != r1[i].Hash {
			t.Fatalf("resource %d: shared %s/%x, per name %s/%x", i, r1[i].Name, r1[i].Hash, direct[i].Name, direct[i].Hash)
		}
	}
	st2 := &pushState{snap: st.snap, fullGen: 1}
	r3, _ := s.subscribed(p1, st2, gen.EndpointType, ns)
	if &r3[0] == &r1[0] {
		t.Error("a new push state reused the old answer slice")
	}
}

func weakOf(s *nameSet) weak.Pointer[nameSet] { return weak.Make(s) }

func TestDiffLists(t *testing.T) {
	r := func(name, body string) *cache.Resource { return cache.NewResource(name, gen.ClusterType, []byte(body)) }
	a1, b1, c1, b2 := r("a", "1"), r("b", "1"), r("c", "1"), r("b", "2")
	same := []*cache.Resource{a1, b1}
	for _, tc := range []struct {
		name     string
		old, cur []*cache.Resource
		changed  []string
		gone     []string
	}{
		{"same slice", same, same, nil, nil},
		{"equal copies", []*cache.Resource{a1, b1}, []*cache.Resource{a1, b1}, nil, nil},
		{"same bytes, other resource", []*cache.Resource{a1, b1}, []*cache.Resource{a1, r("b", "1")}, nil, nil},
		{"first send", nil, []*cache.Resource{a1, b1}, []string{"a", "b"}, nil},
		{"added", []*cache.Resource{a1, c1}, []*cache.Resource{a1, b1, c1}, []string{"b"}, nil},
		{"changed", []*cache.Resource{a1, b1, c1}, []*cache.Resource{a1, b2, c1}, []string{"b"}, nil},
		{"removed middle", []*cache.Resource{a1, b1, c1}, []*cache.Resource{a1, c1}, nil, []string{"b"}},
		{"removed last", []*cache.Resource{a1, b1, c1}, []*cache.Resource{a1, b1}, nil, []string{"c"}},
		{"removed first and added", []*cache.Resource{a1, c1}, []*cache.Resource{b1, c1}, []string{"b"}, []string{"a"}},
		{"unsorted", []*cache.Resource{c1, a1, b1}, []*cache.Resource{b2, a1}, []string{"b"}, []string{"c"}},
		{"unsorted, several gone", []*cache.Resource{c1, a1, b1}, []*cache.Resource{b1}, nil, []string{"c", "a"}},
		{"all gone", []*cache.Resource{a1}, nil, nil, []string{"a"}},
	} {
		d := diffLists(tc.old, tc.cur)
		got := slices.Sorted(maps.Keys(d.changedSet()))
		if want := len(tc.changed) > 0 || len(tc.gone) > 0; !slices.Equal(got, tc.changed) || d.differ() != want {
			t.Errorf("%s: changed %q differ %v, want %q %v", tc.name, got, d.differ(), tc.changed, want)
		}
		if !slices.Equal(d.removed, tc.gone) {
			t.Errorf("%s: removed %q, want %q", tc.name, d.removed, tc.gone)
		}
		for i := 1; i < len(d.out); i++ { // in cur's order
			if slices.Index(tc.cur, d.out[i-1]) > slices.Index(tc.cur, d.out[i]) {
				t.Errorf("%s: out not in the current list's order: %v", tc.name, d.out)
			}
		}
	}
}

func TestNameSetsLookup(t *testing.T) {
	tab := newNameSets()
	s := tab.intern(set("a", "b", "c"))
	req := func(names ...string) *sotwRequest {
		b, err := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: gen.EndpointType, ResourceNames: names})
		if err != nil {
			t.Fatal(err)
		}
		r := &sotwRequest{}
		if err := r.decode(b, true); err != nil {
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
		got := tab.lookup(req(tc.names...))
		if (got == s) != tc.hit || (!tc.hit && got != nil) {
			t.Errorf("%q: lookup = %p, want hit %v (set %p)", tc.names, got, tc.hit, s)
		}
	}
	// Decoded names are read the same way.
	r := req("b", "c", "a")
	r.Names()
	if tab.lookup(r) != s {
		t.Error("a request whose names were decoded is not found")
	}
}

// TestNameSetsLookupByOrder: a request naming a set in an order already checked name by name is
// found from its fingerprints alone; another order of the same names is checked, then known too;
// the fingerprint tells orders apart, also across the codec's one-piece and multi-piece reads.
func TestNameSetsLookupByOrder(t *testing.T) {
	tab := newNameSets()
	s := tab.intern(set("a", "b", "c"))
	wire := func(names ...string) []byte {
		b, err := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: gen.EndpointType, ResourceNames: names})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := func(names ...string) *sotwRequest {
		r := &sotwRequest{}
		if err := r.decode(wire(names...), true); err != nil {
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
		r := &sotwRequest{}
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
	if tab.lookup(abc) != s || !s.knowsOrder(abc.namesOrder) {
		t.Fatal("a checked order is not remembered")
	}
	// Found by the order alone: its names are not read again (here they would not match).
	again := req("a", "b", "c")
	again.raw = wire("x", "y", "z")
	if tab.lookup(again) != s {
		t.Error("a known order is not found without reading the names")
	}
	// An order not yet known is checked name by name (the same substitution fails), then known.
	if s.knowsOrder(cba.namesOrder) {
		t.Error("the reversed order is known without being checked")
	}
	forged := req("c", "b", "a")
	forged.raw = wire("x", "y", "z")
	if got := tab.lookup(forged); got != nil {
		t.Errorf("an unknown order was not checked name by name: lookup = %p", got)
	}
	if tab.lookup(cba) != s || !s.knowsOrder(cba.namesOrder) {
		t.Error("the reversed order is not found and remembered")
	}
	// A set with the same count but other names never matches by order.
	other := tab.intern(set("a", "b", "d"))
	if got := tab.lookup(req("a", "b", "d")); got != other {
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
