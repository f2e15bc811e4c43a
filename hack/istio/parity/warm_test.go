package parity_test

import (
	"context"
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
// alike (docs/parity.md says why): the fake Envoy must NACK it on both sides with this error,
// and still reach a full config with the rest.
var refusedByEnvoy = map[string]string{
	// A Sidecar egress bind :: on HTTP port 7410 beside the catch-all's 0.0.0.0_7410, to
	// which istiod adds :: on a dual-stack proxy.
	"sidecar-dual-bind": "duplicate address TCP::::7410",
}

// TestCorpusWarmsOnIstioAndXdslab: from every point of view of the corpus, a fake Envoy (SotW,
// Envoy's realistic NACKs, istio-agent's bootstrap and an agent serving its certificates) holds
// a full config from istiod and from xdslab, and NACKs nothing but what Envoy would refuse from
// both (refusedByEnvoy): what a real Envoy accepts from istiod, the fake one must accept too,
// and xdslab's output must pass the same client. (Comparing the resources, TestParityWithIstio,
// cannot see a rule the fake Envoy applies wrongly to what both sides generate alike.)
func TestCorpusWarmsOnIstioAndXdslab(t *testing.T) {
	_, istioAddr, oursAddr := serveBoth(t, "testdata/mesh")
	for _, target := range []struct{ name, addr string }{{"istiod", istioAddr}, {"xdslab", oursAddr}} {
		t.Run(target.name, func(t *testing.T) {
			cc, err := grpc.NewClient(target.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			agent, err := istioagent.New(istioagent.Config{IssueDelay: -1})
			if err != nil {
				t.Fatal(err)
			}
			hooks := &warmHooks{full: map[int]bool{}, nacks: map[int][]string{}}
			runCtx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			var clients []*fakeenvoy.Client
			for i, p := range proxies {
				c, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Index: i, Group: p.name, Node: p.proxy.Node(),
					Nack: policy.Nack{Realistic: true}, Seed: uint64(i), Agent: agent, SourceFetchTimeout: 200 * time.Millisecond, NodeOnFirstOnly: true}, hooks)
				if err != nil {
					t.Fatal(err)
				}
				clients = append(clients, c)
				wg.Go(func() { _ = c.Run(runCtx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil }) })
			}
			// Done when every proxy holds its full config, or, for one Envoy refuses, has NACKed.
			done := func() bool {
				hooks.mu.Lock()
				defer hooks.mu.Unlock()
				for i, p := range proxies {
					want, refused := refusedByEnvoy[p.name]
					if refused && !slices.ContainsFunc(hooks.nacks[i], func(e string) bool { return strings.Contains(e, want) }) || !refused && !hooks.full[i] {
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
			for i, p := range proxies {
				want, refused := refusedByEnvoy[p.name]
				if !hooks.full[i] && !refused { // a refused LDS response holds a full config
					msg := "no full config after 60s"
					if b, blocked := clients[i].Blocked(); blocked {
						msg += ": " + b.Reason + " (" + b.Example + ")"
					}
					t.Errorf("%s: %s", p.name, msg)
				}
				nacks := hooks.nacks[i]
				switch {
				case refused && !slices.ContainsFunc(nacks, func(e string) bool { return strings.Contains(e, want) }):
					t.Errorf("%s: NACKs %q, want one with %q (Envoy refuses it)", p.name, nacks, want)
				case refused:
					if other := slices.DeleteFunc(slices.Clone(nacks), func(e string) bool { return strings.Contains(e, want) }); len(other) > 0 {
						t.Errorf("%s: %d NACKs besides %q: %q", p.name, len(other), want, other)
					}
				case len(nacks) > 0:
					t.Errorf("%s: %d NACKs: %q", p.name, len(nacks), nacks)
				}
			}
		})
	}
}
