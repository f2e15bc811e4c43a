package fakeenvoy

import (
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"sort"
	"weak"

	"google.golang.org/protobuf/encoding/protowire"
)

// A client's accepted resources of one type (typeState.res, name → entry) are shared among the
// clients of a fleet as the decoded resources are: 1,000 sidecars that hold the same 2,000
// clusters hold one map, not 1,000 (the maps were most of an idle client's heap).
//
// A map that belongs to a resSet is immutable. A change to a client's resources is first
// collected in an edits overlay (what process and setNames would have written in place), then
// committed: the result of applying edits e to set b is looked up in the Interner by (type, b's
// id, e); a hit is only a hit when the stored base and edits are equal to b and e (names,
// decoded pointers, versions), so the result is exactly the map the client would have built.
// Otherwise the client builds the new map (a copy of b with e applied) and publishes it. The
// first client that receives a given change pays for the map; the others adopt it, without
// copying or hashing the whole set. Like decoded resources, sets live as long as a client
// holds them (weak table, cleanup on collection). Without an Interner every client's map is its
// own and edits are applied in place.

// resSet is one immutable map of accepted resources and what was derived from it once.
type resSet struct {
	id    uint64
	m     map[string]entry
	base  uint64          // the id of the set the edits were applied to (0: the empty set)
	edits map[string]edit // the net changes from base, as commit compares them
	// refs are the sorted, unique references of every entry (followUp's names), and refsWire
	// their encoding as a DiscoveryRequest's resource_names (nil when short): a SotW client
	// sends every EDS or RDS name on every request, so the codec sends these shared bytes
	// instead of encoding the list again per request.
	refs     []string
	refsWire []byte
}

// edit is one change: the entry a name now has, or its removal.
type edit struct {
	e   entry
	del bool
}

type setKey struct {
	t    uint8
	base uint64
	hash uint64
}

// edits is the overlay of changes to one type's resources during a response: m holds only net
// changes (a put of what base holds, or a removal of what it lacks, is no change).
type edits struct {
	base map[string]entry
	m    map[string]edit
	hint int // how many edits to make room for
}

func newEdits(base map[string]entry, hint int) *edits { return &edits{base: base, hint: hint} }

// get returns name's entry as the edits leave it.
func (ed *edits) get(name string) (entry, bool) {
	if e, ok := ed.m[name]; ok {
		return e.e, !e.del
	}
	e, ok := ed.base[name]
	return e, ok
}

func (ed *edits) put(name string, e entry) {
	if old, had := ed.base[name]; had && old == e {
		delete(ed.m, name)
		return
	}
	if ed.m == nil {
		ed.m = make(map[string]edit, ed.hint)
	}
	ed.m[name] = edit{e: e}
}

func (ed *edits) del(name string) {
	if _, had := ed.base[name]; !had {
		delete(ed.m, name)
		return
	}
	if ed.m == nil {
		ed.m = make(map[string]edit, ed.hint)
	}
	ed.m[name] = edit{del: true}
}

// hash is an order-independent hash of the changes (a sum over them).
func (ed *edits) hash() uint64 {
	var sum uint64
	for name, e := range ed.m {
		x := maphash.String(hashSeed, name)
		if e.del {
			x ^= 0x9e3779b97f4a7c15
		} else {
			if e.e.version != "" {
				x ^= maphash.String(hashSeed, e.e.version) * 0xbf58476d1ce4e5b9
			}
			if e.e.d != nil {
				x ^= e.e.d.hash * 0x94d049bb133111eb
			}
		}
		// splitmix64's finalizer, so that a sum of entries does not cancel out
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		x ^= x >> 31
		sum += x
	}
	return sum
}

