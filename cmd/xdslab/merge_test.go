package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/merge"
	"github.com/xdslab/xdslab/bench/report"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
)

// TestMergeCommandRefusesOtherConfigs: shards of one scenario name whose embedded configs
// differ (another seed, another client count) are inputs of different runs: exit 2, as for
// other start times or shard counts.
func TestMergeCommandRefusesOtherConfigs(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	const cfg = `{"name":"dist","seed":11,"clients":[{"name":"sidecars","count":6}]}`
	write := func(name string, i int, config string) string {
		s := &summary.Summary{Version: summary.Version,
			Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: at, Ended: at.Add(time.Second), DurationSeconds: 1,
				Segment: &summary.Segment{Index: i, Count: 2}, StartAt: &at, Labels: map[string]string{"scenario": "dist"}},
			Config: []byte(config),
			Results: summary.Results{Passed: true, Metrics: []summary.Metric{
				summary.NewGauge(fleet.MetricConnected, summary.Default, 3, 0, 3, nil),
			}}}
		p := filepath.Join(dir, name)
		if err := summary.WriteFile(p, s); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("shard-0.json", 0, cfg)
	for _, tc := range []struct {
		name, config string
		want         int
	}{
		// Merged; its scenario's default thresholds then judge figures these shards lack (99).
		{"same config", cfg, exitThreshold},
		{"another seed", strings.Replace(cfg, `"seed":11`, `"seed":99`, 1), exitUsage},
		{"another client count", strings.Replace(cfg, `"count":6`, `"count":50`, 1), exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := write("shard-1-"+strings.ReplaceAll(tc.name, " ", "-")+".json", 1, tc.config)
			if got := runCLI(context.Background(), []string{"merge", a, b, "--quiet"}); got != tc.want {
				t.Errorf("xdslab merge %s %s: exit %d, want %d", a, b, got, tc.want)
			}
		})
	}
}

// TestMergeDir: --dir skips an earlier merge's output in the same volume (a rerun, another
// --out), names a missing directory, and an interrupted --wait exits 130, not 2.
func TestMergeDir(t *testing.T) {
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	shard := func(i int) *summary.Summary {
		return &summary.Summary{Version: summary.Version,
			Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: at, Ended: at.Add(time.Second), DurationSeconds: 1,
				Segment: &summary.Segment{Index: i, Count: 2}},
			Results: summary.Results{Passed: true, Metrics: []summary.Metric{
				summary.NewGauge(fleet.MetricConnected, summary.Default, 3, 0, 3, nil),
			}}}
	}
	dir := t.TempDir()
	for i := range 2 {
		if err := summary.WriteFile(filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)), shard(i)); err != nil {
			t.Fatal(err)
		}
	}
	if code := runCLI(context.Background(), []string{"merge", "--dir", dir, "--out", filepath.Join(dir, "merged.json"), "--quiet"}); code != exitOK {
		t.Fatalf("first merge: exit %d", code)
	}
	onlyMerged := t.TempDir()
	if err := os.Rename(filepath.Join(dir, "merged.json"), filepath.Join(onlyMerged, "merged.json")); err != nil {
		t.Fatal(err)
	}
	if code := runCLI(context.Background(), []string{"merge", "--dir", dir, "--out", filepath.Join(dir, "merged.json"), "--quiet"}); code != exitOK {
		t.Fatalf("second merge: exit %d", code)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		args []string
		want int
	}{
		{"rerun beside its own output", context.Background(), []string{"merge", "--dir", dir}, exitOK},
		{"rerun with --wait", context.Background(), []string{"merge", "--dir", dir, "--wait", "2", "--timeout", "5s"}, exitOK},
		{"only merged summaries", context.Background(), []string{"merge", "--dir", onlyMerged}, exitUsage},
		{"missing dir", context.Background(), []string{"merge", "--dir", filepath.Join(dir, "nope")}, exitUsage},
		{"interrupted wait", canceled, []string{"merge", "--dir", t.TempDir(), "--wait", "2"}, exitInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runCLI(tc.ctx, append(tc.args, "--quiet")); got != tc.want {
				t.Errorf("xdslab %s: exit %d, want %d", strings.Join(tc.args, " "), got, tc.want)
			}
		})
	}
	if _, _, err := waitSummaries(context.Background(), io.Discard, waitSpec{dir: filepath.Join(dir, "nope"), timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "--dir") || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("missing dir: %v, want it named", err)
	}
}

