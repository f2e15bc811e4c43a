package collect

import (
	"slices"
	"sort"
	"strings"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
)

// FullConfigCheck is the full-config check of a fleet run without a scenario or connect phase
// ('xdslab fleet'): xdslab_connect_incomplete_clients of the groups as the run ends (sizes and
// full by group, as ConnectIncomplete takes them), one verdict per group (value==0), and
// whether all passed.
func FullConfigCheck(groups []string, sizes map[string]int, full map[string]uint64) ([]summary.Metric, []summary.Threshold, bool) {
	ms := connectIncomplete(groups, sizes, full)
	res := summary.Results{Metrics: ms}
	th := threshold.Threshold{Source: "value==0", Agg: "value", Op: "==", Value: 0}
	var out []summary.Threshold
	passed := true
	for _, g := range groups {
		t := evalThreshold(res, MetricConnectIncomplete+"{group:"+g+"}", th)
		t.Description = "implicit: every client of group " + g + " holds its first full config by the end of the run"
		passed = passed && t.Passed
		out = append(out, t)
	}
	return ms, out, passed
}

// EvaluateThresholds evaluates the scenario's thresholds against the metrics: one verdict per
// expression, then one per implicit threshold (Scenario.ImplicitThresholds: every client group
// reaches its full config within the connect timeout unless it says requireFullConfig: false).
// A threshold naming a metric (or tags) the run did not produce fails, with no value: a gate
// must not pass on a figure nobody measured. A value known only as a bucket bound (a trend read
// from a control plane's Prometheus histogram) passes only when the bound proves the
// expression, fails when it proves the opposite, and is otherwise inconclusive, which fails
// too; Reason says which.
//
// Every percentile a threshold names is computed first, as k6 computes them: each series of
// the metric in res.Metrics gets it (summary.Metric.WithPercentiles, in place, so the summary,
// the console and summary.json carry what the thresholds read), a point from the HDR
// histogram, a bucket bound from Prometheus buckets.
func EvaluateThresholds(sc *scenarios.Scenario, res summary.Results) ([]summary.Threshold, bool) {
	keys := make([]string, 0, len(sc.Thresholds))
	for k := range sc.Thresholds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	AddThresholdPercentiles(sc, res.Metrics)
	passed := true
	var out []summary.Threshold
	for _, key := range keys {
		for _, th := range sc.Thresholds[key] {
			t := evalThreshold(res, key, th)
			passed = passed && t.Passed
			out = append(out, t)
		}
	}
	for _, it := range sc.ImplicitThresholds() {
		t := evalThreshold(res, it.Key, it.Threshold)
		t.Description = it.Description
		passed = passed && t.Passed
		out = append(out, t)
	}
	return out, passed
}

// AddThresholdPercentiles adds to each trend of ms (in place) the percentiles sc's thresholds
// on its metric name, whatever their tags (summary.Metric.WithPercentiles). A trend whose
// histogram does not decode is left as it is: its threshold then fails, naming what it lacks.
func AddThresholdPercentiles(sc *scenarios.Scenario, ms []summary.Metric) {
	want := map[string][]float64{}
	for key, ths := range sc.Thresholds {
		name := threshold.MetricName(key)
		for _, th := range ths {
			if th.Agg == "p" && !slices.Contains(want[name], th.Percentile) {
				want[name] = append(want[name], th.Percentile)
			}
		}
	}
	for i, m := range ms {
		if ps := want[m.Name]; len(ps) > 0 {
			if with, err := m.WithPercentiles(ps); err == nil {
				ms[i] = with
			}
		}
	}
}

// evalThreshold evaluates th on the metric key selects (failed, with no value, when the run did
// not produce it).
func evalThreshold(res summary.Results, key string, th threshold.Threshold) summary.Threshold {
	name, tags := threshold.MetricName(key), threshold.MetricTags(key)
	m, found := res.Find(name, tags)
	zero := false
	if !found {
		m, zero = countedNone(res, name, tags)
		found = zero
	}
	t := evaluateThreshold(th, name, tags, m, found)
	if zero && t.Reason == "" {
		t.Reason = "the fleet counted none: it writes a " + tagKey(tags) + " series only for the values it saw"
	}
	return t
}

// countedNone returns the zero series of a fleet counter split by xDS type or gRPC code when
// the run measured the counter (its untagged total is there) but saw no event of that value:
// the fleet counts every type and code and writes a series only for those it saw, so the
// missing one is a count of 0, not a figure nobody measured.
func countedNone(res summary.Results, name string, tags map[string]string) (summary.Metric, bool) {
	if len(tags) != 1 || !strings.HasPrefix(name, "xdslab_fleet_") {
		return summary.Metric{}, false
	}
	if k := tagKey(tags); k != "type" && k != "code" {
		return summary.Metric{}, false
	}
	total, ok := res.Find(name, nil)
	if !ok || total.Type != summary.Counter {
		return summary.Metric{}, false
	}
	return summary.NewCounter(name, total.Contains, 0, 0, tags), true
}

// tagKey is the key of a one-tag filter.
func tagKey(tags map[string]string) string {
	for k := range tags {
		return k
	}
	return ""
}

// evaluateThreshold is one expression's verdict on metric m (found: the run produced it).
func evaluateThreshold(th threshold.Threshold, name string, tags map[string]string, m summary.Metric, found bool) summary.Threshold {
	t := summary.Threshold{Metric: name, Tags: tags, Expression: th.Source}
	key := th.Key()
	if !found {
		t.Reason = "the run did not produce " + name + summary.TagString(tags)
		return t
	}
	if m.NoData() && m.Buckets == nil {
		t.Reason = "no data: " + name + summary.TagString(tags) + " observed nothing in the run (nothing measured is not 0)"
		return t
	}
	if b, ok := m.Bounded(key); ok {
		bd := b
		t.Bound = &bd
		v, err := th.EvalBound(b.Lower(), b.Upper())
		where := key + " " + summary.FormatBound(m.Contains, b)
		switch {
		case err != nil:
			t.Reason = err.Error()
		case v == threshold.Pass:
			t.Passed = true
			t.Reason = where + ": the bucket bound proves it"
		case v == threshold.Fail:
			t.Reason = where + ": the bucket bound disproves it"
		default:
			t.Inconclusive = true
			t.Reason = "inconclusive: " + where + " is a bucket bound that neither proves nor disproves it"
		}
		return t
	}
	if v, ok := m.Values[key]; ok {
		t.Value = &v
	}
	ok, err := th.Eval(m.Values)
	t.Passed = ok && err == nil
	switch {
	case err == nil:
	case m.Buckets != nil && m.Buckets.Count == 0:
		t.Reason = "no data: the histogram observed nothing in the run"
		if src := m.Buckets.Source; src != "" {
			t.Reason = "no data: " + src + " observed nothing in the run"
		}
	default:
		t.Reason = err.Error()
	}
	return t
}
