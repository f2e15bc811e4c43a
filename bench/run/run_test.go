package run

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/catalog"
	"github.com/xdslab/xdslab/internal/pprofcpu"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/internal/syncbuf"
	"github.com/xdslab/xdslab/scenarios"
)

// smallScenario is a few services, ten clients and a few seconds of churn: enough for every
// phase and every report to have content, small enough for -race on 2 cores.
const smallScenario = `
name: small
seed: 7
duration: 3s
topology:
  namespaces: 2
  services: 6
  endpointsPerService: {dist: constant, value: 3}
churn:
  - {kind: endpoint-flap, rate: 4/s, down: 400ms}
  - {kind: config-change, every: 1s}
clients:
  - {name: sidecars, count: 10, ramp: 0}
phases:
  connect: {timeout: 30s}
  drain: {timeout: 5s}
thresholds:
  xdslab_push_latency_seconds: ['p(99)<30s']
  xdslab_events_missed_total: ['count==0']
  xdslab_sim_events_total: ['count>0']
`

func loadScenario(t testing.TB, src string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.LoadBytes("test.yaml", []byte(src))
	require.NoError(t, err)
	return sc
}

// find returns the metric or fails the test.
func find(t *testing.T, s *summary.Summary, name string, tags map[string]string) summary.Metric {
	t.Helper()
	m, ok := s.Results.Find(name, tags)
	require.Truef(t, ok, "summary has no metric %s%s", name, summary.TagString(tags))
	return m
}

