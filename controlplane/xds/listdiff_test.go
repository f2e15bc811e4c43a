package xds

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/push"
)

func TestDiffLists(t *testing.T) {
	r := func(name, body string) *cache.Resource { return cache.NewResource(name, gen.ClusterType, []byte(body)) }
	a1, b1, c1, b2 := r("a", "1"), r("b", "1"), r("c", "1"), r("b", "2")
	same := []*cache.Resource{a1, b1}
	for _, tc := range []struct {
		name     string
		old, cur []*cache.Resource
		changed  []string
		gone     []string
	}{
		{"same slice", same, same, nil, nil},
		{"equal copies", []*cache.Resource{a1, b1}, []*cache.Resource{a1, b1}, nil, nil},
		{"same bytes, other resource", []*cache.Resource{a1, b1}, []*cache.Resource{a1, r("b", "1")}, nil, nil},
		{"first send", nil, []*cache.Resource{a1, b1}, []string{"a", "b"}, nil},
		{"added", []*cache.Resource{a1, c1}, []*cache.Resource{a1, b1, c1}, []string{"b"}, nil},
		{"changed", []*cache.Resource{a1, b1, c1}, []*cache.Resource{a1, b2, c1}, []string{"b"}, nil},
		{"removed middle", []*cache.Resource{a1, b1, c1}, []*cache.Resource{a1, c1}, nil, []string{"b"}},
		{"removed last", []*cache.Resource{a1, b1, c1}, []*cache.Resource{a1, b1}, nil, []string{"c"}},
		{"removed first and added", []*cache.Resource{a1, c1}, []*cache.Resource{b1, c1}, []string{"b"}, []string{"a"}},
		{"unsorted", []*cache.Resource{c1, a1, b1}, []*cache.Resource{b2, a1}, []string{"b"}, []string{"c"}},
		{"unsorted, several gone", []*cache.Resource{c1, a1, b1}, []*cache.Resource{b1}, nil, []string{"c", "a"}},
		{"all gone", []*cache.Resource{a1}, nil, nil, []string{"a"}},
	} {
		d := diffLists(tc.old, tc.cur)
		got := slices.Sorted(maps.Keys(d.changedSet()))
		if want := len(tc.changed) > 0 || len(tc.gone) > 0; !slices.Equal(got, tc.changed) || d.differ() != want {
			t.Errorf("%s: changed %q differ %v, want %q %v", tc.name, got, d.differ(), tc.changed, want)
		}
		if !slices.Equal(d.removed, tc.gone) {
			t.Errorf("%s: removed %q, want %q", tc.name, d.removed, tc.gone)
		}
		for i := 1; i < len(d.out); i++ { // in cur's order
			if slices.Index(tc.cur, d.out[i-1]) > slices.Index(tc.cur, d.out[i]) {
				t.Errorf("%s: out not in the current list's order: %v", tc.name, d.out)
			}
		}
	}
}

func TestListDiffsShareOneComparisonPerPair(t *testing.T) {
	r := func(name, body string) *cache.Resource { return cache.NewResource(name, gen.ClusterType, []byte(body)) }
	a, b, c := r("a", "1"), r("b", "1"), r("c", "1")
	old := []*cache.Resource{a, b}
	cur := []*cache.Resource{a, b, c}
	var l listDiffs
	l.get(old, cur) // asked for once: remembered in the ring only
	if len(l.m) != 0 {
		t.Error("a pair asked for once is kept")
	}
	d1 := l.get(old, cur)
	if d2 := l.get(old, cur); d1 != d2 {
		t.Error("a pair asked for again is not kept")
	}
	if got := resNames(d1.out); !slices.Equal(got, []string{"c"}) || len(d1.removed) != 0 {
		t.Errorf("diff %q removed %q, want [c] []", got, d1.removed)
	}
	// A list with the same first resource and length but other contents is another list.
	other := []*cache.Resource{a, c}
	for range 2 {
		if d := l.get(other, cur); d == d1 || !slices.Equal(resNames(d.out), []string{"b"}) {
			t.Errorf("list [a c] got the diff of [a b]: %q", resNames(d.out))
		}
	}
	// Lists asked for once each (per-proxy generation) are not kept, however many.
	for i := range 100 {
		l.get([]*cache.Resource{r(fmt.Sprint(i), "x")}, cur)
	}
	if n := len(l.m); n != 2 {
		t.Errorf("memo holds %d pairs after 100 asked for once, want the 2 asked for twice", n)
	}
	// Bounded: beyond maxListDiffs pairs the comparison is made but not kept.
	for i := range maxListDiffs + 10 {
		o := []*cache.Resource{r(fmt.Sprint(i), "x")}
		l.get(o, cur)
		if d := l.get(o, cur); len(d.out) != 3 || len(d.removed) != 1 {
			t.Fatalf("pair %d: %d out, %d removed", i, len(d.out), len(d.removed))
		}
	}
	if n := len(l.m); n > maxListDiffs {
		t.Errorf("memo holds %d pairs, bound %d", n, maxListDiffs)
	}
	// Safe for concurrent use (run with -race).
	var l2 listDiffs
	var wg sync.WaitGroup
	got := make([]*listDiff, 8)
	for i := range got {
		wg.Go(func() { got[i] = l2.get(old, cur) })
	}
	wg.Wait()
	for _, d := range got {
		if !slices.Equal(resNames(d.out), []string{"c"}) {
			t.Errorf("concurrent get: %q", resNames(d.out))
		}
	}
}

