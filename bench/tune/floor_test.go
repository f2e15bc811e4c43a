package tune

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
	"github.com/xdslab/xdslab/simulator"
)

func TestFloorClasses(t *testing.T) {
	ms := time.Millisecond
	ep := func(at time.Duration, addr string, present bool) floorEvent {
		return floorEvent{at: at, kind: simulator.EndpointFlap, own: 1,
			writes: []slotWrite{{slot: "eds|a|ep|" + addr, value: presence(present), presence: true}}}
	}
	count := func(at time.Duration, n string) floorEvent {
		return floorEvent{at: at, kind: simulator.Scale, own: 1, writes: []slotWrite{{slot: "eds|a|count", value: n}}}
	}
	var stream []floorEvent
	for i := range 240 { // every 50 ms for 12 s, each on its own endpoint: never quiet
		stream = append(stream, ep(time.Duration(i)*50*ms, strings.Repeat("x", i+1), false))
	}
	cases := []struct {
		name string
		evs  []floorEvent
		want []time.Duration // the timed events' floors, sorted
	}{
		{"a flap pushed whole is not timed", []floorEvent{ep(0, "A", false), ep(50*ms, "A", true)}, nil},
		{"a flap in two pushes is timed twice", []floorEvent{ep(0, "A", false), ep(time.Second, "A", true)}, []time.Duration{100 * ms, 100 * ms}},
		{"a count changed again in its push is superseded", []floorEvent{count(0, "3"), count(50*ms, "4")}, []time.Duration{100 * ms}},
		{"unrelated changes in one push are both timed", []floorEvent{ep(0, "A", false), ep(30*ms, "B", false)}, []time.Duration{100 * ms, 130 * ms}},
	}
	opts := debounce.Options{MinQuiet: 100 * ms, MaxDelay: 10 * time.Second, DebounceEDS: true}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := floorOf(c.evs, opts, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			for _, d := range f.Events {
				got = append(got, d...)
			}
			if len(got) != len(c.want) {
				t.Fatalf("timed %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("timed %v, want %v", got, c.want)
				}
			}
		})
	}
	t.Run("a stream that never goes quiet waits maxDelay", func(t *testing.T) {
		f, err := floorOf(stream, opts, 12*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		v, n := f.Values("", []float64{99})
		if n != len(stream) || v["max"] != 10 {
			t.Fatalf("%d events timed, max %v s: want %d and 10 s (maxDelay)", n, v["max"], len(stream))
		}
		if f.Pushes != 2 {
			t.Fatalf("%d pushes, want 2 (one at maxDelay, one after the stream ends)", f.Pushes)
		}
	})
}

// TestBuiltinThresholdsAboveDebounceFloor fails when a built-in asks a latency its own
// debounce alone cannot give: no control plane could pass it (eds-churn-1k's p(99)<500ms did).
func TestBuiltinThresholdsAboveDebounceFloor(t *testing.T) {
	for _, name := range scenarios.BuiltinNames() {
		sc, err := scenarios.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := DebounceFloor(context.Background(), sc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, n := f.Values("", []float64{99})
		t.Logf("%s: %d of %d events timed, %d pushes; floor med %.3fs p(99) %.3fs max %.3fs", name, n, f.Replayed, f.Pushes, v["med"], v["p(99)"], v["max"])
		for _, p := range f.Problems(sc) {
			t.Errorf("%s: %s", name, f.Explain(p))
		}
	}
}

func TestFloorProblems(t *testing.T) {
	sc, err := scenarios.Builtin("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(src ...string) []threshold.Threshold {
		var out []threshold.Threshold
		for _, s := range src {
			th, err := threshold.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, th)
		}
		return out
	}
	sc.Thresholds = map[string][]threshold.Threshold{
		"xdslab_push_latency_seconds":                     parse("p(99)<100ms", "p(99)<1h", "p(99)>1ms"),
		"xdslab_convergence_seconds{group:sidecars}":      parse("med<=1ms"),
		"xdslab_push_latency_seconds{kind:endpoint-flap}": parse("max<1ms"),
		"xdslab_push_latency_seconds{kind:no-such-kind}":  parse("max<1ms"),
		"xdslab_push_latency_seconds{type:EDS}":           parse("max<1ms"),
		"xdslab_fleet_ack_delay_seconds":                  parse("max<1ms"),
	}
	f, err := DebounceFloor(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range f.Problems(sc) {
		got = append(got, p.Metric+" "+p.Threshold.Source)
		msg := f.Explain(p)
		for _, want := range []string{"thresholds." + p.Metric, p.Threshold.Source, "minQuiet 100ms", "maxDelay 10s", "Fix:"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Explain(%s) = %q: it does not say %q", p.Threshold.Source, msg, want)
			}
		}
		if p.Floor <= 0 || p.Events == 0 {
			t.Errorf("%s: floor %v over %d events", p.Threshold.Source, p.Floor, p.Events)
		}
	}
	want := []string{
		"xdslab_convergence_seconds{group:sidecars} med<=1ms",
		"xdslab_push_latency_seconds p(99)<100ms",
		"xdslab_push_latency_seconds{kind:endpoint-flap} max<1ms",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