// commit applies ed to type t's resources: a shared set equal to the result when the interner
// holds one, else a new map (published for the other clients).
func (m *machine) commit(t int, ed *edits) {
	ts := &m.types[t]
	if len(ed.m) == 0 {
		return
	}
	if m.interner == nil {
		// Private: the map is the client's own.
		if ts.res == nil {
			ts.res = make(map[string]entry, len(ed.m))
		}
		for name, e := range ed.m {
			if e.del {
				delete(ts.res, name)
			} else {
				ts.res[name] = e.e
			}
		}
		return
	}
	var base uint64
	if ts.set != nil {
		base = ts.set.id
	}
	ts.set = m.interner.applyEdits(t, base, ed, m.grpc)
	ts.res = ts.set.m
}

// sameEdits reports whether a set built from base with edits want is what ed gives.
func sameEdits(want map[string]edit, ed *edits) bool {
	if len(want) != len(ed.m) {
		return false
	}
	for name, e := range ed.m {
		if w, ok := want[name]; !ok || w != e {
			return false
		}
	}
	return true
}

// applyEdits returns the set that results from applying ed (to the set with id base whose map
// is ed.base): a live one from the table, or a new one, which keeps ed's changes.
func (in *Interner) applyEdits(t int, base uint64, ed *edits, grpc bool) *resSet {
	k := setKey{t: uint8(t), base: base, hash: ed.hash()}
	in.mu.Lock()
	if wp, ok := in.sets[k]; ok {
		if s := wp.Value(); s != nil && sameEdits(s.edits, ed) {
			in.mu.Unlock()
			return s
		}
	}
	in.nextSet++
	id := in.nextSet
	in.mu.Unlock()

	n := len(ed.base)
	for name, e := range ed.m {
		if _, had := ed.base[name]; had && e.del {
			n--
		} else if !had {
			n++
		}
	}
	m := make(map[string]entry, n)
	maps.Copy(m, ed.base)
	for name, e := range ed.m {
		if e.del {
			delete(m, name)
		} else {
			m[name] = e.e
		}
	}
	s := &resSet{id: id, m: m, base: base, edits: ed.m, refs: setRefs(t, m, grpc)}
	if len(s.refs) >= minWireNames {
		for _, n := range s.refs {
			s.refsWire = protowire.AppendTag(s.refsWire, sotwNamesField, protowire.BytesType)
			s.refsWire = protowire.AppendString(s.refsWire, n)
		}
	}

	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.sets[k]; ok {
		if old := wp.Value(); old != nil {
			if sameEdits(old.edits, ed) {
				return old // another client built it meanwhile
			}
			return s // a live hash collision: keep this one private
		}
	}
	in.sets[k] = weak.Make(s)
	if s.refsWire != nil {
		in.names[&s.refs[0]] = weak.Make(s)
	}
	runtime.AddCleanup(s, in.evictSet, setSlots{k: k, names: s.refsWire != nil, first: firstOf(s.refs)})
	return s
}

// minWireNames is the shortest list of names worth keeping encoded.
const minWireNames = 16

func firstOf(s []string) *string {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// setSlots are the table slots of a set, dropped once it is collected.
type setSlots struct {
	k     setKey
	names bool
	first *string
}

func (in *Interner) evictSet(sl setSlots) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.sets[sl.k]; ok && wp.Value() == nil {
		delete(in.sets, sl.k)
	}
	if wp, ok := in.names[sl.first]; sl.names && ok && wp.Value() == nil {
		delete(in.names, sl.first)
	}
}

// namesWire returns the encoding of names as resource_names when names is a shared set's refs
// (the same slice), else nil.
func (in *Interner) namesWire(names []string) []byte {
	if in == nil || len(names) < minWireNames {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	wp, ok := in.names[&names[0]]
	if !ok {
		return nil
	}
	if s := wp.Value(); s != nil && len(s.refs) == len(names) {
		return s.refsWire
	}
	return nil
}

// setRefs is what followUp names after a change of type t: the sorted, unique references of
// every entry (nil for types that have no follow-up).
func setRefs(t int, m map[string]entry, grpc bool) []string {
	if t != tCDS && t != tLDS && !(t == tRDS && grpc) {
		return nil
	}
	var names []string
	for _, e := range m {
		names = append(names, e.refs()...)
	}
	sort.Strings(names)
	return slices.Compact(names)
}
