package xds

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// recorder collects what the fake Envoys observed.
type recorder struct {
	probe.NopHooks
	mu     sync.Mutex
	full   map[int]bool
	nacks  int
	errors []string
	ready  chan int
	seen   map[int]chan struct{}
	want   *probe.Expectation
}

func (r *recorder) FirstFullConfig(c probe.ClientInfo, _ time.Time) {
	r.mu.Lock()
	r.full[c.Index] = true
	r.mu.Unlock()
	r.ready <- c.Index
}

func (r *recorder) Response(_ probe.ClientInfo, info probe.ResponseInfo) {
	if info.Nacked {
		r.mu.Lock()
		r.nacks++
		r.errors = append(r.errors, info.Error)
		r.mu.Unlock()
	}
}

func (r *recorder) Applied(c probe.ClientInfo, _ probe.ResponseInfo, view probe.View) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.want != nil && r.want.Holds(view) {
		if ch, ok := r.seen[c.Index]; ok {
			close(ch)
			delete(r.seen, c.Index)
		}
	}
}

// fakeEnvoy is one client of runFakeEnvoys: its node, transport and hooks (the recorder when nil).
type fakeEnvoy struct {
	node  *corev3.Node
	delta bool
	hooks probe.Hooks
	// fetchTimeout is the initial fetch timeout of the config sources that give none, as
	// credentialName secrets' (0: Envoy's 15s).
	fetchTimeout time.Duration
	// nodeFirstOnly sends the node on a stream's first request only (Istio's bootstrap);
	// ack scripts the client's ACKs (DisconnectAfter forces reconnects).
	nodeFirstOnly bool
	ack           policy.Ack
}

// runFakeEnvoys starts n fake Envoys (realistic NACK policy) against ts, client i as spec(i),
// and waits up to wait for every one's first full config; they stop when the test ends.
func runFakeEnvoys(t *testing.T, ts *testServer, rec *recorder, n int, wait time.Duration, spec func(i int) fakeEnvoy) {
	t.Helper()
	cc, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() }) // runs before cc.Close
	// Each Envoy has its istio-agent, which serves the auto-mTLS secrets (sds-grpc).
	agent, err := istioagent.New(istioagent.Config{IssueDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	var clients []*fakeenvoy.Client
	for i := range n {
		sp := spec(i)
		var hooks probe.Hooks = rec
		if sp.hooks != nil {
			hooks = sp.hooks
		}
		cfg := fakeenvoy.ClientConfig{Index: i, Group: "g", Node: sp.node, Delta: sp.delta,
			Nack: policy.Nack{Realistic: true}, Seed: uint64(i), Agent: agent, SourceFetchTimeout: sp.fetchTimeout,
			NodeOnFirstOnly: sp.nodeFirstOnly, Ack: sp.ack}
		if sp.ack.DisconnectAfter > 0 {
			cfg.Backoff = fakeenvoy.Backoff{Base: time.Millisecond, Max: 20 * time.Millisecond} // reconnect at once
		}
		c, err := fakeenvoy.NewClient(cfg, hooks)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		wg.Go(func() { _ = c.Run(ctx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil }) })
	}
	for range n {
		select {
		case <-rec.ready:
		case <-time.After(wait):
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var why []string
			for i, c := range clients {
				if b, blocked := c.Blocked(); blocked {
					why = append(why, fmt.Sprintf("client %d: %s (%s)", i, b.Reason, b.Example))
				}
			}
			t.Fatalf("only %d of %d clients got a full config: %s", len(rec.full), n, strings.Join(why, "; "))
		}
	}
}

