package xds

import (
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xdslab/xdslab/controlplane/cache"
)

// holdings is what the session knows a stream's client holds of one type, and what it last
// sent it. A resource counts as held from when it is sent: the client applies a response whole
// or rejects it whole, and a rejected version is not sent again until it changes.
//
// The latest response (nonce, version, sentAt) is the one sent and not yet ACKed until a
// request answers its nonce; acked and nacked are the versions the client last accepted and
// rejected. Whether that response still holds back pushes is flow control's business
// (push.Flow), which also times it out.
//
// The resources held, by name and version (the hash of the bytes, which Delta sends as the
// version):
//   - lookup: the hash the client holds of each name, asked in name order (one walk);
//   - whole: the list the client holds exactly, when it is known as one list (then a push
//     compares two shared lists, listDiffs, rather than looking up every name);
//   - holds, count, names: by name (Delta, whose records are exact by name);
//
// and the events that change them: got (a response sent resources and removed names),
// gotWhole (after it the client holds exactly a given list), assume (Delta's
// initial_resource_versions), drop (the client dropped a name from its subscription) and forget
// (it holds nothing: a subscription restated from scratch).
//
// How they are recorded depends on the protocol and the type (holdMode): the lists kept are
// the cache's shared answers, so a stream keeps little of its own.
type holdings struct {
	mode holdMode
	// list is a shared, immutable answer the client got whole (see holdMode).
	list []*cache.Resource
	// byName records resources by name: name → hash of the bytes (see holdMode).
	byName map[string]uint64

	nonce   string // latest nonce sent; requests with another nonce are stale
	version string // version of the latest response sent
	sentAt  time.Time
	acked   string
	nacked  string
}

// holdMode is how holdings record the resources a client holds.
type holdMode uint8

const (
	// wholeLists (SotW CDS and LDS): every response carries every subscribed resource, so the
	// client holds exactly the last list sent (list: the cache's own slice, shared by every
	// stream that got it); byName is nil.
	wholeLists holdMode = iota
	// answerAndSince (SotW, other types): list is the last whole answer to a named subscription
	// (sorted by name, shared by the streams subscribed to the same names) and byName what went
	// out since, which overrides it. A name the client drops is recorded in byName with hash 0
	// (no bytes), since the answer still lists it until the next whole answer.
	answerAndSince
	// exactByName (Delta): byName is exactly what the client holds, its
	// initial_resource_versions included. list, when not nil, holds the same resources: the
	// last whole answer to a wildcard subscription, while the client holds exactly it.
	exactByName
)

// newHoldings returns the empty holdings of one type on a SotW or Delta stream.
func newHoldings(delta bool, typeURL string) holdings {
	switch {
	case delta:
		return holdings{mode: exactByName, byName: map[string]uint64{}}
	case allRequired(typeURL):
		return holdings{mode: wholeLists}
	default:
		return holdings{mode: answerAndSince, byName: map[string]uint64{}}
	}
}

// forget records that the client holds nothing of the type.
func (h *holdings) forget() {
	clear(h.byName)
	h.list = nil
}

// assume records that the client says it holds name with the bytes of hash (0: an unknown
// version, which matches no bytes). Delta only.
func (h *holdings) assume(name string, hash uint64) { h.byName[name] = hash }

// drop records that the client dropped name from its subscription: subscribed again, it is sent
// again.
func (h *holdings) drop(name string) {
	switch h.mode {
	case wholeLists:
		h.list = withoutName(h.list, name)
	case exactByName:
		delete(h.byName, name)
		h.list = nil
	default:
		delete(h.byName, name)
		if _, listed := slices.BinarySearchFunc(h.list, name, nameOrder); listed { // the answer is sorted by name
			// The answer still lists name: record it as held with no bytes (0 matches none),
			// which overrides the answer until the next whole one.
			h.byName[name] = 0
		}
	}
}

// whole returns the list the client holds exactly, when it is known as one list: always for
// wholeLists (nil: nothing), for exactByName after gotWhole until anything else happened.
func (h *holdings) whole() ([]*cache.Resource, bool) {
	switch h.mode {
	case wholeLists:
		return h.list, true
	case exactByName:
		return h.list, h.list != nil
	}
	return nil, false
}

// got records a response that sent out and removed removed and after which the client holds
// no list known as a whole. Not for wholeLists, whose responses are whole.
func (h *holdings) got(out []*cache.Resource, removed []string) {
	if h.mode == exactByName {
		h.list = nil
	}
	h.record(out, removed)
}

// gotWhole records a response (sending out and removing removed: what differed) after which
// the client holds exactly res. res is kept, not copied: it must be immutable (the cache's,
// or a shared answer). For answerAndSince res must be sorted by name.
func (h *holdings) gotWhole(res, out []*cache.Resource, removed []string) {
	h.list = res
	switch h.mode {
	case answerAndSince:
		clear(h.byName) // the answer is all it holds now
	case exactByName:
		h.record(out, removed)
	}
}

func (h *holdings) record(out []*cache.Resource, removed []string) {
	for _, r := range out {
		h.byName[r.Name] = r.Hash
	}
	for _, n := range removed {
		delete(h.byName, n)
	}
}

// holds reports whether the client holds name. Exact for exactByName (Delta).
func (h *holdings) holds(name string) bool {
	_, ok := h.byName[name]
	return ok
}

// count is how many resources the client holds. Exact for exactByName (Delta).
func (h *holdings) count() int { return len(h.byName) }

// names yields the names of the resources the client holds. Exact for exactByName (Delta).
func (h *holdings) names() iter.Seq[string] { return maps.Keys(h.byName) }

// lookup returns a cursor over the holdings for names asked in increasing order. Not for
// wholeLists, which are compared as lists (whole).
func (h *holdings) lookup() heldCursor { return heldCursor{h: h} }

// heldCursor says which bytes of a resource the client holds: what byName records, else, for
// answerAndSince, what the answer has. Asked in increasing name order (a response's resources,
// sorted by name) it walks the answer once; the first name out of order switches it to
// searching, and sorted then reports false.
type heldCursor struct {
	h        *holdings
	i        int
	last     string
	unsorted bool
}

func (c *heldCursor) hash(name string) (uint64, bool) {
	if name < c.last {
		c.unsorted = true
	}
	c.last = name
	if h, ok := c.h.byName[name]; ok {
		return h, true
	}
	b := c.h.list
	if c.h.mode != answerAndSince || len(b) == 0 {
		return 0, false
	}
	if !c.unsorted {
		for c.i < len(b) && b[c.i].Name < name {
			c.i++
		}
		if c.i < len(b) && b[c.i].Name == name {
			return b[c.i].Hash, true
		}
		return 0, false
	}
	if i, ok := slices.BinarySearchFunc(b, name, nameOrder); ok {
		return b[i].Hash, true
	}
	return 0, false
}

// sorted reports whether every name asked so far came in increasing order.
func (c *heldCursor) sorted() bool { return !c.unsorted }

// nameOrder orders a resource against a name (for BinarySearchFunc over lists sorted by name).
func nameOrder(r *cache.Resource, n string) int { return strings.Compare(r.Name, n) }

// withoutName returns list without the resource called name (a copy when it was there).
func withoutName(list []*cache.Resource, name string) []*cache.Resource {
	i := slices.IndexFunc(list, func(r *cache.Resource) bool { return r.Name == name })
	if i < 0 {
		return list
	}
	return slices.Concat(list[:i], list[i+1:])
}
