package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xdslab/xdslab/scenarios"
)

// realGate names the figures the real-run tests gate on (see docs/gating.md for why a gate
// names its figures).
const realGate = `^xdslab_(push_latency|convergence)_seconds$|^xdslab_cp_push_cycles_total$`

func tinyScenario(t *testing.T, minQuiet string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Load(filepath.Join("testdata", "compare", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Set("controlPlane.debounce.minQuiet", minQuiet); err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestCompareRealRuns is the must-show end to end: the tiny scenario run in-process three
// times (about 4 s each): twice at the baseline minQuiet 100ms, once with minQuiet 1s planted.
// compare passes the two baseline runs and flags the planted one. Skipped with -short.
func TestCompareRealRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tiny scenario three times in-process (~12 s): skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dirs := map[string]string{}
	for _, name := range []string{"base", "same", "slow"} {
		mq := "100ms"
		if name == "slow" {
			mq = "1s"
		}
		dirs[name] = filepath.Join(t.TempDir(), name)
		if _, err := Run(ctx, tinyScenario(t, mq), RunOptions{Out: dirs[name]}); err != nil {
			t.Fatalf("run %s: %v", name, err)
		}
	}
	load := func(name string) *Side {
		s, err := LoadSide(filepath.Join(dirs[name], "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	opts := DefaultCompareOptions()
	opts.Gate = mustRegexp(t, realGate)

	same, err := Compare(load("base"), load("same"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if same.Regressed() {
		t.Errorf("two runs of the same configuration: %d regression(s):\n%s", same.Regressions, reportText(t, same))
	}
	if row := findRow(t, same, "xdslab_cp_push_cycles_total", "count"); row.Method != MethodExact || row.Significant {
		t.Errorf("push cycles under one seed: method %s significant %v, want exact and equal (%v vs %v)",
			row.Method, row.Significant, row.Base.Center, row.New.Center)
	}

	slow, err := Compare(load("base"), load("slow"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slow.Regressed() {
		t.Fatalf("minQuiet 1s against 100ms: no regression found:\n%s", reportText(t, slow))
	}
	if row := findRow(t, slow, "xdslab_push_latency_seconds", "p(50)"); !row.Regression || float64(row.Delta) < 1 {
		t.Errorf("push latency p(50): regression %v delta %+.0f%%, want a regression of more than +100%%",
			row.Regression, 100*float64(row.Delta))
	}
}
