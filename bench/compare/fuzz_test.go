package compare

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios/threshold"
)

// FuzzCompareInput feeds arbitrary bytes to compare as the NEW summary (and the same bytes
// as BASE): decoding either fails with an error naming the file, or the comparison and every
// output format succeed, or (as BASE) it is refused as a base that can show no regression.
// Never a panic.
func FuzzCompareInput(f *testing.F) {
	var buf bytes.Buffer
	if err := summary.Encode(&buf, synthSummary(f, synth{seed: 1, draw: 1, n: 50, medianMs: 40, sigma: 0.5, pushCycles: 12, hitRatio: 0.9})); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"version":"1","metadata":{"tool":"x","started":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:00:00Z","durationSeconds":0},"results":{"passed":true,"metrics":[{"name":"m","type":"trend","contains":"time","values":{"min":0,"med":0,"avg":0,"max":0,"p(50)":0,"p(90)":0,"p(99)":0,"p(99.9)":0}}]}}`))
	f.Add([]byte(`{"version":"1","results":{"metrics":[{"name":"c","type":"counter","contains":"default","values":{"count":0,"rate":0}}]}}`))
	f.Add([]byte(`{`))
	base := synthSummary(f, baseSynth(1))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := summary.Decode("new.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "new.json") {
				t.Fatalf("decode error does not name the file: %v", err)
			}
			return
		}
		for _, pair := range [][2]*Side{
			{NewSide("base", base), NewSide("new", s)},
			{NewSide("new", s), NewSide("base", base)},
			{NewSide("a", s, s), NewSide("b", s, s)},
		} {
			rep, err := Compare(pair[0], pair[1], DefaultOptions())
			if err != nil {
				// A base that can show no regression (nothing measured, only neutral
				// metrics) is refused with an error saying so; the synthetic base never is.
				if pair[0].Runs[0] != s || !strings.HasPrefix(err.Error(), "compare: base") {
					t.Fatal(err)
				}
				continue
			}
			for _, format := range Formats {
				if err := WriteReport(io.Discard, rep, format); err != nil {
					t.Fatalf("%s: %v", format, err)
				}
			}
		}
	})
}

// FuzzParseMetricThreshold: any flag value parses or gives an error with the fix; a parsed
// one has a valid name and a finite non-negative fraction.
func FuzzParseMetricThreshold(f *testing.F) {
	for _, s := range []string{"xdslab_push_latency_seconds:p(99)=10%", "m{type:EDS}=2%", "m=0.1", "m{=", ":=", "m:p(99=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mt, err := ParseMetricThreshold(s)
		if err != nil {
			if !strings.Contains(err.Error(), "NAME[{tag:value}][:STAT]=PCT") {
				t.Fatalf("error without the fix: %v", err)
			}
			return
		}
		if !threshold.ValidMetricName(mt.Name) || mt.Fraction < 0 || mt.Fraction != mt.Fraction {
			t.Fatalf("parsed %q into %+v", s, mt)
		}
	})
}
