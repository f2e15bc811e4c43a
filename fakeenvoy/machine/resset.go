package machine

import (
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"sort"
	"sync"
	"weak"

	"google.golang.org/protobuf/encoding/protowire"
)

// A client's accepted resources of one type (typeState.res, name → entry) are shared among the
// clients of a fleet as the decoded resources are: 1,000 sidecars that hold the same 2,000
// clusters hold one map, not 1,000 (the maps were most of an idle client's heap).
//
// A map that belongs to a resSet is immutable. A change to a client's resources is first
// collected in an edits overlay (what process and setNames would have written in place), then
// committed (Interner.applyEdits):
//   - a transition (type, base set, edits) another client already made gives its resulting set
//     at once, without copying or hashing the whole set: the first client that receives a
//     given change pays for the map, the others adopt it. A hit is only a hit when the stored
//     edits are equal to these (names, decoded pointers, versions).
//   - otherwise a set with the same content (clients whose pushes were batched differently end
//     with the same resources through different transitions) is found by a hash of the content
//     kept up to date from the base's, and adopted once an entry-by-entry comparison confirms
//     it;
//   - otherwise the client builds the new map (a copy of the base with the edits applied) and
//     publishes it.
//
// Either way the client holds exactly the map it would have built. Sets live as long as a
// client holds them (weak tables, cleaned up on collection). Without an Interner every client's
// map is its own and edits are applied in place.

// resSet is one immutable map of accepted resources and what was derived from it once.
type resSet struct {
	id  uint64
	m   map[string]entry
	sum uint64 // contentHash of m
	// secrets are the sorted, unique secret references of every entry (followUpSecrets'),
	// derived once by the first client that needs them.
	secretsOnce sync.Once
	secrets     []secretRef
	// refs are the sorted, unique references of every entry (followUp's names), and refsWire
	// their encoding as a DiscoveryRequest's resource_names (nil when short): a SotW client
	// sends every EDS or RDS name on every request, so the codec sends these shared bytes
	// instead of encoding the list again per request.
	refs     []string
	refsWire []byte
	hasRefs  bool // refs were derived (the type has a dependent one)
	// holders maps each secret reference to the first entry (by name) that names it, derived
	// once (secretBlocker's example).
	holdersOnce sync.Once
	holders     map[secretRef]string
	// covered caches refsIn's answer for the last dependent set asked about: the clients that
	// hold this set and the same dependent set ask once between them.
	covered answerCache
}

// edit is one change: the entry a name now has, or its removal.
type edit struct {
	e   entry
	del bool
}

// setKey finds a transition: type, base set id (0: the empty set), hash of the edits.
type setKey struct {
	t    rtype
	base uint64
	hash uint64
}

// contentKey finds a set by content: type, contentHash, size.
type contentKey struct {
	t   rtype
	sum uint64
	n   int
}

// transition is a change some client made: its edits and the set it led to.
type transition struct {
	edits map[string]edit
	to    weak.Pointer[resSet]
}

// edits is the overlay of changes to one type's resources during a response. It holds only
// net changes (a put of what base holds, or a removal of what it lacks, is no change): in m, or,
// when every name is changed at most once and never read back after its change (newOnceEdits:
// a response with distinct names), in list, which costs no map per response.
type edits struct {
	base map[string]entry
	m    map[string]edit
	list []namedEdit
	once bool
	hint int // how many edits to make room for
}

// namedEdit is one change of a list.
type namedEdit struct {
	name string
	edit
}

func newEdits(base map[string]entry, hint int) *edits { return &edits{base: base, hint: hint} }

// newOnceEdits returns edits whose caller changes each name at most once and asks get about a
// name only before changing it.
func newOnceEdits(base map[string]entry, hint int) *edits {
	return &edits{base: base, hint: hint, once: true}
}

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
	ed.set(name, edit{e: e})
}

func (ed *edits) del(name string) {
	if _, had := ed.base[name]; !had {
		delete(ed.m, name)
		return
	}
	ed.set(name, edit{del: true})
}

func (ed *edits) set(name string, e edit) {
	if ed.once {
		if ed.list == nil {
			ed.list = make([]namedEdit, 0, ed.hint)
		}
		ed.list = append(ed.list, namedEdit{name, e})
		return
	}
	if ed.m == nil {
		ed.m = make(map[string]edit, ed.hint)
	}
	ed.m[name] = e
}

// len is how many changes ed holds.
func (ed *edits) len() int { return len(ed.m) + len(ed.list) }

