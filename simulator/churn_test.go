package simulator_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// checkEvents applies events to a store built from initial, and checks each expectation against
// the reference view: it did not hold before the event, it holds after, and it reaches the
// service's own namespace under sidecar scoping.
func checkEvents(t *testing.T, initial []istioconfig.Config, events []simulator.Event, scoped bool) simtest.Store {
	t.Helper()
	st := simtest.NewStore(initial)
	for _, ev := range events {
		if ev.Skip != "" {
			continue
		}
		require.NoError(t, ev.Expectation.Validate(), "event %d", ev.ID)
		require.Equal(t, ev.ID, ev.Expectation.EventID)
		require.Equal(t, string(ev.Kind), ev.Expectation.Kind)
		require.False(t, ev.Expectation.Holds(buildView(st)), "event %d (%s %s) expectation already held before it: %v", ev.ID, ev.Kind, ev.Phase, ev.Expectation.All)
		st.Apply(t, ev)
		after := buildView(st)
		for _, p := range ev.Expectation.All {
			require.True(t, p.Holds(after), "event %d (%s %s): %s does not hold after applying it", ev.ID, ev.Kind, ev.Phase, p)
		}
		for _, p := range ev.Expectation.Rest {
			require.True(t, p.Holds(after), "event %d (%s %s): rest %s does not hold after applying it", ev.ID, ev.Kind, ev.Phase, p)
		}
		if scoped {
			for _, c := range ev.Upserts {
				require.Contains(t, ev.Expectation.Reach.Namespaces, c.Namespace, "event %d reach", ev.ID)
			}
			checkPredicateReach(t, ev, importersOf(initial))
		} else {
			require.Empty(t, ev.Expectation.Reach.Namespaces)
		}
	}
	return st
}

