package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

func TestSimCommand(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(`name: sim-test
seed: 9
duration: 5s
topology: {services: 20, namespaces: 2, workloadEntries: true}
churn:
  - {kind: endpoint-flap, rate: 10/s}
  - {kind: service-delete, at: [2s]}
  - {kind: config-change, target: destinationrule, every: 1s}
`), 0o644))
	sink := filepath.Join(dir, "out")
	events := filepath.Join(dir, "events.jsonl")
	ctx := context.Background()
	require.Equal(t, exitOK, runCLI(ctx, []string{"sim", scenario, "--sink-dir", sink, "--events", events, "--fast", "--progress", "0"}))
	ents, err := os.ReadDir(sink)
	require.NoError(t, err)
	require.NotEmpty(t, ents)
	f, err := os.Open(events)
	require.NoError(t, err)
	defer f.Close()
	trace, err := simulator.ParseTrace(f, events)
	require.NoError(t, err)
	require.Greater(t, len(trace), 20)

	// The trace replays through a scenario.
	replay := filepath.Join(dir, "replay.yaml")
	require.NoError(t, os.WriteFile(replay, []byte("name: replay\nseed: 9\nduration: 5s\ntopology: {services: 20, namespaces: 2, workloadEntries: true}\nchurn:\n  - {kind: replay, file: events.jsonl}\n"), 0o644))
	require.Equal(t, exitOK, runCLI(ctx, []string{"sim", replay, "--sink-dir", filepath.Join(dir, "out2"), "--fast", "--progress", "0"}))

	// Bad input exits 2.
	require.Equal(t, exitUsage, runCLI(ctx, []string{"sim", scenario, "--sink-dir", sink, "--fast"}), "non-empty dir without --clean")
	require.Equal(t, exitOK, runCLI(ctx, []string{"sim", scenario, "--sink-dir", sink, "--fast", "--clean", "--progress", "0"}))
	require.Equal(t, exitUsage, runCLI(ctx, []string{"sim", scenario}), "no --sink-dir")
	require.Equal(t, exitUsage, runCLI(ctx, []string{"sim", filepath.Join(dir, "missing.yaml"), "--sink-dir", sink}))
	require.Equal(t, exitUsage, runCLI(ctx, []string{"sim", scenario, "--sink-dir", sink, "--clean", "--events", filepath.Join(dir, "no", "such", "dir.jsonl")}))
}

// The YAML sink's output is accepted by our file config source's decoder with no error, after
// every event of every churn kind (and holds exactly the simulator's objects).
func TestSimOutputAcceptedByConfigDecoder(t *testing.T) {
	defer goleak.VerifyNone(t)
	sc, err := scenarios.LoadBytes("all-kinds.yaml", []byte(`name: all-kinds
seed: 4
duration: 12s
topology: {services: 15, namespaces: 3, versions: 3, virtualServices: 0.5, destinationRules: 0.5}
churn:
  - {kind: endpoint-flap, rate: 3/s}
  - {kind: scale, every: 2s, services: 2}
  - {kind: rolling-deploy, every: 4s, window: 2s}
  - {kind: service-create, every: 3s}
  - {kind: service-delete, every: 5s}
  - {kind: config-change, target: virtualservice, every: 2s}
  - {kind: config-change, target: destinationrule, every: 2s}
  - {kind: service-account-change, every: 3s}
  - {kind: zone-failure, at: [6s], down: 2s}
`))
	require.NoError(t, err)
	for _, mode := range []struct {
		name                  string
		wes, scoped, grouping bool
	}{{"inline", false, false, false}, {"workloadentries-scoped-grouped", true, true, true}} {
		t.Run(mode.name, func(t *testing.T) {
			cfg := run.SimConfig(sc)
			cfg.Topology.WorkloadEntries, cfg.Topology.SidecarScoping = mode.wes, mode.scoped
			sim, err := simulator.New(cfg)
			require.NoError(t, err)
			dir := t.TempDir()
			sink, err := sinks.NewDir(sinks.DirOptions{Dir: dir, GroupRouting: mode.grouping})
			require.NoError(t, err)
			decodeAll := func() int {
				ents, err := os.ReadDir(dir)
				require.NoError(t, err)
				n := 0
				for _, e := range ents {
					data, err := os.ReadFile(filepath.Join(dir, e.Name()))
					require.NoError(t, err)
					cfgs, err := config.Decode(e.Name(), data)
					require.NoError(t, err)
					n += len(cfgs)
				}
				return n
			}
			kinds := map[simulator.ChurnKind]bool{}
			r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(time.Unix(0, 0)), Sink: sink,
				OnApplied: func(ev simulator.Event) {
					kinds[ev.Kind] = true
					require.Equal(t, len(sim.Current()), decodeAll(), "event %d (%s)", ev.ID, ev.Kind)
				}})
			require.NoError(t, err)
			require.NoError(t, r.Init(context.Background()))
			require.Equal(t, len(sim.Initial()), decodeAll())
			_, err = r.Run(context.Background())
			require.NoError(t, err)
			require.Len(t, kinds, 8, "every synthetic kind ran: %v", kinds)
		})
	}
}