// checkRunSummary asserts what every run of smallScenario must produce, reading summary.json
// back from disk.
func checkRunSummary(t *testing.T, out string) *summary.Summary {
	t.Helper()
	s, err := summary.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.Equal(t, "run", s.Metadata.Command)

	// The resolved scenario is embedded and loads back.
	var cfg struct {
		Name    string `json:"name"`
		Clients []struct {
			Count int `json:"count"`
		} `json:"clients"`
	}
	require.NoError(t, json.Unmarshal(s.Config, &cfg))
	require.Equal(t, "small", cfg.Name)
	require.Equal(t, 10, cfg.Clients[0].Count)

	// Every metric the run wrote is catalogued (internal/catalog: what validate checks
	// thresholds against), with the type, unit and tag values the catalogue gives it.
	for _, err := range catalog.Check(s.Results.Metrics, []string{"sidecars"}, scenarios.ChurnKinds()) {
		t.Errorf("catalogue: %v", err)
	}

	events := find(t, s, collect.MetricSimEvents, nil).Values["count"]
	require.Greater(t, events, 2.0, "churn ran")
	require.Equal(t, events, find(t, s, "xdslab_probe_events_total", nil).Values["count"], "every event was registered")
	require.Equal(t, 0.0, find(t, s, collect.MetricEventsMissed, nil).Values["count"])
	require.Equal(t, 0.0, find(t, s, collect.MetricEventsUnmeasured, nil).Values["count"])

	push := find(t, s, "xdslab_push_latency_seconds", nil)
	require.NotNil(t, push.Histogram, "trends carry their HDR histogram")
	h, err := push.Histogram.Decode()
	require.NoError(t, err)
	require.Greater(t, h.TotalCount(), int64(events), "each event observed by several clients")
	require.Greater(t, push.Values["p(50)"], 0.0)
	require.LessOrEqual(t, push.Values["p(50)"], push.Values["p(99)"])
	find(t, s, "xdslab_push_latency_seconds", map[string]string{"kind": "endpoint-flap"})
	find(t, s, "xdslab_push_latency_seconds", map[string]string{"kind": "config-change"})
	conv := find(t, s, "xdslab_convergence_seconds", nil)
	require.GreaterOrEqual(t, conv.Values["max"], push.Values["p(50)"], "convergence is the max over clients")

	// One record per event, with its t0, the clients in its reach and its convergence, whatever
	// the target (results.events[] was written only by fleet shards).
	require.Len(t, s.Results.Events, int(events))
	maxConv := 0.0
	for _, e := range s.Results.Events {
		require.Falsef(t, e.T0.IsZero(), "event %d has no t0", e.ID)
		require.NotEmptyf(t, e.Kind, "event %d has no kind", e.ID)
		require.Positivef(t, e.Reached, "event %d reaches no client", e.ID)
		require.Equalf(t, e.Reached, e.Observed+e.AlreadyHeld+e.Superseded, "event %d: every client in reach accounted for", e.ID)
		if e.Observed > 0 {
			require.Positivef(t, e.ConvergenceSeconds, "event %d observed by %d clients has no convergence", e.ID, e.Observed)
		}
		maxConv = max(maxConv, e.ConvergenceSeconds)
	}
	require.InEpsilon(t, conv.Values["max"], maxConv, 0.01, "the convergence trend is over the same records")

	ttfc := find(t, s, fleet.MetricTimeToFirstConfig, nil)
	require.Greater(t, ttfc.Values["max"], 0.0)
	// For each client group too (here one: the fleet's).
	ttfcGroup := find(t, s, fleet.MetricTimeToFirstConfig, map[string]string{"group": "sidecars"})
	require.Equal(t, ttfc.Values["max"], ttfcGroup.Values["max"], "one group: its time to first config is the fleet's")
	require.Equal(t, 0.0, find(t, s, collect.MetricConnectIncomplete, nil).Values["value"])
	require.Equal(t, 10.0, find(t, s, "xdslab_fleet_full_config_clients", nil).Values["value"])

	for _, p := range []string{"setup", "connect", "measure", "drain"} {
		find(t, s, collect.MetricPhaseDuration, map[string]string{"phase": p})
	}
	require.GreaterOrEqual(t, find(t, s, collect.MetricPhaseDuration, map[string]string{"phase": "measure"}).Values["value"], 3.0)
	require.Greater(t, find(t, s, collect.MetricCPUSeconds, map[string]string{"side": "process"}).Values["value"], 0.0)

	// The harness beside the control plane: one receive backlog per response, the start
	// lateness and CPU tests stated, and the verdict (whichever it is on this machine).
	backlog := find(t, s, fleet.MetricReceiveBacklog, nil)
	bh, err := backlog.Histogram.Decode()
	require.NoError(t, err)
	require.Equal(t, find(t, s, fleet.MetricResponses, nil).Values["count"], float64(bh.TotalCount()), "a backlog per response received")
	find(t, s, collect.MetricHarnessSaturated, nil)
	find(t, s, collect.MetricHarnessSaturated, map[string]string{"reason": collect.ReasonStartLateness})
	for _, want := range []string{"harness ", "control plane", "fleet start lateness p99", "receive backlog p99"} {
		require.Contains(t, s.Metadata.Labels["note.harness"], want)
	}
	require.Equal(t, find(t, s, collect.MetricHarnessSaturated, nil).Values["value"] == 1, s.Metadata.Labels["note.saturated"] != "")

	// The scenario's three thresholds and the implicit one of its client group.
	require.Len(t, s.Results.Thresholds, 4)
	for _, th := range s.Results.Thresholds {
		require.Truef(t, th.Passed, "threshold %s %s", th.Metric, th.Expression)
		require.NotNil(t, th.Value)
	}
	require.Equal(t, 0.0, find(t, s, collect.MetricConnectIncomplete, map[string]string{"group": "sidecars"}).Values["value"])
	require.True(t, s.Results.Passed)

	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(string(junit), "<testcase "))
	require.Contains(t, string(junit), `xdslab_connect_incomplete_clients{group=&#34;sidecars&#34;} value==0`)
	require.NotContains(t, string(junit), "<failure")
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(string(html), "<svg"), "four inline plots")
	require.Contains(t, string(html), `id="headline"`, "the headline leads the page")
	require.Less(t, strings.Index(string(html), `id="headline"`), strings.Index(string(html), "<h2>"), "the headline comes before every section")
	require.Contains(t, string(html), "change → in effect")
	require.Contains(t, string(html), "p99.99", "latency plots on the nines axis")
	// Each trend's histogram, for HdrHistogram's plotters.
	hgrm, err := os.ReadFile(filepath.Join(out, "xdslab_push_latency_seconds.hgrm"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(hgrm), " Value\tPercentile\tTotalCount\t1/(1-Percentile)"), "hgrm header")
	require.Contains(t, string(hgrm), "#[Mean    =")
	_, err = os.Stat(filepath.Join(out, "xdslab_convergence_seconds.kind=endpoint-flap.hgrm"))
	require.NoError(t, err)
	require.Contains(t, string(html), "<p>Harness: harness ")
	require.Equal(t, s.Metadata.Labels["note.saturated"] != "", strings.Contains(string(html), `id="harness-saturated"`))
	require.Contains(t, string(html), "endpoint-flap")
	return s
}

