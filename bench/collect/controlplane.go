package collect

import (
	"fmt"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"

	"github.com/xdslab/xdslab/internal/summary"
)

// The control plane's metrics the collector reads: Istio-compatible names (so an istiod target
// works too) and xdslab's own where Istio has none.
const (
	cpPushCycles    = "xdslab_cp_push_cycles_total"
	cpEventsPerPush = "xdslab_cp_debounce_events_per_push"
	cpDebounceTime  = "pilot_debounce_time"
	cpInbound       = "pilot_inbound_updates"
	cpCacheReads    = "xds_cache_reads"
	cpPushes        = "pilot_xds_pushes"
	cpRejects       = "pilot_total_xds_rejects"
	cpServices      = "pilot_services"
	cpCPU           = "process_cpu_seconds_total"
	cpRSS           = "process_resident_memory_bytes"
	cpQuiet         = "xdslab_cp_debounce_quiet_seconds"
)

// histSnap is a Prometheus histogram at one moment: cumulative bucket counts by upper bound.
type histSnap struct {
	count, sum float64
	bounds     []float64
	cum        []float64
}

// sub returns h - prev (the observations between the two snapshots); bounds must match.
func (h histSnap) sub(prev histSnap) histSnap {
	out := histSnap{count: h.count - prev.count, sum: h.sum - prev.sum, bounds: h.bounds, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		p := 0.0
		if i < len(prev.cum) && len(prev.bounds) == len(h.bounds) {
			p = prev.cum[i]
		}
		out.cum[i] = h.cum[i] - p
	}
	return out
}

// buckets converts h to a summary's bucket histogram (finite bounds; the +Inf bucket is the
// count). Counts must be whole and must not go down from one bucket to the next or between two
// scrapes: a target that restarted between them resets its histograms, and its difference is
// no histogram at all.
func (h histSnap) buckets(source string) (summary.Buckets, error) {
	whole := func(x float64) (uint64, bool) {
		return uint64(x), x >= 0 && x == math.Trunc(x) && x < 1<<53
	}
	b := summary.Buckets{Source: source, Sum: h.sum}
	n, ok := whole(h.count)
	if !ok {
		return b, fmt.Errorf("%s: count %g is not a whole number of observations (did the target restart between the scrapes?)", source, h.count)
	}
	b.Count = n
	for i, le := range h.bounds {
		if math.IsInf(le, 1) {
			continue
		}
		c, ok := whole(h.cum[i])
		if !ok {
			return b, fmt.Errorf("%s: bucket le=%g holds %g observations, not a whole number (did the target restart between the scrapes?)", source, le, h.cum[i])
		}
		b.LE = append(b.LE, le)
		b.Cumulative = append(b.Cumulative, c)
	}
	return b, nil
}

// CPSample is the control plane's metrics at one moment (the zero value: none read).
type CPSample struct {
	ok          bool
	pushCycles  float64
	cyclesFrom  string // which metric counted push cycles ("" when none)
	inbound     float64
	hasInbound  bool
	debounce    histSnap
	hasDebounce bool
	perPush     histSnap
	hasPerPush  bool
	// cacheReads holds xds_cache_reads by type, then result (hit, miss, bypass). istiod's
	// series carry no xDS type (type="hit" or "miss", no result label): they are kept under
	// the type "", which has no row of its own.
	cacheReads map[string]map[string]float64
	pushes     map[string]float64 // type → responses sent
	rejects    map[string]float64
	services   float64
	cpu        float64
	hasCPU     bool
	rss        float64
	hasRSS     bool
	quiet      float64 // the debounce policy's quiet window at the last push
	hasQuiet   bool
}

// ReadCP extracts a CPSample from metric families (nil: none could be read).
func ReadCP(fams []*dto.MetricFamily) CPSample {
	s := CPSample{ok: fams != nil, cacheReads: map[string]map[string]float64{}, pushes: map[string]float64{}, rejects: map[string]float64{}}
	for _, f := range fams {
		switch f.GetName() {
		case cpPushCycles:
			s.pushCycles, s.cyclesFrom = sumValues(f), cpPushCycles
		case cpInbound:
			s.inbound, s.hasInbound = sumValues(f), true
		case cpDebounceTime:
			s.debounce, s.hasDebounce = histogramOf(f), true
		case cpEventsPerPush:
			s.perPush, s.hasPerPush = histogramOf(f), true
		case cpCacheReads:
			for _, m := range f.GetMetric() {
				typ, res := label(m, "type"), label(m, "result")
				if res == "" && !hasLabel(m, "result") {
					// istiod: xds_cache_reads{type="hit"|"miss"}, no per-xDS-type split.
					typ, res = "", typ
				}
				if s.cacheReads[typ] == nil {
					s.cacheReads[typ] = map[string]float64{}
				}
				s.cacheReads[typ][res] += value(f, m)
			}
		case cpPushes:
			for _, m := range f.GetMetric() {
				s.pushes[label(m, "type")] += value(f, m)
			}
		case cpRejects:
			for _, m := range f.GetMetric() {
				s.rejects[label(m, "type")] += value(f, m)
			}
		case cpServices:
			s.services = sumValues(f)
		case cpCPU:
			s.cpu, s.hasCPU = sumValues(f), true
		case cpRSS:
			s.rss, s.hasRSS = sumValues(f), true
		case cpQuiet:
			// One series, labelled with the control plane's policy.
			if ms := f.GetMetric(); len(ms) > 0 {
				s.quiet, s.hasQuiet = value(f, ms[0]), true
			}
		}
	}
	// Istio has no push-cycle counter, but observes pilot_debounce_time once per debounced push.
	if s.cyclesFrom == "" && s.hasDebounce {
		s.pushCycles, s.cyclesFrom = s.debounce.count, cpDebounceTime+" (count)"
	}
	return s
}

