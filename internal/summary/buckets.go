package summary

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Bound says a value is known only to lie in a bucket: greater than Gt and at most Le, the
// (Gt, Le] of a Prometheus bucket. A nil Gt is no lower bound (the first bucket), a nil Le no
// upper bound (the +Inf bucket).
type Bound struct {
	Gt *float64 `json:"gt,omitempty"`
	Le *float64 `json:"le,omitempty"`
}

// Lower is Gt, or -Inf without one.
func (b Bound) Lower() float64 {
	if b.Gt == nil {
		return math.Inf(-1)
	}
	return *b.Gt
}

// Upper is Le, or +Inf without one.
func (b Bound) Upper() float64 {
	if b.Le == nil {
		return math.Inf(1)
	}
	return *b.Le
}

// Equal reports whether the two bounds are the same interval.
func (b Bound) Equal(o Bound) bool { return b.Lower() == o.Lower() && b.Upper() == o.Upper() }

func (b Bound) validate() error {
	for _, p := range []*float64{b.Gt, b.Le} {
		if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
			return errors.New("bound must be finite (leave gt or le out for none)")
		}
	}
	if b.Gt != nil && b.Le != nil && !(*b.Gt < *b.Le) {
		return fmt.Errorf("bound (%g, %g] is empty: need gt < le", *b.Gt, *b.Le)
	}
	return nil
}

// FormatBound renders b in contains' unit: "≤ 100ms" (first bucket), "in (100ms, 1s]",
// "> 30s" (+Inf bucket), "unbounded" (a histogram with no finite bucket).
func FormatBound(contains ValueType, b Bound) string {
	f := func(x float64) string { return FormatValue(contains, x) }
	switch {
	case b.Gt == nil && b.Le == nil:
		return "unbounded"
	case b.Gt == nil:
		return "≤ " + f(*b.Le)
	case b.Le == nil:
		return "> " + f(*b.Gt)
	}
	return "in (" + f(*b.Gt) + ", " + f(*b.Le) + "]"
}

// Buckets is a Prometheus bucket histogram (the observations between two scrapes of a target's
// histogram): Cumulative[i] observations were at most LE[i]; the +Inf bucket is implicit and
// holds Count. Count and Sum are exact, so the mean is; a quantile is known only to lie in the
// bucket that holds it.
type Buckets struct {
	// Source is the Prometheus histogram it was read from (e.g. pilot_debounce_time).
	Source     string    `json:"source,omitempty"`
	Count      uint64    `json:"count"`
	Sum        float64   `json:"sum"`
	LE         []float64 `json:"le"`
	Cumulative []uint64  `json:"cumulative"`
}

func (b Buckets) validate() error {
	if len(b.LE) != len(b.Cumulative) {
		return fmt.Errorf("buckets: %d bounds (le) but %d cumulative counts", len(b.LE), len(b.Cumulative))
	}
	if math.IsNaN(b.Sum) || math.IsInf(b.Sum, 0) {
		return errors.New("buckets: sum is not finite")
	}
	for i, le := range b.LE {
		if math.IsNaN(le) || math.IsInf(le, 0) {
			return fmt.Errorf("buckets: le[%d] is not finite (the +Inf bucket is implicit: count)", i)
		}
		if i > 0 && !(b.LE[i-1] < le) {
			return fmt.Errorf("buckets: le[%d] = %g does not increase from %g", i, le, b.LE[i-1])
		}
		if i > 0 && b.Cumulative[i] < b.Cumulative[i-1] {
			return fmt.Errorf("buckets: cumulative[%d] = %d is below cumulative[%d] = %d", i, b.Cumulative[i], i-1, b.Cumulative[i-1])
		}
	}
	if n := len(b.Cumulative); n > 0 && b.Cumulative[n-1] > b.Count {
		return fmt.Errorf("buckets: cumulative[%d] = %d exceeds count %d", n-1, b.Cumulative[n-1], b.Count)
	}
	return nil
}

