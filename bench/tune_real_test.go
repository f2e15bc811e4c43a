package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
)

// TestTuneRealRuns tunes the tiny scenario for real (two points, one run each, about 4 s
// each) and checks the table, the plot, the recommendation and the estimate check. Its
// threshold p(99)<2s is met by the 100ms point only. Skipped with -short.
func TestTuneRealRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tiny scenario twice in-process (~8 s): skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	run := func(ctx context.Context, sc *scenarios.Scenario, info TuneRunInfo) (*summary.Summary, error) {
		return Run(ctx, sc, RunOptions{Out: filepath.Join(out, "runs", info.Label)})
	}
	res, err := Tune(ctx, tinyScenario(t, "100ms"), TuneOptions{
		Params: mustParams(t, "minQuiet=100ms,1s"), Run: run,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		if p.Error != "" || p.Measured == nil {
			t.Fatalf("point %s: %s", p.Label, p.Error)
		}
		m := p.Measured
		for name, v := range map[string]Float{"p99 push latency": m.PushLatencyP99, "convergence p99": m.ConvergenceP99,
			"push cycles": m.PushCycles, "bytes": m.BytesSent, "cpu": m.CPUSeconds} {
			if math.IsNaN(float64(v)) || v <= 0 {
				t.Errorf("point %s: %s = %v, want a measured positive figure", p.Label, name, v)
			}
		}
	}
	fast, slow := res.Points[0], res.Points[1]
	if !(slow.Measured.PushLatencyP99 > fast.Measured.PushLatencyP99 && slow.Measured.PushCycles < fast.Measured.PushCycles) {
		t.Errorf("minQuiet 1s should trade latency for fewer pushes: 100ms %+v, 1s %+v", fast.Measured, slow.Measured)
	}
	if res.Recommended != 0 {
		t.Errorf("recommended %d (%s), want minQuiet=100ms, the only point under p(99)<2s", res.Recommended, res.Why)
	}
	if res.Check == nil || math.IsNaN(float64(res.Check.PushCyclesError)) {
		t.Errorf("no estimate check at the recommended point: %+v", res.Check)
	} else {
		t.Logf("estimate at %s: push cycles %v predicted, %v measured (%+.1f%%); debounce delay %vs predicted, %vs measured",
			fast.Label, res.Check.PushCyclesPredicted, res.Check.PushCyclesMeasured, 100*float64(res.Check.PushCyclesError),
			res.Check.DebounceDelayPredicted, res.Check.DebounceDelayMeasured)
	}
	if err := WriteTuneFiles(out, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{TuneCSVFile, TuneJSONFile, TuneTextFile, TunePNGFile, TuneSVGFile} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
