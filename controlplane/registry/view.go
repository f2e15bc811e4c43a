package registry

import (
	"hash/maphash"
	"maps"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// View is the aggregate's state as of one change: every merged service with its endpoints, and
// the mirrored Istio config objects. A View never changes once published; the aggregate
// publishes a new one with each Change (Change.View) and Aggregate.View returns the latest. A
// write copies only the shards it touches (a 64th of the hosts or configs each), so a View per
// change costs little, and a reader needs no lock.
type View struct {
	hosts   shards[string, entry]
	configs shards[istioconfig.Key, *istioconfig.Config]
}

var _ model.SnapshotSource = (*View)(nil)

// Services returns every merged service, in no order.
func (v *View) Services() []*model.Service {
	out := make([]*model.Service, 0, v.hosts.n)
	for _, m := range v.hosts.m {
		for _, e := range m {
			out = append(out, e.svc)
		}
	}
	return out
}

// Service returns the merged service of host, or nil.
func (v *View) Service(host string) *model.Service { e, _ := v.hosts.get(host); return e.svc }

// Endpoints returns the merged endpoints of host, sorted. The slice must not be modified.
func (v *View) Endpoints(host string) []*model.Endpoint { e, _ := v.hosts.get(host); return e.eps }

// ServiceCount is the number of merged services.
func (v *View) ServiceCount() int { return v.hosts.n }

// Configs returns every mirrored config object, in no order.
func (v *View) Configs() []*istioconfig.Config {
	out := make([]*istioconfig.Config, 0, v.configs.n)
	for _, m := range v.configs.m {
		for _, c := range m {
			out = append(out, c)
		}
	}
	return out
}

// Config returns the config object with the key, or nil.
func (v *View) Config(key istioconfig.Key) *istioconfig.Config { c, _ := v.configs.get(key); return c }

const shardCount = 64

// shards is a map split into shardCount maps by key hash. Copied by value it shares every
// shard; edit copies a shard before its first write, so a copy can be changed while the
// original stays as it was.
type shards[K comparable, V any] struct {
	seed maphash.Seed
	m    [shardCount]map[K]V
	n    int
}

func newShards[K comparable, V any]() shards[K, V] { return shards[K, V]{seed: maphash.MakeSeed()} }

func (s *shards[K, V]) index(k K) int { return int(maphash.Comparable(s.seed, k) % shardCount) }

func (s *shards[K, V]) get(k K) (V, bool) {
	v, ok := s.m[s.index(k)][k]
	return v, ok
}

// edit is one write's changes to a copy of a shards value: owned records which shards the
// copy holds privately already.
type edit[K comparable, V any] struct {
	s     *shards[K, V]
	owned [shardCount]bool
}

func (e *edit[K, V]) shard(k K) map[K]V {
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

func (e *edit[K, V]) set(k K, v V) {
	m := e.shard(k)
	if _, ok := m[k]; !ok {
		e.s.n++
	}
	m[k] = v
}

func (e *edit[K, V]) del(k K) {
	if _, ok := e.s.get(k); !ok {
		return
	}
	delete(e.shard(k), k)
	e.s.n--
}
