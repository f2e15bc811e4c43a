// Package kubeparity has Istio judge xdslab's Kubernetes registry: the same Kubernetes objects
// go to Istio's own DiscoveryServer (pilot/test/xds, its Kubernetes controller on a fake
// client) and to xdslab's control plane reading them through controlplane/registry/kube (on
// client-go's fake clientset); a sidecar fetches both over ADS and the views are compared
// with hack/istio/parity. Every difference must be listed in known (and every listed one
// must still occur).
package kubeparity

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/log"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry/kube"
	"github.com/xdslab/xdslab/hack/istio/parity"
)

func TestMain(m *testing.M) {
	o := log.DefaultOptions()
	o.SetDefaultOutputLevel(log.OverrideScopeName, log.ErrorLevel)
	if err := log.Configure(o); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// source runs the kube registry as a control plane source.
type source struct{ *kube.Controller }

func (s source) Run(ctx context.Context, configs *config.Memory) error {
	return s.Controller.Run(ctx, configs)
}

func decode(t *testing.T, y string) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, doc := range strings.Split(y, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		o, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode: %v\n%s", err, doc)
		}
		out = append(out, o)
	}
	return out
}

// sides are Istio and xdslab fed the same objects, each through its own fake client.
type sides struct {
	istio      *xds.FakeDiscoveryServer
	istioAddr  string
	ours       *controlplane.Server
	kubeIstio  kubernetes.Interface
	kubeXdslab kubernetes.Interface
}

// start runs both sides on objects. The EndpointSlices among them are created once both
// have synced the rest: Istio's controller converts a slice that comes before its Service or
// Pods differently (its start is racy), as a running cluster does not.
func start(t *testing.T, all string) *sides {
	t.Helper()
	var docs, slices []string
	for _, doc := range strings.Split(all, "\n---") {
		if strings.Contains(doc, "\nkind: EndpointSlice") {
			slices = append(slices, doc)
		} else {
			docs = append(docs, doc)
		}
	}
	objects := strings.Join(docs, "\n---")
	s := &sides{}
	var l net.Listener
	s.istio = xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
		KubernetesObjectString: objects,
		DebounceTime:           10 * time.Millisecond,
		ListenerBuilder: func() (net.Listener, error) {
			var err error
			l, err = net.Listen("tcp", "127.0.0.1:0")
			return l, err
		},
	})
	s.istioAddr = l.Addr().String()
	s.kubeIstio = s.istio.KubeClient().Kube()
	kc := fake.NewClientset(decode(t, objects)...)
	s.kubeXdslab = kc
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctrl, err := kube.New(kube.Options{Kube: kc, Pods: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.Debounce.MinQuiet = 10 * time.Millisecond
	opts.Logger = logger
	opts.Sources = []controlplane.Source{source{ctrl}}
	s.ours = controlplanetest.NewServer(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-s.ours.Synced():
	case <-ctx.Done():
		t.Fatal("xdslab did not sync")
	}
	if _, err := s.ours.WaitForSnapshot(ctx, func(sn *model.Snapshot) bool { return sn != nil }); err != nil {
		t.Fatal(err)
	}
	for _, o := range decode(t, strings.Join(slices, "\n---")) {
		es := o.(*discoveryv1.EndpointSlice)
		s.both(t, func(c kubernetes.Interface) error {
			_, err := c.DiscoveryV1().EndpointSlices(es.Namespace).Create(context.Background(), es.DeepCopy(), metav1.CreateOptions{})
			return err
		})
	}
	return s
}

var proxy = parity.Proxy{Type: "sidecar", IP: "10.250.0.9", Pod: "client", Namespace: "client",
	Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}

// settle fetches the view of addr until two fetches in a row agree.
func settle(t *testing.T, addr string) parity.View {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last parity.View
	for {
		d, err := parity.Fetch(ctx, addr, proxy)
		if err != nil {
			t.Fatalf("fetch from %s: %v", addr, err)
		}
		v := parity.Project(d)
		if last != nil && len(parity.Diff(last, v)) == 0 {
			return v
		}
		last = v
		time.Sleep(100 * time.Millisecond)
	}
}

// compare checks the differences between Istio and xdslab against the known ones of step.
func (s *sides) compare(t *testing.T, step string, known []knownDiff) {
	t.Helper()
	time.Sleep(200 * time.Millisecond) // let both sides see the last change
	want, got := settle(t, s.istioAddr), settle(t, s.ours.GRPCAddr())
	ds := parity.Diff(want, got)
	used := make([]bool, len(known))
	var unknown []parity.Delta
	for _, d := range ds {
		i := slices.IndexFunc(known, func(k knownDiff) bool { return k.matches(d) })
		if i < 0 {
			unknown = append(unknown, d)
			continue
		}
		used[i] = true
	}
	if len(unknown) > 0 {
		t.Errorf("%s: %d differences from Istio not listed as known (- only Istio, + only xdslab):\n%s", step, len(unknown), parity.Format(unknown))
	}
	for i, k := range known {
		if !used[i] && !strings.HasSuffix(k.why, "may not occur") {
			t.Errorf("%s: known difference %q no longer occurs: remove it from the list", step, k)
		}
	}
	if t.Failed() {
		t.Logf("%s: all %d differences:\n%s", step, len(ds), parity.Format(ds))
	} else {
		t.Logf("%s: %d differences, all known", step, len(ds))
	}
}

// knownDiff is a difference from Istio that xdslab does not remove yet: a delta of resource
// (exact) on the side only (istio or xdslab) whose line contains line ("" matches the whole
// resource missing). One whose why ends in "may not occur" need not occur.
type knownDiff struct {
	resource, only, line, why string
}

func (k knownDiff) matches(d parity.Delta) bool {
	return d.Resource == k.resource && d.Only == k.only && (k.line == "" && d.Line == "" || k.line != "" && strings.Contains(d.Line, k.line))
}

func (k knownDiff) String() string { return k.resource + " only " + k.only + " " + k.line }

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStatic compares each corpus file as it is.
func TestStatic(t *testing.T) {
	for _, name := range []string{"ports.yaml", "endpoints.yaml", "protocols.yaml", "accounts.yaml", "fqdn.yaml"} {
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			t.Parallel()
			s := start(t, readFile(t, name))
			s.compare(t, name, knownStatic[name])
		})
	}
}

