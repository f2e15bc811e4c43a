package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/istioconfig"
	"sigs.k8s.io/yaml"
)

// splitDocs splits a multi-document YAML file on "---" lines.
func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if string(bytes.TrimRight(line, "\n")) == "---" {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	if len(bytes.TrimSpace(cur.Bytes())) > 0 {
		docs = append(docs, cur.Bytes())
	}
	return docs
}

// loadDir parses every YAML file in dir strictly into istio.io/api types: the envelope allows
// only apiVersion, kind, metadata{name, namespace, labels} and spec; the spec is decoded with
// protojson and DiscardUnknown=false.
func loadDir(t testing.TB, dir, apiVersion string) store {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	st := store{}
	for _, e := range ents {
		require.True(t, isYAMLName(e.Name()), "unexpected file %s left in the sink dir", e.Name())
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		for i, doc := range splitDocs(data) {
			j, err := yaml.YAMLToJSON(doc)
			require.NoError(t, err, "%s doc %d", e.Name(), i)
			var env struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name      string            `json:"name"`
					Namespace string            `json:"namespace"`
					Labels    map[string]string `json:"labels"`
				} `json:"metadata"`
				Spec json.RawMessage `json:"spec"`
			}
			dec := json.NewDecoder(bytes.NewReader(j))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&env), "%s doc %d", e.Name(), i)
			require.Equal(t, apiVersion, env.APIVersion)
			spec, err := istioconfig.UnmarshalSpec(istioconfig.Kind(env.Kind), env.Spec)
			require.NoError(t, err, "%s doc %d (%s %s)", e.Name(), i, env.Kind, env.Metadata.Name)
			c := istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.Kind(env.Kind), Name: env.Metadata.Name, Namespace: env.Metadata.Namespace, Labels: env.Metadata.Labels}, Spec: spec}
			require.NotContains(t, st, c.Key(), "%s defined twice", c.Key())
			st[c.Key()] = c
		}
	}
	return st
}

func readDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// After every event of every kind the directory parses back strictly into exactly the
// simulator's state.
func TestDirSinkRoundTrip(t *testing.T) {
	for _, ch := range kindCases() {
		for _, opt := range []struct {
			name   string
			wes    bool
			group  bool
			scoped bool
			api    string
		}{{"inline", false, false, false, ""}, {"workloadentries-grouped-v1", true, true, true, "networking.istio.io/v1"}} {
			name := string(ch.Kind) + ch.Target + "/" + opt.name
			t.Run(name, func(t *testing.T) {
				cfg := Config{Seed: 4, Duration: 10 * time.Second, Topology: smallTopology(), Churn: []Churn{ch}}
				cfg.Topology.WorkloadEntries, cfg.Topology.SidecarScoping = opt.wes, opt.scoped
				sim, err := New(cfg)
				require.NoError(t, err)
				dir := t.TempDir()
				sink, err := NewDirSink(DirOptions{Dir: dir, GroupRouting: opt.group, APIVersion: opt.api})
				require.NoError(t, err)
				api := cmpOr(opt.api, istioconfig.DefaultAPIVersion)
				applied := 0
				// Parsing the whole directory after every event is slow under -race: check the
				// first events, then every 20th, and the end.
				r, err := NewRunner(sim, RunnerOptions{Clock: NewVirtualClock(epoch), Sink: sink, OnApplied: func(ev Event) {
					applied++
					if applied < 5 || applied%20 == 0 {
						requireSameObjects(t, sim.Current(), loadDir(t, dir, api))
					}
				}})
				require.NoError(t, err)
				ctx := context.Background()
				require.NoError(t, r.Init(ctx))
				requireSameObjects(t, sim.Initial(), loadDir(t, dir, api))
				stats, err := r.Run(ctx)
				require.NoError(t, err)
				require.NoError(t, sink.Close())
				require.Positive(t, applied)
				require.Equal(t, applied, stats.Events)
				requireSameObjects(t, sim.Current(), loadDir(t, dir, api))
				files := readDir(t, dir)
				for name := range files {
					switch {
					case strings.Count(name, ".") == 2: // ns.svc.yaml
						require.Regexp(t, `^ns-\d+\.svc-\d+\.yaml$`, name)
					default:
						require.Regexp(t, `^ns-\d+\.(virtualservice|destinationrule|sidecar)\.[a-z0-9-]+\.yaml$`, name)
					}
				}
			})
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestDirSinkDeleteRemovesFile(t *testing.T) {
	cfg := Config{Seed: 1, Duration: 10 * time.Second, Topology: smallTopology(), Churn: []Churn{{Kind: ServiceDelete, At: []time.Duration{time.Second}}}}
	cfg.Topology.VirtualServices, cfg.Topology.DestinationRules = 1, 1
	sim, err := New(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	sink, err := NewDirSink(DirOptions{Dir: dir})
	require.NoError(t, err)
	var deleted Event
	r, err := NewRunner(sim, RunnerOptions{Clock: NewVirtualClock(epoch), Sink: sink, OnApplied: func(ev Event) { deleted = ev }})
	require.NoError(t, err)
	require.NoError(t, r.Init(context.Background()))
	before := readDir(t, dir)
	_, err = r.Run(context.Background())
	require.NoError(t, err)
	after := readDir(t, dir)
	require.Len(t, deleted.Deletes, 3) // ServiceEntry, VirtualService, DestinationRule
	svc := deleted.Deletes[0]
	gone := []string{
		fmt.Sprintf("%s.%s.yaml", svc.Namespace, svc.Name),
		fmt.Sprintf("%s.virtualservice.%s.yaml", svc.Namespace, svc.Name),
		fmt.Sprintf("%s.destinationrule.%s.yaml", svc.Namespace, svc.Name),
	}
	for _, f := range gone {
		require.Contains(t, before, f)
		require.NotContains(t, after, f)
	}
	require.Len(t, after, len(before)-3)
}

// TestDirSinkDirectoryVanishes: the sink's directory is moved away for three events and moved
// back (issue 31): those events fail with the error, the run goes on, and the next event that
// succeeds rewrites every file the failed ones did not, so the directory ends as the mesh is.
func TestDirSinkDirectoryVanishes(t *testing.T) {
	sim, err := New(mixedConfig(3))
	require.NoError(t, err)
	root := t.TempDir()
	dir, away := filepath.Join(root, "mesh"), filepath.Join(root, "moved")
	sink, err := NewDirSink(DirOptions{Dir: dir})
	require.NoError(t, err)
	seen, failures := 0, 0
	r, err := NewRunner(sim, RunnerOptions{Clock: NewVirtualClock(epoch), Sink: sink,
		OnEvent: func(Event) {
			seen++
			if seen == 5 {
				require.NoError(t, os.Rename(dir, away))
			}
		},
		OnFailed: func(ev Event, err error) {
			failures++
			require.ErrorContains(t, err, fmt.Sprintf("dir sink: event %d", ev.ID))
			if failures == 3 {
				require.NoError(t, os.Rename(away, dir))
			}
		}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, r.Init(ctx))
	stats, err := r.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, stats.Failed)
	require.Greater(t, stats.Events, 10, "the run went on after the failures")
	requireSameObjects(t, sim.Current(), loadDir(t, dir, istioconfig.DefaultAPIVersion))
}

func TestDirSinkRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.yaml"), []byte("x: 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o644))
	sink, err := NewDirSink(DirOptions{Dir: dir})
	require.NoError(t, err)
	err = sink.Init(context.Background(), nil)
	require.ErrorContains(t, err, "--clean")
	sink, err = NewDirSink(DirOptions{Dir: dir, Clean: true})
	require.NoError(t, err)
	require.NoError(t, sink.Init(context.Background(), nil))
	files := readDir(t, dir)
	require.Equal(t, map[string]string{"notes.txt": "keep"}, files)
}

// runToDir runs cfg on a virtual clock into a fresh directory and an event log.
func runToDir(t testing.TB, cfg Config, dir string) (map[string]string, []byte) {
	t.Helper()
	sim, err := New(cfg)
	require.NoError(t, err)
	sink, err := NewDirSink(DirOptions{Dir: dir})
	require.NoError(t, err)
	var log bytes.Buffer
	el := NewEventLog(&log)
	r, err := NewRunner(sim, RunnerOptions{Clock: NewVirtualClock(epoch), Sink: sink, Recorders: []Sink{el}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, r.Init(ctx))
	_, err = r.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, sink.Close())
	require.NoError(t, el.Close())
	return readDir(t, dir), log.Bytes()
}

func TestSameSeedByteIdenticalOutput(t *testing.T) {
	for _, wes := range []bool{false, true} {
		cfg := mixedConfig(21)
		cfg.Duration = 8 * time.Second
		cfg.Topology.WorkloadEntries = wes
		cfg.Topology.SidecarScoping = true
		files1, log1 := runToDir(t, cfg, t.TempDir())
		files2, log2 := runToDir(t, cfg, t.TempDir())
		require.NotEmpty(t, files1)
		require.Greater(t, bytes.Count(log1, []byte("\n")), 50)
		require.Equal(t, files1, files2)
		require.True(t, bytes.Equal(log1, log2), "event logs differ")
		cfg.Seed = 22
		files3, log3 := runToDir(t, cfg, t.TempDir())
		require.NotEqual(t, files1, files3)
		require.NotEqual(t, log1, log3)
	}
}

// The golden files pin the exact output format (run with -update to rewrite them).
func TestGolden(t *testing.T) {
	cfg := Config{
		Seed: 42, Duration: 5 * time.Second, Topology: smallTopology(),
		Churn: []Churn{
			{Kind: EndpointFlap, Every: time.Second, Down: 500 * time.Millisecond},
			{Kind: ConfigChange, Target: TargetVirtualService, At: []time.Duration{2 * time.Second}},
			{Kind: ConfigChange, Target: TargetDestinationRule, At: []time.Duration{3 * time.Second}},
			{Kind: ServiceCreate, At: []time.Duration{4 * time.Second}},
		},
	}
	cfg.Topology.Services = 4
	cfg.Topology.SidecarScoping = true
	files, log := runToDir(t, cfg, t.TempDir())
	var b bytes.Buffer
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "### %s\n%s", n, files[n])
	}
	fmt.Fprintf(&b, "### events.jsonl\n%s", log)
	path := filepath.Join("testdata", "golden.txt")
	if *update {
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), b.String())
}

