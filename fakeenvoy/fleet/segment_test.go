package fleet

import (
	"fmt"
	"testing"

	"github.com/xdslab/xdslab/fakeenvoy"
)

// TestFleetSegments: N segments of a fleet hold every client exactly once, each with the
// index, group, node, namespace, seed-driven random stream and shared-connection slot it has
// in the whole fleet's ramp.
func TestFleetSegments(t *testing.T) {
	cfg := Config{
		Target: "127.0.0.1:1",
		Groups: []Group{
			{Name: "a", Count: 7, Identity: fakeenvoy.IdentityTemplate{Namespaces: 3}},
			{Name: "b", Count: 4, Identity: fakeenvoy.IdentityTemplate{Type: "router"}},
		},
		Ramp: 10,
		Seed: 42,
	}
	type id struct {
		group, node, ns string
		rnd             uint64
	}
	describe := func(f *Fleet) map[int]id {
		out := map[int]id{}
		for _, fc := range f.clients {
			c := fc.c
			out[c.Index()] = id{c.Group(), c.NodeID(), c.Namespace(), fc.rng.Uint64()}
		}
		return out
	}
	whole, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := describe(whole)
	if len(want) != 11 {
		t.Fatalf("whole fleet has %d clients, want 11", len(want))
	}
	for _, n := range []int{1, 2, 3, 4, 11} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			got := map[int]id{}
			groups := map[string]int{} // the segments' figures, summed as merge does
			for i := range n {
				c := cfg
				c.Segment = Segment{Index: i, Count: n}
				f, err := New(c)
				if err != nil {
					t.Fatal(err)
				}
				if f.Size() != c.Segment.Size(c.Clients()) {
					t.Errorf("segment %d/%d: %d clients, Size says %d", i, n, f.Size(), c.Segment.Size(c.Clients()))
				}
				fig := f.Figures()
				if fig.Clients != f.Size() {
					t.Errorf("segment %d/%d: figures count %d clients, it holds %d", i, n, fig.Clients, f.Size())
				}
				for g, k := range fig.GroupClients {
					groups[g] += k
				}
				for k, v := range describe(f) {
					if k%n != i {
						t.Errorf("segment %d/%d holds client %d", i, n, k)
					}
					if _, dup := got[k]; dup {
						t.Errorf("client %d in two segments", k)
					}
					got[k] = v
				}
			}
			if len(got) != len(want) {
				t.Fatalf("segments hold %d clients, want %d", len(got), len(want))
			}
			if groups["a"] != 7 || groups["b"] != 4 || len(groups) != 2 {
				t.Errorf("the segments' clients by group sum to %v, want a:7 b:4", groups)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("client %d: segment has %+v, whole fleet %+v", k, got[k], v)
				}
			}
		})
	}
}

func TestSegmentValidate(t *testing.T) {
	base := Config{Target: "127.0.0.1:1", Groups: []Group{{Name: "a", Count: 3}}}
	for _, tc := range []struct {
		seg Segment
		ok  bool
	}{
		{Segment{}, true}, {Segment{0, 1}, true}, {Segment{2, 3}, true},
		{Segment{3, 3}, false}, {Segment{-1, 2}, false}, {Segment{1, 0}, false},
		{Segment{3, 4}, false}, // 3 clients, segment 3 of 4 holds none
	} {
		c := base
		c.Segment = tc.seg
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("segment %+v: err %v, want ok=%v", tc.seg, err, tc.ok)
		}
	}
}
