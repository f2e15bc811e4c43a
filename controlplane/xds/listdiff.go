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

// listDiffs memoizes diffLists for one push state. After a push every stream of a class holds
// the same shared list and gets the same new one, so the thousand streams of a class compare the
// two lists once, not a thousand times. A key is where each list starts in memory and its
// length (a resource alone would not do: one resource is in many lists): the lists are
// immutable, and the key holds their arrays alive, so it cannot come to name another list. A
// pair is kept from its second ask: the lists of a stream generated for itself alone (per-proxy
// generation) are asked for once, and are then held alive only in a small ring of keys, not in
// the memo. It is safe for concurrent use; the zero value is ready.
type listDiffs struct {
	mu   sync.Mutex
	m    map[listKey]*listDiff
	seen [listDiffsSeen]listKey // pairs asked for once, a ring
	next int
}

type listKey struct {
	old, cur   **cache.Resource
	nOld, nCur int
}

const (
	// maxListDiffs bounds a push state's memo of list differences.
	maxListDiffs = 256
	// listDiffsSeen is how many pairs asked for once the memo remembers.
	listDiffsSeen = 16
)

func (l *listDiffs) get(old, cur []*cache.Resource) *listDiff {
	if len(old) == 0 || len(cur) == 0 {
		return diffLists(old, cur) // nothing to walk: every resource is new, or every one gone
	}
	k := listKey{old: &old[0], cur: &cur[0], nOld: len(old), nCur: len(cur)}
	l.mu.Lock()
	d, ok := l.m[k]
	again := !ok && slices.Contains(l.seen[:], k)
	if !ok && !again {
		l.seen[l.next] = k
		l.next = (l.next + 1) % len(l.seen)
	}
	l.mu.Unlock()
	if ok {
		return d
	}
	d = diffLists(old, cur) // outside the lock: streams of other classes do not wait for it
	if !again {
		return d
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.m[k]; ok {
		return prev
	}
	if len(l.m) < maxListDiffs {
		if l.m == nil {
			l.m = make(map[listKey]*listDiff)
		}
		l.m[k] = d
	}
	return d
}