// lateSink takes cost of virtual time per Apply.
type lateSink struct {
	clk  *VirtualClock
	cost time.Duration
}

func (s lateSink) Init(context.Context, []istioconfig.Config) error { return nil }
func (s lateSink) Apply(context.Context, Event) error               { s.clk.Advance(s.cost); return nil }
func (s lateSink) Close() error                                     { return nil }

func TestLateEventsCountedNotShifted(t *testing.T) {
	cfg := Config{Seed: 1, Duration: 10 * time.Second, Topology: smallTopology(),
		Churn: []Churn{{Kind: ConfigChange, Target: TargetDestinationRule, Every: time.Second}}}
	sim, err := New(cfg)
	require.NoError(t, err)
	clk := NewVirtualClock(epoch)
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	var seen []Event
	r, err := NewRunner(sim, RunnerOptions{Clock: clk, Sink: lateSink{clk, 1500 * time.Millisecond}, Metrics: m,
		OnEvent: func(ev Event) {
			require.True(t, ev.T0.IsZero())
			require.Equal(t, epoch.Add(ev.Scheduled), ev.Expectation.Scheduled)
		},
		OnApplied: func(ev Event) { seen = append(seen, ev) }})
	require.NoError(t, err)
	require.NoError(t, r.Init(context.Background()))
	stats, err := r.Run(context.Background())
	require.NoError(t, err)
	// Arrivals at 1s … 9s; each apply takes 1.5s, so event k (k >= 2) fires 0.5s*(k-1) late.
	require.Len(t, seen, 9)
	for i, ev := range seen {
		k := i + 1
		require.Equal(t, time.Duration(k)*time.Second, ev.Scheduled, "never shifted")
		require.Equal(t, epoch.Add(ev.Scheduled), ev.Expectation.Scheduled)
		wantLate := time.Duration(k-1) * 500 * time.Millisecond
		require.Equal(t, k > 1, ev.Late, "event %d", k)
		require.Equal(t, wantLate, ev.Lateness, "event %d", k)
		require.Equal(t, ev.Fired.Add(1500*time.Millisecond), ev.T0)
		require.Equal(t, ev.T0, ev.Expectation.T0)
	}
	require.Equal(t, 9, stats.Events)
	require.Equal(t, 8, stats.Late)
	require.Equal(t, 4*time.Second, stats.MaxLateness)
	require.Equal(t, 18*time.Second, stats.TotalLateness)
	require.Equal(t, KindStats{Events: 9, Late: 8}, stats.ByKind[ConfigChange])
	require.Equal(t, 9.0, testutil.ToFloat64(m.Events.WithLabelValues("config-change")))
	require.Equal(t, 8.0, testutil.ToFloat64(m.Late.WithLabelValues("config-change")))
	n, err := testutil.GatherAndCount(reg, "xdslab_sim_apply_duration_seconds", "xdslab_sim_event_lateness_seconds")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	// The run lasts its duration: the clock ends at start + 10s at least.
	require.False(t, clk.Now().Before(epoch.Add(10*time.Second)))
}

