package machine

import (
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/measure"
)

func TestInternerDecode(t *testing.T) {
	c1 := mustMarshal(t, fetest.EDSCluster("c1"))
	c2 := mustMarshal(t, fetest.EDSCluster("c2"))
	bad := []byte{0xff}
	h := func(b []byte) uint64 { return maphash.Bytes(hashSeed, b) }
	for _, tc := range []struct {
		name      string
		interner  bool
		aT, bT    rtype
		a, b      []byte
		aH, bH    uint64 // hash passed for b; a collision when it equals a's but bytes differ
		aReal     bool
		bReal     bool
		wantSame  bool
		wantBErr  bool
		wantSlots int
	}{
		{name: "same bytes are shared", interner: true, aT: tCDS, bT: tCDS, a: c1, b: c1, aH: h(c1), bH: h(c1), wantSame: true, wantSlots: 1},
		{name: "no interner decodes privately", interner: false, aT: tCDS, bT: tCDS, a: c1, b: c1, aH: h(c1), bH: h(c1), wantSame: false, wantSlots: 0},
		{name: "different bytes", interner: true, aT: tCDS, bT: tCDS, a: c1, b: c2, aH: h(c1), bH: h(c2), wantSame: false, wantSlots: 2},
		{name: "hash collision is not a hit", interner: true, aT: tCDS, bT: tCDS, a: c1, b: c2, aH: 7, bH: 7, wantSame: false, wantSlots: 1},
		{name: "validation mode is part of the key", interner: true, aT: tCDS, bT: tCDS, a: c1, b: c1, aH: h(c1), bH: h(c1), aReal: true, wantSame: false, wantSlots: 2},
		{name: "type is part of the key", interner: true, aT: tCDS, bT: tEDS, a: c1, b: c1, aH: h(c1), bH: h(c1), wantSame: false, wantSlots: 2},
		{name: "undecodable bytes are not kept", interner: true, aT: tCDS, bT: tCDS, a: c1, b: bad, aH: h(c1), bH: h(bad), wantBErr: true, wantSlots: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in *Interner
			if tc.interner {
				in = NewInterner()
			}
			da, err := in.decode(tc.aT, modeOf(tc.aReal), tc.aH, "a", tc.a)
			if err != nil {
				t.Fatal(err)
			}
			db, err := in.decode(tc.bT, modeOf(tc.bReal), tc.bH, "b", tc.b)
			if (err != nil) != tc.wantBErr {
				t.Fatalf("second decode error %v, want error %v", err, tc.wantBErr)
			}
			if err == nil && (da == db) != tc.wantSame {
				t.Errorf("shared %v, want %v", da == db, tc.wantSame)
			}
			if got := in.Len(); got != tc.wantSlots {
				t.Errorf("%d slots, want %d", got, tc.wantSlots)
			}
			// Whatever was shared, each decode holds exactly what its bytes say.
			want, _, _ := decode(tc.aT, tc.a, checkNone)
			if diff := cmp.Diff(want, da.msg, protocmp.Transform()); diff != "" {
				t.Errorf("first resource (-want +got):\n%s", diff)
			}
			runtime.KeepAlive(da)
			runtime.KeepAlive(db)
		})
	}
}

// TestInternerForgets checks the lifetime story: once no client holds a resource, the
// collector frees it and its slot goes away.
func TestInternerForgets(t *testing.T) {
	in := NewInterner()
	raw := mustMarshal(t, fetest.EDSCluster("c1"))
	d, err := in.decode(tCDS, checkNone, maphash.Bytes(hashSeed, raw), "c1", raw)
	if err != nil {
		t.Fatal(err)
	}
	if in.Len() != 1 {
		t.Fatalf("%d slots after one decode", in.Len())
	}
	runtime.KeepAlive(d)
	d = nil
	// Cleanups run after a collection, on their own goroutine: give them a bounded number of
	// cycles (no clock involved).
	for i := 0; i < 1000 && in.Len() != 0; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if n := in.Len(); n != 0 {
		t.Errorf("%d slots left after the last holder dropped its resource", n)
	}
}

// TestInternerSharedMachines runs two clients' machines over the same responses with a shared
// interner and checks they hold the same decoded resources, equal to a private client's.
func TestInternerSharedMachines(t *testing.T) {
	in := NewInterner()
	a := warmedMachine(t, Config{Interner: in})
	b := warmedMachine(t, Config{Interner: in})
	p := warmedMachine(t, Config{})
	for _, r := range []struct{ typeURL, name string }{{C, "c1"}, {C, "c2"}, {E, "c1"}, {L, "l1"}, {R, "r1"}} {
		ma, mb, mp := a.Resource(r.typeURL, r.name), b.Resource(r.typeURL, r.name), p.Resource(r.typeURL, r.name)
		if ma == nil || ma != mb {
			t.Errorf("%s %s: clients hold %p and %p, want one shared resource", measure.TypeName(r.typeURL), r.name, ma, mb)
		}
		if mp == nil || mp == ma {
			t.Errorf("%s %s: the private client holds %p, want its own copy", measure.TypeName(r.typeURL), r.name, mp)
		}
		if !proto.Equal(ma, mp) {
			t.Errorf("%s %s: shared and private resources differ", measure.TypeName(r.typeURL), r.name)
		}
	}
	// A change seen by one client does not touch the other's view.
	a.OnSotw(sotwResp(t, E, "2", "e", fetest.CLA("c1", "10.9.9.9", 80), fetest.CLA("c2", "10.0.0.2", 80)), t0)
	if proto.Equal(a.Resource(E, "c1"), b.Resource(E, "c1")) {
		t.Errorf("client b sees client a's new assignment")
	}
	if a.Resource(E, "c2") != b.Resource(E, "c2") {
		t.Errorf("unchanged c2 no longer shared")
	}
}

