package kube_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry/kube"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/internal/kubeclient"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/simulator"
)

// kubeAssets finds the kube-apiserver and etcd binaries hack/kube-testenv.sh builds:
// $XDSLAB_KUBE_ASSETS, else the script's default cache directory. Outside CI their absence
// skips the test; in CI (CI=true) it fails it.
func kubeAssets(t *testing.T) (apiserver, etcd string) {
	t.Helper()
	dir := os.Getenv("XDSLAB_KUBE_ASSETS")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "xdslab", "kube-testenv")
	}
	apiserver, etcd = filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd")
	for _, p := range []string{apiserver, etcd} {
		if _, err := os.Stat(p); err != nil {
			msg := fmt.Sprintf("%s not found: build the real API server and etcd with hack/kube-testenv.sh (about 25 min on 2 cores) and set XDSLAB_KUBE_ASSETS to the directory it prints", p)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return apiserver, etcd
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess runs a binary until the test ends (SIGTERM, then a bounded wait, then SIGKILL),
// its output in log.
func startProcess(t *testing.T, log string, name string, args ...string) <-chan struct{} {
	t.Helper()
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		out.Close()
		if t.Failed() {
			if b, err := os.ReadFile(log); err == nil {
				t.Logf("%s output (tail):\n%s", filepath.Base(name), tail(string(b), 3000))
			}
		}
	})
	return done
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// startCluster runs etcd and kube-apiserver on loopback and returns a kubeconfig for them.
func startCluster(t *testing.T) string {
	apiserverBin, etcdBin := kubeAssets(t)
	dir := t.TempDir()
	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	startProcess(t, filepath.Join(dir, "etcd.log"), etcdBin, "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", peerPort), "--name", "default",
		"--quota-backend-bytes", "1073741824")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "xdslab-integration-token"
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	apiDone := startProcess(t, filepath.Join(dir, "apiserver.log"), apiserverBin,
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort), "--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens, "--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", keyFile,
		"--service-account-signing-key-file", keyFile, "--service-cluster-ip-range", "10.96.0.0/12",
		"--disable-admission-plugins", "ServiceAccount",
		// A loopback address cannot be published as the kubernetes Service's endpoint.
		"--endpoint-reconciler-type", "none")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %s}}]
