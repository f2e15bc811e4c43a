package sinks

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

	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
	"google.golang.org/protobuf/proto"
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
func loadDir(t testing.TB, dir, apiVersion string) simtest.Store {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	st := simtest.Store{}
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
	for _, ch := range simtest.KindCases() {
		for _, opt := range []struct {
			name   string
			wes    bool
			group  bool
			scoped bool
			api    string
		}{{"inline", false, false, false, ""}, {"workloadentries-grouped-v1", true, true, true, "networking.istio.io/v1"}} {
			name := string(ch.Kind) + ch.Target + "/" + opt.name
			t.Run(name, func(t *testing.T) {
				cfg := simulator.Config{Seed: 4, Duration: 10 * time.Second, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{ch}}
				cfg.Topology.WorkloadEntries, cfg.Topology.SidecarScoping = opt.wes, opt.scoped
				sim, err := simulator.New(cfg)
				require.NoError(t, err)
				dir := t.TempDir()
				sink, err := NewDir(DirOptions{Dir: dir, GroupRouting: opt.group, APIVersion: opt.api})
				require.NoError(t, err)
				api := cmpOr(opt.api, istioconfig.DefaultAPIVersion)
				applied := 0
				// Parsing the whole directory after every event is slow under -race: check the
				// first events, then every 20th, and the end.
				r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Sink: sink, OnApplied: func(ev simulator.Event) {
					applied++
					if applied < 5 || applied%20 == 0 {
						simtest.RequireSameObjects(t, sim.Current(), loadDir(t, dir, api))
					}
				}})
				require.NoError(t, err)
				ctx := context.Background()
				require.NoError(t, r.Init(ctx))
				simtest.RequireSameObjects(t, sim.Initial(), loadDir(t, dir, api))
				stats, err := r.Run(ctx)
				require.NoError(t, err)
				require.NoError(t, sink.Close())
				require.Positive(t, applied)
				require.Equal(t, applied, stats.Events)
				simtest.RequireSameObjects(t, sim.Current(), loadDir(t, dir, api))
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
	cfg := simulator.Config{Seed: 1, Duration: 10 * time.Second, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{{Kind: simulator.ServiceDelete, At: []time.Duration{time.Second}}}}
	cfg.Topology.VirtualServices, cfg.Topology.DestinationRules = 1, 1
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	sink, err := NewDir(DirOptions{Dir: dir})
	require.NoError(t, err)
	var deleted simulator.Event
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Sink: sink, OnApplied: func(ev simulator.Event) { deleted = ev }})
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
	sim, err := simulator.New(simtest.MixedConfig(3))
	require.NoError(t, err)
	root := t.TempDir()
	dir, away := filepath.Join(root, "mesh"), filepath.Join(root, "moved")
	sink, err := NewDir(DirOptions{Dir: dir})
	require.NoError(t, err)
	seen, failures := 0, 0
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Sink: sink,
		OnEvent: func(simulator.Event) {
			seen++
			if seen == 5 {
				require.NoError(t, os.Rename(dir, away))
			}
		},
		OnFailed: func(ev simulator.Event, err error) {
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
	simtest.RequireSameObjects(t, sim.Current(), loadDir(t, dir, istioconfig.DefaultAPIVersion))
}

func TestDirSinkRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.yaml"), []byte("x: 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o644))
	sink, err := NewDir(DirOptions{Dir: dir})
	require.NoError(t, err)
	err = sink.Init(context.Background(), nil)
	require.ErrorContains(t, err, "--clean")
	sink, err = NewDir(DirOptions{Dir: dir, Clean: true})
	require.NoError(t, err)
	require.NoError(t, sink.Init(context.Background(), nil))
	files := readDir(t, dir)
	require.Equal(t, map[string]string{"notes.txt": "keep"}, files)
}

// runToDir runs cfg on a virtual clock into a fresh directory and an event log.
func runToDir(t testing.TB, cfg simulator.Config, dir string) (map[string]string, []byte) {
	t.Helper()
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	sink, err := NewDir(DirOptions{Dir: dir})
	require.NoError(t, err)
	var log bytes.Buffer
	el := NewEventLog(&log)
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Sink: sink, Recorders: []simulator.Sink{el}})
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
		cfg := simtest.MixedConfig(21)
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
	cfg := simulator.Config{
		Seed: 42, Duration: 5 * time.Second, Topology: simtest.SmallTopology(),
		Churn: []simulator.Churn{
			{Kind: simulator.EndpointFlap, Every: time.Second, Down: 500 * time.Millisecond},
			{Kind: simulator.ConfigChange, Target: simulator.TargetVirtualService, At: []time.Duration{2 * time.Second}},
			{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, At: []time.Duration{3 * time.Second}},
			{Kind: simulator.ServiceCreate, At: []time.Duration{4 * time.Second}},
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

// TestAuthzDirSink: the dir sink writes the policies and their rewrites so that the control
// plane's own decoder (what a --config-dir control plane reads) gets them back as simulated.
func TestAuthzDirSink(t *testing.T) {
	sim, err := simulator.New(simulator.Config{Seed: 2, Duration: 5 * time.Second, Topology: simtest.AuthzTopology(),
		Churn: []simulator.Churn{{Kind: simulator.ConfigChange, Target: simulator.TargetAuthz, Every: 500 * time.Millisecond, Services: 2}}})
	require.NoError(t, err)
	dir := t.TempDir()
	sink, err := NewDir(DirOptions{Dir: dir})
	require.NoError(t, err)
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Sink: sink})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, r.Init(ctx))
	stats, err := r.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, sink.Close())
	require.Equal(t, 9, stats.Events)
	got := map[istioconfig.Key]*istioconfig.Config{}
	for name, data := range readDir(t, dir) {
		cfgs, err := config.Decode(name, []byte(data))
		require.NoError(t, err, name)
		for _, c := range cfgs {
			if c.Kind == istioconfig.KindAuthorizationPolicy {
				got[c.Key()] = c
			}
		}
	}
	want := simtest.AuthzOf(sim.Current())
	require.Len(t, got, len(want))
	for k, ap := range want {
		require.NotNil(t, got[k], "%s", k)
		require.True(t, proto.Equal(ap, got[k].Spec), "%s:\nwant %v\ngot  %v", k, ap, got[k].Spec)
	}
}

// BenchmarkChurnDirSink is the same churn written as Istio YAML files (one per service).
func BenchmarkChurnDirSink(b *testing.B) {
	cfg := simulator.Config{Seed: 1, Duration: 24 * time.Hour, Topology: simtest.BenchTopology(), Churn: simtest.ChurnMix()}
	sink, err := NewDir(DirOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	simtest.RunChurn(b, cfg, sink)
}
