package xds

import (
	"slices"
	"sync"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/xds/sotw"
)

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
func (s *Server) subscribed(p *model.Proxy, st *pushState, typeURL string, set *sotw.NameSet) ([]*cache.Resource, error) {
	if !gen.Cacheable(typeURL) || gen.ForType(typeURL, p) == nil {
		return s.resources(p, st, typeURL, set.Sorted(), false)
	}
	k := setKey{typeURL: typeURL, class: s.class(p, st, typeURL, false), set: set.ID()}
	res, built, err := st.sharedAnswer(k, func() ([]*cache.Resource, error) {
		return s.resources(p, st, typeURL, set.Sorted(), false) // a slice of its own
	})
	if !built {
		s.cache.CountHits(typeURL, len(res)) // each name served from the cache, as a read of it would be
	}
	return res, err
}
