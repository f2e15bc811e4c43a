package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/internal/atomicfile"
)

// Version is the summary format version this package writes and reads.
const Version = "1"

// MetricType is a k6 metric type.
type MetricType string

// The metric types.
const (
	Counter MetricType = "counter"
	Gauge   MetricType = "gauge"
	Trend   MetricType = "trend"
	Rate    MetricType = "rate"
)

// ValueType says what a metric's values measure.
type ValueType string

// The value types.
const (
	Default ValueType = "default"
	Time    ValueType = "time" // seconds
	Data    ValueType = "data" // bytes
)

// The value keys of each metric type (k6's names).
var (
	counterKeys = []string{"count", "rate"}
	gaugeKeys   = []string{"value", "min", "max"}
	trendKeys   = []string{"min", "med", "avg", "max", "p(50)", "p(90)", "p(99)", "p(99.9)"}
	rateKeys    = []string{"rate", "passes", "fails"}
)

// trendPercentiles pairs each trend percentile key with its percentile.
var trendPercentiles = []struct {
	key string
	p   float64
}{{"med", 50}, {"p(50)", 50}, {"p(90)", 90}, {"p(99)", 99}, {"p(99.9)", 99.9}}

// Summary is the whole document.
type Summary struct {
	Version  string          `json:"version"`
	Metadata Metadata        `json:"metadata"`
	Config   json.RawMessage `json:"config,omitempty"`
	Results  Results         `json:"results"`
}

// Metadata says what produced the summary and when.
type Metadata struct {
	Tool            string            `json:"tool"`
	ToolVersion     string            `json:"toolVersion,omitempty"`
	Command         string            `json:"command,omitempty"`
	Started         time.Time         `json:"started"`
	Ended           time.Time         `json:"ended"`
	DurationSeconds float64           `json:"durationSeconds"`
	Labels          map[string]string `json:"labels,omitempty"`

	// The fields below are set by distributed runs (docs/distributed.md); a single run leaves
	// them empty, and summaries without them stay valid.

	// Segment is the fleet shard that wrote the summary (xdslab fleet --segment I/N).
	Segment *Segment `json:"segment,omitempty"`
	// StartAt is the shared start time the process waited for (--start-at).
	StartAt *time.Time `json:"startAt,omitempty"`
	// Clock is this process's clock offset from the reference clock (the simulator's).
	Clock *Clock `json:"clock,omitempty"`
	// Probes is where the process received the simulator's probe events (a URL); a shard
	// with Probes set is expected to hold every event the simulator published.
	Probes string `json:"probes,omitempty"`
	// Phases are the run's phases with their wall-clock bounds (on this process's clock).
	Phases []Phase `json:"phases,omitempty"`
	// Shards lists the inputs of a merged summary (xdslab merge).
	Shards []Shard `json:"shards,omitempty"`
}

// Segment is shard Index of Count: the fleet clients k with k mod Count == Index.
type Segment struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// String renders the segment as I/N.
func (s Segment) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Clock is a measured clock offset: reference time minus local time, with the measurement's
// uncertainty (half the best round trip).
type Clock struct {
	Reference          string  `json:"reference"`
	OffsetSeconds      float64 `json:"offsetSeconds"`
	UncertaintySeconds float64 `json:"uncertaintySeconds"`
	Samples            int     `json:"samples"`
}