// The fake Envoy (SotW and Delta, realistic NACK policy: PGV and typed_config validation) gets a
// full config from our server without NACKing, and observes an endpoint change.
func TestFakeEnvoysConvergeSotWAndDelta(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(30, 2)
	ts.push(in, true)

	const n = 6
	rec := &recorder{full: map[int]bool{}, ready: make(chan int, n), seen: map[int]chan struct{}{}}
	tmpl := fakeenvoy.IdentityTemplate{Type: "sidecar", Namespace: "ns-0", IPBase: "10.200.0.1"}
	runFakeEnvoys(t, ts, rec, n, 20*time.Second, func(i int) fakeEnvoy { return fakeEnvoy{node: tmpl.Node(i), delta: i%2 == 1} })

	host := "svc-7.ns-1.svc.cluster.local"
	want := probe.Expectation{EventID: 1, Kind: "endpoint-add", All: []probe.Predicate{{Op: probe.EndpointPresent,
		Resource: gen.ClusterName(gen.Outbound, 8080, "", host), Address: "10.77.0.1", Port: 8080}}}
	rec.mu.Lock()
	rec.want = &want
	chans := make([]chan struct{}, n)
	for i := range n {
		chans[i] = make(chan struct{})
		rec.seen[i] = chans[i]
	}
	rec.mu.Unlock()
	in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, "10.77.0.1"))
	ts.push(in, false, host)
	for i, ch := range chans {
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("client %d (delta=%v) never observed %s", i, i%2 == 1, want.All[0])
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.nacks != 0 {
		t.Errorf("%d NACKs: %v", rec.nacks, rec.errors)
	}
}

// With Sidecars, the fake Envoys (realistic NACK policy) accept their scoped configs, observe an
// endpoint change of a service they import, and nothing reaches the proxies of a namespace
// whose Sidecar does not import it.
func TestFakeEnvoysScopedBySidecar(t *testing.T) {
	m := &triggerMetrics{pushed: map[string]int{}, skipped: map[string]int{}}
	opts := testOptions()
	opts.Metrics = m
	ts := startServer(t, opts)
	in := topology(30, 2)
	in.Configs = []*istioconfig.Config{sidecarConfig("ns-0", "./*", "ns-1/*"), sidecarConfig("ns-2", "./*")}
	ts.push(in, true)

	const n = 6 // clients 0, 2, 4 in ns-0 (see ns-1), 1, 3, 5 in ns-2 (do not)
	rec := &recorder{full: map[int]bool{}, ready: make(chan int, n), seen: map[int]chan struct{}{}}
	runFakeEnvoys(t, ts, rec, n, 20*time.Second, func(i int) fakeEnvoy {
		tmpl := fakeenvoy.IdentityTemplate{Type: "sidecar", Namespace: []string{"ns-0", "ns-2"}[i%2], IPBase: "10.200.0.1"}
		return fakeEnvoy{node: tmpl.Node(i), delta: i%3 == 1}
	})
	ts.settle(t)
	base, baseSkip := m.counts()

	host := "svc-7.ns-1.svc.cluster.local"
	want := probe.Expectation{EventID: 1, Kind: "endpoint-add", All: []probe.Predicate{{Op: probe.EndpointPresent,
		Resource: gen.ClusterName(gen.Outbound, 8080, "", host), Address: "10.77.0.1", Port: 8080}}}
	rec.mu.Lock()
	rec.want = &want
	var chans []chan struct{}
	for i := 0; i < n; i += 2 {
		ch := make(chan struct{})
		rec.seen[i] = ch
		chans = append(chans, ch)
	}
	rec.mu.Unlock()
	in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, "10.77.0.1"))
	ts.pushKeys(in, false, model.ReasonEndpointUpdate, istioconfig.Key{Kind: model.KindEndpoint, Name: host, Namespace: "ns-1"})
	for i, ch := range chans {
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("ns-0 client %d never observed %s", 2*i, want.All[0])
		}
	}
	ts.settle(t)
	pushed, skipped := m.counts()
	if d, s := pushed["endpoint"]-base["endpoint"], skipped["endpoint"]-baseSkip["endpoint"]; d != 3 || s != 3 {
		t.Errorf("endpoint change in ns-1: pushed %d, skipped %d connections; want 3 (ns-0) and 3 (ns-2)", d, s)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.nacks != 0 {
		t.Errorf("%d NACKs: %v", rec.nacks, rec.errors)
	}
}
