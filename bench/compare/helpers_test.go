package compare

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/internal/summary"
)

// synth describes a synthetic run: a push latency distribution and the deterministic figures.
type synth struct {
	seed       uint64 // the scenario seed recorded in config
	draw       uint64 // the random source of the latency values
	n          int    // latency observations
	medianMs   float64
	sigma      float64 // lognormal sigma
	pushCycles float64
	hitRatio   float64
	noHist     bool
}

// synthSummary builds a summary whose push latency is lognormal(median, sigma): a known
// distribution, so a planted shift is a known regression.
func synthSummary(t testing.TB, s synth) *summary.Summary {
	t.Helper()
	r := rand.New(rand.NewPCG(s.draw, s.draw^0x9e3779b97f4a7c15))
	h := hdr.New(1, 3_600_000_000, 3)
	for i := 0; i < s.n; i++ {
		ms := s.medianMs * math.Exp(s.sigma*r.NormFloat64())
		if err := h.RecordValue(int64(ms * 1000)); err != nil {
			t.Fatal(err)
		}
	}
	lat, err := summary.NewTrend("xdslab_push_latency_seconds", summary.Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.noHist {
		lat.Histogram = nil
	}
	dur := 20 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &summary.Summary{
		Version:  summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "run", Started: start, Ended: start.Add(dur), DurationSeconds: dur.Seconds()},
		Config:   []byte(fmt.Sprintf(`{"name":"synthetic","seed":%d}`, s.seed)),
		Results: summary.Results{Passed: true, Metrics: []summary.Metric{
			lat,
			summary.NewCounter("xdslab_cp_push_cycles_total", summary.Default, s.pushCycles, dur, nil),
			summary.NewCounter("xdslab_sim_events_total", summary.Default, 400, dur, nil),
			summary.NewGauge("xdslab_cache_hit_ratio", summary.Default, s.hitRatio, s.hitRatio, s.hitRatio, map[string]string{"type": "EDS"}),
		}},
	}
}

// baseSynth is the baseline configuration of the tests.
func baseSynth(draw uint64) synth {
	return synth{seed: 1, draw: draw, n: 2000, medianMs: 40, sigma: 0.5, pushCycles: 120, hitRatio: 0.9}
}

func reportText(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteReport(&buf, r, "text"); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
