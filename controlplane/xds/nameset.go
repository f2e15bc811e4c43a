package xds

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
)

// nameSet is the immutable set of resource names a SotW stream subscribes to for one type. The
// streams that subscribe to the same names (every sidecar of a namespace names the same EDS
// clusters) share one nameSet through nameSets: one map, one sorted list and one index by host
// for all of them, and one answer per push state (Server.subscribed) instead of a lookup per name
// per stream.
type nameSet struct {
	id     uint64 // unique per set: the key of its shared answers
	names  map[string]struct{}
	sorted []string // capacity clipped, so appending to it copies
	sum    uint64   // order-independent hash of the names (hashName summed)

	hostsOnce sync.Once
	byHost    map[string][]string
	posOnce   sync.Once
	pos       map[string]int32 // name → index in sorted (built on the first lookup)

	// orders holds the order fingerprints (sotwRequest.namesOrder) of requests already found
	// to name exactly this set, name by name: a request with the same sum, count and order is
	// this set without a second check (every sidecar of a class names its clusters in the same
	// order). 0 is an empty slot; the oldest is replaced.
	orders    [4]atomic.Uint64
	nextOrder atomic.Uint32
}

// knowsOrder reports whether a request with fingerprint order was checked against the set.
func (n *nameSet) knowsOrder(order uint64) bool {
	if order == 0 {
		return false
	}
	for i := range n.orders {
		if n.orders[i].Load() == order {
			return true
		}
	}
	return false
}

// rememberOrder records the fingerprint of a request found to name exactly this set.
func (n *nameSet) rememberOrder(order uint64) {
	if order == 0 || n.knowsOrder(order) {
		return
	}
	n.orders[n.nextOrder.Add(1)%uint32(len(n.orders))].Store(order)
}

var nameSetSeq atomic.Uint64

func newNameSet(names map[string]struct{}, sum uint64) *nameSet {
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	return &nameSet{id: nameSetSeq.Add(1), names: names, sorted: slices.Clip(sorted), sum: sum}
}

// hosts indexes the set's EDS cluster names by service hostname (built on first use), so an
// endpoint push finds a stream's clusters without parsing every name.
func (n *nameSet) hosts() map[string][]string {
	n.hostsOnce.Do(func() {
		n.byHost = make(map[string][]string)
		for _, name := range n.sorted {
			if p, err := gen.ParseClusterName(name); err == nil {
				n.byHost[p.Host] = append(n.byHost[p.Host], name)
			}
		}
	})
	return n.byHost
}

func (n *nameSet) equal(names map[string]struct{}) bool {
	if len(n.names) != len(names) {
		return false
	}
	for k := range names {
		if _, ok := n.names[k]; !ok {
			return false
		}
	}
	return true
}

func sumNames(names map[string]struct{}) uint64 {
	var sum uint64
	for n := range names {
		sum += hashName([]byte(n))
	}
	return sum
}

// nameSets interns nameSets: a set no stream holds any more is dropped by the garbage collector.
// It is safe for concurrent use; a nil *nameSets interns nothing (every set is its own).
type nameSets struct {
	mu   sync.Mutex
	sets map[uint64][]weak.Pointer[nameSet] // by sum; equal sums are compared name by name
}

func newNameSets() *nameSets { return &nameSets{sets: make(map[uint64][]weak.Pointer[nameSet])} }

// intern returns the shared set equal to names (which the caller must not modify afterwards).
func (t *nameSets) intern(names map[string]struct{}) *nameSet {
	sum := sumNames(names)
	if t == nil {
		return newNameSet(names, sum)
	}
	t.mu.Lock()
	for _, w := range t.sets[sum] {
		if s := w.Value(); s != nil && s.equal(names) {
			t.mu.Unlock()
			return s
		}
	}
	t.mu.Unlock()
	s := newNameSet(names, sum) // sorting outside the lock
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.sets[sum] {
		if o := w.Value(); o != nil && o.equal(names) {
			return o // interned meanwhile
		}
	}
	t.sets[sum] = append(t.sets[sum], weak.Make(s))
	runtime.AddCleanup(s, t.drop, sum)
	return s
}

