package summary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/go-cmp/cmp"
	"github.com/xdslab/xdslab/internal/golden"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sample builds a summary with one metric of every type, a tagged dimension and a threshold.
func sample(t testing.TB) *Summary {
	t.Helper()
	h := hdr.New(1, 3_600_000_000, 3)
	for _, us := range []int64{1200, 1500, 2000, 2500, 40_000, 250_000} {
		if err := h.RecordValue(us); err != nil {
			t.Fatal(err)
		}
	}
	trend, err := NewTrend("xdslab_fleet_time_to_first_config_seconds", Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A control plane's pilot_debounce_time over the run: 18 pushes in istiod's (0.1, 1] bucket.
	debounce, err := NewBucketTrend("xdslab_debounce_delay_seconds", Time, Buckets{Source: "pilot_debounce_time",
		Count: 18, Sum: 1.8126, LE: []float64{.01, .1, 1, 3, 5, 10, 20, 30}, Cumulative: []uint64{0, 0, 18, 18, 18, 18, 18, 18}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dur := 10 * time.Second
	v, two := 0.25, 2.0
	lo, hi := 0.1, 1.0
	return &Summary{
		Version: Version,
		Metadata: Metadata{Tool: "xdslab", Command: "fleet", Started: start, Ended: start.Add(dur),
			DurationSeconds: dur.Seconds()},
		Config: []byte(`{"clients":6}`),
		Results: Results{
			Passed: false,
			Metrics: []Metric{
				NewCounter("xdslab_fleet_responses_total", Default, 120, dur, map[string]string{"type": "EDS"}),
				NewCounter("xdslab_fleet_responses_total", Default, 200, dur, nil),
				NewCounter("xdslab_fleet_responses_total", Default, 80, dur, map[string]string{"type": "CDS"}),
				NewCounter("xdslab_fleet_bytes_received_total", Data, 3<<20, dur, nil),
				NewGauge("xdslab_fleet_connected", Default, 6, 0, 6, nil),
				NewRate("xdslab_probe_observed_rate", 9, 1, nil),
				NewGauge("xdslab_connect_incomplete_clients", Default, 2, 0, 6, map[string]string{"group": "sidecars"}),
				trend,
				debounce,
			},
			Thresholds: []Threshold{{Metric: "xdslab_fleet_time_to_first_config_seconds",
				Expression: "p(99)<100ms", Passed: false, Value: &v},
				{Metric: "xdslab_debounce_delay_seconds", Expression: "p(99)<500ms", Passed: false,
					Bound: &Bound{Gt: &lo, Le: &hi}, Inconclusive: true,
					Reason: "inconclusive: p(99) in (100ms, 1s] is a bucket bound that neither proves nor disproves it"},
				{Metric: "xdslab_connect_incomplete_clients", Tags: map[string]string{"group": "sidecars"}, Expression: "value==0",
					Passed: false, Value: &two, Description: "implicit: every client of group sidecars holds its first full config by the end of the connect phase"},
				{Metric: "xdslab_probe_missed_total", Expression: "count==0", Passed: false}},
		},
	}
}

func TestEncodeGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "summary.golden.json"), buf.Bytes())
}

func TestTextGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, sample(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "summary.golden.txt"), buf.Bytes())
}