func resNames(rs []*cache.Resource) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// sharedSource answers wildcard requests with one list per content, shared by every caller as
// the server's cache shares it, so sessions meet the listDiffs fast path as in production.
type sharedSource struct {
	fakeSource
	lists map[string][]*cache.Resource
}

func (s *sharedSource) resources(p *model.Proxy, st *pushState, typeURL string, names []string, wildcard bool) ([]*cache.Resource, error) {
	if !wildcard {
		return s.fakeSource.resources(p, st, typeURL, names, wildcard)
	}
	k := typeURL + fmt.Sprint(s.res[typeURL])
	if l, ok := s.lists[k]; ok {
		return l, nil
	}
	l, err := s.fakeSource.resources(p, st, typeURL, names, wildcard)
	s.lists[k] = l
	return l, err
}

// TestDeltaWildcardClientHoldsCurrent drives Delta clients of a wildcard CDS subscription
// through random cluster changes, pushes and named (un)subscriptions, applying every response
// to a model of what each client holds: after each push it holds exactly the current clusters,
// whether the push took the shared comparison of lists (holdings.whole) or the per-name one.
func TestDeltaWildcardClientHoldsCurrent(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			src := &sharedSource{fakeSource: fakeSource{res: map[string]map[string]string{gen.ClusterType: {}}}, lists: map[string][]*cache.Resource{}}
			now := time.Unix(1, 0)
			seq := uint64(1)
			src.st = &pushState{snap: model.NewSnapshot(seq, model.SnapshotInput{})}
			type client struct {
				s    *session
				held map[string]uint64 // name → hash of the bytes
			}
			clients := make([]*client, 3)
			apply := func(c *client, e *effects) {
				for _, r := range e.out {
					if r.typeURL != gen.ClusterType {
						continue
					}
					for _, res := range r.resources {
						if slices.Contains(r.removed, res.Name) {
							t.Fatalf("%q both sent and removed", res.Name)
						}
						c.held[res.Name] = res.Hash
					}
					for _, n := range r.removed {
						delete(c.held, n)
					}
					// ACK at once, so flow control never holds the next push.
					ack := c.s.DeltaRequest(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: gen.ClusterType, ResponseNonce: r.nonce}, now)
					if ack.err != nil || len(ack.out) != 0 {
						t.Fatalf("ACK: err %v, %d responses", ack.err, len(ack.out))
					}
				}
			}
			for i := range clients {
				c := &client{s: newSession(src, nil, true, push.FlowOptions{Enabled: true}), held: map[string]uint64{}}
				clients[i] = c
				apply(c, c.s.DeltaRequest(&discoveryv3.DeltaDiscoveryRequest{Node: testNode, TypeUrl: gen.ClusterType}, now))
			}
			name := func() string { return gen.ClusterName(gen.Outbound, 80, "", string(rune('a'+rng.IntN(6)))) }
			for step := range 60 {
				m := maps.Clone(src.res[gen.ClusterType])
				switch rng.IntN(4) {
				case 0:
					delete(m, name())
				case 1, 2:
					m[name()] = fmt.Sprint(rng.IntN(3))
				case 3: // a client (un)subscribes a name explicitly while wildcard
					c := clients[rng.IntN(len(clients))]
					req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: gen.ClusterType}
					if rng.IntN(2) == 0 {
						req.ResourceNamesSubscribe = []string{name()}
					} else {
						req.ResourceNamesUnsubscribe = []string{name()}
					}
					apply(c, c.s.DeltaRequest(req, now))
				}
				src.res[gen.ClusterType] = m
				seq++
				src.st = &pushState{snap: model.NewSnapshot(seq, model.SnapshotInput{})}
				for _, c := range clients {
					apply(c, c.s.Push(&model.PushRequest{Full: true}, now))
					want := make(map[string]uint64, len(m))
					for n, body := range m {
						want[n] = cache.NewResource(n, gen.ClusterType, []byte(body)).Hash
					}
					if !maps.Equal(c.held, want) {
						t.Fatalf("step %d: client holds %v, current %v", step, c.held, m)
					}
				}
			}
		})
	}
}
