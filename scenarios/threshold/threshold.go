package threshold

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/internal/suggest"
)

// Threshold is one parsed k6-style threshold expression, "AGG OP VALUE":
//
//	AGG   avg | min | max | med | count | rate | value | p(N)   (0 <= N <= 100)
//	OP    <  <=  >  >=  ==  ===  !=                           (=== is ==, as in k6)
//	VALUE a number with an optional unit:
//	      time   ns us µs ms s m h   → seconds (xdslab's time metrics are in seconds)
//	      ratio  %                  → /100
//	      size   B kB MB GB (×1000) KiB MiB GiB (×1024) → bytes
//
// As in k6 the expression passes when it is true for the metric's aggregated value: counters
// have count and rate, gauges value (and min, max), trends avg, min, max, med and p(N), rates
// rate. Spaces are allowed between the parts.
type Threshold struct {
	// Source is the expression as written.
	Source string
	// Agg is the aggregation ("avg", ..., or "p" with Percentile).
	Agg        string
	Percentile float64
	Op         string
	// Value is the bound in base units (seconds, bytes, ratio).
	Value float64
	// Unit is the class of the unit written: "", "time", "percent" or "size".
	Unit string
}

// Aggregations lists the aggregation names (p(N) is written with its percentile).
func Aggregations() []string {
	return []string{"avg", "min", "max", "med", "count", "rate", "value", "p(N)"}
}

var thresholdOps = []string{"<=", ">=", "===", "==", "!=", "<", ">"}

// units maps a unit to (factor, class).
var units = map[string]struct {
	f     float64
	class string
}{
	"ns": {1e-9, "time"}, "us": {1e-6, "time"}, "µs": {1e-6, "time"}, "ms": {1e-3, "time"},
	"s": {1, "time"}, "m": {60, "time"}, "h": {3600, "time"},
	"%": {0.01, "percent"},
	"B": {1, "size"}, "kB": {1e3, "size"}, "MB": {1e6, "size"}, "GB": {1e9, "size"},
	"KiB": {1 << 10, "size"}, "MiB": {1 << 20, "size"}, "GiB": {1 << 30, "size"},
}

// Error is a threshold syntax error; its message names the part that is wrong.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func thresholdErr(format string, a ...any) error {
	return &Error{Msg: fmt.Sprintf(format, a...)}
}

// Fix is the fix shown with a threshold syntax error.
func Fix(error) string {
	return "write AGG OP VALUE, e.g. 'p(99)<500ms', 'avg<=0.2', 'count==0', 'rate<1%'; AGG is one of " +
		strings.Join(Aggregations(), ", ")
}

// Parse parses one expression.
func Parse(src string) (Threshold, error) {
	th := Threshold{Source: src}
	s := strings.TrimSpace(src)
	if s == "" {
		return th, thresholdErr("empty expression")
	}
	// Aggregation.
	switch {
	case strings.HasPrefix(s, "p("):
		end := strings.IndexByte(s, ')')
		if end < 0 {
			return th, thresholdErr("p( is not closed")
		}
		num := strings.TrimSpace(s[2:end])
		p, err := strconv.ParseFloat(num, 64)
		if err != nil || !isPlainNumber(num) || p < 0 || p > 100 {
			return th, thresholdErr("percentile %q must be a number from 0 to 100", num)
		}
		th.Agg, th.Percentile = "p", p
		s = s[end+1:]
	default:
		i := 0
		for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '_') {
			i++
		}
		name := s[:i]
		switch name {
		case "avg", "min", "max", "med", "count", "rate", "value":
		case "":
			return th, thresholdErr("missing aggregation before %q", s)
		default:
			if len(name) > 1 && name[0] == 'p' && isPlainNumber(name[1:]) {
				return th, thresholdErr("write the percentile as p(%s), not %s", name[1:], name)
			}
			if near := suggest.Nearest(name, Aggregations()); near != "" {
				return th, thresholdErr("unknown aggregation %q (did you mean %q?)", name, near)
			}
			return th, thresholdErr("unknown aggregation %q", name)
		}
		th.Agg = name
		s = s[i:]
	}
	// Operator.
	s = strings.TrimSpace(s)
	written := ""
	for _, op := range thresholdOps {
		if strings.HasPrefix(s, op) {
			th.Op, written = op, op
			if op == "===" {
				th.Op = "=="
			}
			s = s[len(op):]
			break
		}
	}
	if th.Op == "" {
		return th, thresholdErr("missing comparison (one of < <= > >= == !=) before %q", s)
	}
	// Value and unit.
	s = strings.TrimSpace(s)
	i := numberPrefix(s)
	if i == 0 {
		return th, thresholdErr("missing number after %s", written)
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || math.IsInf(v, 0) {
		return th, thresholdErr("invalid number %q", s[:i])
	}
	unit := strings.TrimSpace(s[i:])
	if unit != "" {
		u, ok := units[unit]
		if !ok {
			return th, thresholdErr("unknown unit %q (use ns, us, ms, s, m, h, %%, B, kB, MB, GB, KiB, MiB, GiB)", unit)
		}
		v *= u.f
		th.Unit = u.class
	}
	th.Value = v
	return th, nil
}

// numberPrefix returns the length of the decimal number at the start of s.
func numberPrefix(s string) int {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		if s[i] != '.' {
			digits++
		}
		i++
	}
	if digits == 0 {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	return i
}

// isPlainNumber reports whether s is entirely a decimal number.
func isPlainNumber(s string) bool { return s != "" && numberPrefix(s) == len(s) }

