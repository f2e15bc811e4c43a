package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// TestFleetGroupMetrics: a fleet of two groups reports every fleet and probe figure per group
// ({group: name} on /metrics, Figures.Groups) beside the totals, so delta-vs-sotw's groups can
// be read side by side; the groups' figures add up to the totals.
func TestFleetGroupMetrics(t *testing.T) {
	srv := fetest.NewCPServer(t)
	cfg := flConfig(srv.Addr, 6, policy.Nack{})
	b := cfg.Groups[0]
	cfg.Groups[0].Name, b.Name, b.Count = "a", "b", 4
	cfg.Groups = append(cfg.Groups, b)
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := f.Register(reg); err != nil {
		t.Fatal(err)
	}
	base := fetest.BaseResources(t)
	flSetAll(t, srv, f, "v1", base)
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	flWait(t, "every client has a full config", func() bool { return f.Progress().FullConfig == 10 })
	ev, err := f.Expect(probe.Expectation{EventID: 1, Kind: "endpoint-add",
		All: []probe.Predicate{{Op: probe.EndpointPresent, Resource: "c1", Address: "10.1.0.9", Port: 8080}}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	v2 := fetest.BaseResources(t)
	c1 := fetest.CLA("c1", "10.1.0.1", 8080)
	c1.Endpoints = append(c1.Endpoints, fetest.CLA("c1", "10.1.0.9", 8080).Endpoints...)
	v2[resource.EndpointType] = []types.Resource{c1, fetest.CLA("c2", "10.1.0.2", 8080)}
	flSetAll(t, srv, f, "v2", v2)
	if err := ev.SetT0(t0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetest.WaitLimit)
	defer cancel()
	if left, err := f.Matcher().Drain(ctx, 5*time.Millisecond); left != 0 || err != nil {
		t.Fatalf("drain: %d outstanding, %v", left, err)
	}
	// /metrics: one series per group, summing to the fleet's figure.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	perGroup := map[string]map[string]float64{} // metric → group → value or sample count
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "group" {
					continue
				}
				if perGroup[mf.GetName()] == nil {
					perGroup[mf.GetName()] = map[string]float64{}
				}
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
				perGroup[mf.GetName()][l.GetValue()] += v
			}
		}
	}
	for name, want := range map[string]map[string]float64{
		MetricFullConfigClients: {"a": 6, "b": 4},
		MetricPushLatency:       {"a": 6, "b": 4},
		MetricTimeToFirstConfig: {"a": 6, "b": 4},
	} {
		if got := perGroup[name]; got["a"] != want["a"] || got["b"] != want["b"] {
			t.Errorf("/metrics %s by group = %v, want %v", name, got, want)
		}
	}

	f.Stop()
	// The figures a report is built from (bench's TestFleetMetrics checks their rows).
	fig := f.Figures()
	if fig.Match == nil {
		t.Fatal("no match results although an expectation was registered")
	}
	for g, n := range map[string]int{"a": 6, "b": 4} {
		st := fig.Groups[g]
		if got := st.FullConfig; got != uint64(n) {
			t.Errorf("full config clients of %s = %v, want %v", g, got, n)
		}
		if got := fig.GroupClients[g]; got != n {
			t.Errorf("clients of %s = %v, want %v", g, got, n)
		}
		if h := fig.Match.PushLatencyByGroup[g]; h == nil || h.TotalCount() != int64(n) {
			t.Errorf("push latencies of %s = %v, want one per client (%v)", g, h, n)
		}
		if got := st.TimeToFirstConfig.TotalCount(); got != int64(n) {
			t.Errorf("times to first config of %s = %d, want %v", g, got, n)
		}
		if h := fig.Match.ConvergenceByGroup[g]; h == nil || h.TotalCount() != 1 {
			t.Errorf("convergence of %s = %v, want 1 event", g, h)
		}
	}
	a, b2, all := fig.Groups["a"].Total, fig.Groups["b"].Total, fig.Stats.Total
	if a.Responses+b2.Responses != all.Responses || a.Responses == 0 || b2.Responses == 0 {
		t.Errorf("responses a %v + b %v != total %v", a.Responses, b2.Responses, all.Responses)
	}
	if a.Bytes+b2.Bytes != all.Bytes {
		t.Errorf("bytes a %v + b %v != total %v", a.Bytes, b2.Bytes, all.Bytes)
	}
}