// all yields every change.
func (ed *edits) all(yield func(string, edit) bool) {
	for name, e := range ed.m {
		if !yield(name, e) {
			return
		}
	}
	for _, e := range ed.list {
		if !yield(e.name, e.edit) {
			return
		}
	}
}

// changes returns ed's changes as a map (m itself when ed keeps one).
func (ed *edits) changes() map[string]edit {
	if ed.m != nil || len(ed.list) == 0 {
		return ed.m
	}
	m := make(map[string]edit, len(ed.list))
	for _, e := range ed.list {
		m[e.name] = e.edit
	}
	return m
}

// entryHash hashes one entry of a set (or, with del, the removal of name); a set's content
// hash is the sum over its entries, so it follows a change without visiting the rest.
func entryHash(name string, e entry, del bool) uint64 {
	x := maphash.String(hashSeed, name)
	if del {
		x ^= 0x9e3779b97f4a7c15
	} else {
		if e.version != "" {
			x ^= maphash.String(hashSeed, e.version) * 0xbf58476d1ce4e5b9
		}
		if e.d != nil {
			x ^= e.d.hash * 0x94d049bb133111eb
		}
	}
	// splitmix64's finalizer, so that a sum of entries does not cancel out
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash is an order-independent hash of the changes (a sum over them).
func (ed *edits) hash() uint64 {
	var sum uint64
	for name, e := range ed.all {
		sum += entryHash(name, e.e, e.del)
	}
	return sum
}

// result returns the content hash and size of the set ed leads to from a base of content
// hash sum.
func (ed *edits) result(sum uint64) (uint64, int) {
	n := len(ed.base)
	for name, e := range ed.all {
		old, had := ed.base[name]
		if had {
			sum -= entryHash(name, old, false)
			n--
		}
		if !e.del {
			sum += entryHash(name, e.e, false)
			n++
		}
	}
	return sum, n
}

// leadsTo reports whether s holds exactly what ed gives (s has the expected size).
func (ed *edits) leadsTo(s *resSet) bool {
	if ed.list != nil {
		ed.m, ed.list, ed.once = ed.changes(), nil, false // get must see the changes
	}
	for name, e := range s.m {
		if want, ok := ed.get(name); !ok || want != e {
			return false
		}
	}
	return true
}

// commit applies ed to type t's resources: a shared set equal to the result when the interner
// holds one, else a new map (published for the other clients).
func (m *Machine) commit(t rtype, ed *edits) {
	ts := &m.types[t]
	if ed.len() == 0 {
		return
	}
	if m.interner == nil {
		// Private: the map is the client's own.
		if ts.res == nil {
			ts.res = make(map[string]entry, ed.len())
		}
		for name, e := range ed.all {
			if e.del {
				delete(ts.res, name)
			} else {
				ts.res[name] = e.e
			}
		}
		return
	}
	_, follows := m.wire.dependent(t)
	ts.set = m.interner.applyEdits(t, ts.set, ed, follows)
	ts.res = ts.set.m
}

// sameEdits reports whether want holds exactly ed's changes.
func sameEdits(want map[string]edit, ed *edits) bool {
	if len(want) != ed.len() {
		return false
	}
	for name, e := range ed.all {
		if w, ok := want[name]; !ok || w != e {
			return false
		}
	}
	return true
}

// applyEdits returns the set that results from applying ed to base (nil: the empty set; its
// map is ed.base): by a known transition, a live set of the same content, or a new set. ed
// must not be used afterwards (a transition keeps its changes).
func (in *Interner) applyEdits(t rtype, base *resSet, ed *edits, follows bool) *resSet {
	var baseID, baseSum uint64
	if base != nil {
		baseID, baseSum = base.id, base.sum
	}
	k := setKey{t: t, base: baseID, hash: ed.hash()}
	in.mu.Lock()
	if tr, ok := in.trans[k]; ok {
		if s := tr.to.Value(); s != nil && sameEdits(tr.edits, ed) {
			in.mu.Unlock()
			return s
		}
	}
	sum, n := ed.result(baseSum)
	ck := contentKey{t: t, sum: sum, n: n}
	var same *resSet
	if wp, ok := in.content[ck]; ok {
		same = wp.Value()
	}
	in.mu.Unlock()

	// A set of the same content reached another way: compare outside the lock (sets are
	// immutable).
	if same != nil && ed.leadsTo(same) {
		in.mu.Lock()
		in.addTransition(k, ed, same)
		in.mu.Unlock()
		return same
	}

	m := make(map[string]entry, n)
	maps.Copy(m, ed.base)
	for name, e := range ed.all {
		if e.del {
			delete(m, name)
		} else {
			m[name] = e.e
		}
	}
	s := &resSet{m: m, sum: sum}
	if follows {
		s.refs, s.hasRefs = setRefs(m), true
	}
	if len(s.refs) >= minWireNames {
		for _, n := range s.refs {
			s.refsWire = protowire.AppendTag(s.refsWire, sotwNamesField, protowire.BytesType)
			s.refsWire = protowire.AppendString(s.refsWire, n)
		}
	}

	in.mu.Lock()
	defer in.mu.Unlock()
	if tr, ok := in.trans[k]; ok {
		if old := tr.to.Value(); old != nil && sameEdits(tr.edits, ed) {
			return old // another client built it meanwhile
		}
	}
	in.nextSet++
	s.id = in.nextSet
	sl := setSlots{}
	if wp, ok := in.content[ck]; !ok || wp.Value() == nil {
		in.content[ck] = weak.Make(s)
		sl.content, sl.ck = true, ck
	}
	if s.refsWire != nil {
		in.names[&s.refs[0]] = weak.Make(s)
		sl.names, sl.first = true, &s.refs[0]
	}
	runtime.AddCleanup(s, in.evictSet, sl)
	in.addTransition(k, ed, s)
	return s
}

// addTransition records that ed applied to the base of k leads to s (in.mu held).
func (in *Interner) addTransition(k setKey, ed *edits, s *resSet) {
	if tr, ok := in.trans[k]; ok && tr.to.Value() != nil {
		return // a live one (a hash collision, or a race): keep it
	}
	in.trans[k] = transition{edits: ed.changes(), to: weak.Make(s)}
	runtime.AddCleanup(s, in.evictTransition, k)
}

func (in *Interner) evictTransition(k setKey) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if tr, ok := in.trans[k]; ok && tr.to.Value() == nil {
		delete(in.trans, k)
	}
}

