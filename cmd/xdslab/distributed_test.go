package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/merge"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
)

// distScenario: events a second apart (one push each, whatever the load), so the totals of a
// run do not depend on timing: every client observes every event once. One group shares
// connections (each shard among its own clients of the group), the other has one per client.
const distScenario = `
name: dist
seed: 11
duration: 4s
controlPlane:
  debounce: {minQuiet: 20ms, maxDelay: 200ms}
topology:
  namespaces: 2
  services: 6
  endpointsPerService: {dist: constant, value: 2}
churn:
  - {kind: scale, at: [500ms, 1500ms, 2500ms], delta: {dist: constant, value: 1}}
clients:
  - {name: sidecars, count: 6, ramp: 0}
  - {name: mux, count: 3, ramp: 0, streamsPerConnection: 2}
phases:
  connect: {timeout: 60s}
  drain: {timeout: 20s}
thresholds:
  xdslab_events_missed_total: ['count==0']
`

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// distRun runs a distributed run with the CLI's commands, in this process: a control plane on
// a watched directory, 'xdslab sim --publish' and N 'xdslab fleet --scenario --segment I/N',
// each as its own command with its own flags, then 'xdslab merge'. It returns the merged
// summary, the shards' and the merge's exit code.
func distRun(t *testing.T, scenarioFile string, n int, extraMerge ...string) (*summary.Summary, []*summary.Summary, int) {
	t.Helper()
	sc, err := scenarios.Load(scenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mesh := filepath.Join(dir, "mesh")
	if err := os.Mkdir(mesh, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := run.ControlPlaneOptions(sc)
	opts.ConfigDir = mesh
	opts.ConfigRescan = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := startControlPlane(t, ctx, opts)
	defer cp.Stop()

	pub := freeAddr(t)
	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	codes := make([]int, n+1)
	var wg sync.WaitGroup
	wg.Go(func() {
		codes[n] = runCLI(ctx, []string{"sim", scenarioFile, "--sink-dir", mesh, "--publish", pub, "--shards", fmt.Sprint(n),
			"--summary", filepath.Join(dir, "sim.json"), "--progress", "0", "--ack-timeout", "1m", "--start-at", start})
	})
	for i := range n {
		wg.Go(func() {
			codes[i] = runCLI(ctx, []string{"fleet", "--scenario", scenarioFile, "--target", cp.GRPCAddr(), "--segment", fmt.Sprintf("%d/%d", i, n),
				"--probes", "http://" + pub, "--start-at", start, "--summary", filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)), "--progress", "off",
				"--target-metrics", cp.MetricsAddr()})
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != exitOK {
			t.Fatalf("process %d of the run: exit %d", i, c)
		}
	}
	var shards []*summary.Summary
	for i := range n {
		s, err := summary.ReadFile(filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, s)
	}
	// An earlier run's shard left in the directory (a reused volume, a summary of a version
	// that wrote no run id): merge leaves it out.
	stale := *shards[0]
	staleAt := shards[0].Metadata.StartAt.Add(-24 * time.Hour)
	stale.Metadata.StartAt, stale.Metadata.Segment = &staleAt, &summary.Segment{Index: 0, Count: 1}
	stale.Metadata.Labels = maps.Clone(stale.Metadata.Labels)
	delete(stale.Metadata.Labels, merge.LabelRun)
	if err := summary.WriteFile(filepath.Join(dir, "shard-0-of-yesterday.json"), &stale); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "merged", "summary.json")
	code := runCLI(ctx, append([]string{"merge", "--dir", dir, "--wait", fmt.Sprint(n), "--timeout", "10s", "--out", out, "--quiet"}, extraMerge...))
	merged, err := summary.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return merged, shards, code
}

// startControlPlane starts a control plane with opts on ctx; the caller stops it (before its
// goroutine check).
func startControlPlane(t *testing.T, ctx context.Context, opts controlplane.Options) *controlplane.Server {
	t.Helper()
	cp, err := controlplane.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return cp
}

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dist.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShardsMatchWholeFleet: N shard processes against one control plane give the totals one
// process with the whole fleet gives (connected clients, responses, observations, events),
// and the merged percentiles are those of every shard's observations put together, within the
// histogram's precision.
func TestShardsMatchWholeFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two distributed runs")
	}
	defer goleak.VerifyNone(t)
	sc := writeScenario(t, distScenario)
	whole, _, code := distRun(t, sc, 1)
	if code != exitOK {
		t.Fatalf("merge of the whole fleet: exit %d", code)
	}
	merged, shards, code := distRun(t, sc, 3)
	if code != exitOK {
		t.Fatalf("merge of 3 shards: exit %d", code)
	}
	get := func(s *summary.Summary, name, stat string, tags map[string]string) float64 {
		m, ok := s.Results.Find(name, tags)
		if !ok {
			t.Fatalf("%s lacks %s%s", s.Metadata.Command, name, summary.TagString(tags))
		}
		return m.Values[stat]
	}
	for _, c := range []struct {
		name, stat string
		tags       map[string]string
	}{
		{fleet.MetricConnected, "value", nil},
		{fleet.MetricFullConfigClients, "value", nil},
		{fleet.MetricResponses, "count", nil},
		{fleet.MetricResponses, "count", map[string]string{"type": "EDS"}},
		{fleet.MetricResponses, "count", map[string]string{"type": "CDS"}},
		{fleet.MetricProbesObserved, "count", nil},
		{fleet.MetricProbesMissed, "count", nil},
		{fleet.MetricProbeEvents, "count", nil},
		{collect.MetricEventsMissed, "count", nil},
		{collect.MetricSimEvents, "count", nil},
		{collect.MetricConnectIncomplete, "value", nil},
	} {
		w, m := get(whole, c.name, c.stat, c.tags), get(merged, c.name, c.stat, c.tags)
		if w != m {
			t.Errorf("%s%s %s: whole fleet %v, 3 shards merged %v", c.name, summary.TagString(c.tags), c.stat, w, m)
		}
	}
	// Every shard scraped the control plane's CPU on this machine: the merge compares them.
	for _, s := range shards {
		if l := s.Metadata.Labels[collect.LabelTargetLocal]; l != "yes" {
			t.Errorf("shard %v: targetLocal %q, want yes (the target is on loopback)", s.Metadata.Segment, l)
		}
		if _, ok := s.Results.Find(collect.MetricCPUSeconds, map[string]string{"side": collect.SideControlPlane}); !ok {
			t.Errorf("shard %v lacks the control plane's CPU (--target-metrics)", s.Metadata.Segment)
		}
	}
	if _, ok := merged.Results.Find(collect.MetricHarnessCPURatio, nil); !ok {
		t.Errorf("merged summary lacks %s: note.harness %q", collect.MetricHarnessCPURatio, merged.Metadata.Labels["note.harness"])
	}
	if _, ok := merged.Results.Find(fleet.MetricTimeToFirstConfig, nil); !ok {
		t.Errorf("merged summary lacks %s (scenario thresholds use it)", fleet.MetricTimeToFirstConfig)
	}
	if v := get(whole, fleet.MetricConnected, "value", nil); v != 9 {
		t.Errorf("connected %v, want 9", v)
	}
	if v := get(merged, fleet.MetricProbesObserved, "count", nil); v != 27 {
		t.Errorf("observations %v, want 9 clients x 3 events", v)
	}
	// Percentiles: the merged histogram against all shards' raw observations.
	var all []float64
	for _, s := range shards {
		m, _ := s.Results.Find(fleet.MetricPushLatency, nil)
		h, err := m.Histogram.Decode()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range h.Distribution() {
			for range b.Count {
				all = append(all, float64(b.From))
			}
		}
	}
	slices.Sort(all)
	pm, _ := merged.Results.Find(fleet.MetricPushLatency, nil)
	for _, p := range []struct {
		key string
		q   float64
	}{{"p(50)", 50}, {"p(90)", 90}, {"p(99)", 99}} {
		// The rank HdrHistogram reports for a percentile: the value at which the count reaches
		// round(q × n) (a rank rule, not a precision matter: with few observations another rule
		// picks a neighbouring observation).
		rank := max(int(p.q/100*float64(len(all))+0.5), 1)
		want := all[rank-1] * 1e-6
		got := pm.Values[p.key]
		// HDR with 3 significant digits: a value stands for its bucket, within 0.1%.
		if math.Abs(got-want) > want*2e-3+1e-6 {
			t.Errorf("merged %s = %v, the shards' observations give %v", p.key, got, want)
		}
	}
	// Every shard's clock was measured against the simulator and reported.
	if m, ok := merged.Results.Find(collect.MetricClockOffset, nil); !ok || len(merged.Metadata.Shards) != 4 {
		t.Errorf("merged summary: clock offset %v (found %v), %d inputs; want the offset and 3 shards + sim", m.Values, ok, len(merged.Metadata.Shards))
	}
}

