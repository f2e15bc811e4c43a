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
	"strings"
	"testing"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/xdslab/xdslab/internal/kubeclient"
)

// kubeAssets finds the kube-apiserver and etcd binaries hack/kube-testenv.sh builds:
// $XDSLAB_KUBE_ASSETS, else the script's default cache directory. Outside CI their absence
// skips the test; in CI (CI=true) it fails it.
func kubeAssets(t testing.TB) (apiserver, etcd string) {
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

func freePort(t testing.TB) int {
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
func startProcess(t testing.TB, log string, name string, args ...string) <-chan struct{} {
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

// cluster is a running etcd and kube-apiserver with Istio's CRDs: kubeconfigs for an admin
// and for the identities the RBAC manifest (examples/kube/rbac.yaml) grants: the sink's and the
// control plane's service accounts (their tokens authenticate as those accounts).
type cluster struct {
	admin, sim, controlPlane string
}

// Identities of examples/kube/rbac.yaml.
const (
	simAccount          = "system:serviceaccount:xdslab:xdslab-sim"
	controlPlaneAccount = "system:serviceaccount:xdslab:xdslab-controlplane"
)

// startCluster runs etcd and kube-apiserver on loopback (stopped when the test ends), installs
// Istio's CRDs and examples/kube/rbac.yaml.
func startCluster(t testing.TB) *cluster {
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
	tokens := filepath.Join(dir, "tokens.csv")
	csv := "admin-token,admin,admin,system:masters\n" +
		"sim-token," + simAccount + ",sim,\"system:serviceaccounts,system:serviceaccounts:xdslab\"\n" +
		"cp-token," + controlPlaneAccount + ",cp,\"system:serviceaccounts,system:serviceaccounts:xdslab\"\n"
	if err := os.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	apiDone := startProcess(t, filepath.Join(dir, "apiserver.log"), apiserverBin,
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort), "--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens, "--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", keyFile,
		"--service-account-signing-key-file", keyFile, "--service-cluster-ip-range", "10.96.0.0/12",
		// The ServiceAccount admission plugin stays on (its default): a Pod naming an account
		// that does not exist is refused, so the sink must write the accounts first.
		// A loopback address cannot be published as the kubernetes Service's endpoint.
		"--endpoint-reconciler-type", "none")
	writeKubeconfig := func(user, token string) string {
		kubeconfig := filepath.Join(dir, user+".kubeconfig")
		kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: %s, user: {token: %s}}]
contexts: [{name: test, context: {cluster: test, user: %s}}]
current-context: test
`, apiPort, user, token, user)
		if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
			t.Fatal(err)
		}
		return kubeconfig
	}
	c := &cluster{admin: writeKubeconfig("admin", "admin-token"), sim: writeKubeconfig("sim", "sim-token"),
		controlPlane: writeKubeconfig("cp", "cp-token")}
	cfg, err := kubeclient.Config(kubeclient.Options{Kubeconfig: c.admin, QPS: -1})
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
	installManifest(t, cfg, filepath.Join("..", "..", "..", "examples", "kube", "rbac.yaml"))
	return c
}

// installManifest creates every object of a YAML manifest of the kinds the examples use.
func installManifest(tb testing.TB, cfg *rest.Config, file string) {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	resources := map[string]schema.GroupVersionResource{
		"Namespace":          {Version: "v1", Resource: "namespaces"},
		"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
		"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		if string(js) == "null" {
			continue
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(js); err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		gvr, ok := resources[u.GetKind()]
		if !ok {
			tb.Fatalf("%s: kind %s: add it to installManifest", file, u.GetKind())
		}
		var ri dynamic.ResourceInterface = dc.Resource(gvr)
		if ns := u.GetNamespace(); ns != "" {
			ri = dc.Resource(gvr).Namespace(ns)
		}
		if _, err := ri.Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("%s: %s %s: %v", file, u.GetKind(), u.GetName(), err)
		}
	}
}

// istioCRDs is Istio's own CustomResourceDefinitions manifest (every istio.io kind, with its
// OpenAPI schemas and validation rules), read from the istio.io/api module this module
// requires, as found in the module cache (go mod download fetches it).
func istioCRDs(tb testing.TB) []byte {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/api").Output()
	if err != nil {
		tb.Fatalf("locating the istio.io/api module (run go mod download): %v", err)
	}
	file := filepath.Join(strings.TrimSpace(string(out)), "kubernetes", "customresourcedefinitions.gen.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatalf("Istio's CRDs: %v", err)
	}
	return data
}

// installCRDs creates Istio's CRDs and waits until its networking kinds are served.
func installCRDs(tb testing.TB, cfg *rest.Config) {
	tb.Helper()
	data := istioCRDs(tb)
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := context.Background()
	n := 0
	for _, doc := range strings.Split(string(data), "\n---\n") {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			tb.Fatal(err)
		}
		if string(js) == "null" {
			continue // a comment-only document
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(js); err != nil {
			tb.Fatal(err)
		}
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if _, err := crds.Create(ctx, &u, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("CRD %s: %v", u.GetName(), err)
		}
		n++
	}
	if n == 0 {
		tb.Fatal("Istio's CRD manifest holds no CustomResourceDefinition")
	}
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var errs []error
		n := ic.NetworkingV1()
		for _, list := range []func() error{
			func() error { _, err := n.ServiceEntries("default").List(ctx, metav1.ListOptions{}); return err },
			func() error { _, err := n.WorkloadEntries("default").List(ctx, metav1.ListOptions{}); return err },
			func() error { _, err := n.VirtualServices("default").List(ctx, metav1.ListOptions{}); return err },
			func() error { _, err := n.DestinationRules("default").List(ctx, metav1.ListOptions{}); return err },
			func() error { _, err := n.Sidecars("default").List(ctx, metav1.ListOptions{}); return err },
			func() error { _, err := n.Gateways("default").List(ctx, metav1.ListOptions{}); return err },
		} {
			if err := list(); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("Istio CRDs not served: %v", errs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