// lookup returns the interned set that req names exactly (no "*", no duplicates), found by the
// hash the codec took and checked name by name without decoding them, or by an order of names
// already checked; nil when there is none (then the caller decodes the names and interns them).
// A set is only returned for a request with its sum and size, so only a collision of two 64-bit
// keyed hashes at once could return another set; restates trusts one of them alone.
func (t *nameSets) lookup(req *sotwRequest) *nameSet {
	if t == nil || req.namesCount == 0 {
		return nil
	}
	t.mu.Lock()
	var cands []*nameSet
	for _, w := range t.sets[req.namesHash] {
		if s := w.Value(); s != nil && len(s.names) == req.namesCount {
			cands = append(cands, s)
		}
	}
	t.mu.Unlock()
	for _, s := range cands {
		if s.knowsOrder(req.namesOrder) {
			return s
		}
	}
	for _, s := range cands {
		// Every name a member, each once, as many as the members: the same set.
		s.posOnce.Do(func() {
			s.pos = make(map[string]int32, len(s.sorted))
			for i, n := range s.sorted {
				s.pos[n] = int32(i)
			}
		})
		seen := make([]bool, len(s.sorted))
		if req.eachName(func(b []byte) bool {
			i, ok := s.pos[string(b)]
			if !ok || seen[i] {
				return false
			}
			seen[i] = true
			return true
		}) {
			s.rememberOrder(req.namesOrder)
			return s // namesCount names, all distinct members of a set of that size
		}
	}
	return nil
}

// drop forgets the collected sets of one sum.
func (t *nameSets) drop(sum uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.sets[sum][:0]
	for _, w := range t.sets[sum] {
		if w.Value() != nil {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		delete(t.sets, sum)
		return
	}
	t.sets[sum] = live
}

// len is the number of sets interned (collected ones included until their cleanup runs).
func (t *nameSets) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, ws := range t.sets {
		n += len(ws)
	}
	return n
}

// setKey names one shared answer in a push state: a set of names of a type for a class of
// proxies (the proxies that get identical bytes, Server.class).
type setKey struct {
	typeURL, class string
	set            uint64
}

type setAnswer struct {
	once sync.Once
	res  []*cache.Resource
	err  error
}

// sharedAnswer returns the answer k names in st, built by build on the first ask (built then
// reports true) and sorted by name, so each stream diffs it in one walk and keeps it as the
// record of what it holds (holdings). Every later ask in the push state, from any stream, gets
// the same slice; the next push state starts afresh. build must return a slice of its own.
func (st *pushState) sharedAnswer(k setKey, build func() ([]*cache.Resource, error)) (res []*cache.Resource, built bool, err error) {
	st.setsMu.Lock()
	a := st.sets[k]
	if a == nil {
		if st.sets == nil {
			st.sets = make(map[setKey]*setAnswer)
		}
		a = &setAnswer{}
		st.sets[k] = a
	}
	st.setsMu.Unlock()
	a.once.Do(func() {
		built = true
		a.res, a.err = build()
		slices.SortFunc(a.res, byName) // cache misses come last from the per-name path
	})
	return a.res, built, a.err
}

// subscribed returns the resources of set for p in st, sorted by name, built once per push
// state from the per-name cache entries for every proxy of p's class subscribed to the same set.
func (s *Server) subscribed(p *model.Proxy, st *pushState, typeURL string, set *nameSet) ([]*cache.Resource, error) {
	if !gen.Cacheable(typeURL) || gen.ForType(typeURL, p) == nil {
		return s.resources(p, st, typeURL, set.sorted, false)
	}
	k := setKey{typeURL: typeURL, class: s.class(p, st, typeURL, false), set: set.id}
	res, built, err := st.sharedAnswer(k, func() ([]*cache.Resource, error) {
		return s.resources(p, st, typeURL, set.sorted, false) // a slice of its own
	})
	if !built {
		s.cache.CountHits(typeURL, len(res)) // each name served from the cache, as a read of it would be
	}
	return res, err
}
