package machine

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// TestSharedShortcuts: clients that share an Interner read their responses through the codec's
// memo, and take the shortcuts shared state allows: a run that names every assignment the held
// clusters reference warms them all at once; a run whose names all lie in the subscription
// (a shared set's references) skips the per-name lookup; changes go to a list, not a map;
// completeness is answered once per pair of sets; the blocker's example is the first holder of
// a secret, found once per set. A private client (no Interner, no codec) takes none of them.
// After every response, both must have done and must hold exactly the same.
func TestSharedShortcuts(t *testing.T) {
	mtls := func(name string) proto.Message { return mtlsCluster(t, name, nil) }
	agentCluster := func(name, source string) proto.Message {
		src := agentSource(source, nil)
		return autoMTLSCluster(t, name, src, src, "default", "ROOTCA")
	}
	cla := func(name string) proto.Message { return fetest.CLA(name, "10.0.0.1", 80) }
	script := []*discoveryv3.DiscoveryResponse{
		// Four mTLS clusters (ADS secrets) and a plain one: all warm on EDS, four on secrets.
		sotwResp(t, C, "1", "c1", mtls("c4"), mtls("c2"), mtls("c1"), mtls("c3"), fetest.EDSCluster("c5")),
		// Some of the assignments: the run does not cover the clusters.
		sotwResp(t, E, "1", "e1", cla("c2"), cla("c1")),
		// A run that names one assignment nobody asked for: ignored, the rest applied.
		sotwResp(t, E, "2", "e2", cla("c1"), cla("c2"), cla("c3"), cla("zz")),
		// Every assignment: covers every warming cluster.
		sotwResp(t, E, "3", "e3", cla("c1"), cla("c2"), cla("c3"), cla("c4"), cla("c5")),
		// One secret of two: the blocker names the other.
		sotwResp(t, S, "1", "s1", secret("ROOTCA")),
		sotwResp(t, S, "2", "s2", secret("ROOTCA"), secret("default")),
		sotwResp(t, L, "1", "l1", fetest.RDSListener(t, "l1", 80, "r1"), fetest.RDSListener(t, "l2", 81, "r2")),
		sotwResp(t, R, "1", "r1", fetest.Route("r1", "h", "c1")),
		sotwResp(t, R, "2", "r2", fetest.Route("r1", "h", "c1"), fetest.Route("r2", "h2", "c2")),
		// c5 goes, c6 comes: c6 warms on EDS and secrets (held), then one run covers it.
		sotwResp(t, C, "2", "c2", mtls("c1"), mtls("c2"), mtls("c3"), mtls("c4"), mtls("c6")),
		sotwResp(t, E, "4", "e4", cla("c1"), cla("c2"), cla("c3"), cla("c4"), cla("c6")),
		// A duplicate name: not known distinct, NACKed by both.
		sotwResp(t, E, "5", "e5", cla("c1"), cla("c1"), cla("c2"), cla("c3"), cla("c4"), cla("c6")),
		// A secret on a cluster the bootstrap lacks: rejected (the run's clusters are not all
		// served); then one on the agent's cluster, which this fleet has no agent for.
		sotwResp(t, C, "3", "c3", mtls("c1"), mtls("c2"), mtls("c3"), mtls("c4"), mtls("c6"), agentCluster("c7", "nope")),
		sotwResp(t, C, "4", "c4", mtls("c1"), mtls("c2"), mtls("c3"), mtls("c4"), mtls("c6"), agentCluster("c8", "sds-grpc")),
	}

	in := NewInterner()
	cfg := Config{Nack: policy.Nack{Realistic: true}}
	shared := make([]*Machine, 3)
	for i := range shared {
		c := cfg
		c.Interner = in
		shared[i] = newTestMachine(t, c)
		shared[i].Start(t0)
	}
	private := newTestMachine(t, cfg)
	private.Start(t0)

	fromMemo := 0
	for step, resp := range script {
		want := renderShortcutStep(private.OnSotw(proto.Clone(resp).(*discoveryv3.DiscoveryResponse), t0))
		wantState := shortcutState(private)
		b := mustMarshal(t, resp)
		for i, m := range shared {
			c := &Codec{interner: in, mode: checkEnvoy}
			r := &discoveryv3.DiscoveryResponse{}
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, r); err != nil {
				t.Fatal(err)
			}
			res, read := c.LastRead()
			if !read {
				t.Fatalf("step %d: the codec did not read the resources", step)
			}
			if res.run != nil {
				fromMemo++
			}
			if got := renderShortcutStep(m.OnSotwRead(r, res, t0)); got != want {
				t.Errorf("step %d (%s v%s), client %d:\n got %s\nwant %s", step, typeWord(resp.TypeUrl), resp.VersionInfo, i, got, want)
			}
			if got := shortcutState(m); got != wantState {
				t.Errorf("step %d (%s v%s), client %d: state\n got %s\nwant %s", step, typeWord(resp.TypeUrl), resp.VersionInfo, i, got, wantState)
			}
		}
	}
	// The third client of each response read it from the memo (the second kept it).
	if fromMemo < len(script) {
		t.Fatalf("%d reads came from the memo, want at least %d: the shortcuts were not taken", fromMemo, len(script))
	}
	if !private.init.fullDone {
		t.Fatal("the script never reaches a full config")
	}
	if b, _ := private.Blocked(); private.types[tCDS].version != "4" || !private.warming(tCDS, "c8") {
		t.Fatalf("the script's last CDS was not applied with c8 warming (blocker %+v)", b)
	}
}