func modeOf(realistic bool) checkMode {
	if realistic {
		return checkEnvoy
	}
	return checkNone
}

// TestInternerSharedSets checks that clients with one interner that apply the same changes hold
// one map of resources per type (and one list of follow-up names), that a client's change
// leaves the others' maps as they were, and that a later client making the same change adopts
// the map built by the first; a diverging change (another version) gets its own map.
func TestInternerSharedSets(t *testing.T) {
	in := NewInterner()
	a := warmedMachine(t, Config{Interner: in})
	b := warmedMachine(t, Config{Interner: in})
	for tt := range numTypes {
		if sa, sb := a.types[tt].set, b.types[tt].set; sa != sb {
			t.Errorf("%s: sets %p and %p, want one shared set", tt.url(), sa, sb)
		}
	}
	if a.types[tCDS].set == nil || len(a.types[tCDS].res) != 2 {
		t.Fatalf("CDS set %+v, want a shared set of 2 clusters", a.types[tCDS].set)
	}
	if &a.types[tEDS].names[0] != &b.types[tEDS].names[0] {
		t.Errorf("EDS names not shared: %v and %v", a.types[tEDS].names, b.types[tEDS].names)
	}
	before := b.types[tEDS].res
	change := func(m *Machine, addr string) {
		m.OnSotw(sotwResp(t, E, "2", "e", fetest.CLA("c1", addr, 80), fetest.CLA("c2", "10.0.0.2", 80)), t0)
	}
	change(a, "10.9.9.9")
	if b.types[tEDS].set == a.types[tEDS].set || !maps.Equal(b.types[tEDS].res, before) || len(before) != 2 {
		t.Fatalf("client a's change reached client b's map")
	}
	change(b, "10.9.9.9")
	if b.types[tEDS].set != a.types[tEDS].set {
		t.Errorf("client b built its own map for the change client a made first")
	}
	c := warmedMachine(t, Config{Interner: in})
	change(c, "10.8.8.8")
	if c.types[tEDS].set == a.types[tEDS].set {
		t.Errorf("a different change adopted client a's map")
	}
	if got := c.Resource(E, "c1").(*endpointv3.ClusterLoadAssignment).GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress(); got != "10.8.8.8" {
		t.Errorf("client c holds c1 at %s, want 10.8.8.8", got)
	}
	// The same content reached another way (two pushes on client d, one on client e, as a
	// debounce may batch them) is one set too.
	d, e := warmedMachine(t, Config{Interner: in}), warmedMachine(t, Config{Interner: in})
	d.OnSotw(sotwResp(t, E, "2", "e", fetest.CLA("c1", "10.7.7.7", 80)), t0)
	d.OnSotw(sotwResp(t, E, "3", "e", fetest.CLA("c2", "10.7.7.8", 80)), t0)
	e.OnSotw(sotwResp(t, E, "3", "e", fetest.CLA("c1", "10.7.7.7", 80), fetest.CLA("c2", "10.7.7.8", 80)), t0)
	if d.types[tEDS].set != e.types[tEDS].set || d.types[tEDS].set == nil {
		t.Errorf("equal assignments through different pushes: sets %p and %p, want one", d.types[tEDS].set, e.types[tEDS].set)
	}
	// A removal (SotW CDS without c2) is a change too, shared the same way.
	for _, m := range []*Machine{a, b} {
		m.OnSotw(sotwResp(t, C, "2", "f", fetest.EDSCluster("c1")), t0)
	}
	if a.types[tCDS].set != b.types[tCDS].set || len(a.types[tCDS].res) != 1 || a.Resource(C, "c2") != nil {
		t.Errorf("after removing c2: sets %p and %p with %d clusters", a.types[tCDS].set, b.types[tCDS].set, len(a.types[tCDS].res))
	}
}

// TestWarmingMapsPooled: a whole config's warming maps come from the fleet's pool and go back
// to it, empty, once warming ends; a client given one holds only its own names. A map given
// back with deleted names comes out empty.
func TestWarmingMapsPooled(t *testing.T) {
	in := NewInterner()
	m := in.dueMap(4)
	m["a"], m["b"] = 1, 2
	delete(m, "a")
	delete(m, "b")
	m["c"] = 3
	delete(m, "c")
	in.putDueMap(m)
	if got := in.dueMap(4); len(got) != 0 {
		t.Fatalf("a pooled map holds %v", got)
	}

	config := func(prefix string) (cds, eds *discoveryv3.DiscoveryResponse, names []string) {
		var cs, as []proto.Message
		for i := range 20 {
			n := fmt.Sprintf("%s%02d", prefix, i)
			names = append(names, n)
			cs = append(cs, fetest.EDSCluster(n))
			as = append(as, fetest.CLA(n, "10.0.0.1", 80))
		}
		return sotwResp(t, C, "1", prefix+"c", cs...), sotwResp(t, E, "1", prefix+"e", as...), names
	}
	for _, prefix := range []string{"a", "b", "c"} {
		cds, eds, names := config(prefix)
		c := newTestMachine(t, Config{Interner: in})
		c.Start(t0)
		c.OnSotw(cds, t0)
		if got := sortedKeys(c.init.warmC); !slices.Equal(got, names) {
			t.Fatalf("client %s warms %v, want %v", prefix, got, names)
		}
		if bw, _ := pooledBits(tCDS); c.init.pooled&bw == 0 {
			t.Fatalf("client %s: 20 warming clusters in a map not from the pool", prefix)
		}
		c.OnSotw(eds, t0)
		if c.init.warmC != nil || c.init.pooled != 0 {
			t.Fatalf("client %s: warmed, still holds %v (pooled %b)", prefix, c.init.warmC, c.init.pooled)
		}
	}
}
