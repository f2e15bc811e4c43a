package model

import "testing"

// TestMergeKeepsInitial: a request merged with the initial push is the initial push, on every
// merge path, whichever side carries it (the server builds no snapshot before it).
func TestMergeKeepsInitial(t *testing.T) {
	for _, tc := range []struct {
		name        string
		left, right bool
	}{{"left", true, false}, {"right", false, true}, {"both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(initial bool) *PushRequest {
				return &PushRequest{Full: true, Initial: initial, Reasons: map[TriggerReason]int{ReasonGlobalUpdate: 1}}
			}
			if got := mk(tc.left).Merge(mk(tc.right)); !got.Initial {
				t.Error("Merge dropped Initial")
			}
			if got, _ := mk(tc.left).MergeOwned(mk(tc.right), true); !got.Initial {
				t.Error("MergeOwned (owned) dropped Initial")
			}
			if got, _ := mk(tc.left).MergeOwned(mk(tc.right), false); !got.Initial {
				t.Error("MergeOwned (shared) dropped Initial")
			}
		})
	}
	if got := (&PushRequest{Full: true}).Merge(&PushRequest{}); got.Initial {
		t.Error("Merge made up Initial")
	}
}
