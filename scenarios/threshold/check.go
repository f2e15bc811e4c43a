package threshold

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/internal/catalog"
	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/internal/summary"
)

// Problem is one thing wrong with a threshold key or one of its expressions.
type Problem struct {
	// Index is the expression's index in the key's list, -1 for the key itself.
	Index int
	// Fix says how to correct it; Msg what is wrong.
	Fix, Msg string
}

// taggedOnly lists the catalogued metrics a run writes only per value of one tag, with no
// untagged total (bench/collect: the CPU and memory gauges per side, the phase durations per
// phase), each with the tag and the value of the example fix. A threshold on the bare name
// would never be measured.
var taggedOnly = map[string][2]string{
	"xdslab_cpu_seconds":            {"side", "controlplane"},
	"xdslab_peak_rss_bytes":         {"side", "process"},
	"xdslab_phase_duration_seconds": {"phase", "measure"},
}

// Check checks a threshold key and its expressions against the metrics catalogue: a valid
// selector naming a metric some run writes, with the tag a metric written only per tag value
// needs, tags the metric carries with values it takes (groups are the scenario's client
// groups, the values of a group tag; kinds every churn kind, the values a kind tag may name;
// churned the kinds the scenario's churn produces, nil for any), at least one expression,
// aggregations the metric has and units that fit it. An expression built in Go without Parse
// (no Op) is parsed first. Problems come in the order they are found.
func Check(key string, exprs []Threshold, groups, kinds, churned []string) []Problem {
	var out []Problem
	add := func(i int, fix, format string, a ...any) {
		out = append(out, Problem{Index: i, Fix: fix, Msg: fmt.Sprintf(format, a...)})
	}
	if err := CheckSelector(key); err != nil {
		add(-1, SelectorFix(key), "%v", err)
		return out
	}
	name := MetricName(key)
	cm, known := catalog.Lookup(name)
	if !known {
		fix := "write one of the metrics a run writes (docs/observability.md lists them)"
		if near := suggest.Nearest(name, catalog.Names()); near != "" {
			fix = "did you mean " + strconv.Quote(near) + "?"
		}
		add(-1, fix,
			"unknown metric %q: no run writes it, so this threshold could never be evaluated", name)
		return out
	}
	tags := MetricTags(key)
	if len(tags) > 1 {
		split := make([]string, 0, len(tags))
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			split = append(split, name+"{"+k+":"+tags[k]+"}")
		}
		add(-1, "filter on one tag per threshold: "+strings.Join(split, " and "),
			"%s filters on %d tags: a run writes one series per value of each tag, never combined, so this threshold would never be measured", key, len(tags))
		return out
	}
	if tv, ok := taggedOnly[name]; ok {
		if _, tagged := tags[tv[0]]; !tagged {
			add(-1, fmt.Sprintf("add the tag, e.g. %s{%s:%s} (%s: %s)", name, tv[0], tv[1], tv[0], strings.Join(catalog.Values(cm.Tags[tv[0]]), ", ")),
				"%s is written only per %s, never as a total: this threshold would never be measured", name, tv[0])
		}
	}
	for _, p := range checkTags(cm, tags, groups, kinds, churned) {
		add(-1, p.Fix, "%s", p.Msg)
	}
	if len(exprs) == 0 {
		add(-1, `give it at least one expression, e.g. ['p(99)<500ms'], or remove the line`,
			"no threshold expressions: a metric listed without any judges nothing")
	}
	for i, th := range exprs {
		if th.Op == "" { // built in Go without Parse
			parsed, err := Parse(th.Source)
			if err != nil {
				add(i, Fix(err), "invalid threshold %q: %v", th.Source, err)
				continue
			}
			th = parsed
		}
		if !cm.HasAggregation(th.Agg) {
			add(i, aggregationFix(cm), "%s is a %s; %s does not apply", name, cm.Type, th.Key())
		}
		if th.Value < 0 && (cm.Type == summary.Trend || cm.Contains == summary.Time) {
			add(i, "write a bound of 0 or more", "%q has a negative bound, but %s is never below 0: the threshold could never pass (or never fail)", th.Source, name)
		}
		if cm.Type == summary.Rate && th.Agg == "rate" && (th.Value > 1 || th.Value < 0) {
			fix := "write a bound from 0 to 1"
			if th.Value > 1 && th.Value <= 100 && th.Unit == "" {
				n := strconv.FormatFloat(th.Value, 'g', -1, 64)
				fix = "write " + n + "% or " + strconv.FormatFloat(th.Value/100, 'g', -1, 64)
			}
			add(i, fix, "%q is outside 0..1, but %s is a ratio from 0 to 1: the threshold could never pass (or never fail)", th.Source, name)
		}
		if th.Unit == "" && th.Value != 0 && cm.Contains == summary.Time && th.Agg != "count" && th.Agg != "rate" {
			n := strconv.FormatFloat(th.Value, 'g', -1, 64)
			add(i, fmt.Sprintf("write %sms or %ss", n, n), "%q has no unit, but %s is a time: give the bound a unit (k6 reads a bare number as milliseconds, xdslab's time metrics are in seconds)", th.Source, name)
		}
		if th.Unit == "time" && !strings.HasSuffix(name, "_seconds") {
			add(i, "write a plain number, or use a time unit only on a _seconds metric", "%q has a time unit but %s is not in seconds", th.Source, name)
		}
		if th.Unit == "size" && !strings.HasSuffix(name, "_bytes") && !strings.HasSuffix(name, "_bytes_total") {
			add(i, "write a plain number, or use a size unit only on a _bytes metric", "%q has a size unit but %s is not in bytes", th.Source, name)
		}
	}
	return out
}