// execCLI runs the CLI like runCLI, capturing what it prints: stdout, and stderr with the
// error the exit code comes with.
func execCLI(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	root := newRootCmd()
	root.SetArgs(args)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(ctx)
	code = exitOK
	if err != nil {
		code = exitUsage
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		fmt.Fprintln(&errb, err)
	}
	return code, out.String(), errb.String()
}

// latencyShard is fleet shard i of n with push latencies (µs) and event records, as a shard
// of a distributed run writes it.
func latencyShard(t *testing.T, i, n int, at time.Time, latencies []int64, events []summary.Event) *summary.Summary {
	t.Helper()
	h := measure.NewLatencyHistogram()
	for _, v := range latencies {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	trend, err := summary.NewTrend(fleet.MetricPushLatency, summary.Time, h, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	kind, err := summary.NewTrend(fleet.MetricPushLatency, summary.Time, h, 1e-6, map[string]string{"kind": "scale"})
	if err != nil {
		t.Fatal(err)
	}
	s := &summary.Summary{Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: at, Ended: at.Add(5 * time.Second), DurationSeconds: 5,
			Segment: &summary.Segment{Index: i, Count: n}, StartAt: &at, Probes: "http://sim:15080",
			Labels: map[string]string{"scenario": "dist", "ads": "xdslab-target:15010"},
			Phases: []summary.Phase{{Name: "measure", Start: at.Add(time.Second), End: at.Add(4 * time.Second)}}},
		Results: summary.Results{Passed: true, Events: events, Metrics: []summary.Metric{
			trend, kind,
			summary.NewGauge(fleet.MetricConnected, summary.Default, 3, 0, 3, nil),
			summary.NewGauge(collect.MetricConnectIncomplete, summary.Default, 0, 0, 3, map[string]string{"group": "sidecars"}),
			summary.NewGauge(collect.MetricConnectIncomplete, summary.Default, 0, 0, 0, map[string]string{"group": "mux"}),
		}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMergeWritesRunOutputs: merge --out DIR writes what 'xdslab run --out DIR' writes —
// summary.json, report.html, junit.xml and the .hgrm files — from the merged summary, with the
// report's own writers (a CI job reads a sharded run's outputs where it reads a single run's);
// --out FILE.json (the form before) puts the summary there and the rest beside it. A failed
// threshold still writes them all first (exit 99), its JUnit case failed.
func TestMergeWritesRunOutputs(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	evs := func(conv float64) []summary.Event {
		return []summary.Event{
			{ID: 1, Kind: "scale", T0: at.Add(2 * time.Second), Reached: 3, Observed: 3, Received: 3, PushLatencies: 3, ConvergenceSeconds: conv},
			{ID: 2, Kind: "scale", T0: at.Add(3 * time.Second), Reached: 3, Observed: 3, Received: 3, PushLatencies: 3, ConvergenceSeconds: conv / 2},
		}
	}
	var inputs []string
	for i, lat := range [][]int64{{1000, 2000, 4000}, {1500, 3000, 9000}} {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		if err := summary.WriteFile(p, latencyShard(t, i, 2, at, lat, evs(0.004+float64(i)/1000))); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, p)
	}
	scenario := func(th string) string {
		return writeScenario(t, strings.Replace(distScenario, "xdslab_events_missed_total: ['count==0']", th, 1))
	}
	pass := scenario("xdslab_push_latency_seconds: ['p(99)<1s']\n  xdslab_fleet_connected: ['value==6']")
	fail := scenario("xdslab_push_latency_seconds: ['p(99)<5ms']\n  xdslab_fleet_connected: ['value==6']")

	for _, tc := range []struct {
		name, scenario, out, summaryAt string
		want                           int
		failed                         []string // the JUnit cases that fail
	}{
		{"dir", pass, filepath.Join(dir, "merged"), filepath.Join(dir, "merged", "summary.json"), exitOK, nil},
		{"dir, a threshold fails", fail, filepath.Join(dir, "failed"), filepath.Join(dir, "failed", "summary.json"), exitThreshold,
			[]string{"xdslab_push_latency_seconds p(99)<5ms"}},
		{"file", pass, filepath.Join(dir, "legacy", "m.json"), filepath.Join(dir, "legacy", "m.json"), exitOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execCLI(context.Background(), append([]string{"merge", "--quiet", "--scenario", tc.scenario, "--out", tc.out}, inputs...)...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.want, stdout, stderr)
			}
			s, err := summary.ReadFile(tc.summaryAt)
			if err != nil {
				t.Fatal(err)
			}
			if s.Metadata.Command != "merge" || len(s.Results.Thresholds) != 4 {
				t.Fatalf("%s: command %q, %d thresholds; want the merged summary, 2 written and 2 implicit thresholds", tc.summaryAt, s.Metadata.Command, len(s.Results.Thresholds))
			}
			beside := filepath.Dir(tc.summaryAt)
			if !strings.Contains(stdout, beside) || !strings.Contains(stdout, "junit.xml") {
				t.Errorf("stdout does not say where the outputs went (%s):\n%s", beside, stdout)
			}

			// junit.xml: the report package's, of the merged summary; one case per threshold.
			got, err := os.ReadFile(filepath.Join(beside, "junit.xml"))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := report.WriteJUnit(&want, s); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("junit.xml is not report.WriteJUnit of the merged summary:\n%s\nwant\n%s", got, want.Bytes())
			}
			var suites struct {
				Suites []struct {
					Name  string `xml:"name,attr"`
					Cases []struct {
						Name    string    `xml:"name,attr"`
						Failure *struct{} `xml:"failure"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal(got, &suites); err != nil {
				t.Fatal(err)
			}
			if len(suites.Suites) != 1 || suites.Suites[0].Name != "xdslab run dist" || len(suites.Suites[0].Cases) != 4 {
				t.Fatalf("junit.xml: %+v, want one suite 'xdslab run dist' of 4 cases", suites)
			}
			var failed []string
			for _, c := range suites.Suites[0].Cases {
				if c.Failure != nil {
					failed = append(failed, c.Name)
				}
			}
			if !slices.Equal(failed, tc.failed) {
				t.Errorf("failed cases %q, want %q", failed, tc.failed)
			}

			// report.html: the run's page, its plots drawn from the merged histograms and events.
			html, err := os.ReadFile(filepath.Join(beside, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"<title>xdslab run dist</title>", "xdslab-target:15010 (2 fleet shard(s), merged, run 20261203T160000Z)",
				"p(99)&lt;", "Push latency (change → in effect)", "<svg", "xdslab_fleet_connected", "name: dist"} {
				if !strings.Contains(string(html), want) {
					t.Errorf("report.html lacks %q", want)
				}
			}
			if strings.Contains(string(html), "no observations") {
				t.Errorf("report.html has an empty plot: the merged histograms or events were not drawn")
			}
			lat, _ := s.Results.Find(fleet.MetricPushLatency, nil)
			if _, err := os.Stat(filepath.Join(beside, report.HgrmName(lat))); err != nil {
				t.Errorf("no .hgrm of the merged trends: %v", err)
			}
		})
	}

	// An --out that cannot be written is refused before anything is merged.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execCLI(context.Background(), append([]string{"merge", "--quiet", "--out", filepath.Join(blocker, "out")}, inputs...)...); code != exitUsage || !strings.Contains(stderr, "--out") {
		t.Errorf("unwritable --out: exit %d, want 2 naming --out:\n%s", code, stderr)
	}
}

// runShard is fleet shard i of n of the run started at start, written to dir/name; id is its
// run label ("": a summary of an earlier version, which wrote none).
func runShard(t *testing.T, dir, name string, i, n int, start time.Time, id string) string {
	t.Helper()
	s := latencyShard(t, i, n, start, []int64{1000, 2000}, nil)
	setRunLabel(s, id)
	p := filepath.Join(dir, name)
	if err := summary.WriteFile(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

// simFile is the simulator summary of the run started at start (id as for runShard).
func simFile(t *testing.T, dir, name string, start time.Time, id string) string {
	t.Helper()
	s := &summary.Summary{Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "sim", Started: start, Ended: start.Add(5 * time.Second), DurationSeconds: 5,
			StartAt: &start, Labels: map[string]string{"scenario": "dist"}},
		Results: summary.Results{Passed: true, Metrics: []summary.Metric{
			summary.NewCounter(collect.MetricSimEvents, summary.Default, 3, 5*time.Second, nil),
		}}}
	setRunLabel(s, id)
	p := filepath.Join(dir, name)
	if err := summary.WriteFile(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMergeStaleRun: a reused volume holds an earlier run's summaries beside the run's own
// (another shard count, a sim.json not yet replaced, files of an earlier version without a run
// id). merge --dir merges the newest complete run and names every file it leaves out and why;
// --run and --start-at pick a run; an incomplete or ambiguous set exits 2 naming files and fix.
func TestMergeStaleRun(t *testing.T) {
	old := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 6, 7, 45, 0, 0, time.UTC)
	nowID := merge.RunIDFromStart(now)
	dir := t.TempDir()
	// The earlier run: 3 shards of an earlier version (no run label; its start tells it).
	for i := range 3 {
		runShard(t, dir, fmt.Sprintf("shard-%d.json", i+2), i, 3, old, "")
	}
	simFile(t, dir, "sim-old.json", old, "")
	// This run: 2 shards and its simulator, each with the run id derived from the start.
	runShard(t, dir, "shard-0.json", 0, 2, now, nowID)
	runShard(t, dir, "shard-1.json", 1, 2, now, nowID)
	simFile(t, dir, "sim.json", now, nowID)
	startFile := filepath.Join(t.TempDir(), "startAt")
	if err := os.WriteFile(startFile, []byte(now.Format(time.RFC3339)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "merged")
	code, _, stderr := execCLI(context.Background(), "merge", "--dir", dir, "--out", out, "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"merge: ignoring " + filepath.Join(dir, "shard-2.json") + ", " + filepath.Join(dir, "shard-3.json") + ", " + filepath.Join(dir, "shard-4.json") + ", " + filepath.Join(dir, "sim-old.json") +
			": run 20261205T100000Z (started 2026-12-05T10:00:00Z) is older than run 20261206T074500Z (started 2026-12-06T07:45:00Z), the newest complete run",
		"merge: merging run 20261206T074500Z: " + filepath.Join(dir, "shard-0.json") + ", " + filepath.Join(dir, "shard-1.json") + ", " + filepath.Join(dir, "sim.json"),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	m, err := summary.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, sh := range m.Metadata.Shards {
		srcs = append(srcs, filepath.Base(sh.Source))
	}
	if m.Metadata.Labels[merge.LabelRun] != nowID || !slices.Equal(srcs, []string{"shard-0.json", "shard-1.json", "sim.json"}) {
		t.Errorf("merged run %q of %v, want %s of shard-0, shard-1 and sim.json", m.Metadata.Labels[merge.LabelRun], srcs, nowID)
	}

	for _, tc := range []struct {
		name string
		args []string
		want int
		says []string
	}{
		{"the earlier run asked for", []string{"--run", "20261205T100000Z"}, exitOK,
			[]string{"merge: merging run 20261205T100000Z", "run 20261206T074500Z (started 2026-12-06T07:45:00Z), not the run asked for"}},
		{"this run by its start", []string{"--start-at-file", startFile}, exitOK, []string{"merge: merging run 20261206T074500Z"}},
		{"a run that is not there", []string{"--run", "nightly-7"}, exitUsage,
			[]string{"--run nightly-7: no fleet shard summary of that run", "run 20261206T074500Z (2-shard fleet", "run 20261205T100000Z (3-shard fleet", "pass --run with one of these ids"}},
		{"a relative start", []string{"--start-at", "+1m"}, exitUsage, []string{"relative to now"}},
		{"--run and --start-at", []string{"--run", "x", "--start-at-file", startFile}, exitUsage, []string{"give one"}},
		{"a run id that cannot be one", []string{"--run", "a/b"}, exitUsage, []string{"--run: run id \"a/b\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execCLI(context.Background(), append([]string{"merge", "--dir", dir, "--quiet"}, tc.args...)...)
			if code != tc.want {
				t.Errorf("exit %d, want %d\n%s", code, tc.want, stderr)
			}
			for _, s := range tc.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}

	// This run's shard 1 not written yet: the earlier complete run is merged, and the newer
	// one named; asked for by its start, it is incomplete (exit 2, files and fix named).
	if err := os.Remove(filepath.Join(dir, "shard-1.json")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = execCLI(context.Background(), "merge", "--dir", dir, "--quiet")
	if code != exitOK || !strings.Contains(stderr, "merge: merging run 20261205T100000Z") ||
		!strings.Contains(stderr, "run 20261206T074500Z (started 2026-12-06T07:45:00Z) is incomplete: shard(s) 1/2 missing") ||
		!strings.Contains(stderr, "merge it with --run 20261206T074500Z") {
		t.Errorf("a newer incomplete run: exit %d\n%s", code, stderr)
	}
	code, _, stderr = execCLI(context.Background(), "merge", "--dir", dir, "--quiet", "--start-at-file", startFile)
	if code != exitUsage || !strings.Contains(stderr, "run 20261206T074500Z (2-shard fleet, started 2026-12-06T07:45:00Z: "+filepath.Join(dir, "shard-0.json")+", "+filepath.Join(dir, "sim.json")+") is incomplete: shard(s) 1/2 missing") ||
		!strings.Contains(stderr, "--wait N") {
		t.Errorf("the incomplete run asked for: exit %d, want 2 naming its files and the fix\n%s", code, stderr)
	}

	// --wait counts the shards of the run waited for, not the earlier run's: it waits until
	// shard 1 of this run is written.
	go func() {
		time.Sleep(1500 * time.Millisecond)
		runShard(t, dir, "shard-1.json", 1, 2, now, nowID)
	}()
	code, _, stderr = execCLI(context.Background(), "merge", "--dir", dir, "--quiet", "--wait", "2", "--timeout", "20s", "--start-at-file", startFile)
	if code != exitOK || !strings.Contains(stderr, "merge: waiting for 2 fleet shard summaries of run 20261206T074500Z in "+dir+": 1 there") ||
		!strings.Contains(stderr, "merge: merging run 20261206T074500Z") {
		t.Errorf("--wait for this run: exit %d\n%s", code, stderr)
	}
}

// TestMergeWaitsForTheRunsSimulator: once the run's shards are there, a sim.json of another run
// (not yet replaced by this run's simulator) holds the merge for a while, not forever.
func TestMergeWaitsForTheRunsSimulator(t *testing.T) {
	old := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 6, 7, 45, 0, 0, time.UTC)
	nowID := merge.RunIDFromStart(now)
	dir := t.TempDir()
	runShard(t, dir, "shard-0.json", 0, 2, now, nowID)
	runShard(t, dir, "shard-1.json", 1, 2, now, nowID)
	simFile(t, dir, "sim.json", old, "")
	w := waitSpec{dir: dir, want: 2, timeout: time.Minute, simGrace: 3 * time.Second}
	simOf := func(in []merge.Input) string {
		for _, x := range in {
			if x.Summary.Metadata.Command == "sim" {
				return merge.RunOf(x.Summary)
			}
		}
		return ""
	}

	// No simulator of this run comes: read after the grace, with the other run's.
	var log bytes.Buffer
	start := time.Now()
	in, _, err := waitSummaries(context.Background(), &log, w)
	if err != nil || time.Since(start) < w.simGrace || simOf(in) != "20261205T100000Z" ||
		!strings.Contains(log.String(), "waiting up to 3s for its simulator's summary ("+filepath.Join(dir, "sim.json")+" is another run's)") {
		t.Errorf("after %s: err %v, the simulator's run %q\n%s", time.Since(start), err, simOf(in), log.String())
	}
	// It comes: read at once with it.
	go func() {
		time.Sleep(1200 * time.Millisecond)
		simFile(t, dir, "sim.json", now, nowID)
	}()
	start = time.Now()
	if in, _, err = waitSummaries(context.Background(), io.Discard, w); err != nil || simOf(in) != nowID || time.Since(start) >= w.simGrace {
		t.Errorf("after %s: err %v, the simulator's run %q, want %s's before the grace ends", time.Since(start), err, simOf(in), nowID)
	}
	// The stale one is named when the merge goes on without it.
	simFile(t, dir, "sim.json", old, "")
	code, _, stderr := execCLI(context.Background(), "merge", "--dir", dir, "--quiet")
	if code != exitOK || !strings.Contains(stderr, "ignoring "+filepath.Join(dir, "sim.json")+": the simulator summary of run 20261205T100000Z, of which no shard summary is here") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// TestRunIdentity: the run id a shard or the simulator writes: --run-id, else derived from the
// start (the same in every process given it), with a warning when merge will not be able to
// tell this run from another in the same directory.
func TestRunIdentity(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 40, 0, 0, time.UTC)
	start := time.Date(2026, 12, 6, 7, 45, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, explicit, flag string
		start                time.Time
		shards               int
		id, warning, err     string
	}{
		{"derived", "", "2026-12-06T07:45:00Z", start, 4, "20261206T074500Z", "", ""},
		{"explicit", "nightly-7", "", time.Time{}, 4, "nightly-7", "", ""},
		{"bad explicit", "a b", "", time.Time{}, 4, "", "", "fleet: --run-id: run id \"a b\""},
		{"none", "", "", time.Time{}, 4, "", "no --start-at or --run-id", ""},
		{"long past", "", "2026-01-01T00:00:00Z", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 4, "20260101T000000Z", "passed 339 days ago", ""},
		{"relative, several shards", "", "+30s", now.Add(30 * time.Second), 4, "20261206T074030Z", "relative to when each process starts", ""},
		{"relative, one shard", "", "+30s", now.Add(30 * time.Second), 1, "20261206T074030Z", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, warning, err := runIdentity("fleet", tc.explicit, tc.flag, tc.start, tc.shards, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || id != tc.id {
				t.Errorf("id %q err %v, want %q", id, err, tc.id)
			}
			if (tc.warning == "") != (warning == "") || !strings.Contains(warning, tc.warning) {
				t.Errorf("warning %q, want %q", warning, tc.warning)
			}
		})
	}
}

// TestMergeArgumentIsADirectory: a directory given where merge takes summary files names the
// flag that reads one (it said only "read summary: read DIR: is a directory").
func TestMergeArgumentIsADirectory(t *testing.T) {
	dir := t.TempDir()
	root := newRootCmd()
	root.SetArgs([]string{"merge", dir, "--quiet"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(context.Background())
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("merge DIR: %v, want a usage error (exit 2)", err)
	}
	if want := dir + " is a directory: merge takes summary files, or a directory as --dir " + dir; !strings.Contains(err.Error(), want) {
		t.Errorf("merge DIR: %q, want it to contain %q", err, want)
	}
}

// TestMergeEmptyDir: --dir of a directory without summaries says what writes them and how
// to wait for them.
func TestMergeEmptyDir(t *testing.T) {
	dir := t.TempDir()
	root := newRootCmd()
	root.SetArgs([]string{"merge", "--dir", dir, "--quiet"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(context.Background())
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("merge --dir EMPTY: %v, want a usage error (exit 2)", err)
	}
	for _, want := range []string{"no *.json summaries in " + dir, "--summary " + dir + "/shard-I.json", "--wait N"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("merge --dir EMPTY: %q, want it to contain %q", err, want)
		}
	}
}
