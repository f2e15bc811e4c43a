package debounce

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(msec int) time.Time { return t0.Add(time.Duration(msec) * ms) }

// step is one input to a Core and the Action expected back, written compactly: want is
// "push N TRIGGER" or "-" for no push, deadline is the expected Deadline in ms (-1: none).
type step struct {
	op       string // "full", "eds", "nil", "tick", "done"
	at       int
	want     string
	deadline int
}

func runSteps(t *testing.T, opts Options, steps []step) {
	t.Helper()
	c := NewCore(opts)
	for i, s := range steps {
		now := at(s.at)
		var act Action
		switch s.op {
		case "full":
			act = c.Event(&model.PushRequest{Full: true, Reasons: map[model.TriggerReason]int{model.ReasonConfigUpdate: 1}}, now)
		case "eds":
			act = c.Event(&model.PushRequest{Reasons: map[model.TriggerReason]int{model.ReasonEndpointUpdate: 1}}, now)
		case "noreason":
			act = c.Event(&model.PushRequest{Full: true}, now)
		case "nil":
			act = c.Event(nil, now)
		case "tick":
			act = c.Tick(now)
		case "done":
			act = c.PushDone(now)
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		got := "-"
		if act.Push != nil {
			got = fmt.Sprintf("push %d %s", act.Stats.Events, act.Stats.Trigger)
			if act.Stats.Events != act.Push.Count() {
				t.Errorf("step %d: Stats.Events %d but the request counts %d", i, act.Stats.Events, act.Push.Count())
			}
			if !act.Stats.Start.Equal(now) {
				t.Errorf("step %d: Stats.Start %v, want %v", i, act.Stats.Start, now)
			}
		}
		if got != s.want {
			t.Errorf("step %d (%s at %dms): got %q, want %q", i, s.op, s.at, got, s.want)
		}
		wantDeadline := time.Time{}
		if s.deadline >= 0 {
			wantDeadline = at(s.deadline)
		}
		if !act.Deadline.Equal(wantDeadline) {
			t.Errorf("step %d (%s at %dms): deadline %v, want %v", i, s.op, s.at, act.Deadline.Sub(t0), wantDeadline.Sub(t0))
		}
	}
}

func TestCoreSteps(t *testing.T) {
	def := DefaultOptions()
	noEDS := def
	noEDS.DebounceEDS = false
	tests := []struct {
		name  string
		opts  Options
		steps []step
	}{
		{
			name: "quiet deadline moves with each event, max deadline does not",
			opts: opts(100*ms, 250*ms, true),
			steps: []step{
				{"full", 0, "-", 100},
				{"full", 60, "-", 160},
				{"full", 120, "-", 220},
				{"full", 180, "-", 250}, // quiet at 280 is later than the cap at 250
				{"tick", 250, "push 4 max-delay", -1},
				{"done", 300, "-", -1},
			},
		},
		{
			name: "early and spurious ticks re-arm the same deadline",
			opts: def,
			steps: []step{
				{"tick", 0, "-", -1},
				{"full", 0, "-", 100},
				{"full", 50, "-", 150},
				{"tick", 100, "-", 150},
				{"tick", 150, "push 2 quiet", -1},
				{"tick", 160, "-", -1},
				{"done", 170, "-", -1},
			},
		},
		{
			name: "late tick: an event after the deadline pushes the old batch first",
			opts: def,
			steps: []step{
				{"full", 0, "-", 100},
				{"full", 300, "push 1 quiet", -1}, // the new event waits behind the push
				{"done", 310, "-", 400},
				{"tick", 400, "push 1 quiet", -1},
			},
		},
		{
			name: "events during a push wait for PushDone, which starts the next at once",
			opts: def,
			steps: []step{
				{"full", 0, "-", 100},
				{"tick", 100, "push 1 quiet", -1},
				{"full", 120, "-", -1},
				{"eds", 130, "-", -1},
				{"tick", 500, "-", -1},
				{"done", 600, "push 2 quiet", -1},
				{"done", 700, "-", -1},
			},
		},
		{
			name: "request without reasons counts as one event, nil is ignored",
			opts: def,
			steps: []step{
				{"nil", 0, "-", -1},
				{"noreason", 0, "-", 100},
				{"nil", 10, "-", 100},
				{"tick", 100, "push 1 quiet", -1},
			},
		},
		{
			name: "undebounced endpoint request with nothing pending pushes at once",
			opts: noEDS,
			steps: []step{
				{"eds", 0, "push 1 immediate", -1},
				{"eds", 10, "-", -1},
				{"eds", 20, "-", -1},
				{"done", 30, "push 2 immediate", -1},
				{"full", 40, "-", -1},
				{"done", 50, "-", 140},
				{"eds", 60, "-", 160}, // rides along the pending full request
				{"tick", 160, "push 2 quiet", -1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.opts, tt.steps) })
	}
}

func TestCoreMergesRequests(t *testing.T) {
	c := NewCore(DefaultOptions())
	k := func(n string) istioconfig.Key {
		return istioconfig.Key{Kind: model.KindEndpoint, Name: n, Namespace: "ns"}
	}
	a := &model.PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{k("a"): {}}, Reasons: map[model.TriggerReason]int{model.ReasonEndpointUpdate: 1}, Start: at(-5)}
	b := &model.PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{k("b"): {}}, Reasons: map[model.TriggerReason]int{model.ReasonEndpointUpdate: 2}, Start: at(-9)}
	c.Event(a, at(0))
	act := c.Event(b, at(10))
	if act.Push != nil {
		t.Fatal("pushed before the quiet deadline")
	}
	act = c.Tick(at(110))
	want := &model.PushRequest{
		ConfigsUpdated: map[istioconfig.Key]struct{}{k("a"): {}, k("b"): {}},
		Reasons:        map[model.TriggerReason]int{model.ReasonEndpointUpdate: 3},
		Start:          at(-9),
	}
	if diff := cmp.Diff(want, act.Push); diff != "" {
		t.Errorf("merged request (-want +got):\n%s", diff)
	}
	if act.Stats.Delay != 110*ms || act.Stats.Events != 3 {
		t.Errorf("stats %+v, want delay 110ms and 3 events", act.Stats)
	}
	// The inputs are untouched.
	if len(a.ConfigsUpdated) != 1 || a.Reasons[model.ReasonEndpointUpdate] != 1 {
		t.Errorf("input request modified: %+v", a)
	}
}

