package kube_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	"k8s.io/client-go/kubernetes"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry/kube"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/internal/kubeclient"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// The chain the integration test and the benchmarks drive: the simulator writes through a
// sink (kube: the real API server, read back by the kube registry; dir: YAML files, read by the
// file source), our control plane serves one fake Envoy, and each simulated event is timed
// from the sink's Apply to the fake Envoy holding the change.

// chainOptions configure a chain.
type chainOptions struct {
	// sink is "kube", "dir" or "mcp" (the simulator's MCP sink, read as an xds:// source).
	sink string
	// cluster is the API server (sink kube).
	cluster *cluster
	// services and endpoints per service of the topology (2 namespaces, one port each).
	services, endpoints int
	// pods makes the kube sink write Pods and the kube registry read them.
	pods bool
	// qps and burst are the sink's client limits (negative qps: none); workers its concurrency.
	qps     float64
	burst   int
	workers int
	// churn is the simulated churn (default: endpoint flaps and scaling).
	churn []simulator.Churn
	// quiet silences the control plane's log (benchmarks).
	quiet bool
}

type chain struct {
	sim      *simulator.Simulator
	sink     simulator.Sink
	kubeSink *sinks.Kube // sink kube
	srv      *controlplane.Server
	rec      *recorder
	// initTook is how long the sink took to write the initial topology.
	initTook time.Duration
}