// PerEvent reports whether key selects a trend timed per churn event (push latency,
// convergence) without filtering it to one kind: a scenario without churn never measures
// it, and its thresholds fail with no data once every client has connected.
func PerEvent(key string) bool {
	if CheckSelector(key) != nil {
		return false
	}
	cm, known := catalog.Lookup(MetricName(key))
	if !known || cm.Type != summary.Trend {
		return false
	}
	if _, kind := MetricTags(key)["kind"]; kind {
		return false // Check names the kind the scenario does not churn
	}
	return slices.Contains(slices.Collect(maps.Values(cm.Tags)), catalog.Kind)
}

// checkTags checks a threshold's tag filter against the catalogue: tags the metric carries,
// values it takes (the scenario's client groups and churn kinds for group and kind). Case
// matters: the fleet tags xDS types CDS, the control plane's counters cds.
func checkTags(m catalog.Metric, tags map[string]string, groups, kinds, churned []string) []Problem {
	var out []Problem
	add := func(fix, format string, a ...any) {
		out = append(out, Problem{Index: -1, Fix: fix, Msg: fmt.Sprintf(format, a...)})
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val := tags[k]
		d, ok := m.Tags[k]
		if !ok {
			fix := m.Name + " has no tags: drop the filter"
			if len(m.Tags) > 0 {
				fix = suggest.Fix(k, m.TagKeys())
			}
			add(fix, "%s has no tag %q", m.Name, k)
			continue
		}
		var values []string
		switch d {
		case catalog.Group:
			values = groups
		case catalog.Kind:
			values = kinds
		default:
			values = catalog.Values(d)
		}
		if len(values) == 0 || slices.Contains(values, val) {
			if d == catalog.Kind && churned != nil && slices.Contains(values, val) && !slices.Contains(churned, val) {
				fix := "add churn of kind " + val + ", or remove the threshold"
				if len(churned) > 0 {
					fix += " (this scenario churns " + strings.Join(churned, ", ") + ")"
				}
				add(fix, "%s{kind:%s} is never measured: the scenario has no %s churn", m.Name, val, val)
			}
			continue
		}
		if i := slices.IndexFunc(values, func(s string) bool { return strings.EqualFold(s, val) }); i >= 0 {
			add(fmt.Sprintf("write {%s:%s}: tag values are case-sensitive", k, values[i]),
				"%s tags %s %q, not %q", m.Name, k, values[i], val)
			continue
		}
		switch d {
		case catalog.Group:
			add(suggest.Fix(val, values), "%s has no client group %q", m.Name, val)
		default:
			add(suggest.Fix(val, values), "%s never has %s=%q", m.Name, k, val)
		}
	}
	return out
}

// aggregationFix names the aggregations a metric has, with an example.
func aggregationFix(m catalog.Metric) string {
	ex := map[string]string{"counter": "'count==0' or 'rate<5'", "gauge": "'value==0'", "rate": "'rate>0.9'", "trend": "'p(99)<500ms' or 'avg<100ms'"}[string(m.Type)]
	return fmt.Sprintf("a %s has %s, e.g. %s", m.Type, strings.Join(catalog.Aggregations(m.Type, m.Bounded), ", "), ex)
}

// SelectorFix is the fix of a threshold key CheckSelector rejects: the key rewritten when its
// tag filter is Prometheus-style ({type="CDS"} → {type:CDS}, the value in the case the metric
// tags it), else an example.
func SelectorFix(key string) string {
	const example = "write a metric name, optionally with one tag: xdslab_fleet_nacks_total{type:CDS}"
	name, rest, ok := strings.Cut(key, "{")
	if !ok || !strings.HasSuffix(rest, "}") {
		return example
	}
	cm, known := catalog.Lookup(strings.TrimSpace(name))
	var parts []string
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			k, v, ok = strings.Cut(kv, ":")
		}
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"'`)
		if !ok || k == "" || v == "" {
			return example
		}
		if known {
			if d, ok := cm.Tags[k]; ok {
				if i := slices.IndexFunc(catalog.Values(d), func(s string) bool { return strings.EqualFold(s, v) }); i >= 0 {
					v = catalog.Values(d)[i]
				}
			}
		}
		parts = append(parts, k+":"+v)
	}
	if len(parts) > 1 {
		split := make([]string, len(parts))
		for i, p := range parts {
			split[i] = strings.TrimSpace(name) + "{" + p + "}"
		}
		return "filter on one tag per threshold: " + strings.Join(split, " and ")
	}
	fixed := strings.TrimSpace(name) + "{" + strings.Join(parts, ",") + "}"
	if CheckSelector(fixed) != nil || fixed == key {
		return example
	}
	return "write " + fixed
}