// Phase is one phase of a run (setup, connect, measure, drain).
type Phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Shard describes one input of a merged summary.
type Shard struct {
	Source  string    `json:"source"`
	Command string    `json:"command,omitempty"`
	Segment *Segment  `json:"segment,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	Clock   *Clock    `json:"clock,omitempty"`
	// Events is how many probe events the input held.
	Events int `json:"events"`
}

// Results holds the metrics and the threshold verdicts.
type Results struct {
	Passed     bool        `json:"passed"`
	Metrics    []Metric    `json:"metrics"`
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Events holds one entry per simulator event with what is needed to merge shards
	// exactly (convergence is a maximum over clients, so per-shard histograms of it cannot be
	// added): a fleet shard's view of each event, or the simulator's record of it.
	Events []Event `json:"events,omitempty"`
}

// Event is one simulator event as one process saw it. A fleet writes the client counts (the
// clients of this process in the event's reach, by class) and the event's convergence over
// them; the simulator writes T0 and Acked (shards that acknowledged the probe before the change
// was written).
type Event struct {
	ID                 uint64    `json:"id"`
	Kind               string    `json:"kind"`
	T0                 time.Time `json:"t0,omitzero"`
	Reached            int       `json:"reached,omitempty"`
	Observed           int       `json:"observed,omitempty"`
	AlreadyHeld        int       `json:"alreadyHeld,omitempty"`
	Superseded         int       `json:"superseded,omitempty"`
	Missed             int       `json:"missed,omitempty"`
	Unresolved         int       `json:"unresolved,omitempty"`
	Received           int       `json:"received,omitempty"`
	EarlyReceives      int       `json:"earlyReceives,omitempty"`
	ConvergenceSeconds float64   `json:"convergenceSeconds,omitempty"`
	// PushLatencies counts the clients with a push latency of the event: those that observed
	// it and those a response moved past it (superseded, see measure.Matcher).
	PushLatencies int  `json:"pushLatencies,omitempty"`
	Censored      bool `json:"censored,omitempty"`
	Acked         int  `json:"acked,omitempty"`
	// ShardsMissing (merged summaries) counts fleet shards that subscribed to the probes but
	// hold no record of the event: their clients' view of it is unknown, so it is incomplete.
	ShardsMissing int `json:"shardsMissing,omitempty"`
	// MissedBy names a few of the clients that missed the event (node ids), to look into; a
	// merged summary keeps the first few the shards name.
	MissedBy []string `json:"missedBy,omitempty"`
}

// Complete reports whether every client in reach observed, already held or superseded it.
func (e Event) Complete() bool { return e.Missed == 0 && e.Unresolved == 0 && e.ShardsMissing == 0 }

// Measured reports whether the event enters the convergence distribution (as the matcher
// decides: it has a t0 and some client has a push latency of it, or some client missed it).
// Summaries written before PushLatencies count observations only.
func (e Event) Measured() bool {
	return !e.T0.IsZero() && (e.Observed > 0 || e.PushLatencies > 0 || !e.Complete())
}

// Metric is one metric, or one tagged dimension of it.
type Metric struct {
	Name     string             `json:"name"`
	Type     MetricType         `json:"type"`
	Contains ValueType          `json:"contains"`
	Values   map[string]float64 `json:"values"`
	// Bounds holds the values known only to lie in a bucket (a trend read from a Prometheus
	// bucket histogram, see NewBucketTrend): such a key is in Bounds, never in Values.
	Bounds map[string]Bound `json:"bounds,omitempty"`
	// Buckets is the bucket histogram a bounded trend was read from.
	Buckets   *Buckets          `json:"buckets,omitempty"`
	Tags      map[string]string `json:"tags,omitempty"`
	Histogram *Histogram        `json:"histogram,omitempty"`
}

// Histogram is a trend's full distribution.
type Histogram struct {
	// Scale converts a recorded value to the metric's base unit (1e-6 for microseconds).
	Scale float64 `json:"scale"`
	// HDR is the base64 HdrHistogram V2 compressed encoding.
	HDR string `json:"hdr"`
}

// Threshold is one threshold expression and its verdict.
type Threshold struct {
	Metric     string            `json:"metric"`
	Tags       map[string]string `json:"tags,omitempty"`
	Expression string            `json:"expression"`
	Passed     bool              `json:"passed"`
	// Value is the metric value the expression was evaluated on.
	Value *float64 `json:"value,omitempty"`
	// Bound is what the expression was evaluated on when the value is known only to lie in a
	// bucket (Value is then nil): it passes only when every value in the bound would.
	Bound *Bound `json:"bound,omitempty"`
	// Inconclusive: the bound neither proves nor disproves the expression. The threshold
	// fails: a gate never passes on a figure nobody measured.
	Inconclusive bool `json:"inconclusive,omitempty"`
	// Reason says what the verdict rests on when it is not a plain value: a bound, a metric
	// or aggregation the run did not produce, a histogram with no observations.
	Reason string `json:"reason,omitempty"`
	// Description says what a threshold the scenario did not write checks (an implicit one,
	// such as every client group reaching its full config); empty for written ones.
	Description string `json:"description,omitempty"`
}

// NewCounter is a counter with its count and its rate over dur.
func NewCounter(name string, contains ValueType, count float64, dur time.Duration, tags map[string]string) Metric {
	rate := 0.0
	if dur > 0 {
		rate = count / dur.Seconds()
	}
	return Metric{Name: name, Type: Counter, Contains: contains, Tags: tags,
		Values: map[string]float64{"count": count, "rate": rate}}
}

// NewGauge is a gauge with its last value and the min and max it took.
func NewGauge(name string, contains ValueType, value, minV, maxV float64, tags map[string]string) Metric {
	return Metric{Name: name, Type: Gauge, Contains: contains, Tags: tags,
		Values: map[string]float64{"value": value, "min": minV, "max": maxV}}
}

// NewRate is a k6 rate: the fraction of passes among passes+fails.
func NewRate(name string, passes, fails float64, tags map[string]string) Metric {
	rate := 0.0
	if passes+fails > 0 {
		rate = passes / (passes + fails)
	}
	return Metric{Name: name, Type: Rate, Contains: Default, Tags: tags,
		Values: map[string]float64{"rate": rate, "passes": passes, "fails": fails}}
}

// NewTrend summarises h, whose recorded values times scale are in the base unit, and embeds
// its encoding. An empty histogram gives zero values.
func NewTrend(name string, contains ValueType, h *hdr.Histogram, scale float64, tags map[string]string) (Metric, error) {
	m := Metric{Name: name, Type: Trend, Contains: contains, Tags: tags, Values: TrendValues(h, scale)}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return Metric{}, fmt.Errorf("summary: encode histogram of %s: %w", name, err)
	}
	m.Histogram = &Histogram{Scale: scale, HDR: string(enc)}
	return m, nil
}

// TrendValues computes the trend values of h (values × scale).
func TrendValues(h *hdr.Histogram, scale float64) map[string]float64 {
	v := make(map[string]float64, len(trendKeys))
	for _, k := range trendKeys {
		v[k] = 0
	}
	if h == nil || h.TotalCount() == 0 {
		return v
	}
	v["min"] = float64(h.Min()) * scale
	v["max"] = float64(h.Max()) * scale
	v["avg"] = h.Mean() * scale
	for _, tp := range trendPercentiles {
		v[tp.key] = float64(h.ValueAtPercentile(tp.p)) * scale
	}
	return v
}

// Decode returns the histogram of a trend (nil when it carries none).
func (h *Histogram) Decode() (*hdr.Histogram, error) {
	if h == nil {
		return nil, nil
	}
	out, err := hdr.Decode([]byte(h.HDR))
	if err != nil {
		return nil, fmt.Errorf("decode hdr histogram: %w", err)
	}
	return out, nil
}

// Key identifies a metric entry: its name and its tags, in a stable text form.
func (m Metric) Key() string { return m.Name + TagString(m.Tags) }

// NoData reports a trend that observed nothing: its HDR histogram (or its Prometheus buckets)
// counts no value, so its zero values are not measurements. A threshold on it fails ("no
// data"), and the console shows it as such: nothing measured is not zero.
func (m Metric) NoData() bool {
	if m.Type != Trend {
		return false
	}
	if m.Buckets != nil {
		return m.Buckets.Count == 0
	}
	if m.Histogram == nil {
		return false
	}
	h, err := m.Histogram.Decode()
	return err == nil && h != nil && h.TotalCount() == 0
}

// TagString renders tags as {k="v",...} sorted by key, or "" for none.
func TagString(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, tags[k])
	}
	b.WriteByte('}')
	return b.String()
}

// Find returns the metric with name and exactly these tags (nil tags: the untagged total).
func (r Results) Find(name string, tags map[string]string) (Metric, bool) {
	key := name + TagString(tags)
	for _, m := range r.Metrics {
		if m.Key() == key {
			return m, true
		}
	}
	return Metric{}, false
}

// Sort orders metrics by name then tags, and thresholds by metric, tags and expression.
func (r *Results) Sort() {
	slices.SortStableFunc(r.Metrics, func(a, b Metric) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(TagString(a.Tags), TagString(b.Tags))
	})
	slices.SortStableFunc(r.Thresholds, func(a, b Threshold) int {
		if c := strings.Compare(a.Metric+TagString(a.Tags), b.Metric+TagString(b.Tags)); c != 0 {
			return c
		}
		return strings.Compare(a.Expression, b.Expression)
	})
}

// Validate checks the document's invariants: known version, types and value kinds, the value
// keys each type requires, finite values, unique metric keys, decodable histograms.
func (s *Summary) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("version %q is not supported: this xdslab reads version %q", s.Version, Version)
	}
	var errs []error
	seen := make(map[string]bool, len(s.Results.Metrics))
	for i, m := range s.Results.Metrics {
		if err := m.validate(); err != nil {
			errs = append(errs, fmt.Errorf("results.metrics[%d] (%s): %w", i, m.Key(), err))
			continue
		}
		if seen[m.Key()] {
			errs = append(errs, fmt.Errorf("results.metrics[%d]: duplicate metric %s", i, m.Key()))
		}
		seen[m.Key()] = true
	}
	for i, t := range s.Results.Thresholds {
		switch {
		case t.Metric == "" || t.Expression == "":
			errs = append(errs, fmt.Errorf("results.thresholds[%d]: needs metric and expression", i))
		case t.Inconclusive && t.Passed:
			errs = append(errs, fmt.Errorf("results.thresholds[%d]: an inconclusive threshold cannot pass", i))
		case t.Inconclusive && t.Bound == nil:
			errs = append(errs, fmt.Errorf("results.thresholds[%d]: inconclusive needs the bound it rests on", i))
		case t.Value != nil && t.Bound != nil:
			errs = append(errs, fmt.Errorf("results.thresholds[%d]: a value is a point or a bound, not both", i))
		case t.Bound != nil:
			if err := t.Bound.validate(); err != nil {
				errs = append(errs, fmt.Errorf("results.thresholds[%d]: %w", i, err))
			}
		}
	}
	errs = append(errs, s.Metadata.validate()...)
	ids := make(map[uint64]bool, len(s.Results.Events))
	for i, e := range s.Results.Events {
		if err := e.validate(); err != nil {
			errs = append(errs, fmt.Errorf("results.events[%d] (id %d): %w", i, e.ID, err))
		}
		if ids[e.ID] {
			errs = append(errs, fmt.Errorf("results.events[%d]: duplicate event id %d", i, e.ID))
		}
		ids[e.ID] = true
	}
	return errors.Join(errs...)
}

func (m Metadata) validate() []error {
	var errs []error
	checkSeg := func(where string, g *Segment) {
		if g != nil && (g.Count < 1 || g.Index < 0 || g.Index >= g.Count) {
			errs = append(errs, fmt.Errorf("%s: segment %d/%d: need 0 <= index < count", where, g.Index, g.Count))
		}
	}
	checkClock := func(where string, c *Clock) {
		if c == nil {
			return
		}
		for _, v := range []float64{c.OffsetSeconds, c.UncertaintySeconds} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				errs = append(errs, fmt.Errorf("%s: clock values must be finite", where))
				return
			}
		}
		if c.UncertaintySeconds < 0 || c.Samples < 0 {
			errs = append(errs, fmt.Errorf("%s: clock uncertainty and samples must be >= 0", where))
		}
	}
	checkSeg("metadata", m.Segment)
	checkClock("metadata", m.Clock)
	for i, p := range m.Phases {
		if p.Name == "" || p.End.Before(p.Start) {
			errs = append(errs, fmt.Errorf("metadata.phases[%d]: needs a name and end >= start", i))
		}
	}
	for i, sh := range m.Shards {
		checkSeg(fmt.Sprintf("metadata.shards[%d]", i), sh.Segment)
		checkClock(fmt.Sprintf("metadata.shards[%d]", i), sh.Clock)
		if sh.Events < 0 {
			errs = append(errs, fmt.Errorf("metadata.shards[%d]: events must be >= 0", i))
		}
	}
	return errs
}

func (e Event) validate() error {
	for _, n := range []int{e.Reached, e.Observed, e.AlreadyHeld, e.Superseded, e.Missed, e.Unresolved, e.Received, e.EarlyReceives, e.Acked, e.ShardsMissing, e.PushLatencies} {
		if n < 0 {
			return errors.New("counts must be >= 0")
		}
	}
	if e.Reached != e.Observed+e.AlreadyHeld+e.Superseded+e.Missed {
		return fmt.Errorf("reached %d != observed + alreadyHeld + superseded + missed (%d)", e.Reached, e.Observed+e.AlreadyHeld+e.Superseded+e.Missed)
	}
	if math.IsNaN(e.ConvergenceSeconds) || math.IsInf(e.ConvergenceSeconds, 0) || e.ConvergenceSeconds < 0 {
		return fmt.Errorf("convergenceSeconds must be finite and >= 0, got %g", e.ConvergenceSeconds)
	}
	return nil
}

func (m Metric) validate() error {
	if m.Name == "" {
		return errors.New("metric has no name")
	}
	var keys []string
	switch m.Type {
	case Counter:
		keys = counterKeys
	case Gauge:
		keys = gaugeKeys
	case Trend:
		keys = trendKeys
	case Rate:
		keys = rateKeys
	default:
		return fmt.Errorf("unknown type %q: use counter, gauge, trend or rate", m.Type)
	}
	switch m.Contains {
	case Default, Time, Data:
	default:
		return fmt.Errorf("unknown contains %q: use default, time or data", m.Contains)
	}
	for k, v := range m.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("values[%q] is not finite", k)
		}
	}
	if m.Buckets != nil || m.Bounds != nil {
		return m.validateBucketTrend()
	}
	for _, k := range keys {
		if _, ok := m.Values[k]; !ok {
			return fmt.Errorf("%s metric lacks values[%q]", m.Type, k)
		}
	}
	if m.Type == Trend {
		for k := range m.Values {
			if _, ok := percentileOf(k); !ok && !slices.Contains(trendKeys, k) {
				return fmt.Errorf("values[%q]: a trend has %s and any p(N) with 0 <= N <= 100", k, strings.Join(trendKeys, ", "))
			}
		}
	}
	if m.Histogram != nil {
		if m.Type != Trend {
			return fmt.Errorf("a %s metric cannot carry a histogram", m.Type)
		}
		if !(m.Histogram.Scale > 0) || math.IsInf(m.Histogram.Scale, 0) {
			return fmt.Errorf("histogram scale must be > 0, got %g", m.Histogram.Scale)
		}
		if _, err := m.Histogram.Decode(); err != nil {
			return err
		}
	}
	return nil
}

// Encode writes s as indented JSON, metrics sorted (see Results.Sort).
func Encode(w io.Writer, s *Summary) error {
	c := *s
	c.Results.Metrics = slices.Clone(s.Results.Metrics)
	c.Results.Thresholds = slices.Clone(s.Results.Thresholds)
	c.Results.Sort()
	if c.Results.Metrics == nil {
		c.Results.Metrics = []Metric{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return fmt.Errorf("summary: encode: %w", err)
	}
	return nil
}

// Decode reads and validates a summary. Errors name the line (and column) of bad JSON; name is
// the source (a file name) used in messages.
func Decode(name string, data []byte) (*Summary, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%s: the file is empty: %s", name, summaryFix)
	}
	if trimmed[0] != '{' {
		// A scenario (YAML), a report, a list: not a summary at all.
		return nil, fmt.Errorf("%s: not a JSON object (it starts with %q): %s", position(name, data, int64(len(data)-len(trimmed)), nil), firstLine(trimmed), summaryFix)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Summary
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: the JSON ends before the summary does (truncated, e.g. by a run killed while writing it): re-run, or give a complete summary.json", position(name, data, int64(len(data)), nil))
		}
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return nil, fmt.Errorf("%s: %w: not an xdslab summary.json (or one of a newer xdslab); %s", position(name, data, dec.InputOffset(), err), err, summaryFix)
		}
		return nil, fmt.Errorf("%s: %w", position(name, data, dec.InputOffset(), err), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the summary object", position(name, data, dec.InputOffset(), nil))
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// summaryFix says which files Decode reads.
const summaryFix = "give a summary.json as 'xdslab run --out DIR' or 'merge --out DIR' writes it (or 'fleet' or 'sim' with --summary FILE)"

// firstLine is the start of data's first line, at most 40 bytes, for a message.
func firstLine(data []byte) string {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	data = bytes.TrimRight(data, "\r")
	if len(data) > 40 {
		return string(data[:40]) + "…"
	}
	return string(data)
}

// position renders name:line:col for the error's offset (the decoder's offset when the error
// carries none).
func position(name string, data []byte, off int64, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("%s:%d:%d", name, line, col)
}

// ReadFile reads and validates the summary at path.
func ReadFile(path string) (*Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	return Decode(path, data)
}

// WriteFile writes s to path atomically (a temporary file renamed into place).
func WriteFile(path string, s *Summary) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, s) })
}

// PercentileKey is the value key of percentile p (0..100) as k6 writes it: "p(95)",
// "p(99.9)".
func PercentileKey(p float64) string {
	return "p(" + strconv.FormatFloat(p, 'f', -1, 64) + ")"
}

// percentileOf parses a percentile value key, "p(N)" with 0 <= N <= 100, as PercentileKey
// writes it.
func percentileOf(key string) (float64, bool) {
	num, ok := strings.CutPrefix(key, "p(")
	if !ok {
		return 0, false
	}
	num, ok = strings.CutSuffix(num, ")")
	if !ok {
		return 0, false
	}
	p, err := strconv.ParseFloat(num, 64)
	if err != nil || !(p >= 0 && p <= 100) || PercentileKey(p) != key {
		return 0, false
	}
	return p, true
}

// WithPercentiles returns m with the trend percentiles ps (0..100) it lacks added, read from
// its distribution as k6 computes every percentile a threshold names: from the HDR histogram
// as a point (a trend that observed nothing gets 0, as its other values: NoData still says
// so), from the Prometheus buckets as the bucket that holds it (Bounds, never a point). A
// metric of another type, or a trend with neither, is returned unchanged. m's maps are not
// modified.
func (m Metric) WithPercentiles(ps []float64) (Metric, error) {
	if m.Type != Trend {
		return m, nil
	}
	var missing []float64
	for _, p := range ps {
		if !(p >= 0 && p <= 100) {
			return m, fmt.Errorf("summary: %s: percentile %g is not within 0..100", m.Key(), p)
		}
		k := PercentileKey(p)
		if _, ok := m.Values[k]; ok {
			continue
		}
		if _, ok := m.Bounds[k]; ok {
			continue
		}
		missing = append(missing, p)
	}
	if len(missing) == 0 {
		return m, nil
	}
	switch {
	case m.Buckets != nil:
		if m.Buckets.Count == 0 {
			return m, nil // no data: a bucket trend then bounds nothing
		}
		bounds := maps.Clone(m.Bounds)
		if bounds == nil {
			bounds = map[string]Bound{}
		}
		for _, p := range missing {
			bounds[PercentileKey(p)], _ = m.Buckets.Quantile(p / 100)
		}
		m.Bounds = bounds
	case m.Histogram != nil:
		h, err := m.Histogram.Decode()
		if err != nil {
			return m, fmt.Errorf("summary: %s: %w", m.Key(), err)
		}
		values := maps.Clone(m.Values)
		if values == nil {
			values = map[string]float64{}
		}
		for _, p := range missing {
			values[PercentileKey(p)] = 0
			if h.TotalCount() > 0 {
				values[PercentileKey(p)] = float64(h.ValueAtPercentile(p)) * m.Histogram.Scale
			}
		}
		m.Values = values
	}
	return m, nil
}
