package measure

import (
	"cmp"
	"hash/maphash"
	"slices"

	"github.com/xdslab/xdslab/probe"
)

// touchIndex finds a name among a response's Touched entries. A response that catches a
// lagging client up can touch hundreds of resources while the client has hundreds of events
// pending, and resource names of one kind often share their length and a long prefix: so the
// names are hashed once, on the first lookup, and found by hash (a sorted search beyond
// linearMax entries); a hash match is confirmed by comparing the names.
type touchIndex struct {
	seed    maphash.Seed
	touched []probe.Touched
	built   bool
	byHash  []touchHash // sorted by h beyond linearMax entries
	// bloom has a bit set for each entry's hash (beyond linearMax entries): most hashes a
	// response does not touch are turned away without a search. A client's pending events
	// are hundreds while a push is debounced, and each response looks each one up.
	bloom [bloomWords]uint64
}

const bloomWords = 16 // 1,024 bits: one lookup in 16 passes with 60 names touched

type touchHash struct {
	h uint64
	i int32
}

const linearMax = 8

// reset points the index at touched, keeping its buffer.
func (x *touchIndex) reset(seed maphash.Seed, touched []probe.Touched) {
	x.seed, x.touched, x.built, x.byHash = seed, touched, false, x.byHash[:0]
}

// release drops the index's reference to the response (its buffer is kept).
func (x *touchIndex) release() { x.touched = nil }

func (x *touchIndex) build() {
	for i := range x.touched {
		x.byHash = append(x.byHash, touchHash{h: maphash.String(x.seed, x.touched[i].Name), i: int32(i)})
	}
	x.index()
}

// index sorts byHash and sets the bloom's bits beyond linearMax entries.
func (x *touchIndex) index() {
	if len(x.byHash) > linearMax {
		slices.SortFunc(x.byHash, func(a, b touchHash) int { return cmp.Compare(a.h, b.h) })
		x.bloom = [bloomWords]uint64{}
		for _, e := range x.byHash {
			w, b := bloomBit(e.h)
			x.bloom[w] |= b
		}
	}
	x.built = true
}

// bloomBit is the word and bit of hash h in touchIndex.bloom.
func bloomBit(h uint64) (int, uint64) { return int(h>>6) % bloomWords, 1 << (h & 63) }

// candidates are the entries whose hash may be h: every one up to linearMax entries, else the
// run of the sorted entries with hash h (built on the first call).
func (x *touchIndex) candidates(h uint64) []touchHash {
	if len(x.touched) == 0 {
		return nil
	}
	if !x.built {
		x.build()
	}
	if len(x.byHash) <= linearMax {
		return x.byHash
	}
	if w, b := bloomBit(h); x.bloom[w]&b == 0 {
		return nil
	}
	k, _ := slices.BinarySearchFunc(x.byHash, h, func(e touchHash, h uint64) int { return cmp.Compare(e.h, h) })
	end := k
	for end < len(x.byHash) && x.byHash[end].h == h {
		end++
	}
	return x.byHash[k:end]
}

// find returns the index in Touched of the entry named name, whose hash under the index's
// seed is h, or -1.
func (x *touchIndex) find(name string, h uint64) int {
	for _, e := range x.candidates(h) {
		if e.h == h && x.touched[e.i].Name == name {
			return int(e.i)
		}
	}
	return -1
}

// hasHash reports whether some Touched name hashes to h: a prefilter that needs no name.
func (x *touchIndex) hasHash(h uint64) bool {
	for _, e := range x.candidates(h) {
		if e.h == h {
			return true
		}
	}
	return false
}