// kubeClients returns clients for kubeconfig with the given limits.
func kubeClients(tb testing.TB, kubeconfig string, qps float64, burst int) (kubernetes.Interface, istioclient.Interface) {
	tb.Helper()
	cfg, err := kubeclient.Config(kubeclient.Options{Kubeconfig: kubeconfig, QPS: qps, Burst: burst, UserAgent: "xdslab-test"})
	if err != nil {
		tb.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return kc, ic
}

// newChain writes the initial topology, starts the control plane on it and connects the fake
// Envoy; it returns once the fake Envoy holds its first full config. Everything stops when
// tb ends.
func newChain(tb testing.TB, o chainOptions) *chain {
	tb.Helper()
	simCfg := simulator.DefaultConfig()
	simCfg.Seed = 3
	simCfg.Duration = time.Hour // the test or benchmark decides how many events it takes
	simCfg.Topology = simulator.Topology{Namespaces: 2, Services: o.services, Protocols: simulator.Protocols{HTTP: 1, TCP: 1},
		PortsPerService: dist.Spec{Dist: "constant", Value: 1}, EndpointsPerService: dist.Spec{Dist: "constant", Value: float64(o.endpoints)},
		Localities: simulator.Localities{Regions: 1, ZonesPerRegion: 2}, Versions: 1, ServiceAccountsPerNamespace: 1}
	simCfg.Churn = o.churn
	if simCfg.Churn == nil {
		simCfg.Churn = []simulator.Churn{{Kind: simulator.EndpointFlap, Every: 500 * time.Millisecond, Down: 250 * time.Millisecond},
			{Kind: simulator.Scale, Every: time.Second, Delta: dist.Spec{Dist: "constant", Value: 1}}}
	}
	sim, err := simulator.New(simCfg)
	if err != nil {
		tb.Fatal(err)
	}
	c := &chain{sim: sim}
	opts := controlplanetest.Options(tb)
	if o.quiet {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	wantServices := o.services
	switch o.sink {
	case "kube":
		kc, ic := kubeClients(tb, o.cluster.sim, o.qps, o.burst)
		// Clean: the chains of one cluster share its namespaces.
		ks, err := sinks.NewKube(sinks.KubeOptions{Kube: kc, Istio: ic, Workers: o.workers, Pods: o.pods, Clean: true})
		if err != nil {
			tb.Fatal(err)
		}
		c.sink, c.kubeSink = ks, ks
		rkc, ric := kubeClients(tb, o.cluster.controlPlane, -1, 0)
		ctrl, err := kube.New(kube.Options{Kube: rkc, Istio: ric, Pods: o.pods})
		if err != nil {
			tb.Fatal(err)
		}
		opts.Sources = []controlplane.Source{kubeSource{ctrl}}
		wantServices++ // the API server's own "kubernetes" Service in default
	case "dir":
		dir := tb.TempDir()
		ds, err := sinks.NewDir(sinks.DirOptions{Dir: dir})
		if err != nil {
			tb.Fatal(err)
		}
		c.sink = ds
		opts.ConfigDir = dir
	case "mcp":
		ms, err := sinks.NewMCP(sinks.MCPOptions{Listen: "127.0.0.1:0"})
		if err != nil {
			tb.Fatal(err)
		}
		c.sink = ms
		opts.MCP = []mcpsource.Options{{Addr: ms.Addr()}}
	default:
		tb.Fatalf("sink %q", o.sink)
	}
	tb.Cleanup(func() { _ = c.sink.Close() })
	ctx := context.Background()
	begin := time.Now()
	if err := c.sink.Init(ctx, sim.Initial()); err != nil {
		tb.Fatal(err)
	}
	c.initTook = time.Since(begin)
	c.srv = controlplanetest.NewServer(tb, opts)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := c.srv.WaitForSnapshot(wctx, func(s *model.Snapshot) bool { return s.ServiceCount() == wantServices }); err != nil {
		tb.Fatalf("the control plane never saw the %d services: %v", wantServices, err)
	}

	c.rec = &recorder{full: make(chan struct{}), seen: make(chan time.Time, 1), types: map[string]int{}}
	cc, err := grpc.NewClient(c.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := fakeenvoy.IdentityTemplate{Type: "sidecar", Namespace: "ns-0", IPBase: "10.200.0.1"}
	// The Envoy's istio-agent serves the auto-mTLS secrets (sds-grpc).
	agent, err := istioagent.New(istioagent.Config{IssueDelay: -1})
	if err != nil {
		tb.Fatal(err)
	}
	client, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Node: tmpl.Node(0), Nack: policy.Nack{Realistic: true}, Agent: agent}, c.rec)
	if err != nil {
		tb.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	tb.Cleanup(func() { ccancel(); wg.Wait(); _ = cc.Close() })
	wg.Go(func() {
		_ = client.Run(cctx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil })
	})
	select {
	case <-c.rec.full:
	case <-time.After(2 * time.Minute):
		tb.Fatal("the fake Envoy never got a full config")
	}
	c.rec.resetTypes()
	return c
}

// step applies the next event and waits until the fake Envoy holds it: accepted is how long the
// sink's Apply took (for kube: until the API server accepted every write), delivered the time
// from then (t0) to the fake Envoy holding the change.
func (c *chain) step(tb testing.TB) (ev simulator.Event, accepted, delivered time.Duration) {
	tb.Helper()
	for {
		var ok bool
		var err error
		ev, ok, err = c.sim.Next()
		if err != nil {
			tb.Fatal(err)
		}
		if !ok {
			tb.Fatal("the simulation ended")
		}
		if ev.Skip == "" {
			break
		}
	}
	c.rec.expect(ev.Expectation)
	start := time.Now()
	if err := c.sink.Apply(context.Background(), ev); err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	select {
	case at := <-c.rec.seen:
		return ev, t0.Sub(start), at.Sub(t0)
	case <-time.After(time.Minute):
		tb.Fatalf("event %d (%s) never reached the fake Envoy: %v", ev.ID, ev.Kind, ev.Expectation.All)
	}
	panic("unreachable")
}

// recorder tracks what the fake Envoy saw.
type recorder struct {
	probe.NopHooks
	mu    sync.Mutex
	full  chan struct{}
	once  sync.Once
	want  *probe.Expectation
	seen  chan time.Time
	nacks []string
	// types counts the responses that changed something, by type URL, since resetTypes.
	types map[string]int
}

func (r *recorder) FirstFullConfig(probe.ClientInfo, time.Time) { r.once.Do(func() { close(r.full) }) }

func (r *recorder) Response(_ probe.ClientInfo, info probe.ResponseInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if info.Nacked {
		r.nacks = append(r.nacks, info.Error)
	}
	if !info.NoOp {
		r.types[info.TypeURL]++
	}
}

func (r *recorder) Applied(_ probe.ClientInfo, _ probe.ResponseInfo, view probe.View) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.want != nil && r.want.Holds(view) {
		r.want = nil
		r.seen <- time.Now()
	}
}

func (r *recorder) expect(e probe.Expectation) {
	r.mu.Lock()
	r.want = &e
	r.mu.Unlock()
}

func (r *recorder) resetTypes() {
	r.mu.Lock()
	r.types = map[string]int{}
	r.mu.Unlock()
}

func (r *recorder) check(tb testing.TB) (types map[string]int) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.nacks) > 0 {
		tb.Errorf("the fake Envoy NACKed: %v", r.nacks)
	}
	out := map[string]int{}
	for k, v := range r.types {
		out[k] = v
	}
	return out
}

type kubeSource struct{ *kube.Controller }

func (k kubeSource) Run(ctx context.Context, configs *config.Memory) error {
	return k.Controller.Run(ctx, configs)
}