// minWireNames is the shortest list of names worth keeping encoded.
const minWireNames = 16

// setSlots are the table slots of a set, dropped once it is collected.
type setSlots struct {
	content bool
	ck      contentKey
	names   bool
	first   *string
}

func (in *Interner) evictSet(sl setSlots) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.content[sl.ck]; sl.content && ok && wp.Value() == nil {
		delete(in.content, sl.ck)
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

// setRefs is what followUp names after a change of a type that has a dependent type: the
// sorted, unique references of every entry.
func setRefs(m map[string]entry) []string {
	var names []string
	for _, e := range m {
		names = append(names, e.refs()...)
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// secretRefsOr returns the set's secret references (see resSet.secrets), or those of m, a
// client's private map, when s is nil.
func (s *resSet) secretRefsOr(m map[string]entry) []secretRef {
	if s == nil {
		return collectSecretRefs(m)
	}
	s.secretsOnce.Do(func() { s.secrets = collectSecretRefs(s.m) })
	return s.secrets
}

// collectSecretRefs is every secret reference of m's entries, sorted and unique.
func collectSecretRefs(m map[string]entry) []secretRef {
	var refs []secretRef
	for _, e := range m {
		refs = append(refs, e.d.secretList()...)
	}
	slices.SortFunc(refs, cmpSecretRef)
	return slices.Compact(refs)
}

// holder returns the first entry (by name) of the set that names secret r.
func (s *resSet) holder(r secretRef) (string, bool) {
	s.holdersOnce.Do(func() {
		s.holders = make(map[secretRef]string)
		for name, e := range s.m {
			for _, ref := range e.d.secretList() {
				if h, ok := s.holders[ref]; !ok || name < h {
					s.holders[ref] = name
				}
			}
		}
	})
	h, ok := s.holders[r]
	return h, ok
}

// refsIn reports whether every reference of m's entries is a key of dep. With both shared
// (set and depSet non-nil) the answer is kept per pair: the clients that hold the same two sets
// ask once between them.
func refsIn(set *resSet, m map[string]entry, depSet *resSet, dep map[string]entry) bool {
	if set == nil || depSet == nil {
		return allRefsIn(m, dep)
	}
	return set.covered.answer(depSet.id, func() bool { return allRefsIn(m, dep) })
}

func allRefsIn(m, dep map[string]entry) bool {
	for _, e := range m {
		for _, r := range e.refs() {
			if _, ok := dep[r]; !ok {
				return false
			}
		}
	}
	return true
}