// resetBetween names a counter of the control plane that went down from sample a to the later
// sample b ("" when none did, or when either sample is missing). A counter only goes down when
// the target restarted between the scrapes, and then no difference of its counters — those that
// went down or any other — is a count of what happened in between.
func resetBetween(a, b CPSample) string {
	if !a.ok || !b.ok {
		return ""
	}
	down := func(x, y float64) bool { return y < x }
	switch {
	case a.cyclesFrom != "" && a.cyclesFrom == b.cyclesFrom && down(a.pushCycles, b.pushCycles):
		return a.cyclesFrom
	case a.hasInbound && b.hasInbound && down(a.inbound, b.inbound):
		return cpInbound
	case a.hasDebounce && b.hasDebounce && down(a.debounce.count, b.debounce.count):
		return cpDebounceTime
	case a.hasPerPush && b.hasPerPush && down(a.perPush.count, b.perPush.count):
		return cpEventsPerPush
	case a.hasCPU && b.hasCPU && down(a.cpu, b.cpu):
		return cpCPU
	}
	// A series gone from the later sample went down to nothing.
	for typ, byRes := range a.cacheReads {
		for res, n := range byRes {
			if down(n, b.cacheReads[typ][res]) {
				return cpCacheReads
			}
		}
	}
	for _, c := range []struct {
		name string
		a, b map[string]float64
	}{{cpPushes, a.pushes, b.pushes}, {cpRejects, a.rejects, b.rejects}} {
		for typ, n := range c.a {
			if down(n, c.b[typ]) {
				return c.name
			}
		}
	}
	return ""
}

// restartNote says that figures were left out because the target restarted between two
// scrapes ("" when it did not). Every pair of samples is checked: a counter back above its old
// value after a restart only shows against the sample in between.
func restartNote(samples ...CPSample) string {
	for i := range samples {
		for j := i + 1; j < len(samples); j++ {
			if c := resetBetween(samples[i], samples[j]); c != "" {
				return "the control plane restarted between the scrapes (" + c + " went down), so its counters count no run"
			}
		}
	}
	return ""
}

// RSS is the control plane's resident memory, when it exports it.
func (s CPSample) RSS() (float64, bool) { return s.rss, s.hasRSS }

// PushCycles is the control plane's push cycles so far, when it counts them.
func (s CPSample) PushCycles() (float64, bool) { return s.pushCycles, s.cyclesFrom != "" }

// Services is the number of services the control plane holds (pilot_services), when it
// exports it: how a run tells that a target loaded the initial topology.
func Services(fams []*dto.MetricFamily) (float64, bool) {
	return familyValue(fams, cpServices, nil)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func hasLabel(m *dto.Metric, name string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return true
		}
	}
	return false
}

func value(f *dto.MetricFamily, m *dto.Metric) float64 {
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	case dto.MetricType_SUMMARY:
		return float64(m.GetSummary().GetSampleCount())
	}
	return 0
}

func sumValues(f *dto.MetricFamily) float64 {
	v := 0.0
	for _, m := range f.GetMetric() {
		v += value(f, m)
	}
	return v
}

// familyValue sums the series of the named family whose labels include want.
func familyValue(fams []*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		v := 0.0
	next:
		for _, m := range f.GetMetric() {
			for k, w := range want {
				if label(m, k) != w {
					continue next
				}
			}
			v += value(f, m)
		}
		return v, true
	}
	return 0, false
}

// histogramOf merges every series of a histogram family.
func histogramOf(f *dto.MetricFamily) histSnap {
	var h histSnap
	idx := map[float64]int{}
	for _, m := range f.GetMetric() {
		hm := m.GetHistogram()
		if hm == nil {
			continue
		}
		h.count += float64(hm.GetSampleCount())
		h.sum += hm.GetSampleSum()
		for _, b := range hm.GetBucket() {
			ub := b.GetUpperBound()
			i, ok := idx[ub]
			if !ok {
				i = len(h.bounds)
				idx[ub] = i
				h.bounds = append(h.bounds, ub)
				h.cum = append(h.cum, 0)
			}
			h.cum[i] += float64(b.GetCumulativeCount())
		}
	}
	// Order by bound (series normally share bounds already in order).
	order := make([]int, len(h.bounds))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return h.bounds[order[a]] < h.bounds[order[b]] })
	bounds, cum := make([]float64, len(order)), make([]float64, len(order))
	for i, o := range order {
		bounds[i], cum[i] = h.bounds[o], h.cum[o]
	}
	h.bounds, h.cum = bounds, cum
	// The +Inf bucket holds the total count; client_golang leaves it implicit, the text format
	// writes it.
	if n := len(h.bounds); n == 0 || !math.IsInf(h.bounds[n-1], 1) {
		h.bounds = append(h.bounds, math.Inf(1))
		h.cum = append(h.cum, h.count)
	}
	return h
}
