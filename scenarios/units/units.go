package units

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xdslab/xdslab/internal/dist"
)

// Duration is a time.Duration written as a Go duration string ("100ms", "1m30s"); a bare 0 is
// accepted for zero. It marshals back to the same form, so a printed scenario reloads.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d as a Go duration ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// ParseDuration parses a duration string; on error its second result is the fix to show with
// the error ("add a unit, e.g. 5s or 5ms").
func ParseDuration(s string) (Duration, string, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, "", nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil && durationNumberRE.MatchString(s) {
		return 0, fmt.Sprintf("add a unit, e.g. %ss or %sms", s, s), fmt.Errorf("duration %q has no unit", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, durationFix(s), fmt.Errorf("invalid duration %q", s)
	}
	return Duration(d), "", nil
}

// durationNumberRE is a plain decimal number ("5", "-1.5"), not "NaN", "Inf" or "0x10", which
// ParseFloat takes too but a unit would not fix.
var durationNumberRE = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)$`)

// durationSyntaxRE is the syntax time.ParseDuration reads; a string of that form it refuses
// is out of range.
var durationSyntaxRE = regexp.MustCompile(`^[-+]?(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// nextUnit is the unit after each unit in a compound duration ("1h30" means 1h30m).
var nextUnit = map[string]string{"h": "m", "m": "s", "s": "ms", "ms": "us", "us": "ns", "µs": "ns", "μs": "ns"}

// durationFix says how to write s, which time.ParseDuration refuses.
func durationFix(s string) string {
	const generic = `write a Go duration such as "250ms", "5s" or "1m30s"`
	if durationSyntaxRE.MatchString(s) {
		return "it is out of range: a duration is at most 2562047h47m16s (about 292 years)"
	}
	// "1h30": the last number lacks its unit, the one after the unit before it.
	i := len(s)
	for i > 0 && (s[i-1] >= '0' && s[i-1] <= '9' || s[i-1] == '.') {
		i--
	}
	if i > 0 && i < len(s) && durationSyntaxRE.MatchString(s[:i]) {
		for _, u := range []string{"ms", "us", "µs", "μs", "ns", "h", "m", "s"} {
			if strings.HasSuffix(s[:i], u) {
				if nextUnit[u] == "" { // nothing is finer than ns
					return fmt.Sprintf("every number needs its unit, and none is finer than ns: drop %q or give it a unit", s[i:])
				}
				return fmt.Sprintf("every number needs its unit: did you mean %q?", s+nextUnit[u])
			}
		}
	}
	// An exponent ("1e3s"): ParseDuration reads plain decimals only.
	if m := exponentRE.FindString(s); m != "" {
		if f, err := strconv.ParseFloat(m, 64); err == nil && !math.IsInf(f, 0) {
			n, unit := strconv.FormatFloat(f, 'f', -1, 64), s[len(m):]
			if unit == "" {
				return fmt.Sprintf("durations take no exponent: write the number out with a unit, e.g. %q", n+"s")
			}
			return fmt.Sprintf("durations take no exponent: write the number out, %q", n+unit)
		}
		return "durations take no exponent: write the number out"
	}
	// An unknown unit ("5x", "5sec", "2 days").
	if m := unitRE.FindStringSubmatch(s); m != nil {
		if _, known := nextUnit[m[1]]; !known && m[1] != "ns" {
			return fmt.Sprintf("unknown unit %q: use ns, us, ms, s, m or h, e.g. \"250ms\", \"5s\" or \"1m30s\"", m[1])
		}
	}
	return generic
}

// exponentRE is a number with an exponent, with or without a unit after it ("1e3s", "2.5E-3").
var exponentRE = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+`)

// unitRE finds the first unit-like word after a number.
var unitRE = regexp.MustCompile(`[0-9.]\s*([^0-9.\s+-][^0-9.]*)`)

// Rate is an arrival rate in events (or clients) per second. In YAML it is written "N/s",
// "N/m" or "N/h", or as a bare number meaning per second. It marshals as "N/s".
type Rate float64

// PerSecond returns the rate in events per second.
func (r Rate) PerSecond() float64 { return float64(r) }

// Interval returns the mean time between arrivals (0 for a zero rate).
func (r Rate) Interval() time.Duration {
	if r <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / float64(r))
}

// String formats r as "N/s" (exactly: the float is printed with the fewest digits that round-trip).
func (r Rate) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) + "/s" }

// MarshalYAML writes r as "N/s".
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// MarshalJSON writes r as "N/s".
func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// ParseRate parses "N/s", "N/m", "N/h" or a bare number (per second); on error its second
// result is the fix to show with the error.
func ParseRate(s string) (Rate, string, error) {
	const fix = `write a rate such as "20/s", "30/m" or "2/h"`
	s = strings.TrimSpace(s)
	num, unit, ok := strings.Cut(s, "/")
	per := 1.0
	if ok {
		switch strings.TrimSpace(unit) {
		case "s":
		case "m":
			per = 60
		case "h":
			per = 3600
		default:
			return 0, fix, fmt.Errorf("rate %q has unknown unit %q", s, unit)
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil {
		return 0, fix, fmt.Errorf("invalid rate %q", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fix, fmt.Errorf("rate %q is not finite", s)
	}
	return Rate(v / per), "", nil
}

// TimeDist is a distribution of times (dist.Spec in seconds). In YAML its numeric fields may be
// written as durations ("5ms") or as numbers of seconds; a bare duration or number is shorthand
// for a constant. Convert with dist.Spec(td) to sample it (samples are seconds).
type TimeDist dist.Spec

// Spec returns td as a dist.Spec (values in seconds).
func (td TimeDist) Spec() dist.Spec { return dist.Spec(td) }

// timeDistOut is how a TimeDist prints: durations instead of seconds.
type timeDistOut struct {
	Dist   string `yaml:"dist" json:"dist"`
	Value  string `yaml:"value,omitempty" json:"value,omitempty"`
	Min    string `yaml:"min,omitempty" json:"min,omitempty"`
	Max    string `yaml:"max,omitempty" json:"max,omitempty"`
	Mean   string `yaml:"mean,omitempty" json:"mean,omitempty"`
	Median string `yaml:"median,omitempty" json:"median,omitempty"`
	// Sigma, Alpha and S are shape parameters, not times.
	Sigma float64 `yaml:"sigma,omitempty" json:"sigma,omitempty"`
	Alpha float64 `yaml:"alpha,omitempty" json:"alpha,omitempty"`
	S     float64 `yaml:"s,omitempty" json:"s,omitempty"`
}

// Seconds formats v seconds as a duration string rounded to the nanosecond ("1.5s"), "" for
// zero.
func Seconds(v float64) string {
	if v == 0 {
		return ""
	}
	return time.Duration(math.Round(v * float64(time.Second))).String()
}

func (td TimeDist) out() timeDistOut {
	d := td.Dist
	if d == "" {
		d = "constant"
	}
	return timeDistOut{Dist: d, Value: Seconds(td.Value), Min: Seconds(td.Min), Max: Seconds(td.Max),
		Mean: Seconds(td.Mean), Median: Seconds(td.Median), Sigma: td.Sigma, Alpha: td.Alpha, S: td.S}
}

// MarshalYAML writes td with durations.
func (td TimeDist) MarshalYAML() (any, error) { return td.out(), nil }

// MarshalJSON writes td with durations.
func (td TimeDist) MarshalJSON() ([]byte, error) { return json.Marshal(td.out()) }

// DistKeys returns the keys a distribution mapping may hold, "dist" first.
func DistKeys() []string {
	return []string{"dist", "value", "min", "max", "mean", "median", "sigma", "alpha", "s"}
}

// IsTimeParam reports whether distribution parameter k is a time in a TimeDist (value, min,
// max, mean, median; the others are shapes).
func IsTimeParam(k string) bool {
	switch k {
	case "value", "min", "max", "mean", "median":
		return true
	}
	return false
}

// DistParams lists the parameters each distribution reads (min and max also clamp the
// distributions that do not use them as parameters, as dist.Sampler does).
func DistParams(name string) []string {
	switch name {
	case "constant", "":
		return []string{"value", "min", "max"}
	case "uniform":
		return []string{"min", "max"}
	case "exp":
		return []string{"mean", "min", "max"}
	case "normal":
		return []string{"mean", "sigma", "min", "max"}
	case "lognormal":
		return []string{"median", "sigma", "min", "max"}
	case "pareto":
		return []string{"min", "alpha"}
	case "zipf":
		return []string{"s", "max", "min"}
	}
	return nil
}

// FormatDist renders a distribution compactly for summaries ("exp(mean=2 max=10)", or the bare
// value of a constant); unit formats the values that are times (nil: numbers, 4 digits).
func FormatDist(s dist.Spec, unit func(float64) string) string {
	if unit == nil {
		unit = func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	}
	var parts []string
	add := func(k string, v float64, isTime bool) {
		if v == 0 {
			return
		}
		if isTime {
			parts = append(parts, k+"="+unit(v))
		} else {
			parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', 4, 64))
		}
	}
	name := s.Dist
	if name == "" {
		name = "constant"
	}
	if name == "constant" {
		return unit(s.Value)
	}
	add("mean", s.Mean, true)
	add("median", s.Median, true)
	add("sigma", s.Sigma, false)
	add("alpha", s.Alpha, false)
	add("s", s.S, false)
	add("min", s.Min, true)
	add("max", s.Max, true)
	return name + "(" + strings.Join(parts, " ") + ")"
}
