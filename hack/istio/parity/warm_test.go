package parity_test

import (
	"context"
	"fmt"
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
			for _, err := range warm(t, target.addr, all, refusedByEnvoy) {
				t.Error(err)
			}
		})
	}
}

// warm runs two fake Envoys, SotW and Delta, for each of the proxies at points against the ADS
// server at addr and returns what went wrong: a client without a full config within 60 s (and
// where it waits), NACKs, and, for a proxy in refused, no NACK with its error or others besides
// it.
func warm(t *testing.T, addr string, points []int, refused map[string]string) []error {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return []error{err}
	}
	defer cc.Close()
	agent, err := istioagent.New(istioagent.Config{IssueDelay: -1})
	if err != nil {
		return []error{err}
	}
	hooks := &warmHooks{full: map[int]bool{}, nacks: map[int][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// A client's index is its proxy's, plus len(proxies) for the Delta one.
	type client struct {
		idx, proxy int
		delta      bool
		c          *fakeenvoy.Client
	}
	var clients []client
	for _, i := range points {
		p := proxies[i]
		for _, delta := range []bool{false, true} {
			idx := i
			if delta {
				idx += len(proxies)
			}
			c, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Index: idx, Group: p.name, Node: p.proxy.Node(), Delta: delta,
				Nack: policy.Nack{Realistic: true}, Seed: uint64(idx), Agent: agent, SourceFetchTimeout: 200 * time.Millisecond, NodeOnFirstOnly: true}, hooks)
			if err != nil {
				return []error{err}
			}
			clients = append(clients, client{idx, i, delta, c})
			wg.Go(func() { _ = c.Run(ctx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil }) })
		}
	}
	nacked := func(c client) bool {
		want := refused[proxies[c.proxy].name]
		return slices.ContainsFunc(hooks.nacks[c.idx], func(e string) bool { return strings.Contains(e, want) })
	}
	// Done when every client holds its full config, or, for a proxy Envoy refuses, has NACKed.
	done := func() bool {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		for _, c := range clients {
			if _, r := refused[proxies[c.proxy].name]; r && !nacked(c) || !r && !hooks.full[c.idx] {
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
	var errs []error
	for _, c := range clients {
		name, nacks := proxies[c.proxy].name, hooks.nacks[c.idx]
		if c.delta {
			name += " (Delta)"
		}
		want, r := refused[proxies[c.proxy].name]
		if !hooks.full[c.idx] && !r {
			msg := "no full config after 60s"
			if b, blocked := c.c.Blocked(); blocked {
				msg += ": " + b.Reason + " (" + b.Example + ")"
			}
			errs = append(errs, fmt.Errorf("%s: %s", name, msg))
		}
		switch {
		case r && !nacked(c):
			errs = append(errs, fmt.Errorf("%s: NACKs %q, want one with %q (Envoy refuses it)", name, nacks, want))
		case r:
			if other := slices.DeleteFunc(slices.Clone(nacks), func(e string) bool { return strings.Contains(e, want) }); len(other) > 0 {
				errs = append(errs, fmt.Errorf("%s: %d NACKs besides %q: %q", name, len(other), want, other))
			}
		case len(nacks) > 0:
			errs = append(errs, fmt.Errorf("%s: %d NACKs: %q", name, len(nacks), nacks))
		}
	}
	return errs
}
