package collect

import (
	"slices"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/catalog"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/probe"
)

// cfHist is a latency histogram (µs) holding values.
func cfHist(t *testing.T, values ...int64) *hdr.Histogram {
	t.Helper()
	h := measure.NewLatencyHistogram()
	for _, v := range values {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// cfFigures is what a stopped fleet of two groups (a: clients 0-5, b: 6-9) reports after one
// endpoint-add event every client observed, with one reconnect per client: driven through the
// observers' hooks as clients would, the matcher's results written out.
func cfFigures(t *testing.T) fleet.Figures {
	t.Helper()
	const n = 10
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	all := measure.NewObserver(measure.ObserverConfig{})
	groups := map[string]*measure.Observer{"a": measure.NewObserver(measure.ObserverConfig{}), "b": measure.NewObserver(measure.ObserverConfig{})}
	for i := range n {
		c := probe.ClientInfo{Index: i, Group: "a"}
		if i >= 6 {
			c.Group = "b"
		}
		for _, o := range []*measure.Observer{all, groups[c.Group]} {
			o.Started(i, at(0), at(0))
			o.Connected(c, at(1), 1)
			for _, typ := range []string{resource.ClusterType, resource.EndpointType} {
				r := probe.ResponseInfo{TypeURL: typ, Version: "1", Bytes: 100, Resources: 1, Changed: 1, Recv: at(2)}
				o.Response(c, r)
				o.AckSent(c, r, at(3))
				o.ReceiveBacklog(c, time.Millisecond)
			}
			o.FirstFullConfig(c, at(5))
			o.Disconnected(c, at(10), nil)
			o.Connected(c, at(20), 2)
		}
		all.Resynced(c, at(25), 5*time.Millisecond) // a fleet's group observers take no resyncs
	}
	groupStats := map[string]measure.FleetStats{}
	for g, o := range groups {
		groupStats[g] = o.Stats()
	}
	push := cfHist(t, 1000, 1000, 1000, 1000, 1000, 1000, 2000, 2000, 2000, 2000)
	match := &measure.MatchResults{
		Events:                []measure.EventResult{{EventID: 1, Kind: "endpoint-add", T0: t0, Reached: n, Observed: n, Received: n, Acked: n, Convergence: 2 * time.Millisecond}},
		PushLatency:           map[string]*hdr.Histogram{"endpoint-add": push},
		ReceiveLatency:        map[string]*hdr.Histogram{"endpoint-add": push},
		AckLatency:            map[string]*hdr.Histogram{"endpoint-add": push},
		PushLatencyAll:        push,
		ReceiveLatencyAll:     push,
		AckLatencyAll:         push,
		ConvergenceByKind:     map[string]*hdr.Histogram{"endpoint-add": cfHist(t, 2000)},
		Convergence:           cfHist(t, 2000),
		PushLatencyByGroup:    map[string]*hdr.Histogram{"a": cfHist(t, 1, 1, 1, 1, 1, 1), "b": cfHist(t, 2, 2, 2, 2)},
		ReceiveLatencyByGroup: map[string]*hdr.Histogram{"a": cfHist(t, 1, 1, 1, 1, 1, 1), "b": cfHist(t, 2, 2, 2, 2)},
		AckLatencyByGroup:     map[string]*hdr.Histogram{"a": cfHist(t, 1, 1, 1, 1, 1, 1), "b": cfHist(t, 2, 2, 2, 2)},
		ConvergenceByGroup:    map[string]*hdr.Histogram{"a": cfHist(t, 1000), "b": cfHist(t, 2000)},
		ProbesByGroup:         map[string]measure.ProbeCounts{"a": {Observed: 6}, "b": {Observed: 4}},
		Observed:              n,
		Received:              n,
	}
	return fleet.Figures{Stats: all.Stats(), Connected: n, MinConnected: n, Launched: n, Clients: n,
		Groups: groupStats, GroupClients: map[string]int{"a": 6, "b": 4}, Match: match}
}

// TestFleetMetrics: a fleet's figures become the fleet's summary rows: the gauges at Stop, the
// per-type counters (total and by type), the trends, each group's figures tagged {group}, the
// probe counters; every row is in the metric catalogue and the summary validates.
func TestFleetMetrics(t *testing.T) {
	const n = 10
	ms, err := FleetMetrics(cfFigures(t), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range catalog.Check(ms, []string{"a", "b"}, []string{"endpoint-add"}) {
		t.Errorf("catalogue: %v", err)
	}
	s := &summary.Summary{Version: summary.Version, Results: summary.Results{Passed: true, Metrics: ms}}
	if err := s.Validate(); err != nil {
		t.Errorf("fleet summary does not validate: %v", err)
	}
	r := summary.Results{Metrics: ms}
	value := func(name string, tags map[string]string, stat string) float64 {
		t.Helper()
		m, ok := r.Find(name, tags)
		if !ok {
			t.Fatalf("no %s%s", name, summary.TagString(tags))
		}
		return m.Values[stat]
	}
	count := func(name string, tags map[string]string) int64 {
		t.Helper()
		m, ok := r.Find(name, tags)
		if !ok || m.Histogram == nil {
			t.Fatalf("no %s%s histogram", name, summary.TagString(tags))
		}
		h, err := m.Histogram.Decode()
		if err != nil {
			t.Fatal(err)
		}
		return h.TotalCount()
	}
	if v, mx := value(fleet.MetricConnected, nil, "value"), value(fleet.MetricConnected, nil, "max"); v != n || mx != n {
		t.Errorf("connected gauge = %v (max %v), want value and max %d", v, mx, n)
	}
	if got := count(fleet.MetricTimeToFirstConfig, nil); got != n {
		t.Errorf("time to first config trend holds %d, want %d", got, n)
	}
	for _, name := range []string{fleet.MetricResponses, fleet.MetricNacks, fleet.MetricNoop, fleet.MetricBytes} {
		for _, tags := range []map[string]string{nil, {"type": "CDS"}, {"type": "EDS"}} {
			if _, ok := r.Find(name, tags); !ok {
				t.Errorf("summary lacks %s%s", name, summary.TagString(tags))
			}
		}
	}
	if m, _ := r.Find(fleet.MetricBytes, nil); m.Contains != summary.Data {
		t.Errorf("%s contains %s, want data", fleet.MetricBytes, m.Contains)
	}
	if got := value(fleet.MetricProbesObserved, nil, "count"); got != n {
		t.Errorf("observed probes = %v, want %d", got, n)
	}
	if got := value(fleet.MetricReconnects, nil, "count"); got != n {
		t.Errorf("%s = %v, want count %d", fleet.MetricReconnects, got, n)
	}
	if got := count(fleet.MetricResync, nil); got != n || value(fleet.MetricResync, nil, "max") <= 0 {
		t.Errorf("%s holds %d, want %d above 0", fleet.MetricResync, got, n)
	}
	if v, mx := value(fleet.MetricFullConfigClients, nil, "value"), value(fleet.MetricFullConfigClients, nil, "max"); v != n || mx != n {
		t.Errorf("%s = %v (max %v), want value and max %d (resynced after the reconnect)", fleet.MetricFullConfigClients, v, mx, n)
	}
	for g, want := range map[string]float64{"a": 6, "b": 4} {
		tags := map[string]string{"group": g}
		if got := value(fleet.MetricFullConfigClients, tags, "value"); got != want {
			t.Errorf("full config clients of %s = %v, want %v", g, got, want)
		}
		if got := value(fleet.MetricClients, tags, "value"); got != want {
			t.Errorf("clients of %s = %v, want %v", g, got, want)
		}
		if got := count(fleet.MetricPushLatency, tags); got != int64(want) {
			t.Errorf("push latencies of %s = %d, want one per client (%v)", g, got, want)
		}
		if got := count(fleet.MetricTimeToFirstConfig, tags); got != int64(want) {
			t.Errorf("times to first config of %s = %d, want %v", g, got, want)
		}
		if got := count(fleet.MetricConvergence, tags); got != 1 {
			t.Errorf("convergence of %s holds %d events, want 1", g, got)
		}
	}
	ga, gb := map[string]string{"group": "a"}, map[string]string{"group": "b"}
	if a, b, all := value(fleet.MetricResponses, ga, "count"), value(fleet.MetricResponses, gb, "count"), value(fleet.MetricResponses, nil, "count"); a+b != all || a == 0 || b == 0 {
		t.Errorf("responses a %v + b %v != total %v", a, b, all)
	}
	if a, b, all := value(fleet.MetricBytes, ga, "count"), value(fleet.MetricBytes, gb, "count"), value(fleet.MetricBytes, nil, "count"); a+b != all {
		t.Errorf("bytes a %v + b %v != total %v", a, b, all)
	}
}

// TestFleetMetricsProbesByGroup: the matcher's observation classes by client group are tagged
// {group}, beside the untagged totals.
func TestFleetMetricsProbesByGroup(t *testing.T) {
	// The counts of measure's TestMatcherProbesByGroup.
	res := measure.MatchResults{
		PushLatencyAll: measure.NewLatencyHistogram(), ReceiveLatencyAll: measure.NewLatencyHistogram(),
		AckLatencyAll: measure.NewLatencyHistogram(), Convergence: measure.NewLatencyHistogram(),
		ProbesByGroup: map[string]measure.ProbeCounts{
			"sotw":  {Observed: 2},
			"delta": {Superseded: 1, AlreadyHeld: 1, Missed: 2},
		},
		Observed: 2, Superseded: 1, AlreadyHeld: 1, Missed: 2,
	}
	ms, err := matchMetrics(res, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := summary.Results{Metrics: ms}
	for _, tc := range []struct {
		name, group string
		want        float64
	}{
		{fleet.MetricProbesObserved, "sotw", 2}, {fleet.MetricProbesObserved, "delta", 0},
		{fleet.MetricProbesMissed, "delta", 2}, {fleet.MetricProbesSuperseded, "delta", 1}, {fleet.MetricProbesHeld, "delta", 1},
		{fleet.MetricProbesMissed, "", 2},
	} {
		var tags map[string]string
		if tc.group != "" {
			tags = map[string]string{"group": tc.group}
		}
		if m, ok := r.Find(tc.name, tags); !ok || m.Values["count"] != tc.want {
			t.Errorf("%s%v = %v (found %v), want count %v", tc.name, tags, m.Values, ok, tc.want)
		}
	}
}

// TestMissedClientsNamed: the summary names the clients the matcher lists as missing an event
// by their node ids, and the run's note names the first events and one client each.
func TestMissedClientsNamed(t *testing.T) {
	nodeID := func(i int) (string, bool) { return map[int]string{4: "sidecar~a", 9: "sidecar~b"}[i], i == 4 || i == 9 }
	res := measure.MatchResults{Events: []measure.EventResult{
		{EventID: 1, Kind: "endpoint-flap", Reached: 10, Observed: 10},
		{EventID: 2, Kind: "endpoint-flap", Reached: 10, Observed: 7, Missed: 3, MissedBy: []int{4, 9, 12}},
		{EventID: 3, Kind: "zone-failure", Reached: 10, Observed: 9, Missed: 1, MissedBy: []int{9}},
	}}
	evs := SummaryEvents(res, nodeID)
	if got, want := evs[1].MissedBy, []string{"sidecar~a", "sidecar~b", "client 12"}; !slices.Equal(got, want) {
		t.Errorf("event 2 missed by %q, want %q", got, want)
	}
	if evs[0].MissedBy != nil {
		t.Errorf("event 1 missed by %q, want none", evs[0].MissedBy)
	}
	want := "event 2 (endpoint-flap) missed by 3 of 10 clients, e.g. sidecar~a; event 3 (zone-failure) missed by 1 of 10 clients, e.g. sidecar~b"
	if got := MissedNote(evs); got != want {
		t.Errorf("note\n got %q\nwant %q", got, want)
	}
	if got := MissedNote(evs[:1]); got != "" {
		t.Errorf("note %q with nothing missed, want none", got)
	}
}
