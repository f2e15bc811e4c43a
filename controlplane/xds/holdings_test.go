package xds

import (
	"maps"
	"slices"
	"testing"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
)

// heldOf asks h for names in the order given and returns what the client holds of them.
func heldOf(h *holdings, names ...string) map[string]uint64 {
	c := h.lookup()
	out := map[string]uint64{}
	for _, n := range names {
		if v, ok := c.hash(n); ok {
			out[n] = v
		}
	}
	return out
}

func TestHoldings(t *testing.T) {
	r := func(name, body string) *cache.Resource {
		return cache.NewResource(name, gen.EndpointType, []byte(body))
	}
	a1, b1, b2, c1 := r("a", "1"), r("b", "1"), r("b", "2"), r("c", "1")
	want := func(rs ...*cache.Resource) map[string]uint64 {
		m := map[string]uint64{}
		for _, r := range rs {
			m[r.Name] = r.Hash
		}
		return m
	}
	check := func(t *testing.T, what string, got, want map[string]uint64) {
		t.Helper()
		if !maps.Equal(got, want) {
			t.Errorf("%s: holds %v, want %v", what, got, want)
		}
	}

	t.Run("SotW CDS and LDS hold the last whole list", func(t *testing.T) {
		h := newHoldings(false, gen.ClusterType)
		if l, ok := h.whole(); !ok || l != nil {
			t.Fatalf("new: whole() = %v, %t; want nothing, known", l, ok)
		}
		list := []*cache.Resource{a1, b1}
		h.gotWhole(list, list, nil)
		if l, _ := h.whole(); &l[0] != &list[0] {
			t.Error("the list sent is not kept as it is (shared)")
		}
		h.drop("a")
		if l, _ := h.whole(); len(l) != 1 || l[0] != b1 || list[0] != a1 {
			t.Errorf("after drop a: %v (the shared list must stay as it was: %v)", resNames(l), resNames(list))
		}
		h.forget()
		if l, ok := h.whole(); !ok || l != nil {
			t.Errorf("after forget: whole() = %v, %t", resNames(l), ok)
		}
	})

	t.Run("SotW named: the last whole answer plus what went out since", func(t *testing.T) {
		h := newHoldings(false, gen.EndpointType)
		if _, ok := h.whole(); ok {
			t.Fatal("a named subscription is not compared as a whole list")
		}
		h.gotWhole([]*cache.Resource{a1, b1, c1}, []*cache.Resource{a1, b1, c1}, nil)
		check(t, "whole answer", heldOf(&h, "a", "b", "c"), want(a1, b1, c1))
		h.got([]*cache.Resource{b2}, nil)
		check(t, "then b2", heldOf(&h, "a", "b", "c"), want(a1, b2, c1))
		c := h.lookup()
		for _, n := range []string{"c", "a", "b"} { // out of order: searched, not walked
			c.hash(n)
		}
		if c.sorted() {
			t.Error("names asked out of order reported sorted")
		}
		check(t, "asked out of order", heldOf(&h, "c", "a", "b"), want(a1, b2, c1))
		h.gotWhole([]*cache.Resource{a1, b1}, []*cache.Resource{b1}, nil)
		check(t, "a new whole answer", heldOf(&h, "a", "b", "c"), want(a1, b1))
		h.got([]*cache.Resource{c1}, nil)
		h.drop("c")
		h.drop("a")
		// A dropped name is not held, though the whole answer still lists it: subscribed
		// again (by name or by "*"), it is sent again.
		check(t, "after dropping a and c", heldOf(&h, "a", "b", "c"), map[string]uint64{"a": 0, "b": b1.Hash})
		h.forget()
		check(t, "after forget", heldOf(&h, "a", "b", "c"), want())
	})

	t.Run("Delta: exact by name, and the whole list while it holds exactly it", func(t *testing.T) {
		h := newHoldings(true, gen.ClusterType)
		h.assume("x", 0)
		if !h.holds("x") || h.count() != 1 {
			t.Fatal("an initial version is not held")
		}
		check(t, "initial", heldOf(&h, "x"), map[string]uint64{"x": 0})
		list := []*cache.Resource{a1, b1}
		h.gotWhole(list, list, []string{"x"})
		if l, ok := h.whole(); !ok || &l[0] != &list[0] {
			t.Error("the whole answer is not kept")
		}
		if got := slices.Sorted(h.names()); !slices.Equal(got, []string{"a", "b"}) || h.holds("x") {
			t.Errorf("after the whole answer: holds %q", got)
		}
		h.got([]*cache.Resource{b2}, nil)
		if _, ok := h.whole(); ok {
			t.Error("a list is still known as a whole after another response")
		}
		check(t, "then b2", heldOf(&h, "a", "b"), want(a1, b2))
		h.gotWhole(list, []*cache.Resource{b1}, nil)
		h.drop("a")
		if _, ok := h.whole(); ok || h.holds("a") || h.count() != 1 {
			t.Error("a dropped name is still held, or the list still known as a whole")
		}
	})
}
