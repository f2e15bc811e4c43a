package fakeenvoy

import (
	"hash/maphash"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

func TestInternerDecode(t *testing.T) {
	c1 := mustMarshal(t, edsCluster("c1"))
	c2 := mustMarshal(t, edsCluster("c2"))
	bad := []byte{0xff}
	h := func(b []byte) uint64 { return maphash.Bytes(hashSeed, b) }
	for _, tc := range []struct {
		name      string
		interner  bool
		aT, bT    int
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
	raw := mustMarshal(t, edsCluster("c1"))
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
	a := warmedMachine(t, ClientConfig{Interner: in})
	b := warmedMachine(t, ClientConfig{Interner: in})
	p := warmedMachine(t, ClientConfig{})
	for _, r := range []struct{ typeURL, name string }{{C, "c1"}, {C, "c2"}, {E, "c1"}, {L, "l1"}, {R, "r1"}} {
		ma, mb, mp := a.Resource(r.typeURL, r.name), b.Resource(r.typeURL, r.name), p.Resource(r.typeURL, r.name)
		if ma == nil || ma != mb {
			t.Errorf("%s %s: clients hold %p and %p, want one shared resource", typeShort(r.typeURL), r.name, ma, mb)
		}
		if mp == nil || mp == ma {
			t.Errorf("%s %s: the private client holds %p, want its own copy", typeShort(r.typeURL), r.name, mp)
		}
		if !proto.Equal(ma, mp) {
			t.Errorf("%s %s: shared and private resources differ", typeShort(r.typeURL), r.name)
		}
	}
	// A change seen by one client does not touch the other's view.
	a.onSotw(sotwResp(t, E, "2", "e", cla("c1", "10.9.9.9", 80), cla("c2", "10.0.0.2", 80)), t0)
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