func TestRunInProcess(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	out := t.TempDir()
	var progress syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Scrape the live metrics while the run lasts.
	scraped := make(chan string, 1)
	scrapeCtx, stopScrape := context.WithCancel(ctx)
	go func() {
		defer close(scraped)
		url := "http://" + lis.Addr().String() + "/metrics"
		for scrapeCtx.Err() == nil {
			if resp, err := http.Get(url); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				// Wait for the measure phase: the simulator's counter appears with its first
				// event (the histograms are exported, empty, from the start).
				if strings.Contains(string(b), "xdslab_push_latency_seconds_bucket") && strings.Contains(string(b), "xdslab_sim_events_total{") {
					scraped <- string(b)
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	s, err := Run(ctx, sc, Options{Out: out, Progress: &progress, ProgressInterval: 500 * time.Millisecond, CPUProfile: true, MetricsListener: lis})
	stopScrape()
	require.NoError(t, err)
	live := <-scraped
	for _, name := range []string{"xdslab_fleet_connected", "xdslab_sim_events_total", "xdslab_push_latency_seconds", "pilot_xds", "xdslab_cp_push_cycles_total"} {
		require.Contains(t, live, name, "live /metrics")
	}
	require.True(t, s.Results.Passed)
	s = checkRunSummary(t, out)

	// In-process, the control plane's own figures are available.
	cycles := find(t, s, collect.MetricPushCycles, nil).Values["count"]
	require.Greater(t, cycles, 0.0)
	perPush := find(t, s, collect.MetricEventsPerPush, nil).Values["value"]
	require.InDelta(t, find(t, s, collect.MetricSimEvents, nil).Values["count"]/cycles, perPush, 1e-9)
	find(t, s, collect.MetricDebounceDelay, nil)
	// The fixed policy's window is minQuiet throughout.
	q := find(t, s, collect.MetricDebounceQuiet, nil).Values
	require.InDelta(t, sc.ControlPlane.Debounce.MinQuiet.D().Seconds(), q["value"], 1e-9)
	require.InDelta(t, q["value"], q["max"], 1e-9)
	hit := find(t, s, collect.MetricCacheHitRatio, nil)
	require.Greater(t, hit.Values["passes"]+hit.Values["fails"], 0.0)
	// The CPU profile splits the process between the two sides: each side's figure is the
	// profile's samples labelled with it (cpu.pprof, written beside the summary), the sides and
	// the runtime's unlabelled share add up to the whole profile, and the split cannot exceed
	// the process's CPU. Both sides did work: the control plane built snapshots and served 10
	// clients, the harness ran them and the simulator (the profile samples CPU time, 10 ms a
	// sample, so a loaded machine does not starve a side of samples).
	prof, err := os.ReadFile(filepath.Join(out, "cpu.pprof"))
	require.NoError(t, err)
	bySide, err := pprofcpu.ByLabel(prof, collect.SideLabel)
	require.NoError(t, err)
	profiled, reported := 0.0, 0.0
	for side, d := range bySide {
		require.InDeltaf(t, d.Seconds(), find(t, s, collect.MetricCPUSeconds, map[string]string{"side": side}).Values["value"], 1e-12, "side %s", side)
		profiled += d.Seconds()
	}
	for _, m := range s.Results.Metrics {
		if m.Name == collect.MetricCPUSeconds && m.Tags["side"] != "process" {
			reported += m.Values["value"]
		}
	}
	require.InDelta(t, profiled, reported, 1e-9, "the sides add up to the profile")
	cp := find(t, s, collect.MetricCPUSeconds, map[string]string{"side": collect.SideControlPlane}).Values["value"]
	h := find(t, s, collect.MetricCPUSeconds, map[string]string{"side": collect.SideHarness}).Values["value"]
	require.Greater(t, cp, 0.0, "the control plane's CPU")
	require.Greater(t, h, 0.0, "the harness's CPU")
	require.LessOrEqual(t, cp+h, find(t, s, collect.MetricCPUSeconds, map[string]string{"side": "process"}).Values["value"]+0.05)
	require.Contains(t, progress.String(), "measure")
	require.Equal(t, "in-process", s.Metadata.Labels["target"])
	// One process: the CPU test is made on the profile's split (when the profile caught the
	// control plane at all, which a short run on a loaded machine may not).
	require.Contains(t, s.Metadata.Labels["note.harness"], "one process, split by pprof labels")
}

// TestRunExternal runs the same scenario against a control plane that is not started by the
// runner: one watching a directory of Istio YAML (what 'xdslab controlplane --config-dir DIR'
// runs), reached only through --target, --sink-dir and --target-metrics.
func TestRunExternal(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, dir := externalControlPlane(t, ctx)

	out := t.TempDir()
	s, err := Run(ctx, sc, Options{Out: out, Target: cp.addr, SinkDir: dir, TargetMetrics: cp.srv.MetricsAddr()})
	require.NoError(t, err)
	require.True(t, s.Results.Passed)
	s = checkRunSummary(t, out)
	require.Equal(t, "external", s.Metadata.Labels["target"])
	// This target exports no process_* metrics: the CPU test cannot be made, and says so.
	_, cpuTest := s.Results.Find(collect.MetricHarnessSaturated, map[string]string{"reason": collect.ReasonCPU})
	require.False(t, cpuTest)
	require.Contains(t, s.Metadata.Labels["note.harness"], "whether the harness took CPU from the control plane is not known")
	// The figures scraped from the target's /metrics.
	require.Greater(t, find(t, s, collect.MetricPushCycles, nil).Values["count"], 0.0)
	find(t, s, collect.MetricCacheHitRatio, nil)
	// The simulator wrote the mesh as files.
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
}

// externalControlPlane starts a control plane watching a directory of its own (what
// 'xdslab controlplane --config-dir DIR' runs), stopped when the test ends, and returns it
// and the directory.
func externalControlPlane(t *testing.T, ctx context.Context) (*cpHandle, string) {
	t.Helper()
	dir := t.TempDir()
	opts := controlplane.DefaultOptions()
	opts.GRPCAddr, opts.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.ConfigDir = dir
	opts.ConfigRescan = 200 * time.Millisecond
	opts.Debounce.MinQuiet = 50 * time.Millisecond
	cp, err := startControlPlane(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(cp.stop)
	return cp, dir
}

func TestRunExternalNeedsSinkDir(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	_, err := Run(context.Background(), sc, Options{Target: "127.0.0.1:1"})
	require.ErrorContains(t, err, "--sink-dir")
}

func TestRunRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scenario twice")
	}
	sc := loadScenario(t, strings.Replace(smallScenario, "duration: 3s", "duration: 1s", 1))
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen []int
	s, err := Run(ctx, sc, Options{Out: out, Repeat: 2, OnRun: func(i int, s *summary.Summary) {
		require.Equal(t, strconv.Itoa(i), s.Metadata.Labels["repeat"])
		seen = append(seen, i)
	}})
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, seen)
	require.Equal(t, "2", s.Metadata.Labels["repeat"])
	for _, d := range []string{"run-1", "run-2"} {
		_, err := summary.ReadFile(filepath.Join(out, d, "summary.json"))
		require.NoError(t, err)
	}
}

// TestRunExternalMetricsWithoutPilotServices: a target whose metrics lack Istio's
// pilot_services (a go-control-plane server's) is run against, its load of the topology noted
// as unchecked; before, the run waited out the connect timeout and blamed the control plane.
func TestRunExternalMetricsWithoutPilotServices(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, dir := externalControlPlane(t, ctx)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "# TYPE foo counter\nfoo 1\n")
	}))
	defer other.Close()

	s, err := Run(ctx, sc, Options{Out: t.TempDir(), Target: cp.addr, SinkDir: dir, TargetMetrics: other.URL + "/metrics"})
	require.NoError(t, err)
	require.Contains(t, s.Metadata.Labels["note.setup"], "could not be checked: the target's metrics have no pilot_services")
}

// Events no client is in reach of (gRPC clients asking for another service) are in no class:
// the summary says how many, rather than let them vanish between observed and missed.
func TestRunNotesUnreachedEvents(t *testing.T) {
	sc := loadScenario(t, `
name: unreached
seed: 3
duration: 1500ms
topology: {namespaces: 1, services: 4, endpointsPerService: 2, virtualServices: 0, destinationRules: 0}
churn:
  - {kind: scale, at: [200ms, 400ms, 600ms], delta: {dist: constant, value: 1}}
clients:
  - {name: grpc, count: 2, ramp: 0, xds: grpc, targets: ["nosuch:80"], requireFullConfig: false}
phases: {connect: {timeout: 2s}, drain: {timeout: 500ms}}
`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Run(ctx, sc, Options{})
	require.NoError(t, err)
	require.Contains(t, s.Metadata.Labels["note.unreached"], "3 of 3 events reached no client")
}
