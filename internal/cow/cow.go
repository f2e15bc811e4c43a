package cow

import (
	"hash/maphash"
	"maps"
)

const shardCount = 64

// Map is one immutable version of a sharded map. The zero value is not usable: use New. A
// copy (plain assignment) is another handle to the same version; Edit makes a new version.
type Map[K comparable, V any] struct {
	seed maphash.Seed
	m    [shardCount]map[K]V
	n    int
}

// New returns an empty map.
func New[K comparable, V any]() Map[K, V] { return Map[K, V]{seed: maphash.MakeSeed()} }

func (s *Map[K, V]) index(k K) int { return int(maphash.Comparable(s.seed, k) % shardCount) }

// Get returns the value of k.
func (s *Map[K, V]) Get(k K) (V, bool) {
	v, ok := s.m[s.index(k)][k]
	return v, ok
}

// Len is the number of entries.
func (s *Map[K, V]) Len() int { return s.n }

// Values returns every value, in no order.
func (s *Map[K, V]) Values() []V {
	out := make([]V, 0, s.n)
	for _, m := range s.m {
		for _, v := range m {
			out = append(out, v)
		}
	}
	return out
}

// Range calls f for every entry, in no order, until f returns false.
func (s *Map[K, V]) Range(f func(K, V) bool) {
	for _, m := range s.m {
		for k, v := range m {
			if !f(k, v) {
				return
			}
		}
	}
}

// Edit is one new version's changes: it writes into *s, which must be a copy of the version
// it starts from, copying each shard before its first write.
type Edit[K comparable, V any] struct {
	s     *Map[K, V]
	owned [shardCount]bool
}

// Edit starts a new version in s (make s a copy of the version to change first).
func (s *Map[K, V]) Edit() *Edit[K, V] { return &Edit[K, V]{s: s} }

func (e *Edit[K, V]) shard(k K) map[K]V {
	i := e.s.index(k)
	if !e.owned[i] {
		e.s.m[i] = maps.Clone(e.s.m[i])
		if e.s.m[i] == nil {
			e.s.m[i] = make(map[K]V)
		}
		e.owned[i] = true
	}
	return e.s.m[i]
}

// Set sets k to v.
func (e *Edit[K, V]) Set(k K, v V) {
	m := e.shard(k)
	if _, ok := m[k]; !ok {
		e.s.n++
	}
	m[k] = v
}

// Del removes k.
func (e *Edit[K, V]) Del(k K) {
	if _, ok := e.s.Get(k); !ok {
		return
	}
	delete(e.shard(k), k)
	e.s.n--
}
