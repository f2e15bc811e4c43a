package merge

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/golden"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
)

var mergeT0 = time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)

// shardSpec is a synthetic fleet shard: its latencies (µs), counters and event records.
type shardSpec struct {
	index, count int
	latencies    []int64
	lateness     []int64 // the fleet's start lateness, µs
	responses    float64
	connected    float64
	incomplete   float64 // clients of group sidecars without full config after connect
	offset       float64 // clock offset, seconds
	events       []summary.Event
	probes       bool
}

func mergeShard(t testing.TB, sp shardSpec) *summary.Summary {
	t.Helper()
	h := measure.NewLatencyHistogram()
	for _, v := range sp.latencies {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	trend, err := summary.NewTrend(fleet.MetricPushLatency, summary.Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	lh := measure.NewLatencyHistogram()
	for _, v := range sp.lateness {
		if err := lh.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	late, err := summary.NewTrend(fleet.MetricStartLateness, summary.Time, lh, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	dur := 10 * time.Second
	// The shard's clock runs offset behind the simulator's: its local times are earlier.
	local := mergeT0.Add(-time.Duration(sp.offset * float64(time.Second)))
	start := mergeT0.Add(-10 * time.Second)
	s := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: local.Add(-2 * time.Second), Ended: local.Add(dur),
			DurationSeconds: (dur + 2*time.Second).Seconds(), Labels: map[string]string{"scenario": "merge-test"},
			Segment: &summary.Segment{Index: sp.index, Count: sp.count}, StartAt: &start,
			Clock: &summary.Clock{Reference: "http://sim/time", OffsetSeconds: sp.offset, UncertaintySeconds: 0.0002, Samples: 5},
			Phases: []summary.Phase{
				{Name: "connect", Start: local.Add(-2 * time.Second), End: local.Add(time.Duration(sp.index) * 100 * time.Millisecond)},
				{Name: "measure", Start: local, End: local.Add(dur - time.Second)},
			}},
		Config: []byte(`{"name":"merge-test"}`),
		Results: summary.Results{Passed: true, Events: sp.events, Metrics: []summary.Metric{
			trend,
			summary.NewCounter(fleet.MetricResponses, summary.Default, sp.responses, dur, nil),
			summary.NewCounter(fleet.MetricResponses, summary.Default, sp.responses/2, dur, map[string]string{"type": "EDS"}),
			summary.NewGauge(fleet.MetricConnected, summary.Default, sp.connected, sp.connected-1, sp.connected, nil),
			summary.NewGauge(collect.MetricConnectIncomplete, summary.Default, sp.incomplete, 0, sp.connected, map[string]string{"group": "sidecars"}),
			summary.NewGauge(collect.MetricConnectIncomplete, summary.Default, sp.incomplete, 0, sp.connected, nil),
			summary.NewRate(collect.MetricCacheHitRatio, sp.responses, 1, nil),
			// A shard's own convergence view: dropped and recomputed from the events.
			summary.NewCounter(fleet.MetricProbeEvents, summary.Default, float64(len(sp.events)), dur, nil),
			late,
			summary.NewGauge(collect.MetricCPUSeconds, summary.Time, 1.5, 0, 1.5, map[string]string{"side": collect.SideHarness}),
		}},
	}
	if sp.probes {
		s.Metadata.Probes = "http://sim:15080/probes"
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

func simSummary(t testing.TB, events []summary.Event) *summary.Summary {
	t.Helper()
	dur := 12 * time.Second
	s := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "sim", Started: mergeT0.Add(-3 * time.Second), Ended: mergeT0.Add(dur),
			DurationSeconds: 15, Labels: map[string]string{"scenario": "merge-test"},
			Phases: []summary.Phase{{Name: "measure", Start: mergeT0, End: mergeT0.Add(10 * time.Second)}}},
		Results: summary.Results{Passed: true, Events: events, Metrics: []summary.Metric{
			summary.NewCounter(collect.MetricSimEvents, summary.Default, float64(len(events)), dur, nil),
			summary.NewGauge(collect.MetricSimLateness, summary.Time, 0.001, 0, 0.004, nil),
		}},
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

func ev(id uint64, kind string, reached, observed, missed int, conv float64) summary.Event {
	return summary.Event{ID: id, Kind: kind, T0: mergeT0.Add(time.Duration(id) * time.Second), Reached: reached,
		Observed: observed, Missed: missed, Received: observed, ConvergenceSeconds: conv, Censored: missed > 0}
}

func missedBy(e summary.Event, ids ...string) summary.Event {
	e.MissedBy = ids
	return e
}

// goldenInputs: two shards with probes and the simulator; shard 1 lacks event 3.
func goldenInputs(t testing.TB) []Input {
	simEvents := []summary.Event{
		{ID: 1, Kind: "endpoint-flap", T0: mergeT0.Add(time.Second), Acked: 2},
		{ID: 2, Kind: "rolling-deploy", T0: mergeT0.Add(2 * time.Second), Acked: 2},
		{ID: 3, Kind: "endpoint-flap", T0: mergeT0.Add(3 * time.Second), Acked: 1},
	}
	s0 := mergeShard(t, shardSpec{index: 0, count: 2, latencies: []int64{1000, 2000, 3000, 250_000}, lateness: []int64{1000, 2000}, responses: 40, connected: 5, offset: 0.003, probes: true,
		events: []summary.Event{ev(1, "endpoint-flap", 5, 5, 0, 0.004), missedBy(ev(2, "rolling-deploy", 5, 4, 1, 0.5), "sidecar~10.0.0.4~c-4.ns-0~ns-0.svc.cluster.local"), ev(3, "endpoint-flap", 5, 5, 0, 0.002)}})
	s1 := mergeShard(t, shardSpec{index: 1, count: 2, latencies: []int64{1500, 2500, 9000}, lateness: []int64{80_000}, responses: 38, connected: 5, incomplete: 1, offset: -0.001, probes: true,
		events: []summary.Event{ev(1, "endpoint-flap", 5, 5, 0, 0.006), ev(2, "rolling-deploy", 5, 5, 0, 0.3)}})
	return []Input{{"shard-1.json", s1}, {"sim.json", simSummary(t, simEvents)}, {"shard-0.json", s0}}
}

func TestMergeGolden(t *testing.T) {
	sc := scenarios.Defaults()
	sc.Name = "merge-test"
	sc.Clients[0].Name = "sidecars"
	th, err := threshold.Parse("p(99)<100ms")
	if err != nil {
		t.Fatal(err)
	}
	sc.Thresholds = map[string][]threshold.Threshold{fleet.MetricConvergence: {th}}
	got, err := Merge(goldenInputs(t), Options{Scenario: sc, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	got.Config = nil // the resolved scenario: not this test's subject
	var buf bytes.Buffer
	if err := summary.Encode(&buf, got); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "merged.golden.json"), buf.Bytes())
	// The golden's key figures, stated (so the golden cannot drift into nonsense unnoticed).
	find := func(name string, tags map[string]string) summary.Metric {
		m, ok := got.Results.Find(name, tags)
		if !ok {
			t.Fatalf("merged summary lacks %s%s", name, summary.TagString(tags))
		}
		return m
	}
	if v := find(fleet.MetricResponses, nil).Values["count"]; v != 78 {
		t.Errorf("responses %v, want 78", v)
	}
	if v := find(fleet.MetricConnected, nil).Values["value"]; v != 10 {
		t.Errorf("connected %v, want 10", v)
	}
	if v := find(collect.MetricEventsMissed, nil).Values["count"]; v != 2 { // 2: a client missed it; 3: shard 1 lacks it
		t.Errorf("missed events %v, want 2", v)
	}
	if n := got.Metadata.Labels["note.missed"]; !strings.Contains(n, "event 2 (rolling-deploy) missed by 1 of 10 clients, e.g. sidecar~10.0.0.4") {
		t.Errorf("note.missed %q, want event 2 and the client shard 0 named", n)
	}
	for _, e := range got.Results.Events {
		if want := map[uint64]int{2: 1}[e.ID]; len(e.MissedBy) != want {
			t.Errorf("event %d missed by %v, want %d client(s) named (shard 0's)", e.ID, e.MissedBy, want)
		}
	}
	if v := find(collect.MetricShardsMissingEvents, nil).Values["count"]; v != 1 {
		t.Errorf("events a shard lacks %v, want 1", v)
	}
	if v := find(fleet.MetricConvergence, map[string]string{"kind": "rolling-deploy"}).Values["max"]; v < 0.4995 || v > 0.5005 {
		t.Errorf("rolling-deploy convergence %v, want the larger shard's 0.5", v)
	}
	if v := find(collect.MetricClockOffset, nil).Values; v["value"] != 0.003 || v["min"] != -0.001 {
		t.Errorf("clock offset %v, want value 0.003 min -0.001", v)
	}
	if got.Results.Passed || len(got.Results.Thresholds) != 2 {
		t.Errorf("threshold p(99)<100ms on convergence up to 0.5s and the implicit one: passed=%v thresholds=%v, want two failing", got.Results.Passed, got.Results.Thresholds)
	}
	// The implicit check of the group, on the shards' counts summed: shard 1 had one client
	// without full config.
	for _, th := range got.Results.Thresholds {
		if th.Metric == collect.MetricConnectIncomplete && (th.Passed || th.Value == nil || *th.Value != 1 || th.Tags["group"] != "sidecars" || th.Description == "") {
			t.Errorf("implicit threshold %+v, want it failed on 1 client of group sidecars", th)
		}
	}
	// The merged start lateness marks the run: shard 1 started a client 80ms late.
	if v := find(collect.MetricHarnessSaturated, map[string]string{"reason": "start_lateness"}).Values["value"]; v != 1 {
		t.Errorf("harness saturated by start lateness: %v, want 1", v)
	}
	if n := got.Metadata.Labels["note.saturated"]; !strings.Contains(n, "started its clients late") {
		t.Errorf("note.saturated %q, want the start lateness", n)
	}
	if n := got.Metadata.Labels["note.harness"]; !strings.Contains(n, "harness 3s CPU") || !strings.Contains(n, "summed over every process") {
		t.Errorf("note.harness %q, want the shards' harness CPU summed", n)
	}
	// The shards' measure phases align on the simulator's clock: local times + offsets.
	for _, p := range got.Metadata.Phases {
		if p.Name == "measure" && !p.Start.Equal(mergeT0) {
			t.Errorf("measure phase starts at %s, want the shared %s", p.Start, mergeT0)
		}
	}
}

// TestMergeControlPlaneCPU: the control plane's CPU comes from the shards that scraped it (the
// largest figure, not their sum) and is compared with the CPU of the shards on its machine
// only; without it, or with no shard on its machine, nothing is compared.
func TestMergeControlPlaneCPU(t *testing.T) {
	type shard struct {
		local string  // label targetLocal ("": absent, as in older summaries)
		cp    float64 // the control plane's CPU it measured (0: none)
	}
	for _, c := range []struct {
		name      string
		shards    [2]shard
		cp        float64 // merged cpu{side=controlplane}; 0: absent
		ratio     float64 // 0: no ratio
		saturated float64 // reason=cpu; -1: not tested
		note      string
	}{
		{"not scraped", [2]shard{{"yes", 0}, {"yes", 0}}, 0, 0, -1, "no shard was given --target-metrics"},
		{"one shard on its machine", [2]shard{{"yes", 2}, {"no", 2.5}}, 2.5, 1.5 / 2.5, 1, "the 1 of 2 shards that reached the control plane on an address of their own machine"},
		{"both on its machine", [2]shard{{"yes", 10}, {"yes", 9}}, 10, 0.3, 0, "the 2 of 2 shards"},
		{"none on its machine", [2]shard{{"no", 4}, {"unknown: lookup failed", 0}}, 4, 0, -1, "no shard reached it on an address of its own machine"},
		{"older summaries", [2]shard{{"", 4}, {"", 0}}, 4, 0, -1, "no shard reached it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := goldenInputs(t)
			i := 0
			for _, x := range in {
				if x.Summary.Metadata.Command != "fleet" {
					continue
				}
				sh := c.shards[i]
				i++
				if sh.local != "" {
					x.Summary.Metadata.Labels[collect.LabelTargetLocal] = sh.local
				}
				if sh.cp > 0 {
					x.Summary.Results.Metrics = append(x.Summary.Results.Metrics,
						summary.NewGauge(collect.MetricCPUSeconds, summary.Time, sh.cp, 0, sh.cp, map[string]string{"side": collect.SideControlPlane}))
				}
			}
			got, err := Merge(in, Options{ToolVersion: "test"})
			if err != nil {
				t.Fatal(err)
			}
			m, ok := got.Results.Find(collect.MetricCPUSeconds, map[string]string{"side": collect.SideControlPlane})
			if ok != (c.cp > 0) || (ok && m.Values["value"] != c.cp) {
				t.Errorf("control plane CPU %v (present %v), want %v", m.Values["value"], ok, c.cp)
			}
			r, ok := got.Results.Find(collect.MetricHarnessCPURatio, nil)
			if ok != (c.ratio > 0) || (ok && math.Abs(r.Values["value"]-c.ratio) > 1e-9) {
				t.Errorf("ratio %v (present %v), want %v", r.Values["value"], ok, c.ratio)
			}
			s, ok := got.Results.Find(collect.MetricHarnessSaturated, map[string]string{"reason": collect.ReasonCPU})
			if ok != (c.saturated >= 0) || (ok && s.Values["value"] != c.saturated) {
				t.Errorf("saturated by cpu %v (tested %v), want %v", s.Values["value"], ok, c.saturated)
			}
			if n := got.Metadata.Labels["note.harness"]; !strings.Contains(n, c.note) {
				t.Errorf("note.harness %q, want %q in it", n, c.note)
			}
		})
	}
}

// TestMergeExact: a distribution split across any number of shards merges into exactly the
// histogram of the whole (bucket counts equal, so every percentile is the same), counters sum.
func TestMergeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var all []int64
	for range 20000 {
		all = append(all, int64(rng.ExpFloat64()*20000)+1)
	}
	whole := measure.NewLatencyHistogram()
	for _, v := range all {
		_ = whole.RecordValue(v)
	}
	for _, n := range []int{1, 2, 3, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			parts := make([][]int64, n)
			for _, v := range all {
				k := rng.IntN(n)
				parts[k] = append(parts[k], v)
			}
			var in []Input
			total := 0.0
			for i := range n {
				sp := shardSpec{index: i, count: n, latencies: parts[i], responses: float64(len(parts[i])), connected: 3}
				total += sp.responses
				in = append(in, Input{fmt.Sprintf("s%d", i), mergeShard(t, sp)})
			}
			got, err := Merge(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := got.Results.Find(fleet.MetricPushLatency, nil)
			h, err := m.Histogram.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if !h.Equals(whole) {
				t.Errorf("merged histogram differs from the whole's")
			}
			if diff := cmp.Diff(summary.TrendValues(whole, 1e-6), m.Values); diff != "" {
				t.Errorf("trend values (-whole +merged):\n%s", diff)
			}
			c, _ := got.Results.Find(fleet.MetricResponses, nil)
			if c.Values["count"] != total {
				t.Errorf("responses %v, want %v", c.Values["count"], total)
			}
			if g, _ := got.Results.Find(fleet.MetricConnected, nil); g.Values["value"] != float64(3*n) {
				t.Errorf("connected %v, want %d", g.Values["value"], 3*n)
			}
		})
	}
}

func TestMergeErrors(t *testing.T) {
	shard := func(i, n int) *summary.Summary {
		return mergeShard(t, shardSpec{index: i, count: n, latencies: []int64{5}, responses: 1})
	}
	other := shard(1, 2)
	other.Metadata.Labels = map[string]string{"scenario": "another"}
	late := shard(1, 2)
	at := mergeT0.Add(time.Minute)
	late.Metadata.StartAt = &at
	conflict := shard(1, 2)
	conflict.Results.Metrics[1].Type = summary.Gauge
	conflict.Results.Metrics[1].Values = map[string]float64{"value": 1, "min": 1, "max": 1}
	run := shard(1, 2)
	run.Metadata.Command = "run"
	for _, tc := range []struct {
		name string
		in   []Input
		want string
	}{
		{"none", nil, "no summaries"},
		{"missing shard", []Input{{"a", shard(0, 3)}, {"c", shard(2, 3)}}, "shard(s) 1/3 missing"},
		{"twice", []Input{{"a", shard(0, 2)}, {"b", shard(0, 2)}, {"c", shard(1, 2)}}, "b: shard 0/2 is also a"},
		{"counts", []Input{{"a", shard(0, 2)}, {"b", shard(1, 3)}}, "b: shard 1/3 of a 3-shard fleet"},
		{"scenario", []Input{{"a", shard(0, 2)}, {"b", other}}, `b: scenario "another" differs`},
		{"start", []Input{{"a", shard(0, 2)}, {"b", late}}, "b: start time"},
		{"types", []Input{{"a", shard(0, 2)}, {"b", conflict}}, "b: metric xdslab_fleet_responses_total is a gauge"},
		{"run", []Input{{"a", shard(0, 2)}, {"b", run}}, `b: a "run" summary cannot be merged`},
		{"two sims", []Input{{"a", shard(0, 1)}, {"s1", simSummary(t, nil)}, {"s2", simSummary(t, nil)}}, "s2: a second simulator summary"},
		{"sim only", []Input{{"s", simSummary(t, nil)}}, "no fleet shard summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(tc.in, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The scenario given must be the one the shards ran: its thresholds judge nothing else.
	_, err := Merge([]Input{{"a", shard(0, 1)}}, Options{Scenario: &scenarios.Scenario{Name: "quickstart"}})
	if want := `the scenario given is "quickstart" but a (and the other inputs) ran scenario "merge-test"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another scenario: err %v, want %q", err, want)
	}
}

// FuzzMergeInput decodes arbitrary bytes as a shard summary and merges it with a valid shard:
// an error naming the input or a valid merged summary, never a panic.
func FuzzMergeInput(f *testing.F) {
	var buf bytes.Buffer
	for _, in := range goldenInputs(f) {
		buf.Reset()
		if err := summary.Encode(&buf, in.Summary); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte(`{"version":"1","metadata":{"tool":"x","command":"fleet","segment":{"index":1,"count":2},"started":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:00:00Z","durationSeconds":0},"results":{"passed":true,"metrics":[],"events":[{"id":1,"kind":"k","reached":1,"missed":1}]}}`))
	f.Add([]byte(`{"version":"1","metadata":{"segment":{"index":3,"count":2}}}`))
	base := mergeShard(f, shardSpec{index: 0, count: 2, latencies: []int64{10, 20}, responses: 2, probes: true,
		events: []summary.Event{ev(1, "k", 1, 1, 0, 0.001)}})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := summary.Decode("in.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in.json") {
				t.Fatalf("decode error does not name the file: %v", err)
			}
			return
		}
		out, err := Merge([]Input{{"base.json", base}, {"in.json", s}}, Options{})
		if err != nil {
			return
		}
		if err := out.Validate(); err != nil {
			t.Fatalf("merged summary invalid: %v", err)
		}
		buf.Reset()
		if err := summary.Encode(&buf, out); err != nil {
			t.Fatal(err)
		}
		if _, err := summary.Decode("merged.json", buf.Bytes()); err != nil {
			t.Fatalf("merged summary does not read back: %v", err)
		}
	})
}

// BenchmarkMerge merges 4 shards of a 10,000-client run (every metric the fleet writes,
// 2,000 events each): the merge's own cost.
func BenchmarkMerge(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var in []Input
	for i := range 4 {
		var lat []int64
		for range 50000 {
			lat = append(lat, int64(rng.ExpFloat64()*300000)+1)
		}
		var events []summary.Event
		for id := range 2000 {
			events = append(events, ev(uint64(id+1), "endpoint-flap", 2500, 2500, 0, rng.Float64()))
		}
		s := mergeShard(b, shardSpec{index: i, count: 4, latencies: lat, responses: 1e5, connected: 2500, events: events, probes: true})
		// Round-trip through JSON, as merge reads files.
		var buf bytes.Buffer
		if err := summary.Encode(&buf, s); err != nil {
			b.Fatal(err)
		}
		in = append(in, Input{fmt.Sprint(i), s})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Merge(in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/merge")
}

func TestConnectFailureNote(t *testing.T) {
	for _, tc := range []struct {
		st   measure.FleetStats
		want string
	}{
		{measure.FleetStats{}, ""},
		{measure.FleetStats{
			ConnectFailures:    map[string]uint64{"Unavailable": 3, "ResourceExhausted": 40},
			ConnectFailureText: map[string]string{"Unavailable": "dial: refused", "ResourceExhausted": "admission"},
		}, "40 ResourceExhausted (one said: admission); 3 Unavailable (one said: dial: refused)"},
	} {
		if got := collect.ConnectFailureNote(tc.st); got != tc.want {
			t.Errorf("collect.ConnectFailureNote = %q, want %q", got, tc.want)
		}
	}
}

// TestMergeBucketTrend: a trend read from a control plane's buckets, held by one input, comes
// through a merge with its bounds and buckets (no invented points); held by two, it is left
// out with a note (the same control plane scraped twice would count twice). A threshold on it
// is evaluated on the bound.
func TestMergeBucketTrend(t *testing.T) {
	bucketed := func() summary.Metric {
		m, err := summary.NewBucketTrend(collect.MetricDebounceDelay, summary.Time, summary.Buckets{Source: "pilot_debounce_time", Count: 18,
			Sum: 18 * 0.1007, LE: []float64{.01, .1, 1, 3, 5, 10, 20, 30}, Cumulative: []uint64{0, 0, 18, 18, 18, 18, 18, 18}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	in := goldenInputs(t)
	in[1].Summary.Results.Metrics = append(in[1].Summary.Results.Metrics, bucketed())
	sc := scenarios.Defaults()
	sc.Name = "merge-test"
	sc.Thresholds = map[string][]threshold.Threshold{collect.MetricDebounceDelay: {{Source: "p(99)<=1s"}, {Source: "p(99)<500ms"}}}
	sc.Complete()
	out, err := Merge(in, Options{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := out.Results.Find(collect.MetricDebounceDelay, nil)
	if !ok {
		t.Fatal("the bucket trend is missing from the merge")
	}
	if _, point := m.Values["p(99)"]; point || m.Buckets == nil || m.Buckets.Count != 18 {
		t.Errorf("merged bucket trend: values %v buckets %+v", m.Values, m.Buckets)
	}
	if b, ok := m.Bounded("p(99)"); !ok || summary.FormatBound(m.Contains, b) != "in (100ms, 1s]" {
		t.Errorf("p(99) bound %v %v", b, ok)
	}
	verdicts := map[string]summary.Threshold{}
	for _, th := range out.Results.Thresholds {
		if th.Metric == collect.MetricDebounceDelay {
			verdicts[th.Expression] = th
		}
	}
	if len(verdicts) != 2 || !verdicts["p(99)<=1s"].Passed || verdicts["p(99)<500ms"].Passed || !verdicts["p(99)<500ms"].Inconclusive || out.Results.Passed {
		t.Errorf("thresholds on the bound: %+v", out.Results.Thresholds)
	}
	var buf bytes.Buffer
	if err := summary.Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	if _, err := summary.Decode("merged.json", buf.Bytes()); err != nil {
		t.Errorf("the merged summary does not read back: %v", err)
	}

	in = goldenInputs(t)
	in[0].Summary.Results.Metrics = append(in[0].Summary.Results.Metrics, bucketed())
	in[2].Summary.Results.Metrics = append(in[2].Summary.Results.Metrics, bucketed())
	out, err = Merge(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Results.Find(collect.MetricDebounceDelay, nil); ok || !strings.Contains(out.Metadata.Labels["note.merge"], collect.MetricDebounceDelay+" left out") {
		t.Errorf("a bucket trend in two inputs: note %q", out.Metadata.Labels["note.merge"])
	}
}

// TestMergeRefusesOtherConfigs: shards that embed different scenario configs under one name
// (another seed, another client count) are not one run, whatever their names and start time;
// the error names the input and the first difference. Key order does not count.
func TestMergeRefusesOtherConfigs(t *testing.T) {
	const cfg = `{"name":"merge-test","seed":7,"clients":[{"name":"sidecars","count":20}],"duration":"3s"}`
	shard := func(i int, config string) *summary.Summary {
		s := mergeShard(t, shardSpec{index: i, count: 2, latencies: []int64{5}, responses: 1})
		s.Config = []byte(config)
		return s
	}
	for _, tc := range []struct {
		name, config string
		want         string
	}{
		{"same", cfg, ""},
		{"same, keys reordered and spaced", `{"duration": "3s", "clients": [{"count": 20, "name": "sidecars"}], "seed": 7, "name": "merge-test"}`, ""},
		{"seed", strings.Replace(cfg, `"seed":7`, `"seed":99`, 1), "b: its scenario config differs from a's (seed: 7 in a, 99 in b)"},
		{"client count", strings.Replace(cfg, `"count":20`, `"count":50`, 1), "clients[0].count: 20 in a, 50 in b"},
		{"a key more", strings.Replace(cfg, `"seed":7`, `"seed":7,"extra":1`, 1), "extra: absent in a, 1 in b"},
		{"a client group more", strings.Replace(cfg, `}]`, `},{"name":"gw","count":1}]`, 1), "clients: 1 entries in a, 2 in b"},
		{"not json", `{`, "b: its scenario config does not decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge([]Input{{"a", shard(0, cfg)}, {"b", shard(1, tc.config)}}, Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("equal configs refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not one run") && tc.name != "not json" {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The simulator's config is the scenario too.
	sim := simSummary(t, nil)
	sim.Config = []byte(strings.Replace(cfg, `"seed":7`, `"seed":8`, 1))
	if _, err := Merge([]Input{{"a", shard(0, cfg)}, {"b", shard(1, cfg)}, {"sim", sim}}, Options{}); err == nil || !strings.Contains(err.Error(), "sim: its scenario config differs") {
		t.Errorf("simulator of another seed: err %v", err)
	}
}

// TestMergeNotesMissingLatency: a shard without the untagged push latency leaves the merged
// figure to the other shards' clients; the merged summary says so.
func TestMergeNotesMissingLatency(t *testing.T) {
	shard := func(i int) *summary.Summary {
		return mergeShard(t, shardSpec{index: i, count: 2, latencies: []int64{5}, responses: 1})
	}
	drop := func(s *summary.Summary) *summary.Summary {
		s.Results.Metrics = slices.DeleteFunc(s.Results.Metrics, func(m summary.Metric) bool {
			return m.Name == fleet.MetricPushLatency && len(m.Tags) == 0
		})
		return s
	}
	for _, tc := range []struct {
		name string
		in   []Input
		want string
	}{
		{"both carry it", []Input{{"a", shard(0)}, {"b", shard(1)}}, ""},
		{"one lacks it", []Input{{"a", shard(0)}, {"b", drop(shard(1))}},
			"b lack(s) xdslab_push_latency_seconds: the merged push latency covers only the other 1 of 2 shards' clients"},
		{"none has it", []Input{{"a", drop(shard(0))}, {"b", drop(shard(1))}}, "no shard measured xdslab_push_latency_seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Merge(tc.in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			note := out.Metadata.Labels["note.merge"]
			if tc.want == "" && strings.Contains(note, fleet.MetricPushLatency) || !strings.Contains(note, tc.want) {
				t.Errorf("note.merge %q, want %q", note, tc.want)
			}
		})
	}
}

// An event every client of a shard superseded with a latency (a debounce held it back) enters
// the merged convergence, as it entered the shard's: merge reads pushLatencies, not only
// observed.
func TestMergeSupersededLatencies(t *testing.T) {
	sup := summary.Event{ID: 1, Kind: "scale", T0: mergeT0.Add(time.Second), Reached: 5, Superseded: 5, PushLatencies: 5, ConvergenceSeconds: 0.282}
	s0 := mergeShard(t, shardSpec{index: 0, count: 2, latencies: []int64{282_000}, responses: 5, connected: 5, probes: true, events: []summary.Event{sup}})
	s1 := mergeShard(t, shardSpec{index: 1, count: 2, latencies: []int64{100_000}, responses: 5, connected: 5, probes: true,
		events: []summary.Event{{ID: 1, Kind: "scale", T0: mergeT0.Add(time.Second), Reached: 5, Superseded: 5}}})
	got, err := Merge([]Input{{"shard-0.json", s0}, {"shard-1.json", s1}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Results.Events) != 1 || got.Results.Events[0].PushLatencies != 5 {
		t.Fatalf("merged events %+v, want one with 5 push latencies", got.Results.Events)
	}
	c, ok := got.Results.Find(fleet.MetricConvergence, nil)
	if h, err := c.Histogram.Decode(); !ok || err != nil || h.TotalCount() != 1 || c.Values["max"] < 0.28 || c.Values["max"] > 0.285 {
		t.Fatalf("merged convergence %v (found %v), want the superseded event's 0.282 s", c.Values, ok)
	}
}

// TestMergeScenarioGiven: a scenario given to merge re-gates the run: its thresholds (and
// description) may differ from the config the inputs embed, nothing else. Another seed or
// client count was accepted and embedded as the merged run's config, so compare read a seed
// the run never had.
func TestMergeScenarioGiven(t *testing.T) {
	ran := scenarios.Defaults()
	ran.Name = "merge-test"
	ran.Clients[0].Name = "sidecars"
	cfg, err := collect.ScenarioJSON(ran)
	if err != nil {
		t.Fatal(err)
	}
	shard := func(i int) *summary.Summary {
		s := mergeShard(t, shardSpec{index: i, count: 2, latencies: []int64{5}, responses: 1})
		s.Config = cfg
		return s
	}
	th, err := threshold.Parse("p(99)<100ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(sc *scenarios.Scenario)
		want string // "" merged
	}{
		{"the same", func(*scenarios.Scenario) {}, ""},
		{"other thresholds", func(sc *scenarios.Scenario) {
			sc.Thresholds = map[string][]threshold.Threshold{fleet.MetricConvergence: {th}}
			sc.Description = "re-gated"
		}, ""},
		{"another seed", func(sc *scenarios.Scenario) { sc.Seed = ran.Seed + 1 }, "seed: "},
		{"another client count", func(sc *scenarios.Scenario) { sc.Clients[0].Count++ }, "clients[0].count: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := ran.Clone()
			tc.edit(sc)
			_, err := Merge([]Input{{"a", shard(0)}, {"b", shard(1)}}, Options{Scenario: sc})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "the scenario given differs from the one the inputs ran ("+tc.want) {
				t.Errorf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
}
