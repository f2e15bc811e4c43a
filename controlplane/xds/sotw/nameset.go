package sotw

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/xdslab/xdslab/controlplane/gen"
)

// NameSet is the immutable set of resource names a SotW stream subscribes to for one type. The
// streams that subscribe to the same names (every sidecar of a namespace names the same EDS
// clusters) share one NameSet through NameSets: one map, one sorted list and one index by host
// for all of them, and one answer per push state (the xds Server's subscribed, keyed by ID)
// instead of a lookup per name per stream.
type NameSet struct {
	id     uint64 // unique per set: the key of its shared answers
	names  map[string]struct{}
	sorted []string // capacity clipped, so appending to it copies
	sum    uint64   // order-independent hash of the names (hashName summed)

	hostsOnce sync.Once
	byHost    map[string][]string
	posOnce   sync.Once
	pos       map[string]int32 // name → index in sorted (built on the first lookup)

	// orders holds the order fingerprints (Request.namesOrder) of requests already found
	// to name exactly this set, name by name: a request with the same sum, count and order is
	// this set without a second check (every sidecar of a class names its clusters in the same
	// order). 0 is an empty slot; the oldest is replaced.
	orders    [4]atomic.Uint64
	nextOrder atomic.Uint32
}

// ID is unique per set: the key of the answers shared by the streams subscribed to it.
func (n *NameSet) ID() uint64 { return n.id }

// Names is the set's names; read it, never change it.
func (n *NameSet) Names() map[string]struct{} { return n.names }

// Sorted is the set's names sorted; read it, never change it (its capacity is clipped, so
// appending to it copies).
func (n *NameSet) Sorted() []string { return n.sorted }

// RememberOrder records that r names exactly this set ("*" and duplicates excluded), in r's
// order, so a later request in the same order is found by NameSets.Lookup from its fingerprints.
func (n *NameSet) RememberOrder(r *Request) { n.rememberOrder(r.namesOrder) }

// knowsOrder reports whether a request with fingerprint order was checked against the set.
func (n *NameSet) knowsOrder(order uint64) bool {
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
func (n *NameSet) rememberOrder(order uint64) {
	if order == 0 || n.knowsOrder(order) {
		return
	}
	n.orders[n.nextOrder.Add(1)%uint32(len(n.orders))].Store(order)
}

var nameSetSeq atomic.Uint64

func newNameSet(names map[string]struct{}, sum uint64) *NameSet {
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	return &NameSet{id: nameSetSeq.Add(1), names: names, sorted: slices.Clip(sorted), sum: sum}
}

// Hosts indexes the set's EDS cluster names by service hostname (built on first use), so an
// endpoint push finds a stream's clusters without parsing every name.
func (n *NameSet) Hosts() map[string][]string {
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

func (n *NameSet) equal(names map[string]struct{}) bool {
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

// NameSets interns NameSets: a set no stream holds any more is dropped by the garbage collector.
// It is safe for concurrent use; a nil *NameSets interns nothing (every set is its own).
type NameSets struct {
	mu   sync.Mutex
	sets map[uint64][]weak.Pointer[NameSet] // by sum; equal sums are compared name by name
}

// NewNameSets returns an empty table.
func NewNameSets() *NameSets { return &NameSets{sets: make(map[uint64][]weak.Pointer[NameSet])} }

// Intern returns the shared set equal to names (which the caller must not modify afterwards).
func (t *NameSets) Intern(names map[string]struct{}) *NameSet {
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

// Lookup returns the interned set that req names exactly (no "*", no duplicates), found by the
// hash the codec took and checked name by name without decoding them, or by an order of names
// already checked; nil when there is none (then the caller decodes the names and interns them).
// A set is only returned for a request with its sum and size, so only a collision of two 64-bit
// keyed hashes at once could return another set; Request.Restates trusts one of them alone.
func (t *NameSets) Lookup(req *Request) *NameSet {
	if t == nil || req.namesCount == 0 {
		return nil
	}
	t.mu.Lock()
	var cands []*NameSet
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
func (t *NameSets) drop(sum uint64) {
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
func (t *NameSets) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, ws := range t.sets {
		n += len(ws)
	}
	return n
}
