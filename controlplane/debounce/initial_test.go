package debounce

import (
	"testing"

	"github.com/xdslab/xdslab/controlplane/model"
)

// TestMergeIntoKeepsInitial: a batch holding the control plane's initial push request is the
// initial push, whatever was merged before or after it.
func TestMergeIntoKeepsInitial(t *testing.T) {
	ev := func(initial bool) *model.PushRequest {
		return &model.PushRequest{Full: true, Initial: initial, Reasons: map[model.TriggerReason]int{model.ReasonConfigUpdate: 1}}
	}
	for _, seq := range [][]bool{{true}, {false, true}, {true, false}, {false, true, false}} {
		var batch *model.PushRequest
		for _, initial := range seq {
			batch = mergeInto(batch, ev(initial))
		}
		if !batch.Initial {
			t.Errorf("batch of %v: Initial dropped", seq)
		}
	}
	if batch := mergeInto(mergeInto(nil, ev(false)), ev(false)); batch.Initial {
		t.Error("a batch without the initial request says Initial")
	}
}
