package model

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/xdslab/xdslab/istioconfig"
)

// TestMergeOwnedMatchesMerge: over random chains of requests, merging into an owned
// accumulator gives what Merge gives, and never modifies a request the caller passed in.
func TestMergeOwnedMatchesMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Unix(1000, 0)
	src := []SnapshotSource{nil, &fakeSource{id: 1}, &fakeSource{id: 2}}
	random := func() *PushRequest {
		if rng.IntN(8) == 0 {
			return nil
		}
		r := &PushRequest{Full: rng.IntN(3) == 0, Reasons: map[TriggerReason]int{}, Source: src[rng.IntN(len(src))]}
		if rng.IntN(4) > 0 {
			r.Start = base.Add(time.Duration(rng.IntN(100)) * time.Millisecond)
		}
		for range rng.IntN(3) {
			r.Reasons[[]TriggerReason{ReasonEndpointUpdate, ReasonConfigUpdate, ReasonServiceUpdate}[rng.IntN(3)]]++
		}
		if n := rng.IntN(4); n > 0 {
			r.ConfigsUpdated = map[istioconfig.Key]struct{}{}
			for range n {
				r.ConfigsUpdated[istioconfig.Key{Kind: "ServiceEntry", Name: fmt.Sprint("s", rng.IntN(6)), Namespace: "ns"}] = struct{}{}
			}
		}
		return r
	}
	clone := func(r *PushRequest) *PushRequest {
		if r == nil {
			return nil
		}
		c := *r
		c.Reasons = cloneMap(r.Reasons)
		c.ConfigsUpdated = cloneMap(r.ConfigsUpdated)
		return &c
	}
	for round := range 2000 {
		var viaMerge, acc *PushRequest
		owned := false
		var given, copies []*PushRequest
		for step := range 1 + rng.IntN(8) {
			r := random()
			given, copies = append(given, r), append(copies, clone(r))
			viaMerge = viaMerge.Merge(r)
			acc, owned = acc.MergeOwned(r, owned)
			if !equalRequests(acc, viaMerge) {
				t.Fatalf("round %d step %d: MergeOwned %+v, Merge %+v", round, step, acc, viaMerge)
			}
		}
		for i := range given { // later merges must not have reached an earlier caller's request
			if !reflect.DeepEqual(given[i], copies[i]) {
				t.Fatalf("round %d: request %d was modified: %+v, was %+v", round, i, given[i], copies[i])
			}
		}
	}
}

// fakeSource is a distinct SnapshotSource (only its identity is compared).
type fakeSource struct {
	SnapshotSource
	id int
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// equalRequests compares what a push reads: an empty and a nil map are the same.
func equalRequests(a, b *PushRequest) bool {
	if a == nil || b == nil {
		return a == b
	}
	sameMap := func(x, y map[istioconfig.Key]struct{}) bool {
		return len(x) == len(y) && (len(x) == 0 || reflect.DeepEqual(x, y))
	}
	sameReasons := func(x, y map[TriggerReason]int) bool {
		return len(x) == len(y) && (len(x) == 0 || reflect.DeepEqual(x, y))
	}
	return a.Full == b.Full && a.Start.Equal(b.Start) && a.Source == b.Source &&
		sameMap(a.ConfigsUpdated, b.ConfigsUpdated) && sameReasons(a.Reasons, b.Reasons)
}
