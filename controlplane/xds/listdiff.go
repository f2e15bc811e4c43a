package xds

import (
	"slices"
	"sync"

	"github.com/xdslab/xdslab/controlplane/cache"
)

// listDiff is what changed between a resource list a client holds and the current one: the
// resources of the current list that are new or whose bytes changed (in its order) and the names
// that are gone. A listDiff from listDiffs is shared between streams: read it, never change it.
type listDiff struct {
	out     []*cache.Resource
	removed []string
}

// differ reports whether the lists differ at all.
func (d *listDiff) differ() bool { return len(d.out) > 0 || len(d.removed) > 0 }

// changedSet returns the names of out as a new set the caller owns.
func (d *listDiff) changedSet() map[string]struct{} {
	m := make(map[string]struct{}, len(d.out))
	for _, r := range d.out {
		m[r.Name] = struct{}{}
	}
	return m
}

var noDiff = &listDiff{}

// diffLists compares what a client holds (old) with what is current (cur). The same slice (a
// cache hit on the same entry) is unchanged at once; two lists sorted by name are walked side
// by side, others compared through a map.
func diffLists(old, cur []*cache.Resource) *listDiff {
	if len(old) == len(cur) && (len(cur) == 0 || &old[0] == &cur[0]) {
		return noDiff
	}
	d := &listDiff{}
	if slices.IsSortedFunc(old, byName) && slices.IsSortedFunc(cur, byName) {
		i := 0
		for _, r := range cur {
			for i < len(old) && old[i].Name < r.Name {
				d.removed = append(d.removed, old[i].Name)
				i++
			}
			if i < len(old) && old[i].Name == r.Name {
				if old[i] != r && old[i].Hash != r.Hash {
					d.out = append(d.out, r)
				}
				i++
				continue
			}
			d.out = append(d.out, r)
		}
		for ; i < len(old); i++ {
			d.removed = append(d.removed, old[i].Name)
		}
		return d
	}
	prev := make(map[string]uint64, len(old))
	for _, r := range old {
		prev[r.Name] = r.Hash
	}
	for _, r := range cur {
		h, ok := prev[r.Name]
		if !ok || h != r.Hash {
			d.out = append(d.out, r)
		}
		delete(prev, r.Name)
	}
	for _, r := range old { // in old's order, so the result does not depend on map order
		if _, gone := prev[r.Name]; gone {
			d.removed = append(d.removed, r.Name)
			delete(prev, r.Name)
		}
	}
	return d
}

// sharedMemo memoizes values derived from the lists streams share, for one push state: after a
// push every stream of a class holds the same list and gets the same new one, so what is derived
// from them is made once for the class, not once per stream. A key is kept from its second ask:
// the lists of a stream generated for itself alone (per-proxy generation) are asked for once,
// and are then held alive only in a small ring of keys, not in the memo. It is safe for
// concurrent use; the zero value is ready.
type sharedMemo[K comparable, V any] struct {
	mu    sync.Mutex
	m     map[K]V
	spent int
	seen  [memoSeen]K // keys asked for once, a ring
	next  int
}

// memoSeen is how many keys asked for once a sharedMemo remembers.
const memoSeen = 16

// memoPolicy is how a sharedMemo keeps values: at most maxEntries, costing at most maxCost in
// all (cost nil: nothing); with onFirst false a first ask returns the zero value unmade.
type memoPolicy[V any] struct {
	onFirst             bool
	maxEntries, maxCost int
	cost                func(V) int
}

// get returns k's value: the memoized one, or make's (made outside the lock, so streams of other
// classes do not wait).
func (m *sharedMemo[K, V]) get(k K, make func() V, p memoPolicy[V]) V {
	m.mu.Lock()
	v, ok := m.m[k]
	once := !ok && slices.Contains(m.seen[:], k)
	if !ok && !once {
		m.seen[m.next] = k
		m.next = (m.next + 1) % len(m.seen)
	}
	m.mu.Unlock()
	switch {
	case ok:
		return v
	case !once && !p.onFirst:
		var zero V
		return zero
	}
	v = make()
	if !once {
		return v
	}
	c := 0
	if p.cost != nil {
		c = p.cost(v)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.m[k]; ok {
		return prev
	}
	if len(m.m) < p.maxEntries && m.spent+c <= p.maxCost {
		if m.m == nil {
			m.m = map[K]V{}
		}
		m.m[k] = v
		m.spent += c
	}
	return v
}

// listDiffs compares the lists streams hold with the current ones once per pair (diffLists).
// A key is where each list starts in memory and its length (a resource alone would not do: one
// resource is in many lists): the lists are immutable, and the key holds their arrays alive, so
// it cannot come to name another list.
type listDiffs struct {
	memo sharedMemo[listKey, *listDiff]
}

type listKey struct {
	old, cur   **cache.Resource
	nOld, nCur int
}

// maxListDiffs bounds a push state's memo of list differences.
const maxListDiffs = 256

func (l *listDiffs) get(old, cur []*cache.Resource) *listDiff {
	if len(old) == 0 || len(cur) == 0 {
		return diffLists(old, cur) // nothing to walk: every resource is new, or every one gone
	}
	k := listKey{old: &old[0], cur: &cur[0], nOld: len(old), nCur: len(cur)}
	return l.memo.get(k, func() *listDiff { return diffLists(old, cur) }, memoPolicy[*listDiff]{onFirst: true, maxEntries: maxListDiffs})
}

// joinedLists holds, per push state, the framed bytes of a shared list of resources laid end to
// end, so its responses are written as one buffer, not one per resource: gRPC's writer gathers a
// 16 KiB frame from at most 64 buffers without allocating, and a thousand clusters of 200 bytes
// each are many more. Each stream of a class sends the same bytes; only lists asked for twice
// are joined (a stream's own list is sent as its resources' cached framing, never copied).
type joinedLists struct{ memo sharedMemo[joinKey, []byte] }

type joinKey struct {
	first **cache.Resource
	n     int
	delta bool
}

const (
	// minJoined is the smallest list worth joining: fewer buffers than gRPC gathers per frame.
	minJoined = 32
	// maxJoinedBytes bounds what one push state keeps joined (per class: CDS, LDS, routes and
	// the named assignments of each shared subscription).
	maxJoinedBytes = 64 << 20
)

// get returns res's framed bytes end to end (Framed, or DeltaFramed for delta), or nil when res
// is short, not (yet) seen shared, or over the bound.
func (j *joinedLists) get(res []*cache.Resource, delta bool) []byte {
	if len(res) < minJoined {
		return nil
	}
	return j.memo.get(joinKey{first: &res[0], n: len(res), delta: delta}, func() []byte { return joinFramed(res, delta) },
		memoPolicy[[]byte]{maxEntries: maxListDiffs, maxCost: maxJoinedBytes, cost: func(b []byte) int { return len(b) }})
}

func joinFramed(res []*cache.Resource, delta bool) []byte {
	n := 0
	for _, r := range res {
		n += len(framing(r, delta))
	}
	b := make([]byte, 0, n)
	for _, r := range res {
		b = append(b, framing(r, delta)...)
	}
	return b
}