// renderShortcutStep is what a step sends and reports.
func renderShortcutStep(s Step) string {
	var out []string
	for _, r := range s.Sotw {
		out = append(out, renderSotw(r))
	}
	i := s.Info
	out = append(out, fmt.Sprintf("changed=%d removed=%d noop=%v nacked=%v error=%q applied=%v full=%v timeouts=%v",
		i.Changed, i.Removed, i.NoOp, i.Nacked, i.Error, s.Applied, s.FirstFull, s.Timeouts))
	var touched []string
	for _, t := range i.Touched {
		touched = append(touched, fmt.Sprintf("%s(prev %v)", t.Name, t.Prev != nil))
	}
	slices.Sort(touched)
	out = append(out, "touched "+strings.Join(touched, ","))
	return strings.Join(out, " | ")
}

// shortcutState is what a machine holds: resources, subscriptions, warming and why it has no
// full config.
func shortcutState(m *Machine) string {
	var out []string
	for t := range numTypes {
		ts := &m.types[t]
		var held []string
		for name, e := range ts.res {
			held = append(held, fmt.Sprintf("%s:%x", name, e.d.hash))
		}
		slices.Sort(held)
		out = append(out, fmt.Sprintf("%s held=%v names=%v accepted=%v v=%s", t, held, ts.names, ts.accepted, ts.version))
	}
	in := &m.init
	out = append(out, fmt.Sprintf("phase=%d full=%v warmC=%v warmL=%v secC=%v secL=%v prevC=%d prevL=%d",
		in.phase, in.fullDone, sortedKeys(in.warmC), sortedKeys(in.warmL), sortedKeys(in.secC), sortedKeys(in.secL), len(in.prevC), len(in.prevL)))
	b, blocked := m.Blocked()
	out = append(out, fmt.Sprintf("blocked=%v %q %q", blocked, b.Reason, b.Example))
	return strings.Join(out, " | ")
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestFreshApplyShared: clients that apply the same run to an empty state end with the set and
// the touched list the first built (the same ones, not copies), and warm as it did; a client
// whose policy rejects one of the resources does not take them, nor does one that holds
// something already; once no client holds the set, the next builds it again.
func TestFreshApplyShared(t *testing.T) {
	in := NewInterner()
	resp := sotwResp(t, C, "1", "n1", fetest.EDSCluster("c1"), fetest.EDSCluster("c2"), fetest.EDSCluster("c3"))
	b := mustMarshal(t, resp)
	apply := func(m *Machine) Step {
		t.Helper()
		res, r := codecRead(t, in, b)
		return m.OnSotwRead(r, res, t0)
	}
	newClient := func(nack policy.Nack) *Machine {
		m := newTestMachine(t, Config{Nack: nack, Interner: in})
		m.Start(t0)
		return m
	}
	realistic := policy.Nack{Realistic: true}
	var ms []*Machine
	var steps []Step
	for range 4 {
		m := newClient(realistic)
		ms = append(ms, m)
		steps = append(steps, apply(m))
	}
	// The first reads the run and keeps it, the second builds the set from the memo's run and
	// keeps what it led to; the third and fourth adopt it.
	for i := 2; i < len(ms); i++ {
		if ms[i].types[tCDS].set != ms[1].types[tCDS].set {
			t.Errorf("client %d holds a set of its own, not the second client's", i)
		}
		if len(steps[i].Info.Touched) != 3 || &steps[i].Info.Touched[0] != &steps[1].Info.Touched[0] {
			t.Errorf("client %d: touched %v, not the second client's list", i, steps[i].Info.Touched)
		}
		if got, want := shortcutState(ms[i]), shortcutState(ms[0]); got != want {
			t.Errorf("client %d state\n got %s\nwant %s", i, got, want)
		}
		if got, want := renderShortcutStep(steps[i]), renderShortcutStep(steps[0]); got != want {
			t.Errorf("client %d step\n got %s\nwant %s", i, got, want)
		}
	}
	// A policy that rejects c2: CDS applies partly, without c2, in a set of its own.
	picky := newClient(policy.Nack{Realistic: true, NamePattern: "^c2$"})
	if s := apply(picky); !s.Info.Nacked || picky.types[tCDS].res["c2"].d != nil || picky.types[tCDS].set == ms[1].types[tCDS].set {
		t.Errorf("a client rejecting c2: nacked %v, holds c2 %v, shared set %v", s.Info.Nacked,
			picky.types[tCDS].res["c2"].d != nil, picky.types[tCDS].set == ms[1].types[tCDS].set)
	}
	// A client that holds c1 already does not start from nothing.
	held := newClient(realistic)
	apply(held)
	before := held.types[tCDS].set
	if s := apply(held); !s.Info.NoOp || len(s.Info.Touched) != 0 || held.types[tCDS].set != before {
		t.Errorf("the same run again: no-op %v, touched %d, set kept %v", s.Info.NoOp, len(s.Info.Touched), held.types[tCDS].set == before)
	}
	// Once no client holds the set, the next builds it again (the run holds it weakly).
	id := ms[1].types[tCDS].set.id
	ms, steps, held = nil, nil, nil
	for range 3 {
		runtime.GC()
	}
	m := newClient(realistic)
	apply(m)
	if m.types[tCDS].set == nil || m.types[tCDS].set.id == id {
		t.Errorf("after every holder went, the client holds set %v, want a new one", m.types[tCDS].set)
	}
	if got := len(m.types[tCDS].res); got != 3 {
		t.Errorf("the rebuilt set holds %d clusters, want 3", got)
	}
}
