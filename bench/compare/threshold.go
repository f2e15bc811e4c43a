package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios/threshold"
)

// MetricThreshold overrides the regression threshold for one metric (optionally one tagged
// dimension, optionally one stat), written NAME[{tag:value,...}][:STAT]=PCT, e.g.
//
//	xdslab_push_latency_seconds:p(99)=10%
//	xdslab_push_latency_seconds=10%             every stat of the metric
//	xdslab_cache_hit_ratio{type:EDS}=2%
type MetricThreshold struct {
	Name string
	// Tags, when not nil, restricts the override to the entry with exactly these tags.
	Tags map[string]string
	// Stat, when not empty, restricts it to one value ("p(99)", "count", …).
	Stat string
	// Fraction is the threshold (0.10 for 10%).
	Fraction float64
}

// ParsePercent reads "5%" or "0.05" as 0.05. It must be finite and not negative. A bare
// number above 1 is refused: "5" is almost certainly meant as 5%, and read as a fraction it
// would be 500% (a gate that lets a 4× regression pass); write 5% or 0.05 (or 500%).
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("threshold %q: write a percentage such as 5%% (or a fraction such as 0.05)", s)
	}
	if pct {
		return v / 100, nil
	}
	if v > 1 {
		return 0, fmt.Errorf("threshold %q: a bare number is a fraction (%s would mean %g%%): write %s%% or %g for %s%%, or %g%% if you mean it",
			s, t, 100*v, t, v/100, t, 100*v)
	}
	return v, nil
}

// ParseMetricThreshold parses one --metric-threshold value (see MetricThreshold).
func ParseMetricThreshold(s string) (MetricThreshold, error) {
	fail := func(why string) (MetricThreshold, error) {
		return MetricThreshold{}, fmt.Errorf("--metric-threshold %q: %s: write NAME[{tag:value}][:STAT]=PCT, e.g. xdslab_push_latency_seconds:p(99)=10%%", s, why)
	}
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return fail("no '='")
	}
	sel, pctText := strings.TrimSpace(s[:i]), s[i+1:]
	frac, err := ParsePercent(pctText)
	if err != nil {
		return fail("bad percentage: " + err.Error())
	}
	if strings.Contains(sel, "{") && !strings.Contains(sel, "}") {
		return fail("tag filter is not closed with }")
	}
	mt := MetricThreshold{Fraction: frac}
	// The stat follows the last ':' that is outside a tag filter.
	rest := sel
	if j := strings.LastIndexByte(sel, ':'); j >= 0 && j > strings.LastIndexByte(sel, '}') {
		rest, mt.Stat = strings.TrimSpace(sel[:j]), strings.TrimSpace(sel[j+1:])
		if !validStat(mt.Stat) {
			return fail("unknown stat " + strconv.Quote(mt.Stat) + " (use count, rate, value, avg, min, max, med or p(N))")
		}
	}
	name, tagText, hasTags := strings.Cut(rest, "{")
	mt.Name = strings.TrimSpace(name)
	if !threshold.ValidMetricName(mt.Name) {
		return fail("invalid metric name " + strconv.Quote(mt.Name))
	}
	if hasTags {
		if !strings.HasSuffix(tagText, "}") {
			return fail("tag filter is not closed with }")
		}
		mt.Tags = map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(tagText, "}"), ",") {
			k, v, ok := strings.Cut(kv, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || !threshold.ValidMetricName(k) || v == "" {
				return fail("bad tag " + strconv.Quote(strings.TrimSpace(kv)) + " (write tag:value)")
			}
			mt.Tags[k] = v
		}
	}
	return mt, nil
}

// matches reports whether the override applies to the stat of metric m.
func (mt MetricThreshold) matches(m summary.Metric, stat string) bool {
	if mt.Name != m.Name || (mt.Stat != "" && !sameStat(mt.Stat, stat)) {
		return false
	}
	return mt.Tags == nil || summary.TagString(mt.Tags) == summary.TagString(m.Tags)
}

// sameStat treats med and p(50) as one stat.
func sameStat(a, b string) bool {
	norm := func(s string) string {
		if s == "med" {
			return "p(50)"
		}
		return s
	}
	return norm(a) == norm(b)
}

func validStat(s string) bool {
	switch s {
	case "count", "rate", "value", "avg", "min", "max", "med":
		return true
	}
	if strings.HasPrefix(s, "p(") && strings.HasSuffix(s, ")") {
		v, err := strconv.ParseFloat(s[2:len(s)-1], 64)
		return err == nil && v >= 0 && v <= 100
	}
	return false
}

// DirectionOverride sets the direction of one metric name (--worse NAME=up|down|none), for
// metrics compare cannot classify from their names.
type DirectionOverride struct {
	Name string
	Dir  Direction
}

// ParseDirectionOverride parses NAME=up|down|none.
func ParseDirectionOverride(s string) (DirectionOverride, error) {
	name, d, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || !threshold.ValidMetricName(name) {
		return DirectionOverride{}, fmt.Errorf("--worse %q: write NAME=up (higher is worse), NAME=down or NAME=none", s)
	}
	dir, err := ParseDirection(d)
	if err != nil {
		return DirectionOverride{}, fmt.Errorf("--worse %q: %w", s, err)
	}
	return DirectionOverride{Name: name, Dir: dir}, nil
}
