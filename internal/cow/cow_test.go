package cow

import (
	"fmt"
	"slices"
	"testing"
)

// A version handed out never changes: later edits copy the shards they touch.
func TestVersionsAreImmutable(t *testing.T) {
	v0 := New[string, int]()
	v1 := v0
	e := v1.Edit()
	for i := range 200 {
		e.Set(fmt.Sprint(i), i)
	}
	v2 := v1
	e = v2.Edit()
	e.Set("0", -1)
	e.Del("1")
	e.Del("nope")
	e.Set("new", 7)
	if v0.Len() != 0 || v1.Len() != 200 || v2.Len() != 200 {
		t.Fatalf("lens %d %d %d, want 0 200 200", v0.Len(), v1.Len(), v2.Len())
	}
	if v, _ := v1.Get("0"); v != 0 {
		t.Errorf("v1[0] = %d after v2's edit", v)
	}
	if _, ok := v1.Get("1"); !ok {
		t.Error("v1 lost 1 after v2 deleted it")
	}
	if v, _ := v2.Get("0"); v != -1 {
		t.Errorf("v2[0] = %d", v)
	}
	if _, ok := v2.Get("1"); ok {
		t.Error("v2 still has 1")
	}
	vals := v2.Values()
	slices.Sort(vals)
	if len(vals) != 200 || vals[0] != -1 {
		t.Errorf("v2 values: %d, first %d", len(vals), vals[0])
	}
	n := 0
	v1.Range(func(string, int) bool { n++; return n < 10 })
	if n != 10 {
		t.Errorf("Range did not stop: %d", n)
	}
}