// quantileRank is the nearest rank of the q-quantile of n observations: ⌈q·n⌉, at least 1.
// A product that lands a rounding error above a whole number (0.99 × 100) counts as that number.
func quantileRank(q float64, n uint64) uint64 {
	x := q * float64(n)
	if f := math.Floor(x); x-f <= 4*(math.Nextafter(x, math.Inf(1))-x) {
		x = f
	}
	r := uint64(math.Ceil(x))
	return min(max(r, 1), n)
}

// Quantile returns the bucket that holds the q-quantile (0 ≤ q ≤ 1), defined by nearest rank as
// HDR histograms define it: the ⌈q·count⌉-th smallest observation (q = 0: the smallest, q = 1:
// the largest). ok is false for an empty histogram: no data, not zero.
func (b Buckets) Quantile(q float64) (Bound, bool) {
	if b.Count == 0 || math.IsNaN(q) {
		return Bound{}, false
	}
	return b.RankBound(quantileRank(math.Min(math.Max(q, 0), 1), b.Count))
}

// RankBound returns the bucket that holds the r-th smallest observation (1 ≤ r ≤ count): the
// first bucket whose cumulative count reaches r, (LE[i-1], LE[i]]; the first bucket has no lower
// bound, the +Inf bucket no upper one. ok is false when there is no such observation.
func (b Buckets) RankBound(r uint64) (Bound, bool) {
	if r < 1 || r > b.Count {
		return Bound{}, false
	}
	for i, c := range b.Cumulative {
		if c >= r {
			out := Bound{Le: ptr(b.LE[i])}
			if i > 0 {
				out.Gt = ptr(b.LE[i-1])
			}
			return out, true
		}
	}
	// The +Inf bucket: above the last finite bound.
	if n := len(b.LE); n > 0 {
		return Bound{Gt: ptr(b.LE[n-1])}, true
	}
	return Bound{}, true
}

func ptr(x float64) *float64 { return &x }

// bucketQuantiles are the trend keys a bucket trend bounds, with their quantiles, in order.
var bucketQuantiles = []struct {
	key string
	q   float64
}{{"min", 0}, {"med", 0.5}, {"p(50)", 0.5}, {"p(90)", 0.9}, {"p(99)", 0.99}, {"p(99.9)", 0.999}, {"max", 1}}

// NewBucketTrend summarises a bucket histogram as a trend without inventing precision: values
// holds only what the histogram gives exactly — avg (sum ÷ count) — and bounds holds every
// other trend key (min, med, p(50), p(90), p(99), p(99.9), max) as the bucket that holds it. An
// empty histogram has neither: no data. The buckets themselves go with the metric.
func NewBucketTrend(name string, contains ValueType, b Buckets, tags map[string]string) (Metric, error) {
	if err := b.validate(); err != nil {
		return Metric{}, fmt.Errorf("summary: %s: %w", name, err)
	}
	m := Metric{Name: name, Type: Trend, Contains: contains, Tags: tags, Values: map[string]float64{}}
	if b.Count > 0 {
		m.Values["avg"] = b.Sum / float64(b.Count)
		m.Bounds = make(map[string]Bound, len(bucketQuantiles))
		for _, bq := range bucketQuantiles {
			m.Bounds[bq.key], _ = b.Quantile(bq.q)
		}
	}
	c := b
	c.LE = append([]float64{}, b.LE...)
	c.Cumulative = append([]uint64{}, b.Cumulative...)
	m.Buckets = &c
	return m, nil
}

// Bounded reports whether the metric's value key is known only as a bound (see NewBucketTrend),
// and the bound.
func (m Metric) Bounded(key string) (Bound, bool) {
	b, ok := m.Bounds[key]
	if !ok && key == "p(50)" {
		b, ok = m.Bounds["med"]
	}
	return b, ok
}