// importersOf reads the Sidecars: namespace → the namespaces whose Sidecar imports it.
func importersOf(cfgs []istioconfig.Config) map[string][]string {
	out := map[string][]string{}
	for _, c := range cfgs {
		sc, ok := c.Spec.(*networking.Sidecar)
		if !ok {
			continue
		}
		for _, l := range sc.GetEgress() {
			for _, h := range l.GetHosts() {
				ns, _, _ := strings.Cut(h, "/")
				if ns == "." {
					ns = c.Namespace
				}
				out[ns] = append(out[ns], c.Namespace)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
		out[k] = slices.Compact(out[k])
	}
	return out
}

// checkPredicateReach: under Sidecar scoping each predicate reaches exactly the sidecars that
// import its service's namespace (through Reach.PredicateNamespaces, or the event's Namespaces
// when every predicate's reach is the same).
func checkPredicateReach(t *testing.T, ev simulator.Event, importers map[string][]string) {
	t.Helper()
	r := ev.Expectation.Reach
	if r.PredicateNamespaces != nil {
		require.Len(t, r.PredicateNamespaces, len(ev.Expectation.All), "event %d", ev.ID)
	}
	for i, p := range ev.Expectation.All {
		host := p.Host
		if p.Op != probe.RouteTo {
			host = p.Resource[strings.LastIndexByte(p.Resource, '|')+1:]
		}
		labels := strings.Split(host, ".")
		if len(labels) < 2 || !strings.HasSuffix(host, ".svc.cluster.local") {
			continue // not a service of the mesh
		}
		got := r.Namespaces
		if i < len(r.PredicateNamespaces) && len(r.PredicateNamespaces[i]) > 0 {
			got = r.PredicateNamespaces[i]
			require.Subset(t, r.Namespaces, got, "event %d predicate %d: its reach is within the event's", ev.ID, i)
		}
		require.Equal(t, importers[labels[1]], got, "event %d (%s) predicate %d %s: the sidecars that import %s", ev.ID, ev.Kind, i, p, labels[1])
	}
}

func TestExpectationsMatchState(t *testing.T) {
	for _, ch := range simtest.KindCases() {
		for _, mode := range []struct {
			name           string
			workloadEntrys bool
			scoped         bool
		}{{"inline", false, false}, {"workloadentries", true, false}, {"scoped", false, true}} {
			name := string(ch.Kind)
			if ch.Target != "" {
				name += "-" + ch.Target
			}
			t.Run(name+"/"+mode.name, func(t *testing.T) {
				cfg := simulator.Config{Seed: 7, Duration: 30 * time.Second, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{ch}}
				cfg.Topology.WorkloadEntries = mode.workloadEntrys
				cfg.Topology.SidecarScoping = mode.scoped
				sim, err := simulator.New(cfg)
				require.NoError(t, err)
				events := simtest.Drain(t, sim)
				phases := map[string]int{}
				for _, ev := range events {
					if ev.Skip == "" {
						require.Equal(t, ch.Kind, ev.Kind)
						phases[ev.Phase]++
					}
				}
				require.NotEmpty(t, phases, "no events")
				switch ch.Kind {
				case simulator.EndpointFlap, simulator.ZoneFailure:
					require.Positive(t, phases["remove"])
					require.Positive(t, phases["restore"])
				case simulator.RollingDeploy:
					require.Greater(t, phases["step"], 5)
				}
				st := checkEvents(t, sim.Initial(), events, mode.scoped)
				// The events produced exactly the simulator's state.
				simtest.RequireSameObjects(t, sim.Current(), st)
			})
		}
	}
}

// TestCappedPredicatesKeepTheRest: a cap on an event's predicates samples All and moves every
// predicate it leaves out to Rest, so that what the event changed stays known to the matcher.
func TestCappedPredicatesKeepTheRest(t *testing.T) {
	const maxPreds = 3
	sortKey := func(p probe.Predicate) string { return p.String() }
	capped := map[simulator.ChurnKind]int{}
	churns := append(simtest.KindCases(), simulator.Churn{Kind: simulator.ConfigChange, Target: simulator.TargetAuthz, Every: time.Second, Services: 6})
	for _, ch := range churns {
		run := func(max int) []simulator.Event {
			cfg := simulator.Config{Seed: 11, Duration: 30 * time.Second, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{ch}, MaxPredicates: max}
			cfg.Topology.SidecarScoping = true
			if ch.Target == simulator.TargetAuthz {
				cfg.Topology.AuthorizationPolicies.PerNamespace = 6
				cfg.Topology.AuthorizationPolicies.Allow = 1
			}
			sim, err := simulator.New(cfg)
			require.NoError(t, err)
			return simtest.Drain(t, sim)
		}
		small, whole := run(maxPreds), run(1<<20)
		require.Len(t, small, len(whole), "%s: the cap changed the events", ch.Kind)
		for i, ev := range small {
			if ev.Skip != "" {
				continue
			}
			e, w := ev.Expectation, whole[i].Expectation
			require.LessOrEqual(t, len(e.All), maxPreds, "event %d (%s)", ev.ID, ev.Kind)
			require.Empty(t, w.Rest, "event %d (%s): uncapped, nothing is left out", ev.ID, ev.Kind)
			if pn := e.Reach.PredicateNamespaces; pn != nil {
				require.Len(t, pn, len(e.All), "event %d (%s): one reach per kept predicate", ev.ID, ev.Kind)
			}
			got := slices.SortedFunc(slices.Values(append(slices.Clone(e.All), e.Rest...)), func(a, b probe.Predicate) int { return strings.Compare(sortKey(a), sortKey(b)) })
			want := slices.SortedFunc(slices.Values(w.All), func(a, b probe.Predicate) int { return strings.Compare(sortKey(a), sortKey(b)) })
			require.Equal(t, want, got, "event %d (%s %s): kept and left-out predicates are the uncapped ones", ev.ID, ev.Kind, ev.Phase)
			if len(e.Rest) > 0 {
				capped[ch.Kind+simulator.ChurnKind(ch.Target)]++
			}
		}
	}
	for _, k := range []simulator.ChurnKind{simulator.ZoneFailure, simulator.ConfigChange + simulator.TargetAuthz} {
		require.Positive(t, capped[k], "no %s event exceeded the cap: the test checks nothing there", k)
	}
}

func TestMixedChurnMatchesState(t *testing.T) {
	cfg := simtest.MixedConfig(3)
	cfg.Duration = 40 * time.Second
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	events := simtest.Drain(t, sim)
	require.Greater(t, len(events), 100)
	st := checkEvents(t, sim.Initial(), events, false)
	simtest.RequireSameObjects(t, sim.Current(), st)
	// IDs are dense and timeline order holds.
	var id uint64
	var last time.Duration
	for _, ev := range events {
		require.GreaterOrEqual(t, ev.Scheduled, last)
		last = ev.Scheduled
		if ev.Skip == "" {
			id++
			require.Equal(t, id, ev.ID)
		}
	}
}

func addressesOf(c istioconfig.Config) []string {
	switch spec := c.Spec.(type) {
	case *networking.ServiceEntry:
		var out []string
		for _, e := range spec.Endpoints {
			out = append(out, e.Address)
		}
		return out
	case *networking.WorkloadEntry:
		return []string{spec.Address}
	}
	return nil
}

// Every endpoint address is unique in the initial topology, and an event adds an address that
// was never used before (except a restore, which brings the same endpoint back).
func TestAddressesUnique(t *testing.T) {
	for _, wes := range []bool{false, true} {
		cfg := simtest.MixedConfig(11)
		cfg.Topology.WorkloadEntries = wes
		sim, err := simulator.New(cfg)
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, c := range sim.Initial() {
			for _, a := range addressesOf(c) {
				require.False(t, seen[a], "address %s used twice", a)
				seen[a] = true
			}
		}
		fresh := 0
		for _, ev := range simtest.Drain(t, sim) {
			added := map[string]bool{}
			for _, p := range ev.Expectation.All {
				if p.Op == probe.EndpointPresent && ev.Phase != "restore" && !added[p.Address] {
					require.False(t, seen[p.Address], "event %d (%s) reuses address %s", ev.ID, ev.Kind, p.Address)
					added[p.Address] = true
					fresh++
				}
			}
			for a := range added {
				seen[a] = true
			}
		}
		require.Positive(t, fresh)
	}
}

func TestReplayReemitsTrace(t *testing.T) {
	cfg := simtest.MixedConfig(5)
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	var log bytes.Buffer
	el := sinks.NewEventLog(&log)
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(simtest.Epoch), Sink: simulator.SinkFuncs{}, Recorders: []simulator.Sink{el}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, r.Init(ctx))
	stats, err := r.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, el.Close())
	require.Equal(t, stats.Events, el.Events)
	orig, err := simulator.ParseTrace(bytes.NewReader(log.Bytes()), "orig")
	require.NoError(t, err)
	require.Len(t, orig, stats.Events)

	path := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(path, log.Bytes(), 0o644))
	rcfg := cfg
	rcfg.Churn = []simulator.Churn{{Kind: simulator.Replay, File: path}}
	rsim, err := simulator.New(rcfg)
	require.NoError(t, err)
	events := simtest.Drain(t, rsim)
	require.Len(t, events, len(orig))
	for i, ev := range events {
		o := orig[i]
		require.Equal(t, o.Kind, ev.Kind)
		require.Equal(t, o.Phase, ev.Phase)
		require.Equal(t, o.Scheduled, ev.Scheduled)
		require.Equal(t, o.Expectation.All, ev.Expectation.All)
		require.Equal(t, o.Deletes, ev.Deletes)
		require.Len(t, ev.Upserts, len(o.Upserts))
	}
	// Replayed on the same topology, the events are consistent with the state they produce.
	checkEvents(t, rsim.Initial(), events, false)
}

