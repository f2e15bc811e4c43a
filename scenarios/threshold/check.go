package threshold

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/internal/catalog"
	"github.com/xdslab/xdslab/internal/suggest"
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
		add(-1, `write a metric name, optionally with tags: xdslab_fleet_nacks_total{type:cds}`, "%v", err)
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
		if th.Unit == "time" && !strings.HasSuffix(name, "_seconds") {
			add(i, "write a plain number, or use a time unit only on a _seconds metric", "%q has a time unit but %s is not in seconds", th.Source, name)
		}
		if th.Unit == "size" && !strings.HasSuffix(name, "_bytes") && !strings.HasSuffix(name, "_bytes_total") {
			add(i, "write a plain number, or use a size unit only on a _bytes metric", "%q has a size unit but %s is not in bytes", th.Source, name)
		}
	}
	return out
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