// TestDistributedRunCommands: the shards' and the simulator's summaries carry what a merge
// needs, the merge gates once (exit 99 when a threshold fails) and compare reads it.
func TestDistributedRunCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a distributed run")
	}
	defer goleak.VerifyNone(t)
	failing := strings.Replace(distScenario, "['count==0']", "['count==0']\n  xdslab_fleet_connected: ['value<5']", 1)
	sc := writeScenario(t, failing)
	merged, shards, code := distRun(t, sc, 2)
	if code != exitThreshold {
		t.Errorf("merge with a failing threshold: exit %d, want %d", code, exitThreshold)
	}
	for i, s := range shards {
		md := s.Metadata
		if md.Segment == nil || md.Segment.Index != i || md.Segment.Count != 2 || md.Clock == nil || md.StartAt == nil || md.Probes == "" || len(s.Results.Events) != 3 {
			t.Errorf("shard %d: segment %v clock %v startAt %v probes %q events %d", i, md.Segment, md.Clock, md.StartAt, md.Probes, len(s.Results.Events))
		}
		if len(s.Results.Thresholds) != 0 {
			t.Errorf("shard %d evaluated thresholds on its part of the fleet", i)
		}
		if md.StartAt != nil && md.Labels[merge.LabelRun] != merge.RunIDFromStart(*md.StartAt) {
			t.Errorf("shard %d: run label %q, want the id of its start %s", i, md.Labels[merge.LabelRun], md.StartAt)
		}
	}
	if want := merge.RunIDFromStart(*shards[0].Metadata.StartAt); merged.Metadata.Labels[merge.LabelRun] != want || len(merged.Metadata.Shards) != 3 {
		t.Errorf("merged run %q of %d inputs, want run %s of the 2 shards and the simulator (not the earlier run's shard)", merged.Metadata.Labels[merge.LabelRun], len(merged.Metadata.Shards), want)
	}
	// The two written thresholds and the implicit full-config check of each group, evaluated
	// on the shards' per-group counts summed.
	if merged.Results.Passed || len(merged.Results.Thresholds) != 4 {
		t.Errorf("merged: passed %v thresholds %+v; want value<5 on 9 connected clients to fail", merged.Results.Passed, merged.Results.Thresholds)
	}
	for _, th := range merged.Results.Thresholds {
		if th.Metric == collect.MetricEventsMissed && !th.Passed {
			t.Errorf("events missed across shards: %v", *th.Value)
		}
		if th.Metric == collect.MetricConnectIncomplete && (!th.Passed || th.Value == nil || (th.Tags["group"] != "sidecars" && th.Tags["group"] != "mux")) {
			t.Errorf("implicit full-config check %+v, want it passed on groups sidecars and mux", th)
		}
	}
	p := filepath.Join(t.TempDir(), "m.json")
	if err := summary.WriteFile(p, merged); err != nil {
		t.Fatal(err)
	}
	if got := runCLI(context.Background(), []string{"compare", p, p, "--allow-inconclusive"}); got != exitOK {
		t.Errorf("compare of a merged summary with itself: exit %d", got)
	}
}

func TestMergeCommandExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, s *summary.Summary) string {
		p := filepath.Join(dir, name)
		if err := summary.WriteFile(p, s); err != nil {
			t.Fatal(err)
		}
		return p
	}
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	shard := func(i, n int, connected, incomplete float64) *summary.Summary {
		return &summary.Summary{Version: summary.Version,
			Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: at, Ended: at.Add(time.Second), DurationSeconds: 1,
				Segment: &summary.Segment{Index: i, Count: n}},
			Results: summary.Results{Passed: true, Metrics: []summary.Metric{
				summary.NewGauge(fleet.MetricConnected, summary.Default, connected, 0, connected, nil),
				summary.NewGauge(collect.MetricConnectIncomplete, summary.Default, incomplete, 0, connected, map[string]string{"group": "sidecars"}),
				summary.NewGauge(collect.MetricConnectIncomplete, summary.Default, 0, 0, 0, map[string]string{"group": "mux"}),
			}}}
	}
	a, b := write("a.json", shard(0, 2, 3, 0)), write("b.json", shard(1, 2, 4, 0))
	unconfigured := write("unconfigured.json", shard(1, 2, 4, 2))
	elsewhere := func(i int) string {
		s := shard(i, 2, 3, 0)
		s.Metadata.Labels = map[string]string{"scenario": "elsewhere"}
		return write(fmt.Sprintf("elsewhere-%d.json", i), s)
	}
	lone := write("lone.json", shard(0, 3, 1, 0))
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte("{\n  \"version\": 1\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	pass := writeScenario(t, strings.Replace(distScenario, "xdslab_events_missed_total: ['count==0']", "xdslab_fleet_connected: ['value==7']", 1))
	fail := writeScenario(t, strings.Replace(distScenario, "xdslab_events_missed_total: ['count==0']", "xdslab_fleet_connected: ['value<7']", 1))
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"merged passes", []string{"merge", a, b, "--scenario", pass, "--out", filepath.Join(dir, "out", "m.json")}, exitOK},
		{"merged fails once", []string{"merge", a, b, "--scenario", fail}, exitThreshold},
		{"a shard's clients without full config fail it", []string{"merge", a, unconfigured, "--scenario", pass}, exitThreshold},
		{"no scenario", []string{"merge", a, b}, exitOK},
		{"missing shard", []string{"merge", lone}, exitUsage},
		{"mixed runs", []string{"merge", a, lone}, exitUsage},
		{"bad json", []string{"merge", a, broken}, exitUsage},
		{"no file", []string{"merge", a, filepath.Join(dir, "nope.json")}, exitUsage},
		{"nothing", []string{"merge"}, exitUsage},
		{"wait without dir", []string{"merge", a, "--wait", "2"}, exitUsage},
		{"dir times out", []string{"merge", "--dir", t.TempDir(), "--wait", "1", "--timeout", "1ms"}, exitUsage},
		{"bad scenario", []string{"merge", a, b, "--scenario", "no-such-scenario"}, exitUsage},
		{"another scenario's shards", []string{"merge", elsewhere(0), elsewhere(1), "--scenario", pass}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runCLI(context.Background(), append(tc.args, "--quiet")); got != tc.want {
				t.Errorf("xdslab %s: exit %d, want %d", strings.Join(tc.args, " "), got, tc.want)
			}
		})
	}
	m, err := summary.ReadFile(filepath.Join(dir, "out", "m.json"))
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := m.Results.Find(fleet.MetricConnected, nil); g.Values["value"] != 7 {
		t.Errorf("merged connected %v, want 3+4", g.Values["value"])
	}
}

