package fleet

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// TestFleetGroupSizes: a fleet counts its clients by group, a shard only its own.
func TestFleetGroupSizes(t *testing.T) {
	groups := []Group{{Name: "a", Count: 3}, {Name: "b", Count: 4}}
	tests := []struct {
		seg  Segment
		want map[string]int
	}{
		{Segment{}, map[string]int{"a": 3, "b": 4}},
		{Segment{Index: 0, Count: 2}, map[string]int{"a": 2, "b": 2}}, // clients 0, 2 | 4, 6
		{Segment{Index: 1, Count: 2}, map[string]int{"a": 1, "b": 2}}, // client 1 | 3, 5
		{Segment{Index: 2, Count: 7}, map[string]int{"a": 1}},         // client 2
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d of %d", tc.seg.Index, tc.seg.Count), func(t *testing.T) {
			f, err := New(Config{Target: "127.0.0.1:1", Groups: groups, Segment: tc.seg})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Stop()
			if got := f.GroupSizes(); !maps.Equal(got, tc.want) {
				t.Errorf("GroupSizes = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFleetNodeID: a shard names its own clients by their index across the fleet, and no
// other shard's.
func TestFleetNodeID(t *testing.T) {
	groups := []Group{{Name: "a", Count: 3}, {Name: "b", Count: 4}}
	f, err := New(Config{Target: "127.0.0.1:1", Groups: groups, Segment: Segment{Index: 1, Count: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	for i := range 8 {
		id, ok := f.NodeID(i)
		if want := i%2 == 1 && i < 7; ok != want {
			t.Errorf("NodeID(%d) found %v, want %v (segment 1 of 2 holds clients 1, 3, 5)", i, ok, want)
			continue
		}
		if ok && (id == "" || id != f.clients[i/2].c.NodeID()) {
			t.Errorf("NodeID(%d) = %q, want client %d's node id %q", i, id, i, f.clients[i/2].c.NodeID())
		}
	}
}

// TestProgressNewFailures: a live reporter prints the first failure text of each gRPC code
// once.
func TestProgressNewFailures(t *testing.T) {
	seen := map[string]bool{}
	p := Progress{FailureText: map[string]string{
		"ResourceExhausted": "rpc error: code = ResourceExhausted desc = too many streams",
		"Unknown":           "dial: refused",
	}}
	wantLines := []string{
		"first connect failure with code ResourceExhausted: rpc error: code = ResourceExhausted desc = too many streams",
		"first connect failure with code Unknown: dial: refused",
	}
	if got := p.NewFailures(seen); !slices.Equal(got, wantLines) {
		t.Errorf("NewFailures = %q, want %q", got, wantLines)
	}
	if got := p.NewFailures(seen); len(got) != 0 {
		t.Errorf("NewFailures repeated %q; each code is reported once", got)
	}
}
