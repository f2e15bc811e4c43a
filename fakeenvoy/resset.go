package fakeenvoy

import (
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"sort"
	"weak"
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
	t     int
	m     map[string]entry
	base  uint64 // the id of the set the edits were applied to (0: the empty set)
	edits []edit // sorted by name
	// refs are the sorted, unique references of every entry (followUp's names).
	refs []string
}

// edit is one change: the entry a name now has, or its removal.
type edit struct {
	name string
	e    entry
	del  bool
}

type setKey struct {
	t    uint8
	base uint64
	hash uint64
}

// edits is the overlay of changes to one type's resources during a response.
type edits struct {
	base map[string]entry
	m    map[string]edit
}

func newEdits(base map[string]entry) *edits { return &edits{base: base} }

// get returns name's entry as the edits leave it.
func (ed *edits) get(name string) (entry, bool) {
	if e, ok := ed.m[name]; ok {
		return e.e, !e.del
	}
	e, ok := ed.base[name]
	return e, ok
}

func (ed *edits) put(name string, e entry) {
	if ed.m == nil {
		ed.m = make(map[string]edit)
	}
	ed.m[name] = edit{name: name, e: e}
}

func (ed *edits) del(name string) {
	if ed.m == nil {
		ed.m = make(map[string]edit)
	}
	ed.m[name] = edit{name: name, del: true}
}

// sorted returns the edits that change something, by name.
func (ed *edits) sorted() []edit {
	out := make([]edit, 0, len(ed.m))
	for _, e := range ed.m {
		old, had := ed.base[e.name]
		if e.del && !had || !e.del && had && old == e.e {
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b edit) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out
}

func editsHash(es []edit) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	var b [8]byte
	for _, e := range es {
		h.WriteString(e.name)
		h.WriteByte(0)
		if e.del {
			h.WriteByte(1)
			continue
		}
		h.WriteString(e.e.version)
		h.WriteByte(0)
		if e.e.d != nil {
			x := e.e.d.hash
			for i := range b {
				b[i] = byte(x >> (8 * i))
			}
			h.Write(b[:])
		}
	}
	return h.Sum64()
}

func sameEdits(a, b []edit) bool {
	return slices.EqualFunc(a, b, func(x, y edit) bool { return x == y })
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
		for _, e := range ed.sorted() {
			if e.del {
				delete(ts.res, e.name)
			} else {
				ts.res[e.name] = e.e
			}
		}
		return
	}
	es := ed.sorted()
	if len(es) == 0 {
		return
	}
	var base uint64
	if ts.set != nil {
		base = ts.set.id
	}
	ts.set = m.interner.applyEdits(t, base, ts.res, es, m.grpc)
	ts.res = ts.set.m
}

// applyEdits returns the set that results from applying es (sorted, each changing something)
// to the set with id base whose map is from: a live one from the table, or a new one.
func (in *Interner) applyEdits(t int, base uint64, from map[string]entry, es []edit, grpc bool) *resSet {
	k := setKey{t: uint8(t), base: base, hash: editsHash(es)}
	in.mu.Lock()
	if wp, ok := in.sets[k]; ok {
		if s := wp.Value(); s != nil && sameEdits(s.edits, es) {
			in.mu.Unlock()
			return s
		}
	}
	in.nextSet++
	id := in.nextSet
	in.mu.Unlock()

	n := len(from)
	for _, e := range es {
		if _, had := from[e.name]; had && e.del {
			n--
		} else if !had && !e.del {
			n++
		}
	}
	m := make(map[string]entry, n)
	maps.Copy(m, from)
	for _, e := range es {
		if e.del {
			delete(m, e.name)
		} else {
			m[e.name] = e.e
		}
	}
	s := &resSet{id: id, t: t, m: m, base: base, edits: es, refs: setRefs(t, m, grpc)}

	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.sets[k]; ok {
		if old := wp.Value(); old != nil {
			if sameEdits(old.edits, es) {
				return old // another client built it meanwhile
			}
			return s // a live hash collision: keep this one private
		}
	}
	in.sets[k] = weak.Make(s)
	runtime.AddCleanup(s, in.evictSet, k)
	return s
}

func (in *Interner) evictSet(k setKey) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.sets[k]; ok && wp.Value() == nil {
		delete(in.sets, k)
	}
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