contexts: [{name: test, context: {cluster: test, user: admin}}]
current-context: test
`, apiPort, token)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := kubeclient.Config(kubeclient.Options{Kubeconfig: kubeconfig, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			break
		}
		select {
		case <-apiDone:
			t.Fatal("kube-apiserver exited")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 3 minutes: %v %s", err, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	installCRDs(t, cfg)
	return kubeconfig
}

// installCRDs creates testdata/istio-crds.yaml and waits until Istio's kinds are served.
func installCRDs(t *testing.T, cfg *rest.Config) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "istio-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := context.Background()
	for _, doc := range strings.Split(string(data), "\n---\n") {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if string(js) == "null" {
			continue // the header comment
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatal(err)
		}
		if _, err := crds.Create(ctx, &u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err1 := ic.NetworkingV1().Gateways("default").List(ctx, metav1.ListOptions{})
		_, err2 := ic.NetworkingV1().ServiceEntries("default").List(ctx, metav1.ListOptions{})
		if err1 == nil && err2 == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Istio CRDs not served: %v %v", err1, err2)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recorder tracks what the fake Envoy saw.
type recorder struct {
	fakeenvoy.NopHooks
	mu    sync.Mutex
	full  chan struct{}
	once  sync.Once
	want  *probe.Expectation
	seen  chan time.Time
	nacks []string
}

func (r *recorder) FirstFullConfig(*fakeenvoy.Client, time.Time) { r.once.Do(func() { close(r.full) }) }

func (r *recorder) Response(_ *fakeenvoy.Client, info fakeenvoy.ResponseInfo) {
	if info.Nacked {
		r.mu.Lock()
		r.nacks = append(r.nacks, info.Error)
		r.mu.Unlock()
	}
}

func (r *recorder) Applied(_ *fakeenvoy.Client, _ fakeenvoy.ResponseInfo, view probe.View) {
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

type kubeSource struct{ *kube.Controller }

func (k kubeSource) Run(ctx context.Context, configs *config.Memory) error {
	return k.Controller.Run(ctx, configs)
}

// The integration check: the simulator's kube sink writes a mesh to a real
// kube-apiserver (with a real etcd), our control plane reads it through the kube registry, and
// a fake Envoy observes every simulated endpoint change. It logs the sink's write rate and the
// time from the sink's Apply to the fake Envoy holding the change.
func TestKubeSinkToFakeEnvoy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	kubeconfig := startCluster(t)
	cfg, err := kubeclient.Config(kubeclient.Options{Kubeconfig: kubeconfig, QPS: 200, Burst: 400})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	ctrl, err := kube.New(kube.Options{Kube: kc, Istio: ic})
	if err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	opts.Sources = []controlplane.Source{kubeSource{ctrl}}
	srv := controlplanetest.NewServer(t, opts)

	simCfg := simulator.DefaultConfig()
	simCfg.Seed = 3
	simCfg.Duration = 20 * time.Second
	simCfg.Topology = simulator.Topology{Namespaces: 2, Services: 20, Protocols: simulator.Protocols{HTTP: 1, TCP: 1},
		PortsPerService: dist.Spec{Dist: "constant", Value: 1}, EndpointsPerService: dist.Spec{Dist: "constant", Value: 5},
		Localities: simulator.Localities{Regions: 1, ZonesPerRegion: 2}, Versions: 1, ServiceAccountsPerNamespace: 1}
	simCfg.Churn = []simulator.Churn{{Kind: simulator.EndpointFlap, Every: 500 * time.Millisecond, Down: 250 * time.Millisecond},
		{Kind: simulator.Scale, Every: time.Second, Delta: dist.Spec{Dist: "constant", Value: 1}}}
	sim, err := simulator.New(simCfg)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := simulator.NewKubeSink(simulator.KubeOptions{Kube: kc, Istio: ic, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	initial := sim.Initial()
	begin := time.Now()
	if err := sink.Init(ctx, initial); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	st := sink.Stats()
	t.Logf("kube sink: initial topology of %d objects took %d API writes in %v: %.0f writes/s", len(initial), st.Objects(), took, float64(st.Objects())/took.Seconds())

	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The API server's own "kubernetes" Service in default is a service too.
	if _, err := srv.WaitForSnapshot(wctx, func(s *model.Snapshot) bool { return s.ServiceCount() == simCfg.Topology.Services+1 }); err != nil {
		t.Fatalf("the control plane never saw the %d services: %v", simCfg.Topology.Services, err)
	}

	rec := &recorder{full: make(chan struct{}), seen: make(chan time.Time, 1)}
	cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tmpl := fakeenvoy.IdentityTemplate{Type: "sidecar", Namespace: "ns-0", IPBase: "10.200.0.1"}
	client, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Node: tmpl.Node(0), Nack: fakeenvoy.NackPolicy{Realistic: true}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { ccancel(); wg.Wait() }()
	wg.Go(func() {
		_ = client.Run(cctx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil })
	})
	select {
	case <-rec.full:
	case <-time.After(time.Minute):
		t.Fatal("the fake Envoy never got a full config")
	}

	// Apply the churn event by event, as fast as the chain delivers: each endpoint change
	// must reach the fake Envoy.
	var lat, applyLat []time.Duration
	writes0 := sink.Stats().Objects()
	churnBegin := time.Now()
	for len(lat) < 20 {
		ev, ok, err := sim.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if ev.Skip != "" {
			continue
		}
		rec.expect(ev.Expectation)
		start := time.Now()
		if err := sink.Apply(ctx, ev); err != nil {
			t.Fatal(err)
		}
		applyLat = append(applyLat, time.Since(start))
		select {
		case at := <-rec.seen:
			lat = append(lat, at.Sub(start))
		case <-time.After(time.Minute):
			t.Fatalf("event %d (%s) never reached the fake Envoy: %v", ev.ID, ev.Kind, ev.Expectation.All)
		}
	}
	if len(lat) == 0 {
		t.Fatal("the churn produced no events")
	}
	slices.Sort(lat)
	slices.Sort(applyLat)
	t.Logf("kube sink: %d events (%d API writes): Apply (API server accepted) p50 %v max %v; Apply to the fake Envoy p50 %v max %v; churn ran at %.0f writes/s",
		len(lat), sink.Stats().Objects()-writes0, applyLat[len(applyLat)/2], applyLat[len(applyLat)-1],
		lat[len(lat)/2], lat[len(lat)-1], float64(sink.Stats().Objects()-writes0)/time.Since(churnBegin).Seconds())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.nacks) > 0 {
		t.Errorf("the fake Envoy NACKed: %v", rec.nacks)
	}
}