// TestSimMCPSink: --sink mcp needs --listen, --listen goes with --sink mcp only, and a fast run
// serves the mesh over MCP.
func TestSimMCPSink(t *testing.T) {
	ctx := context.Background()
	require.Equal(t, exitUsage, runCLI(ctx, []string{"sim", "quickstart", "--sink", "mcp"}))
	require.Equal(t, exitUsage, runCLI(ctx, []string{"sim", "quickstart", "--sink-dir", t.TempDir(), "--listen", "127.0.0.1:0"}))
	require.Equal(t, exitOK, runCLI(ctx, []string{"sim", "quickstart", "--sink", "mcp", "--listen", "127.0.0.1:0", "--fast", "--progress", "0"}))
}

// TestSimFlagsThatNeedAnother: a flag that only works beside another (or with a value the
// sink cannot write) is a usage error before anything is written, instead of being ignored
// or writing objects no control plane reads.
func TestSimFlagsThatNeedAnother(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte("name: sim-flags\nseed: 1\nduration: 1s\ntopology: {services: 2}\n"), 0o644))
	for _, args := range [][]string{
		{"--api-version", "v2"},
		{"--api-version", "networking.istio.io/v2"},
		{"--shards", "3"},
		{"--ack-timeout", "1s"},
		{"--shard-wait", "1m"},
		{"--kube-pods"},
		{"--kube-service-entries"},
		{"--publish", "127.0.0.1:0", "--shard-wait", "-1s"},
		{"--progress", "-1s"},
	} {
		sink := filepath.Join(t.TempDir(), "mesh")
		full := append([]string{"sim", scenario, "--sink-dir", sink, "--progress", "0"}, args...)
		if !slices.Contains(args, "--publish") {
			full = append(full, "--fast")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if got := runCLI(ctx, full); got != exitUsage {
			t.Errorf("xdslab %s: exit %d, want %d", strings.Join(full, " "), got, exitUsage)
		}
		cancel()
		if _, err := os.Stat(sink); err == nil {
			t.Errorf("%v: the mesh was written", args)
		}
	}
	for _, v := range []string{"networking.istio.io/v1", "networking.istio.io/v1beta1", "networking.istio.io/v1alpha3"} {
		sink := filepath.Join(t.TempDir(), "mesh")
		if got := runCLI(context.Background(), []string{"sim", scenario, "--sink-dir", sink, "--fast", "--progress", "0", "--api-version", v}); got != exitOK {
			t.Errorf("--api-version %s: exit %d", v, got)
		}
	}
}

// TestSimPublishWithoutShards: a simulator no shard subscribes to within --shard-wait fails
// (exit 2, naming what to start) instead of running its churn for nobody and exiting 0.
func TestSimPublishWithoutShards(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte("name: sim-alone\nseed: 1\nduration: 1s\ntopology: {services: 2}\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sink := filepath.Join(t.TempDir(), "mesh")
	args := []string{"sim", scenario, "--sink-dir", sink, "--progress", "0", "--publish", "127.0.0.1:0", "--shards", "1", "--shard-wait", "300ms"}
	require.Equal(t, exitUsage, runCLI(ctx, args))
}