// validateBucketTrend checks a trend read from buckets: its values and bounds must be the ones
// its buckets give (NewBucketTrend), so a file cannot claim a precision its buckets lack.
func (m Metric) validateBucketTrend() error {
	if m.Type != Trend {
		return fmt.Errorf("a %s metric cannot carry buckets or bounds", m.Type)
	}
	if m.Buckets == nil {
		return errors.New("bounds need the buckets they were read from")
	}
	if m.Histogram != nil {
		return errors.New("a trend read from buckets carries no HDR histogram")
	}
	want, err := NewBucketTrend(m.Name, m.Contains, *m.Buckets, m.Tags)
	if err != nil {
		return err
	}
	for k, v := range m.Values {
		w, ok := want.Values[k]
		if !ok {
			_, isP := percentileOf(k)
			if _, bounded := want.Bounds[k]; bounded || isP {
				return fmt.Errorf("values[%q] is a point, but buckets only bound it: write it in bounds", k)
			}
			return fmt.Errorf("values[%q]: a trend read from buckets has no such value", k)
		}
		if math.Abs(v-w) > 1e-12*math.Max(math.Abs(w), 1e-300) {
			return fmt.Errorf("values[%q] = %g, but its buckets give %g", k, v, w)
		}
	}
	for k, b := range m.Bounds {
		if err := b.validate(); err != nil {
			return fmt.Errorf("bounds[%q]: %w", k, err)
		}
		w, ok := want.Bounds[k]
		if p, isP := percentileOf(k); !ok && isP && m.Buckets.Count > 0 {
			w, ok = m.Buckets.Quantile(p / 100) // a percentile a threshold named (WithPercentiles)
		}
		if !ok {
			return fmt.Errorf("bounds[%q]: its buckets bound no such value", k)
		}
		if !b.Equal(w) {
			return fmt.Errorf("bounds[%q] is %s, but its buckets put it %s", k, FormatBound(m.Contains, b), FormatBound(m.Contains, w))
		}
	}
	var missing []string
	for k := range want.Values {
		if _, ok := m.Values[k]; !ok {
			missing = append(missing, "values["+k+"]")
		}
	}
	for _, bq := range bucketQuantiles {
		if _, ok := want.Bounds[bq.key]; ok {
			if _, ok := m.Bounds[bq.key]; !ok {
				missing = append(missing, "bounds["+bq.key+"]")
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a trend read from %d observations lacks %s", m.Buckets.Count, strings.Join(missing, ", "))
	}
	return nil
}

// formatBucketTrend is a bucket trend's text: count, avg, then each bound, keys sharing one
// bucket listed together, e.g. "count=18 avg=100.7ms min,med,p(90),p(99),p(99.9),max in
// (100ms, 1s] (pilot_debounce_time buckets)".
func formatBucketTrend(m Metric) string {
	var b strings.Builder
	fmt.Fprintf(&b, "count=%d", m.Buckets.Count)
	if m.Buckets.Count == 0 {
		b.WriteString(" no data")
	} else {
		fmt.Fprintf(&b, " avg=%s", FormatValue(m.Contains, m.Values["avg"]))
		var keys []string
		var cur Bound
		flush := func() {
			if len(keys) > 0 {
				fmt.Fprintf(&b, " %s %s", strings.Join(keys, ","), FormatBound(m.Contains, cur))
			}
		}
		for _, bq := range bucketQuantiles {
			if bq.key == "p(50)" {
				continue // med
			}
			bd, ok := m.Bounds[bq.key]
			if !ok {
				continue
			}
			if len(keys) > 0 && !bd.Equal(cur) {
				flush()
				keys = nil
			}
			keys, cur = append(keys, bq.key), bd
		}
		flush()
		keys = nil
		for _, k := range extraPercentiles(m.Bounds) {
			bd := m.Bounds[k]
			if len(keys) > 0 && !bd.Equal(cur) {
				flush()
				keys = nil
			}
			keys, cur = append(keys, k), bd
		}
		flush()
	}
	if m.Buckets.Source != "" {
		fmt.Fprintf(&b, " (%s buckets)", m.Buckets.Source)
	} else {
		b.WriteString(" (buckets)")
	}
	return b.String()
}

// extraPercentiles returns the percentile keys of values (a map of Values or Bounds) beyond the
// ones every trend has (the ones thresholds named, see WithPercentiles), by percentile.
func extraPercentiles[V any](values map[string]V) []string {
	var ps []float64
	for k := range values {
		if p, ok := percentileOf(k); ok && !slices.Contains(trendKeys, k) {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = PercentileKey(p)
	}
	return out
}
