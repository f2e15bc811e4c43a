package summary

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the metrics the way k6 prints its end-of-test summary: one line per metric
// entry, dotted to a common column, values formatted by what they contain. A trend read from
// buckets shows its count and exact mean, and every other figure as the bucket that holds it;
// a threshold with a Reason shows it.
func WriteText(w io.Writer, s *Summary) error {
	r := s.Results
	c := r
	c.Metrics = append([]Metric(nil), r.Metrics...)
	c.Thresholds = append([]Threshold(nil), r.Thresholds...)
	c.Sort()
	width := 0
	for _, m := range c.Metrics {
		width = max(width, len(m.Key()))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	// Rows that say nothing are folded into one line: counters that counted nothing, gauges
	// that were 0 throughout. A trend identical to one listed before it (one histogram under
	// two names) points at it instead of repeating it.
	var zero []string
	zeroSeries := map[string]int{}
	shown := map[string]bool{} // names with a row that is not zero
	seen := map[string]string{}
	for _, m := range c.Metrics {
		if !isZero(m) {
			shown[m.Name] = true
		}
	}
	for _, m := range c.Metrics {
		key := m.Key()
		if isZero(m) {
			if zeroSeries[m.Name] == 0 {
				zero = append(zero, m.Name)
			}
			zeroSeries[m.Name]++
			continue
		}
		values := formatValues(m)
		if m.Type == Trend && m.Buckets == nil && !m.NoData() {
			id := TagString(m.Tags) + " " + values
			if first, ok := seen[id]; ok {
				values = "same as " + first
			} else {
				seen[id] = key
			}
		}
		fmt.Fprintf(tw, "  %s%s: %s\n", key, strings.Repeat(".", width-len(key)+1), values)
	}
	if len(zero) > 0 {
		parts := make([]string, len(zero))
		for i, n := range zero {
			parts[i] = n
			switch k := zeroSeries[n]; {
			case shown[n]:
				parts[i] += fmt.Sprintf(" (%d other series)", k)
			case k > 1:
				parts[i] += fmt.Sprintf(" (%d series)", k)
			}
		}
		fmt.Fprintf(tw, "  all zero: %s\n", strings.Join(parts, ", "))
	}
	for _, t := range c.Thresholds {
		mark := "✓"
		if !t.Passed {
			mark = "✗"
		}
		fmt.Fprintf(tw, "  %s %s%s %s: %s", mark, t.Metric, TagString(t.Tags), t.Expression, thresholdValue(c, t))
		if t.Reason != "" {
			fmt.Fprintf(tw, " (%s)", t.Reason)
		}
		if t.Description != "" {
			fmt.Fprintf(tw, " (%s)", t.Description)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// ThresholdMeasured renders what a threshold was evaluated on and why it stands: "1.504s",
// "not measured (the run did not produce …)", "(100ms, 1s] (inconclusive: …)".
func ThresholdMeasured(r Results, t Threshold) string {
	s := thresholdValue(r, t)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	return s
}

// thresholdValue renders the value a threshold was evaluated on in its metric's unit, or says
// that there was none.
func thresholdValue(r Results, t Threshold) string {
	contains := Default
	if m, ok := r.Find(t.Metric, t.Tags); ok && (m.Type == Trend || m.Type == Gauge) {
		contains = m.Contains // a counter's rate and a rate's ratio are plain numbers
	}
	switch {
	case t.Value != nil:
		return FormatValue(contains, *t.Value)
	case t.Bound != nil:
		return FormatBound(contains, *t.Bound)
	}
	return "not measured"
}

func formatValues(m Metric) string {
	v := m.Values
	f := func(x float64) string { return FormatValue(m.Contains, x) }
	switch m.Type {
	case Counter:
		return fmt.Sprintf("%s\t%s/s", f(v["count"]), f(v["rate"]))
	case Gauge:
		// min and max say something only when the gauge moved other than up to its value.
		if v["min"] == v["max"] && v["max"] == v["value"] || v["min"] == 0 && v["max"] == v["value"] {
			return f(v["value"])
		}
		return fmt.Sprintf("%s\tmin=%s max=%s", f(v["value"]), f(v["min"]), f(v["max"]))
	case Rate:
		return fmt.Sprintf("%.2f%%\t✓ %g ✗ %g", 100*v["rate"], v["passes"], v["fails"])
	case Trend:
		if m.Buckets != nil {
			return formatBucketTrend(m)
		}
		if m.NoData() {
			return "no data (nothing observed)"
		}
		parts := make([]string, 0, len(trendKeys))
		for _, k := range append([]string{"avg", "min", "med", "max", "p(90)", "p(99)", "p(99.9)"}, extraPercentiles(v)...) {
			parts = append(parts, k+"="+f(v[k]))
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprint(v)
}

// FormatValue renders a value in its unit: durations for time, IEC sizes for data, a plain
// number otherwise.
func FormatValue(contains ValueType, x float64) string {
	switch contains {
	case Time:
		d := time.Duration(x * float64(time.Second))
		switch {
		case d == 0:
			return "0s"
		case d < time.Microsecond:
			return d.String()
		case d < time.Millisecond:
			return d.Round(10 * time.Nanosecond).String()
		case d < time.Second:
			return d.Round(10 * time.Microsecond).String()
		default:
			return d.Round(time.Millisecond).String()
		}
	case Data:
		const unit = 1024
		if math.Abs(x) < unit {
			return fmt.Sprintf("%g B", math.Round(x*100)/100)
		}
		exp, div := 0, float64(unit)
		for n := math.Abs(x) / unit; n >= unit && exp < 5; n /= unit {
			div *= unit
			exp++
		}
		return fmt.Sprintf("%.1f %ciB", x/div, "KMGTPE"[exp])
	}
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return fmt.Sprintf("%d", int64(x))
	}
	return fmt.Sprintf("%.4g", x)
}

// isZero reports whether m says nothing: a counter that counted nothing, a gauge 0 throughout.
func isZero(m Metric) bool {
	v := m.Values
	switch m.Type {
	case Counter:
		return v["count"] == 0
	case Gauge:
		return v["value"] == 0 && v["min"] == 0 && v["max"] == 0
	}
	return false
}