func TestConfigValidate(t *testing.T) {
	ok := simtest.MixedConfig(1)
	require.NoError(t, ok.Validate())
	cases := []struct {
		name string
		mut  func(*simulator.Config)
		want string
	}{
		{"no duration", func(c *simulator.Config) { c.Duration = 0 }, "duration must be > 0"},
		{"no namespaces", func(c *simulator.Config) { c.Topology.Namespaces = 0 }, "topology.namespaces"},
		{"bad protocols", func(c *simulator.Config) { c.Topology.Protocols = simulator.Protocols{HTTP: -1} }, "topology.protocols"},
		{"bad endpoints dist", func(c *simulator.Config) { c.Topology.EndpointsPerService.Dist = "gauss" }, "topology.endpointsPerService"},
		{"fraction", func(c *simulator.Config) { c.Topology.VirtualServices = 2 }, "topology.virtualServices"},
		{"unknown kind", func(c *simulator.Config) { c.Churn[0].Kind = "flap" }, `churn[0] (flap): unknown kind`},
		{"two timings", func(c *simulator.Config) { c.Churn[0].Every = time.Second }, "exactly one of rate"},
		{"no timing", func(c *simulator.Config) { c.Churn[0].Rate = 0 }, "exactly one of rate"},
		{"negative rate", func(c *simulator.Config) { c.Churn[0].Rate = -1 }, "rate must be > 0"},
		{"stop before start", func(c *simulator.Config) { c.Churn[0].Start, c.Churn[0].Stop = 5*time.Second, time.Second }, "start < stop"},
		{"bad target", func(c *simulator.Config) { c.Churn[5].Target = "sidecar" }, "target must be"},
		{"sa pool", func(c *simulator.Config) { c.Topology.ServiceAccountsPerNamespace = 1 }, "serviceAccountsPerNamespace >= 2"},
		{"zone fraction", func(c *simulator.Config) { c.Churn[8].Fraction = 1.5 }, "fraction must be in (0,1]"},
		{"replay timing", func(c *simulator.Config) { c.Churn = []simulator.Churn{{Kind: simulator.Replay, File: "x", Rate: 1}} }, "replay takes its timing"},
		{"replay file", func(c *simulator.Config) { c.Churn = []simulator.Churn{{Kind: simulator.Replay}} }, "replay needs file"},
		{"too many events by rate", func(c *simulator.Config) { c.Churn[0].Rate = 1e9 }, "churn schedules about 2e+10 events"},
		{"too many events by every", func(c *simulator.Config) { c.Churn[0].Rate, c.Churn[0].Every = 0, time.Nanosecond }, "at most 5000000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := simtest.MixedConfig(1)
			c.Churn = slices.Clone(c.Churn)
			tc.mut(&c)
			err := c.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			_, err = simulator.New(c)
			require.Error(t, err)
		})
	}
}

func TestSameSeedSameEvents(t *testing.T) {
	render := func(seed uint64) string {
		sim, err := simulator.New(simtest.MixedConfig(seed))
		require.NoError(t, err)
		var b bytes.Buffer
		for _, ev := range simtest.Drain(t, sim) {
			line, err := simulator.EncodeEvent(ev)
			require.NoError(t, err)
			fmt.Fprintf(&b, "%s %s\n", ev.Skip, line)
		}
		return b.String()
	}
	require.Equal(t, render(9), render(9))
	require.NotEqual(t, render(9), render(10))
}