// Key is the name of the aggregated value the threshold reads, as in a k6 summary: "avg",
// "count", "p(99)", "p(99.9)".
func (t Threshold) Key() string {
	if t.Agg == "p" {
		return "p(" + strconv.FormatFloat(t.Percentile, 'f', -1, 64) + ")"
	}
	return t.Agg
}

// Canonical is the expression in normal form (base units, no spaces); it parses to the same
// threshold except for Source and Unit.
func (t Threshold) Canonical() string {
	return t.Key() + t.Op + strconv.FormatFloat(t.Value, 'g', -1, 64)
}

// String returns the expression as written.
func (t Threshold) String() string { return t.Source }

// MarshalYAML writes the expression as written.
func (t Threshold) MarshalYAML() (any, error) { return t.Source, nil }

// MarshalJSON writes the expression as written.
func (t Threshold) MarshalJSON() ([]byte, error) { return json.Marshal(t.Source) }

// Eval evaluates the threshold against a metric's aggregated values (keys as Key returns). It
// returns an error when the value it reads is missing; a NaN value fails the threshold.
func (t Threshold) Eval(values map[string]float64) (bool, error) {
	key := t.Key()
	v, ok := values[key]
	if !ok {
		have := make([]string, 0, len(values))
		for k := range values {
			have = append(have, k)
		}
		sort.Strings(have)
		return false, fmt.Errorf("threshold %q reads %s, which the metric does not have (it has %s)",
			t.Source, key, strings.Join(have, ", "))
	}
	if math.IsNaN(v) {
		return false, nil
	}
	switch t.Op {
	case "<":
		return v < t.Value, nil
	case "<=":
		return v <= t.Value, nil
	case ">":
		return v > t.Value, nil
	case ">=":
		return v >= t.Value, nil
	case "==":
		return v == t.Value, nil
	case "!=":
		return v != t.Value, nil
	}
	return false, fmt.Errorf("threshold %q: unknown operator %q", t.Source, t.Op)
}

// Verdict is a threshold's outcome on a value known only to lie in a bucket.
type Verdict int

// The verdicts.
const (
	// Fail: every value in the bound breaks the expression.
	Fail Verdict = iota
	// Pass: every value in the bound meets the expression.
	Pass
	// Inconclusive: some values in the bound meet it and some break it. A gate treats it as
	// a failure: it must not pass on a figure nobody measured.
	Inconclusive
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Inconclusive:
		return "inconclusive"
	}
	return "fail"
}

// EvalBound evaluates the threshold on a value x known only to lie in (gt, le] — a Prometheus
// bucket; gt may be -Inf (the first bucket) and le +Inf (the +Inf bucket). It passes when the
// bound proves the expression (p(99)<500ms with le < 500ms), fails when the bound proves the
// opposite (gt >= 500ms), and is Inconclusive otherwise. NaN bounds are inconclusive.
func (t Threshold) EvalBound(gt, le float64) (Verdict, error) {
	if math.IsNaN(gt) || math.IsNaN(le) || !(gt < le) {
		return Inconclusive, nil
	}
	v := t.Value
	decide := func(pass, fail bool) (Verdict, error) {
		switch {
		case pass:
			return Pass, nil
		case fail:
			return Fail, nil
		}
		return Inconclusive, nil
	}
	switch t.Op {
	case "<":
		return decide(le < v, gt >= v)
	case "<=":
		return decide(le <= v, gt >= v)
	case ">":
		return decide(gt >= v, le <= v)
	case ">=":
		return decide(gt >= v, le < v)
	case "==":
		// An interval open below never holds a single value alone.
		return decide(false, v <= gt || v > le)
	case "!=":
		return decide(v <= gt || v > le, false)
	}
	return Fail, fmt.Errorf("threshold %q: unknown operator %q", t.Source, t.Op)
}

// MetricName returns the metric name of a threshold key ("m{type:cds}" → "m").
func MetricName(selector string) string {
	name, _, _ := strings.Cut(selector, "{")
	return strings.TrimSpace(name)
}

// MetricTags returns the tag filter of a threshold key ("m{type:cds, group:a}" → type=cds,
// group=a), nil when there is none. The key must have passed validation.
func MetricTags(selector string) map[string]string {
	_, rest, ok := strings.Cut(selector, "{")
	if !ok {
		return nil
	}
	rest = strings.TrimSuffix(strings.TrimSpace(rest), "}")
	tags := map[string]string{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, ":")
		tags[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return tags
}

// CheckSelector checks a threshold key, "name" or "name{tag:value,...}"; the error says what is
// wrong with it.
func CheckSelector(sel string) error {
	name, rest, hasTags := strings.Cut(sel, "{")
	if !ValidMetricName(name) {
		return fmt.Errorf("invalid metric name %q (letters, digits, '_' and ':', not starting with a digit)", name)
	}
	if !hasTags {
		return nil
	}
	if !strings.HasSuffix(rest, "}") {
		return fmt.Errorf("tag filter of %q is not closed with }", sel)
	}
	rest = strings.TrimSuffix(rest, "}")
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || !ValidMetricName(k) || strings.Contains(k, ":") || v == "" || strings.ContainsAny(v, "{}") {
			return fmt.Errorf("invalid tag filter %q in %q (write tag:value)", strings.TrimSpace(kv), sel)
		}
		if seen[k] {
			return fmt.Errorf("tag %q given twice in %q: a series has one value per tag", k, sel)
		}
		seen[k] = true
	}
	return nil
}

// ValidMetricName reports whether s is a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*).
func ValidMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