func TestRunnerStopsOnCancel(t *testing.T) {
	cfg := Config{Seed: 1, Duration: time.Hour, Topology: smallTopology(), Churn: []Churn{{Kind: EndpointFlap, Rate: 1}}}
	sim, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	applied := 0
	r, err := NewRunner(sim, RunnerOptions{Clock: &WallClock{}, Sink: SinkFuncs{}, OnApplied: func(Event) { applied++ }})
	require.NoError(t, err)
	require.NoError(t, r.Init(ctx))
	cancel()
	_, err = r.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, applied)
}

// TestRunnerSinkError: an event the sink fails to apply is counted failed, reported with its
// error, and the run goes on to the events after it (issue 31: a write error is not the end).
func TestRunnerSinkError(t *testing.T) {
	sim, err := New(mixedConfig(1))
	require.NoError(t, err)
	boom := fmt.Errorf("disk full")
	calls := 0
	var failed []uint64
	var failErrs []error
	applied := 0
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	r, err := NewRunner(sim, RunnerOptions{Clock: NewVirtualClock(epoch), Metrics: m,
		Sink: SinkFuncs{ApplyFunc: func(context.Context, Event) error {
			calls++
			if calls >= 2 && calls <= 4 {
				return boom
			}
			return nil
		}},
		OnFailed:  func(ev Event, err error) { failed = append(failed, ev.ID); failErrs = append(failErrs, err) },
		OnApplied: func(Event) { applied++ },
	})
	require.NoError(t, err)
	stats, err := r.Run(context.Background())
	require.NoError(t, err, "a failed event does not end the run")
	require.Greater(t, calls, 5)
	require.Len(t, failed, 3)
	for _, e := range failErrs {
		require.ErrorIs(t, e, boom)
	}
	require.Equal(t, 3, stats.Failed)
	require.Equal(t, calls-3, stats.Events)
	require.Equal(t, calls-3, applied)
	require.ErrorIs(t, stats.FirstFailure, boom)
	byKind := 0
	for k, ks := range stats.ByKind {
		byKind += ks.Failed
		require.Equal(t, float64(ks.Failed), testutil.ToFloat64(m.Failed.WithLabelValues(string(k))))
	}
	require.Equal(t, 3, byKind)

	// A canceled context still ends the run at once, even when the sink reports it as an error.
	sim2, err := New(mixedConfig(1))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r2, err := NewRunner(sim2, RunnerOptions{Clock: NewVirtualClock(epoch), Sink: SinkFuncs{ApplyFunc: func(ctx context.Context, _ Event) error {
		cancel()
		return ctx.Err()
	}}, OnFailed: func(Event, error) { t.Error("a canceled apply is not a failed event") }})
	require.NoError(t, err)
	_, err = r2.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
}