func TestParseSegmentAndStart(t *testing.T) {
	for _, tc := range []struct {
		seg      string
		segments int
		job      string
		want     fleet.Segment
		err      string
	}{
		{"", 0, "", fleet.Segment{}, ""},
		{"1/4", 0, "", fleet.Segment{Index: 1, Count: 4}, ""},
		{"1/4", 4, "3", fleet.Segment{Index: 1, Count: 4}, ""},
		{"auto", 4, "3", fleet.Segment{Index: 3, Count: 4}, ""},
		{"", 4, "2", fleet.Segment{Index: 2, Count: 4}, ""},
		{"", 4, "", fleet.Segment{}, "JOB_COMPLETION_INDEX is not set"},
		{"auto", 0, "1", fleet.Segment{}, "needs --segments"},
		{"", 4, "4", fleet.Segment{}, "not a shard index"},
		{"4/4", 0, "", fleet.Segment{}, "0 <= I < N"},
		{"1/4", 3, "", fleet.Segment{}, "disagree"},
		{"x", 0, "", fleet.Segment{}, "want I/N"},
		{"0/0", 0, "", fleet.Segment{}, "at least 1"},
		{"0/-2", 0, "", fleet.Segment{}, "at least 1"},
	} {
		got, err := parseSegment(tc.seg, tc.segments, tc.job)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseSegment(%q, %d, %q) = %v, %v; want %v, %q", tc.seg, tc.segments, tc.job, got, err, tc.want, tc.err)
		}
	}
	now := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	f := filepath.Join(t.TempDir(), "startAt")
	if err := os.WriteFile(f, []byte("2026-12-03T16:05:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v, file string
		want    time.Time
		err     bool
	}{
		{"", "", time.Time{}, false},
		{"+30s", "", now.Add(30 * time.Second), false},
		{"2026-12-03T16:01:00Z", "", now.Add(time.Minute), false},
		{"", f, now.Add(5 * time.Minute), false},
		{"tomorrow", "", time.Time{}, true},
		{"+-1s", "", time.Time{}, true},
		{"+1s", f, time.Time{}, true},
		{"", f + ".missing", time.Time{}, true},
	} {
		got, err := parseStartAt(tc.v, tc.file, now)
		if !got.Equal(tc.want) || (err != nil) != tc.err {
			t.Errorf("parseStartAt(%q, %q) = %v, %v; want %v (error %v)", tc.v, tc.file, got, err, tc.want, tc.err)
		}
	}
}