// both applies fn to both sides' clients.
func (s *sides) both(t *testing.T, fn func(c kubernetes.Interface) error) {
	t.Helper()
	for _, c := range []kubernetes.Interface{s.kubeIstio, s.kubeXdslab} {
		if err := fn(c); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLifecycle replays Pod and EndpointSlice events on lifecycle.yaml.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	touch := func(c kubernetes.Interface) error {
		es, err := c.DiscoveryV1().EndpointSlices("app").Get(ctx, "a-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		es.Annotations = map[string]string{"touch": time.Now().String()}
		_, err = c.DiscoveryV1().EndpointSlices("app").Update(ctx, es, metav1.UpdateOptions{})
		return err
	}
	t.Run("pod deleted", func(t *testing.T) {
		t.Parallel()
		s := start(t, readFile(t, "lifecycle.yaml"))
		s.compare(t, "initial", nil)
		s.both(t, func(c kubernetes.Interface) error {
			return c.CoreV1().Pods("app").Delete(ctx, "a-2", metav1.DeleteOptions{})
		})
		s.compare(t, "pod a-2 deleted, its slice unchanged", nil)
		s.both(t, touch)
		s.compare(t, "slice touched", nil)
	})
	t.Run("pod late", func(t *testing.T) {
		t.Parallel()
		s := start(t, strings.Replace(readFile(t, "lifecycle.yaml"), "{name: a-2, namespace: app, labels", "{name: a-2x, namespace: app, labels", 1))
		s.compare(t, "slice points at a missing pod", nil)
		s.both(t, func(c kubernetes.Interface) error {
			return copyPod(ctx, c, "a-2x", func(p *corev1.Pod) { p.Name = "a-2" })
		})
		s.compare(t, "pod a-2 arrives", nil)
	})
	t.Run("pod relabelled", func(t *testing.T) {
		t.Parallel()
		s := start(t, readFile(t, "lifecycle.yaml"))
		s.both(t, func(c kubernetes.Interface) error {
			return editPod(ctx, c, "a-1", false, func(p *corev1.Pod) {
				p.Labels["version"] = "v3"
				delete(p.Labels, "security.istio.io/tlsMode")
			})
		})
		s.compare(t, "pod a-1 relabelled", nil)
	})
	t.Run("pod terminating", func(t *testing.T) {
		t.Parallel()
		s := start(t, readFile(t, "lifecycle.yaml"))
		s.both(t, func(c kubernetes.Interface) error {
			return editPod(ctx, c, "a-1", true, func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
				now := metav1.Now()
				p.DeletionTimestamp = &now
			})
		})
		s.compare(t, "pod a-1 terminating, its slice still ready", nil)
	})
	t.Run("service port and re-creation", func(t *testing.T) {
		t.Parallel()
		s := start(t, readFile(t, "lifecycle.yaml"))
		var saved *corev1.Service
		s.both(t, func(c kubernetes.Interface) error {
			sv, err := c.CoreV1().Services("app").Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			sv.Spec.Ports[0].Port = 8000
			sv, err = c.CoreV1().Services("app").Update(ctx, sv, metav1.UpdateOptions{})
			saved = sv.DeepCopy()
			return err
		})
		s.compare(t, "port 80 → 8000", nil)
		s.both(t, func(c kubernetes.Interface) error {
			return c.CoreV1().Services("app").Delete(ctx, "a", metav1.DeleteOptions{})
		})
		s.compare(t, "service a deleted, its slices stay", nil)
		s.both(t, func(c kubernetes.Interface) error {
			sv := saved.DeepCopy()
			sv.ResourceVersion = ""
			_, err := c.CoreV1().Services("app").Create(ctx, sv, metav1.CreateOptions{})
			return err
		})
		s.compare(t, "service a re-created", nil)
	})
	t.Run("headless endpoints change", func(t *testing.T) {
		// Each endpoint of a headless Service has listeners of its own: a change of its
		// endpoints must reach LDS (a full push in istiod).
		t.Parallel()
		s := start(t, readFile(t, "endpoints.yaml"))
		s.both(t, func(c kubernetes.Interface) error {
			es, err := c.DiscoveryV1().EndpointSlices("app").Get(ctx, "hla-2", metav1.GetOptions{})
			if err != nil {
				return err
			}
			e := es.Endpoints[0].DeepCopy()
			e.Addresses = []string{"10.1.1.7"}
			es.Endpoints = append(es.Endpoints, *e)
			_, err = c.DiscoveryV1().EndpointSlices("app").Update(ctx, es, metav1.UpdateOptions{})
			return err
		})
		s.compare(t, "an endpoint joins headless hla", nil)
		s.both(t, func(c kubernetes.Interface) error {
			return c.DiscoveryV1().EndpointSlices("app").Delete(ctx, "hla-1", metav1.DeleteOptions{})
		})
		s.compare(t, "a slice of headless hla deleted", nil)
	})
	t.Run("new service account", func(t *testing.T) {
		t.Parallel()
		s := start(t, readFile(t, "lifecycle.yaml"))
		s.both(t, func(c kubernetes.Interface) error {
			if err := copyPod(ctx, c, "a-2", func(p *corev1.Pod) {
				p.Name, p.Spec.ServiceAccountName = "a-3", "other"
				p.Status.PodIP, p.Status.PodIPs = "10.2.0.3", []corev1.PodIP{{IP: "10.2.0.3"}}
			}); err != nil {
				return err
			}
			es, err := c.DiscoveryV1().EndpointSlices("app").Get(ctx, "a-1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			e := es.Endpoints[1].DeepCopy()
			e.Addresses, e.TargetRef.Name = []string{"10.2.0.3"}, "a-3"
			es.Endpoints = append(es.Endpoints, *e)
			_, err = c.DiscoveryV1().EndpointSlices("app").Update(ctx, es, metav1.UpdateOptions{})
			return err
		})
		s.compare(t, "a Pod under another account joins", nil)
	})
}

// editPod changes Pod app/name in place (its status when status).
func editPod(ctx context.Context, c kubernetes.Interface, name string, status bool, change func(*corev1.Pod)) error {
	p, err := c.CoreV1().Pods("app").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	change(p)
	if status {
		_, err = c.CoreV1().Pods("app").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	} else {
		_, err = c.CoreV1().Pods("app").Update(ctx, p, metav1.UpdateOptions{})
	}
	return err
}

// copyPod creates a Pod like app/from, as change makes it (change names it).
func copyPod(ctx context.Context, c kubernetes.Interface, from string, change func(*corev1.Pod)) error {
	p, err := c.CoreV1().Pods("app").Get(ctx, from, metav1.GetOptions{})
	if err != nil {
		return err
	}
	p = p.DeepCopy()
	p.ResourceVersion = ""
	change(p)
	_, err = c.CoreV1().Pods("app").Create(ctx, p, metav1.CreateOptions{})
	return err
}