// TestMergeIntoMatchesModelMerge checks that the Core's in-place merge agrees with
// model.PushRequest.Merge on random sequences of requests.
func TestMergeIntoMatchesModelMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []istioconfig.Key{
		{Kind: model.KindEndpoint, Name: "a"}, {Kind: model.KindEndpoint, Name: "b"},
		{Kind: istioconfig.KindVirtualService, Name: "c"}, {Kind: model.KindService, Name: "d"},
	}
	reasons := []model.TriggerReason{model.ReasonEndpointUpdate, model.ReasonConfigUpdate, model.ReasonServiceUpdate}
	random := func() *model.PushRequest {
		r := &model.PushRequest{Full: rng.IntN(3) == 0, Reasons: map[model.TriggerReason]int{reasons[rng.IntN(len(reasons))]: 1 + rng.IntN(2)}}
		if n := rng.IntN(3); n > 0 {
			r.ConfigsUpdated = map[istioconfig.Key]struct{}{}
			for range n {
				r.ConfigsUpdated[keys[rng.IntN(len(keys))]] = struct{}{}
			}
		}
		if rng.IntN(2) == 0 {
			r.Start = at(rng.IntN(1000))
		}
		return r
	}
	// Both sides mean "everything" with an empty set, nil or not.
	norm := cmp.Options{cmpopts.EquateEmpty()}
	for i := range 2000 {
		var viaModel, inPlace *model.PushRequest
		n := 1 + rng.IntN(6)
		for range n {
			r := random()
			viaModel = viaModel.Merge(r)
			inPlace = mergeInto(inPlace, r)
		}
		if diff := cmp.Diff(viaModel, inPlace, norm); diff != "" {
			t.Fatalf("sequence %d: mergeInto differs from Merge (-model +inPlace):\n%s", i, diff)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error; none means valid
	}{
		{name: "defaults", opts: DefaultOptions()},
		{name: "zero value: no debounce", opts: Options{}},
		{name: "equal", opts: opts(time.Second, time.Second, true)},
		{name: "negative minQuiet", opts: opts(-ms, time.Second, true), want: []string{"minQuiet is -1ms"}},
		{name: "negative maxDelay", opts: opts(0, -ms, true), want: []string{"maxDelay is -1ms"}},
		{name: "both negative", opts: opts(-ms, -ms, true), want: []string{"minQuiet is -1ms", "maxDelay is -1ms"}},
		{name: "maxDelay below minQuiet", opts: opts(200*ms, 100*ms, true), want: []string{"set maxDelay to at least 200ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", tt.opts)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDefaultOptions(t *testing.T) {
	want := Options{MinQuiet: 100 * ms, MaxDelay: 10 * time.Second, DebounceEDS: true}
	if got := DefaultOptions(); got != want {
		t.Errorf("DefaultOptions() = %+v, want %+v", got, want)
	}
}

// BenchmarkCoreEvent measures merging a large batch: 10,000 endpoint events with distinct
// keys before one push (O(n) with the in-place merge).
func BenchmarkCoreEvent(b *testing.B) {
	const n = 10000
	reqs := make([]*model.PushRequest, n)
	for i := range reqs {
		reqs[i] = &model.PushRequest{
			ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: fmt.Sprint("svc", i), Namespace: "ns"}: {}},
			Reasons:        map[model.TriggerReason]int{model.ReasonEndpointUpdate: 1},
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		c := NewCore(DefaultOptions())
		for i, r := range reqs {
			c.Event(r, at(i%50))
		}
		if act := c.Tick(at(10_000)); act.Push == nil || act.Stats.Events != n {
			b.Fatalf("push %+v", act.Stats)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
}
