package istio_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/hack/istio/istiodlab"
	"github.com/xdslab/xdslab/probe"
)

// fullConfigHooks signals each client's first full config and counts NACKs.
type fullConfigHooks struct {
	probe.NopHooks
	full  chan int
	mu    sync.Mutex
	nacks []string
}

func (h *fullConfigHooks) FirstFullConfig(c probe.ClientInfo, _ time.Time) { h.full <- c.Index }

func (h *fullConfigHooks) Response(_ probe.ClientInfo, info probe.ResponseInfo) {
	if info.Nacked {
		h.mu.Lock()
		h.nacks = append(h.nacks, info.Error)
		h.mu.Unlock()
	}
}

// TestParityGatewayWarmsOnIstioAndXdslab: the parity corpus's ingress gateway, whose servers
// terminate TLS in every mode (gatewaytls.yaml: ISTIO_MUTUAL, certificate files that do not
// exist here, credentials neither side serves; HTTPS and protocol TLS) and pass mTLS through
// to SNI-DNAT clusters (autopassthrough.yaml), reaches a full config on the fake Envoy (SotW
// and Delta, realistic NACK policy, an istio-agent serving default and ROOTCA) from istiod and
// from xdslab alike, without a NACK: the secrets that cannot come are waited out by their
// initial fetch timeout (the config sources that give none wait 200 ms here, for Envoy's
// 15 s), each on its own, as Envoy's SDS init targets do.
func TestParityGatewayWarmsOnIstioAndXdslab(t *testing.T) {
	const dir = "parity/testdata/mesh"
	istio, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	ours := controlplanetest.NewServer(t, opts)
	select {
	case <-ours.Synced():
	case <-time.After(60 * time.Second):
		t.Fatalf("xdslab did not sync %s in 60s", dir)
	}
	for _, target := range []struct{ name, addr string }{{"istiod", istio.Addr}, {"xdslab", ours.GRPCAddr()}} {
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
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			hooks := &fullConfigHooks{full: make(chan int, 2)}
			tmpl := fakeenvoy.IdentityTemplate{Type: "router", Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}, IPBase: "10.9.0.1"}
			var clients []*fakeenvoy.Client
			for i, delta := range []bool{false, true} {
				c, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Index: i, Group: "gateway", Node: tmpl.Node(i), Delta: delta,
					Nack: policy.Nack{Realistic: true}, Seed: uint64(i), Agent: agent, SourceFetchTimeout: 200 * time.Millisecond, NodeOnFirstOnly: true}, hooks)
				if err != nil {
					t.Fatal(err)
				}
				clients = append(clients, c)
				wg.Go(func() { _ = c.Run(ctx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil }) })
			}
			for range clients {
				select {
				case <-hooks.full:
				case <-time.After(60 * time.Second):
					for i, c := range clients {
						if b, blocked := c.Blocked(); blocked {
							t.Errorf("client %d (delta=%v): %s (%s)", i, i == 1, b.Reason, b.Example)
						}
					}
					t.Fatal("the gateway has no full config after 60s")
				}
			}
			hooks.mu.Lock()
			defer hooks.mu.Unlock()
			if len(hooks.nacks) > 0 {
				t.Errorf("%d NACKs: %s", len(hooks.nacks), fmt.Sprint(hooks.nacks))
			}
		})
	}
}