func TestRoundTrip(t *testing.T) {
	s := sample(t)
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := Decode("mem.json", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := *s
	want.Results.Sort()
	if diff := cmp.Diff(&want, got, cmp.Transformer("json", compactJSON)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// The histogram survives: its decoded percentiles give back the trend values.
	m, ok := got.Results.Find("xdslab_fleet_time_to_first_config_seconds", nil)
	if !ok {
		t.Fatal("trend not found")
	}
	h, err := m.Histogram.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != 6 {
		t.Errorf("decoded histogram count = %d, want 6", h.TotalCount())
	}
	if diff := cmp.Diff(m.Values, TrendValues(h, m.Histogram.Scale)); diff != "" {
		t.Errorf("trend values from decoded histogram differ:\n%s", diff)
	}
	if v := m.Values["max"]; v < 0.25 || v > 0.25*1.001 {
		t.Errorf("max = %g s, want 0.25 s within HDR precision", v)
	}
}

// compactJSON lets raw JSON compare by content, not layout.
func compactJSON(r json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, r); err != nil {
		return "invalid: " + string(r)
	}
	return buf.String()
}

func TestFind(t *testing.T) {
	r := sample(t).Results
	tests := []struct {
		name  string
		tags  map[string]string
		count float64
		ok    bool
	}{
		{"xdslab_fleet_responses_total", nil, 200, true},
		{"xdslab_fleet_responses_total", map[string]string{"type": "CDS"}, 80, true},
		{"xdslab_fleet_responses_total", map[string]string{"type": "LDS"}, 0, false},
		{"nope", nil, 0, false},
	}
	for _, tc := range tests {
		m, ok := r.Find(tc.name, tc.tags)
		if ok != tc.ok || m.Values["count"] != tc.count {
			t.Errorf("Find(%s%s) = %v, %v; want count %v, %v", tc.name, TagString(tc.tags), m.Values["count"], ok, tc.count, tc.ok)
		}
	}
	if got := r.Metrics[0].Values["rate"]; got != 12 {
		t.Errorf("rate of 120 over 10s = %g, want 12", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	valid := func() string {
		var buf bytes.Buffer
		if err := Encode(&buf, sample(t)); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}()
	tests := []struct {
		name, in, want string
	}{
		{"syntax", "{\n  \"version\": \"1\",\n  oops\n}", "x.json:3:"},
		{"unknown field", `{"version":"1","bogus":1,"metadata":{},"results":{"passed":true,"metrics":[]}}`, `unknown field "bogus"`},
		{"version", strings.Replace(valid, `"version": "1"`, `"version": "9"`, 1), `version "9" is not supported`},
		{"type", strings.Replace(valid, `"type": "gauge"`, `"type": "meter"`, 1), `unknown type "meter"`},
		{"contains", strings.Replace(valid, `"contains": "data"`, `"contains": "bits"`, 1), `unknown contains "bits"`},
		{"missing value", strings.Replace(valid, `"p(99.9)": 0.25`, `"p(99.8)": 0.25`, 1), `lacks values["p(99.9)"]`},
		{"bad hdr", strings.Replace(valid, `"hdr": "`, `"hdr": "!!`, 1), "decode hdr histogram"},
		{"duplicate", strings.Replace(valid, `"type": "EDS"`, `"type": "CDS"`, 1), "duplicate metric"},
		{"trailing", valid + "{}", "trailing data"},
		{"wrong value type", `{"version":"1","metadata":{},"results":{"passed":"yes","metrics":[]}}`, "x.json:1:"},
		// A file that is not a summary says so, and what to give instead, at its position.
		{"empty", "", "x.json: the file is empty: give a summary.json as 'xdslab run --out DIR'"},
		{"blank", " \n\t\n", "x.json: the file is empty"},
		{"truncated", valid[:len(valid)/2], fmt.Sprintf("x.json:%d:", 1+strings.Count(valid[:len(valid)/2], "\n"))},
		{"truncated says so", valid[:len(valid)/2], "the JSON ends before the summary does (truncated"},
		{"a scenario", "name: quickstart\nduration: 5s\n", `x.json:1:1: not a JSON object (it starts with "name: quickstart"): give a summary.json`},
		{"a list", "\n  [1, 2]", `x.json:2:3: not a JSON object (it starts with "[1, 2]")`},
		{"another JSON object", `{"foo": 1}`, `unknown field "foo": not an xdslab summary.json`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("x.json", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWriteReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.json")
	s := sample(t)
	if err := WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("summary mode %v (%v), want 0644 like the report beside it", st.Mode().Perm(), err)
	}
	if len(got.Results.Metrics) != len(s.Results.Metrics) {
		t.Errorf("read %d metrics, wrote %d", len(got.Results.Metrics), len(s.Results.Metrics))
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("reading a missing file succeeded")
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		c    ValueType
		x    float64
		want string
	}{
		{Time, 0, "0s"},
		{Time, 0.0012345, "1.23ms"},
		{Time, 2.5, "2.5s"},
		{Time, 0.000004, "4µs"},
		{Data, 512, "512 B"},
		{Data, 3 << 20, "3.0 MiB"},
		{Data, 1536, "1.5 KiB"},
		{Default, 42, "42"},
		{Default, 0.125, "0.125"},
	}
	for _, tc := range tests {
		if got := FormatValue(tc.c, tc.x); got != tc.want {
			t.Errorf("FormatValue(%s, %g) = %q, want %q", tc.c, tc.x, got, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample(f)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	// With the percentiles thresholds named (WithPercentiles): points and bucket bounds.
	withP := sample(f)
	for i, m := range withP.Results.Metrics {
		m, err := m.WithPercentiles([]float64{95, 75})
		if err != nil {
			f.Fatal(err)
		}
		withP.Results.Metrics[i] = m
	}
	buf.Reset()
	if err := Encode(&buf, withP); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"version":"1","metadata":{},"results":{"passed":true,"metrics":[]}}`))
	f.Add([]byte(`{"version":"1","metadata":{},"results":{"passed":true,"metrics":[{"name":"a","type":"trend","contains":"time","values":{},"histogram":{"scale":1,"hdr":"HISTFAAAACB4nJNpmSzMwMDAwgABzFCaEUzOmNZg/wEiAAJ/APs="}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode("fuzz.json", data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes and decodes to the same document.
		var out bytes.Buffer
		if err := Encode(&out, s); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		s2, err := Decode("fuzz2.json", out.Bytes())
		if err != nil {
			t.Fatalf("decode of re-encoded summary: %v\n%s", err, out.Bytes())
		}
		var out2 bytes.Buffer
		if err := Encode(&out2, s2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatalf("encoding not stable:\n%s\n---\n%s", out.Bytes(), out2.Bytes())
		}
	})
}

// TestDistributedFields: the optional fields of distributed runs round-trip, are validated,
// and a summary without them (every earlier summary) still decodes.
func TestDistributedFields(t *testing.T) {
	s := sample(t)
	at := s.Metadata.Started.Add(-time.Minute)
	s.Metadata.Segment = &Segment{Index: 1, Count: 4}
	s.Metadata.StartAt = &at
	s.Metadata.Clock = &Clock{Reference: "http://sim:15080/time", OffsetSeconds: -0.002, UncertaintySeconds: 0.0001, Samples: 8}
	s.Metadata.Probes = "http://sim:15080"
	s.Metadata.Phases = []Phase{{Name: "connect", Start: at, End: at.Add(time.Second)}}
	s.Results.Events = []Event{{ID: 1, Kind: "endpoint-flap", T0: at, Reached: 3, Observed: 2, Missed: 1, ConvergenceSeconds: 0.25, Censored: true}}
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := Decode("d.json", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Metadata, got.Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s.Results.Events, got.Results.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got.Results.Events[0].Complete() || !got.Results.Events[0].Measured() {
		t.Error("an event a client missed is incomplete and measured")
	}
	old, err := os.ReadFile(filepath.Join("testdata", "summary.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode("old.json", old); err != nil {
		t.Errorf("a summary without the distributed fields: %v", err)
	}
	bad := buf.String()
	for _, tc := range []struct{ from, to, want string }{
		{`"index": 1`, `"index": 4`, "segment 4/4"},
		{`"reached": 3`, `"reached": 4`, "reached 4 != observed"},
		{`"convergenceSeconds": 0.25`, `"convergenceSeconds": -1`, "convergenceSeconds must be"},
		{`"uncertaintySeconds": 0.0001`, `"uncertaintySeconds": -1`, "uncertainty"},
		{`"name": "connect"`, `"name": ""`, "metadata.phases[0]"},
	} {
		in := strings.Replace(bad, tc.from, tc.to, 1)
		if _, err := Decode("d.json", []byte(in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: err %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}

// TestThresholdMeasured: every failed threshold shows what it was evaluated on and why it
// failed, in the console as in junit.xml.
func TestThresholdMeasured(t *testing.T) {
	v, lo, hi := 1.2, 0.1, 1.0
	res := Results{Metrics: []Metric{{Name: "xdslab_push_latency_seconds", Type: Trend, Contains: Time, Values: map[string]float64{"p(99)": v}}}}
	tests := []struct {
		th   Threshold
		want string
	}{
		{Threshold{Metric: "xdslab_push_latency_seconds", Expression: "p(99)<1s", Value: &v}, "1.2s"},
		{Threshold{Metric: "xdslab_nothing_total", Expression: "count==0", Reason: "the run did not produce xdslab_nothing_total"},
			"not measured (the run did not produce xdslab_nothing_total)"},
		{Threshold{Metric: "xdslab_debounce_delay_seconds", Expression: "p(99)<200ms", Bound: &Bound{Gt: &lo, Le: &hi}, Inconclusive: true,
			Reason: "inconclusive: p(99) (100ms, 1s] is a bucket bound that neither proves nor disproves it"},
			"in (0.1, 1] (inconclusive: p(99) (100ms, 1s] is a bucket bound that neither proves nor disproves it)"},
	}
	for _, tc := range tests {
		if got := ThresholdMeasured(res, tc.th); got != tc.want {
			t.Errorf("ThresholdMeasured(%s %s) = %q, want %q", tc.th.Metric, tc.th.Expression, got, tc.want)
		}
	}
}

// TestTextFolds: counters that counted nothing and gauges 0 throughout fold into one line, a
// gauge that only rose to its value shows no min=0, a trend equal to an earlier one points at it.
func TestTextFolds(t *testing.T) {
	h := hdr.New(1, 1_000_000, 3)
	for i := int64(1); i <= 100; i++ {
		_ = h.RecordValue(i * 1000)
	}
	a, err := NewTrend("xdslab_push_latency_seconds", Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewTrend("xdslab_push_received_latency_seconds", Time, h, 1e-6, nil)
	s := &Summary{Results: Results{Metrics: []Metric{a, b,
		NewCounter("xdslab_fleet_nacks_total", Default, 0, time.Second, nil),
		NewCounter("xdslab_fleet_nacks_total", Default, 0, time.Second, map[string]string{"type": "CDS"}),
		NewCounter("xdslab_fleet_responses_total", Default, 7, time.Second, nil),
		NewCounter("xdslab_fleet_responses_total", Default, 0, time.Second, map[string]string{"type": "LDS"}),
		NewGauge("xdslab_harness_saturated", Default, 0, 0, 0, nil),
		NewGauge("xdslab_cpu_seconds", Time, 4.15, 0, 4.15, map[string]string{"side": "harness"}),
		NewGauge("xdslab_fleet_connected", Default, 500, 219, 500, nil),
	}}}
	var buf bytes.Buffer
	if err := WriteText(&buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"all zero: xdslab_fleet_nacks_total (2 series), xdslab_fleet_responses_total (1 other series), xdslab_harness_saturated",
		"xdslab_push_received_latency_seconds.....: same as xdslab_push_latency_seconds",
		"xdslab_fleet_connected...................: 500 min=219 max=500",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "min=0s") || strings.Contains(out, "xdslab_fleet_nacks_total.") {
		t.Errorf("text shows a meaningless min=0 or a zero row:\n%s", out)
	}
}