// TestShardFlagsNeedScenario: the flags of a distributed run's shard are refused, as usage
// errors, on a fleet that is not one.
func TestShardFlagsNeedScenario(t *testing.T) {
	for _, flag := range [][]string{{"--probes", "http://127.0.0.1:1"}, {"--start-at", "+1s"}, {"--target-metrics", "127.0.0.1:1"}} {
		args := append([]string{"fleet", "--target", "127.0.0.1:1", "--clients", "1"}, flag...)
		if got := runCLI(context.Background(), args); got != exitUsage {
			t.Errorf("xdslab %s: exit %d, want %d", strings.Join(args, " "), got, exitUsage)
		}
	}
}

// TestShardStopped: a shard stopped by a signal (its command's context ends) once its clients
// connected writes the summary of what it measured, marked interrupted, and exits 130, so a
// stopped pod does not lose the whole distributed run; one stopped before its start writes
// nothing and exits 130 at once.
func TestShardStopped(t *testing.T) {
	defer goleak.VerifyNone(t)
	sc := writeScenario(t, strings.Replace(distScenario, "duration: 4s", "duration: 60s", 1))
	opts := controlplane.DefaultOptions()
	opts.GRPCAddr, opts.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.ConfigDir = t.TempDir()
	bg, cancelAll := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelAll()
	cp := startControlPlane(t, bg, opts)
	defer cp.Stop()
	for _, tc := range []struct {
		name    string
		startAt string
		summary bool
	}{
		{"measuring", "", true},
		{"waiting for the start", "+1h", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "shard.json")
			args := []string{"fleet", "--scenario", sc, "--target", cp.GRPCAddr(), "--segment", "0/2", "--summary", file, "--progress", "off"}
			if tc.startAt != "" {
				args = append(args, "--start-at", tc.startAt)
			}
			ctx, stop := context.WithCancel(bg)
			time.AfterFunc(3*time.Second, stop) // the signal: connected by then, 57 s from the end
			began := time.Now()
			if code := runCLI(ctx, args); code != exitInterrupted {
				t.Fatalf("exit %d, want %d", code, exitInterrupted)
			}
			if took := time.Since(began); took > 30*time.Second {
				t.Errorf("the stopped shard took %v to exit", took)
			}
			s, err := summary.ReadFile(file)
			if !tc.summary {
				if err == nil {
					t.Error("a shard stopped before its start wrote a summary")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := s.Metadata.Labels["note.interrupted"]; !strings.Contains(n, "stopped (SIGINT or SIGTERM) during ") {
				t.Errorf("note.interrupted %q", n)
			}
			if m, ok := s.Results.Find(fleet.MetricFullConfigClients, nil); !ok || m.Values["value"] == 0 {
				t.Errorf("the shard's clients' full configs are not in its summary: %+v", m)
			}
		})
	}
}

// TestShardFlags: a shard (fleet --scenario) serves --metrics-addr as a plain fleet does (the
// fleet Job's pods are scraped there; it served nothing) and refuses the client flags its
// scenario sets (they were ignored), and a bad --progress.
func TestShardFlags(t *testing.T) {
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	sc := writeScenario(t, strings.Replace(distScenario, "duration: 4s", "duration: 60s", 1))
	for _, extra := range [][]string{{"--clients", "50"}, {"--delta"}, {"--nack", "realistic"}, {"--duration", "5s"}, {"--seed", "3"}, {"--progress", "loud"}} {
		args := append([]string{"fleet", "--scenario", sc, "--target", "127.0.0.1:1", "--segment", "0/2"}, extra...)
		if got := runCLI(context.Background(), args); got != exitUsage {
			t.Errorf("xdslab %s: exit %d, want %d", strings.Join(args, " "), got, exitUsage)
		}
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- runCLI(ctx, []string{"fleet", "--scenario", sc, "--target", freeAddr(t), "--segment", "0/2", "--progress", "off",
			"--metrics-addr", addr, "--summary", filepath.Join(t.TempDir(), "shard.json")})
	}()
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && body == ""; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	cancel()
	<-done
	if !strings.Contains(body, "xdslab_fleet_") {
		t.Errorf("the shard's --metrics-addr served no xdslab_fleet_* series (%d bytes)", len(body))
	}
}
