package parity_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// warmHooks records each client's first full config and its NACKs.
type warmHooks struct {
	probe.NopHooks
	mu    sync.Mutex
	full  map[int]bool
	nacks map[int][]string
}

func (h *warmHooks) FirstFullConfig(c probe.ClientInfo, _ time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.full[c.Index] = true
}

func (h *warmHooks) Response(c probe.ClientInfo, info probe.ResponseInfo) {
	if info.Nacked {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.nacks[c.Index] = append(h.nacks[c.Index], info.Error)
	}
}

// refusedByEnvoy are corpus proxies whose config Envoy refuses from istiod and from xdslab
// alike (docs/parity.md says why): the fake Envoy must NACK it on both sides with this error.
// A refused LDS response holds the client's full config.
var refusedByEnvoy = map[string]string{
	// A Sidecar egress bind :: on HTTP port 7410 beside the catch-all's 0.0.0.0_7410, to
	// which istiod adds :: on a dual-stack proxy.
	"sidecar-dual-bind": "duplicate address [::]:7410",
}

// TestCorpusWarmsOnIstioAndXdslab: from every point of view of the corpus, a fake Envoy (SotW
// and Delta, Envoy's realistic NACKs, istio-agent's bootstrap and an agent serving its certificates) holds
// a full config from istiod and from xdslab, and NACKs nothing but what Envoy would refuse from
// both (refusedByEnvoy): what a real Envoy accepts from istiod, the fake one must accept too,
// and xdslab's output must pass the same client. Comparing the resources (TestParityWithIstio)
// cannot see a rule the fake Envoy applies wrongly to what both sides generate alike; this
// found xdslab's ISTIO_MUTUAL secrets named where a plaintext stream never gets them.
func TestCorpusWarmsOnIstioAndXdslab(t *testing.T) {
	_, istioAddr, oursAddr := serveBoth(t, "testdata/mesh")
	all := make([]int, len(proxies))
	for i := range proxies {
		all[i] = i
	}
	for _, target := range []struct{ name, addr string }{{"istiod", istioAddr}, {"xdslab", oursAddr}} {
		t.Run(target.name, func(t *testing.T) {
			for _, err := range warmStrict(warm(t, target.addr, all), refusedByEnvoy) {
				t.Error(err)
			}
		})
	}
}

// warmOutcome is what became of one fake Envoy in warm.
type warmOutcome struct {
	proxy string // the proxy's name
	full  bool   // it holds its full config
	nacks []string
	// blocked says where it waits, when it has no full config.
	blocked string
}

// warm runs two fake Envoys, SotW and Delta, for each of the proxies at points against the ADS
// server at addr, until each holds its full config or has NACKed (60 s at most), and returns
// what became of them, by client: the proxy's name, " (Delta)" after the Delta one's.
func warm(t *testing.T, addr string, points []int) map[string]warmOutcome {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	agent, err := istioagent.New(istioagent.Config{IssueDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	hooks := &warmHooks{full: map[int]bool{}, nacks: map[int][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// A client's index is its proxy's, plus len(proxies) for the Delta one.
	type client struct {
		idx, proxy int
		name       string
		c          *fakeenvoy.Client
	}
	var clients []client
	for _, i := range points {
		p := proxies[i]
		for _, delta := range []bool{false, true} {
			idx, name := i, p.name
			if delta {
				idx, name = i+len(proxies), name+" (Delta)"
			}
			c, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Index: idx, Group: p.name, Node: p.proxy.Node(), Delta: delta,
				Nack: policy.Nack{Realistic: true}, Seed: uint64(idx), Agent: agent, SourceFetchTimeout: 200 * time.Millisecond, NodeOnFirstOnly: true}, hooks)
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, client{idx, i, name, c})
			wg.Go(func() { _ = c.Run(ctx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil }) })
		}
	}
	done := func() bool {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		for _, c := range clients {
			if !hooks.full[c.idx] && len(hooks.nacks[c.idx]) == 0 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(60 * time.Second); !done() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	out := make(map[string]warmOutcome, len(clients))
	for _, c := range clients {
		o := warmOutcome{proxy: proxies[c.proxy].name, full: hooks.full[c.idx], nacks: slices.Clone(hooks.nacks[c.idx])}
		if b, blocked := c.c.Blocked(); blocked && !o.full {
			o.blocked = b.Reason + " (" + b.Example + ")"
		}
		out[c.name] = o
	}
	return out
}

// warmStrict judges warm's outcomes: every client holds its full config without a NACK, but a
// proxy in refused, which must have NACKed with its error and nothing else.
func warmStrict(out map[string]warmOutcome, refused map[string]string) []error {
	if len(out) == 0 {
		return []error{fmt.Errorf("no fake Envoy ran: nothing judged")}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(out)) {
		o := out[name]
		want, r := refused[o.proxy]
		if !o.full && !r {
			errs = append(errs, fmt.Errorf("%s: no full config after 60s (NACKs %q): %s", name, o.nacks, o.blocked))
		}
		has := slices.ContainsFunc(o.nacks, func(e string) bool { return r && strings.Contains(e, want) })
		switch {
		case r && !has:
			errs = append(errs, fmt.Errorf("%s: NACKs %q, want one with %q (Envoy refuses it)", name, o.nacks, want))
		case r:
			if other := slices.DeleteFunc(slices.Clone(o.nacks), func(e string) bool { return strings.Contains(e, want) }); len(other) > 0 {
				errs = append(errs, fmt.Errorf("%s: %d NACKs besides %q: %q", name, len(other), want, other))
			}
		case len(o.nacks) > 0:
			errs = append(errs, fmt.Errorf("%s: %d NACKs: %q", name, len(o.nacks), o.nacks))
		}
	}
	return errs
}

// warmAlike judges xdslab's outcomes against istiod's on a mesh nobody wrote, where istiod may
// generate what Envoy refuses: a client that warms from istiod without a NACK must warm from
// xdslab without one, and one that NACKs istiod's config must NACK xdslab's with the same
// errors (reproduced faithfully, reported in shared).
func warmAlike(istio, ours map[string]warmOutcome) (errs []error, shared []string) {
	if len(istio) == 0 || len(ours) != len(istio) {
		return []error{fmt.Errorf("%d fake Envoys ran against istiod, %d against xdslab: nothing judged alike", len(istio), len(ours))}, nil
	}
	for _, name := range slices.Sorted(maps.Keys(istio)) {
		i, x := istio[name], ours[name]
		switch {
		case len(i.nacks) == 0 && i.full && (!x.full || len(x.nacks) > 0):
			errs = append(errs, fmt.Errorf("%s: warms from istiod, not from xdslab (NACKs %q): %s", name, x.nacks, x.blocked))
		case len(i.nacks) > 0 && !slices.Equal(i.nacks, x.nacks):
			errs = append(errs, fmt.Errorf("%s: istiod's config NACKed with %q, xdslab's with %q", name, i.nacks, x.nacks))
		case len(i.nacks) > 0:
			shared = append(shared, fmt.Sprintf("%s: %q", name, i.nacks))
		case !i.full && x.full:
			// istiod's never warmed (and never NACKed): xdslab's doing better is a difference too.
			errs = append(errs, fmt.Errorf("%s: warms from xdslab, not from istiod: %s", name, i.blocked))
		}
	}
	return errs, shared
}
