package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// istioRecorder stands in for the Istio API: client-go's generated fake does not implement
// server-side apply, so a reactor keeps the last applied body of every object and drops it on
// delete, failing (once) on a chosen object.
type istioRecorder struct {
	mu      sync.Mutex
	objects map[string]map[string]any // "resource/ns/name" -> applied body
	calls   []string
	failOn  string
}

// initKubeSink builds a simulator on the small topology with every churn kind for 10s and a
// kube sink (opts, on fake clientsets, 3 workers) that has written its initial state.
func initKubeSink(t *testing.T, workloadEntries bool, opts KubeOptions) (simulator.Config, *simulator.Simulator, *kubefake.Clientset, *istioRecorder, *Kube) {
	t.Helper()
	cfg := simulator.DefaultConfig()
	cfg.Topology = simtest.SmallTopology()
	cfg.Topology.WorkloadEntries = workloadEntries
	cfg.Churn = simtest.KindCases()
	cfg.Duration = 10 * time.Second
	sim, err := simulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset()
	istio := istiofake.NewSimpleClientset()
	rec := newIstioRecorder(istio)
	opts.Kube, opts.Istio, opts.Workers = kube, istio, 3
	sink, err := NewKube(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Init(context.Background(), sim.Initial()); err != nil {
		t.Fatal(err)
	}
	return cfg, sim, kube, rec, sink
}

func newIstioRecorder(c *istiofake.Clientset) *istioRecorder {
	r := &istioRecorder{objects: map[string]map[string]any{}}
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		res := a.GetResource().Resource
		switch a := a.(type) {
		case k8stesting.PatchAction:
			id := res + "/" + a.GetNamespace() + "/" + a.GetName()
			r.calls = append(r.calls, "apply "+id)
			if a.GetPatchType() != types.ApplyPatchType {
				return true, nil, errors.New("not a server-side apply")
			}
			if id == r.failOn {
				return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "networking.istio.io", Kind: "X"}, a.GetName(), nil)
			}
			var body map[string]any
			if err := json.Unmarshal(a.GetPatch(), &body); err != nil {
				return true, nil, err
			}
			r.objects[id] = body
			return true, nil, nil
		case k8stesting.DeleteAction:
			id := res + "/" + a.GetNamespace() + "/" + a.GetName()
			r.calls = append(r.calls, "delete "+id)
			if _, ok := r.objects[id]; !ok {
				return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), a.GetName())
			}
			delete(r.objects, id)
			return true, nil, nil
		case k8stesting.DeleteCollectionAction:
			r.calls = append(r.calls, "deletecollection "+res+"/"+a.GetNamespace()+" "+a.GetListRestrictions().Labels.String())
			return true, nil, nil
		}
		return false, nil, nil
	})
	return r
}

var istioResources = map[istioconfig.Kind]string{
	istioconfig.KindServiceEntry: "serviceentries", istioconfig.KindWorkloadEntry: "workloadentries",
	istioconfig.KindVirtualService: "virtualservices", istioconfig.KindDestinationRule: "destinationrules",
	istioconfig.KindSidecar: "sidecars", istioconfig.KindGateway: "gateways",
}

// checkKubeState compares what the fake API servers hold with the simulator's mesh.
func checkKubeState(t *testing.T, kube *kubefake.Clientset, rec *istioRecorder, cur []istioconfig.Config, serviceEntries bool) {
	t.Helper()
	ctx := context.Background()
	wantIstio := map[string]istioconfig.Config{}
	wantSvc := map[string]istioconfig.Config{}
	for _, c := range cur {
		se, ok := c.Spec.(*networking.ServiceEntry)
		if ok && !serviceEntries && nativeServiceEntry(c, se) {
			wantSvc[c.Namespace+"/"+c.Name] = c
			continue
		}
		wantIstio[istioResources[c.Kind]+"/"+c.Namespace+"/"+c.Name] = c
	}
	rec.mu.Lock()
	gotIstio := slices.Sorted(maps.Keys(rec.objects))
	for id, body := range rec.objects {
		c, ok := wantIstio[id]
		if !ok {
			continue
		}
		want, err := istioconfig.RenderJSON(c, KubeIstioAPIVersion, managedLabels(c.Labels))
		if err != nil {
			t.Fatal(err)
		}
		var wantBody map[string]any
		if err := json.Unmarshal(want, &wantBody); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantBody, body); d != "" {
			t.Errorf("%s differs (-want +got):\n%s", id, d)
		}
	}
	rec.mu.Unlock()
	if d := cmp.Diff(slices.Sorted(maps.Keys(wantIstio)), gotIstio); d != "" {
		t.Errorf("Istio objects (-want +got):\n%s", d)
	}
	svcs, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gotSvc []string
	for _, s := range svcs.Items {
		gotSvc = append(gotSvc, s.Namespace+"/"+s.Name)
		c := wantSvc[s.Namespace+"/"+s.Name]
		if c.Spec == nil {
			continue
		}
		se := c.Spec.(*networking.ServiceEntry)
		if len(s.Spec.Ports) != len(se.Ports) || s.Labels[KubeManagedByLabel] != KubeFieldManager || s.Spec.Selector != nil {
			t.Errorf("service %s: ports %d labels %v selector %v; want %d ports, managed-by label, no selector",
				s.Name, len(s.Spec.Ports), s.Labels, s.Spec.Selector, len(se.Ports))
		}
	}
	slices.Sort(gotSvc)
	if d := cmp.Diff(slices.Sorted(maps.Keys(wantSvc)), gotSvc); d != "" {
		t.Errorf("Services (-want +got):\n%s", d)
	}
	eps, err := kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotAddrs := map[string][]string{}
	for _, es := range eps.Items {
		svc := es.Namespace + "/" + es.Labels[discoveryv1.LabelServiceName]
		if _, ok := wantSvc[svc]; !ok {
			t.Errorf("endpointslice %s/%s of no current service", es.Namespace, es.Name)
		}
		for _, e := range es.Endpoints {
			if e.Conditions.Ready == nil || !*e.Conditions.Ready || e.Zone == nil {
				t.Errorf("endpointslice %s: endpoint %v not ready or without zone", es.Name, e.Addresses)
			}
			gotAddrs[svc] = append(gotAddrs[svc], e.Addresses...)
		}
	}
	for svc, c := range wantSvc {
		var want []string
		for _, e := range c.Spec.(*networking.ServiceEntry).Endpoints {
			want = append(want, e.Address)
		}
		got := gotAddrs[svc]
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("service %s: slice addresses %v, want %v", svc, got, want)
		}
	}
}

func TestKubeSink(t *testing.T) {
	for _, tc := range []struct {
		name            string
		workloadEntries bool
		serviceEntries  bool
	}{
		{"native services", false, false},
		{"workload entries", true, false},
		{"istio service entries", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, sim, kube, rec, sink := initKubeSink(t, tc.workloadEntries, KubeOptions{ServiceEntries: tc.serviceEntries})
			ctx := context.Background()
			checkKubeState(t, kube, rec, sim.Current(), tc.serviceEntries)
			nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(nss.Items) != cfg.Topology.Namespaces {
				t.Errorf("%d namespaces, want %d", len(nss.Items), cfg.Topology.Namespaces)
			}
			events := 0
			for _, n := range simtest.ApplyChurn(t, ctx, sim, sink) {
				events += n
			}
			if events == 0 {
				t.Fatal("the churn produced no events")
			}
			checkKubeState(t, kube, rec, sim.Current(), tc.serviceEntries)
			if st := sink.Stats(); st.Applies == 0 || st.Deletes == 0 {
				t.Errorf("stats %+v: want applies and deletes counted", st)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			if err := sink.Apply(ctx, simulator.Event{ID: 1}); err == nil {
				t.Fatal("Apply after Close succeeded")
			}
		})
	}
}

func TestKubeSinkErrorsAndClean(t *testing.T) {
	if _, err := NewKube(KubeOptions{}); err == nil {
		t.Fatal("a sink without clients was accepted")
	}
	kube := kubefake.NewClientset()
	istio := istiofake.NewSimpleClientset()
	if _, err := NewKube(KubeOptions{Kube: kube, Istio: istio, Workers: -1}); err == nil {
		t.Fatal("negative workers accepted")
	}
	rec := newIstioRecorder(istio)
	rec.failOn = "virtualservices/ns-a/bad"
	sink, err := NewKube(KubeOptions{Kube: kube, Istio: istio, Clean: true})
	if err != nil {
		t.Fatal(err)
	}
	vs := func(name string) istioconfig.Config {
		return istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: name, Namespace: "ns-a"},
			Spec: &networking.VirtualService{Hosts: []string{"a.example.com"}}}
	}
	ctx := context.Background()
	if err := sink.Init(ctx, []istioconfig.Config{vs("good")}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.calls, "deletecollection virtualservices/ns-a "+KubeManagedByLabel+"="+KubeFieldManager) {
		t.Errorf("Clean did not delete the earlier run's VirtualServices: calls %v", rec.calls)
	}
	err = sink.Apply(ctx, simulator.Event{ID: 7, Kind: simulator.ConfigChange, Upserts: []istioconfig.Config{vs("bad")}})
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "event 7") || !strings.Contains(err.Error(), "virtualservice ns-a/bad") {
		t.Fatalf("error %v: want the API's Invalid, naming the event and the object", err)
	}
	// Deleting what is already gone is not an error: a rerun may delete objects a crash left.
	if err := sink.Apply(ctx, simulator.Event{ID: 8, Deletes: []istioconfig.Key{{Kind: istioconfig.KindDestinationRule, Name: "never", Namespace: "ns-a"}}}); err != nil {
		t.Fatal(err)
	}
	if err := sink.upsertWrites(&plan{}, istioconfig.Config{Meta: istioconfig.Meta{Kind: "Pod", Name: "p", Namespace: "ns-a"}}); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := sink.Apply(cctx, simulator.Event{ID: 9, Upserts: []istioconfig.Config{vs("late")}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v after the context ended, want context.Canceled", err)
	}
}

func TestKubeServiceSlices(t *testing.T) {
	se := &networking.ServiceEntry{
		Hosts: []string{"big.ns.svc.cluster.local"}, Location: networking.ServiceEntry_MESH_INTERNAL,
		Resolution: networking.ServiceEntry_STATIC,
		Ports:      []*networking.ServicePort{{Name: "http-80", Number: 80, Protocol: "HTTP", TargetPort: 8080}},
	}
	for i := range 2500 {
		se.Endpoints = append(se.Endpoints, &networking.WorkloadEntry{Address: "10.1." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1), Locality: "r1/z2"})
	}
	c := istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: "big", Namespace: "ns"}, Spec: se}
	if !nativeServiceEntry(c, se) {
		t.Fatal("a cluster-local ServiceEntry is not native")
	}
	svc, sl := kubeService(c, se, false)
	if len(sl) != 3 || len(sl[0].Endpoints) != maxSliceEndpoints || len(sl[2].Endpoints) != 500 {
		t.Fatalf("%d slices, want 3 of at most %d endpoints", len(sl), maxSliceEndpoints)
	}
	if p := svc.Spec.Ports[0]; *p.Port != 80 || p.TargetPort.IntVal != 8080 || *p.AppProtocol != "http" {
		t.Errorf("service port %+v", p)
	}
	if ep := sl[0].Endpoints[0]; *ep.Zone != "z2" || *sl[0].Ports[0].Port != 8080 {
		t.Errorf("endpoint zone %q, slice port %d; want z2 and the target port", *ep.Zone, *sl[0].Ports[0].Port)
	}
	// A port without a protocol (a mesh port of protocol auto) has no appProtocol: Istio reads
	// its name, which names none, and sniffs.
	se.Ports = append(se.Ports, &networking.ServicePort{Name: "port-9000", Number: 9000})
	svc, sl = kubeService(c, se, false)
	if p := svc.Spec.Ports[1]; p.AppProtocol != nil || *p.Name != "port-9000" || sl[0].Ports[1].AppProtocol != nil {
		t.Errorf("port without a protocol: service port %+v, slice port %+v; want no appProtocol", p, sl[0].Ports[1])
	}
	se.Ports = se.Ports[:1]
	for _, tc := range []struct {
		name string
		mod  func(c *istioconfig.Config, se *networking.ServiceEntry)
	}{
		{"other host", func(_ *istioconfig.Config, se *networking.ServiceEntry) { se.Hosts = []string{"big.example.com"} }},
		{"other namespace", func(c *istioconfig.Config, _ *networking.ServiceEntry) { c.Namespace = "other" }},
		{"two hosts", func(_ *istioconfig.Config, se *networking.ServiceEntry) {
			se.Hosts = append(se.Hosts, "x.ns.svc.cluster.local")
		}},
		{"dns", func(_ *istioconfig.Config, se *networking.ServiceEntry) { se.Resolution = networking.ServiceEntry_DNS }},
		{"external", func(_ *istioconfig.Config, se *networking.ServiceEntry) {
			se.Location = networking.ServiceEntry_MESH_EXTERNAL
		}},
		{"selector", func(_ *istioconfig.Config, se *networking.ServiceEntry) {
			se.WorkloadSelector = &networking.WorkloadSelector{}
		}},
		{"unnamed port", func(_ *istioconfig.Config, se *networking.ServiceEntry) { se.Ports[0].Name = "" }},
	} {
		c2 := c
		se2 := &networking.ServiceEntry{Hosts: slices.Clone(se.Hosts), Location: se.Location, Resolution: se.Resolution,
			Ports: []*networking.ServicePort{{Name: "http-80", Number: 80, Protocol: "HTTP"}}}
		tc.mod(&c2, se2)
		if nativeServiceEntry(c2, se2) {
			t.Errorf("%s: written as a Kubernetes Service", tc.name)
		}
	}
}

// checkKubePods compares the Pods the fake API server holds with the endpoints of the native
// services of cur: one Pod per endpoint with its labels, service account and locality, running
// and ready at its address, and every slice entry pointing at its Pod.
func checkKubePods(t *testing.T, kube *kubefake.Clientset, cur []istioconfig.Config) {
	t.Helper()
	ctx := context.Background()
	want := map[string]*networking.WorkloadEntry{}
	for _, c := range cur {
		if se, ok := c.Spec.(*networking.ServiceEntry); ok && nativeServiceEntry(c, se) {
			for _, e := range se.Endpoints {
				want[c.Namespace+"/"+podName(c.Name, e.Address)] = e
			}
		}
	}
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods.Items {
		id := p.Namespace + "/" + p.Name
		got = append(got, id)
		e := want[id]
		if e == nil {
			continue
		}
		for k, v := range e.Labels {
			if p.Labels[k] != v {
				t.Errorf("pod %s: label %s=%q, want %q", id, k, p.Labels[k], v)
			}
		}
		wantMode := e.Labels[KubeTLSModeLabel]
		if wantMode == "" {
			wantMode = "istio"
		}
		if want := wantMode; p.Labels[KubeTLSModeLabel] != want {
			t.Errorf("pod %s: %s=%q, want %q (an injected workload's label, which istiod's auto-mTLS needs)", id, KubeTLSModeLabel, p.Labels[KubeTLSModeLabel], want)
		}
		if loc := strings.ReplaceAll(e.Locality, "/", "."); p.Labels[KubeLocalityLabel] != loc {
			t.Errorf("pod %s: locality label %q, want %q", id, p.Labels[KubeLocalityLabel], loc)
		}
		if p.Spec.ServiceAccountName != e.ServiceAccount || p.Spec.NodeName != KubeNodeName {
			t.Errorf("pod %s: service account %q node %q, want %q and %q", id, p.Spec.ServiceAccountName, p.Spec.NodeName, e.ServiceAccount, KubeNodeName)
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || c.Type == "Ready" && c.Status == "True"
		}
		if p.Status.PodIP != e.Address || p.Status.Phase != "Running" || !ready {
			t.Errorf("pod %s: status ip %q phase %q ready %v, want %s, Running, ready", id, p.Status.PodIP, p.Status.Phase, ready, e.Address)
		}
		if _, err := kube.CoreV1().ServiceAccounts(p.Namespace).Get(ctx, p.Spec.ServiceAccountName, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s: service account: %v", id, err)
		}
	}
	slices.Sort(got)
	if d := cmp.Diff(slices.Sorted(maps.Keys(want)), got); d != "" {
		t.Errorf("Pods (-want +got):\n%s", d)
	}
	eps, err := kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, es := range eps.Items {
		for _, e := range es.Endpoints {
			ref := e.TargetRef
			if ref == nil || ref.Kind != "Pod" || want[ref.Namespace+"/"+ref.Name] == nil || want[ref.Namespace+"/"+ref.Name].Address != e.Addresses[0] {
				t.Errorf("endpointslice %s: endpoint %v points at %+v, not its Pod", es.Name, e.Addresses, ref)
			}
		}
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, KubeNodeName, metav1.GetOptions{}); err != nil {
		t.Errorf("node: %v", err)
	}
}

// TestKubeSinkPods: with Pods, every endpoint of a native service is a Pod, through scale,
// flaps, rollouts (label changes) and service-account changes (a Pod replaced).
func TestKubeSinkPods(t *testing.T) {
	_, sim, kube, rec, sink := initKubeSink(t, false, KubeOptions{Pods: true})
	ctx := context.Background()
	checkKubeState(t, kube, rec, sim.Current(), false)
	checkKubePods(t, kube, sim.Current())
	kinds := simtest.ApplyChurn(t, ctx, sim, sink)
	for _, k := range []simulator.ChurnKind{simulator.ServiceAccountChange, simulator.RollingDeploy, simulator.Scale, simulator.ServiceDelete} {
		if kinds[k] == 0 {
			t.Errorf("the churn had no %s event: %v", k, kinds)
		}
	}
	checkKubeState(t, kube, rec, sim.Current(), false)
	checkKubePods(t, kube, sim.Current())
}

// countingKube records the verb and resource of every call that reaches the fake.
func countingKube() (*kubefake.Clientset, func() []string) {
	kube := kubefake.NewClientset()
	var (
		mu    sync.Mutex
		calls []string
	)
	kube.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		c := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			c += "/" + a.GetSubresource()
		}
		calls = append(calls, c)
		return false, nil, nil
	})
	return kube, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := calls
		calls = nil
		return out
	}
}

// TestKubeSinkWritesOnlyChanges: the sink sends what changed and nothing else, so an
// endpoint-only event is endpoint-only in the API server too (watchers see no Service
// update).
func TestKubeSinkWritesOnlyChanges(t *testing.T) {
	svc := func(addrs ...string) istioconfig.Config {
		se := &networking.ServiceEntry{Hosts: []string{"a.ns-a.svc.cluster.local"}, Location: networking.ServiceEntry_MESH_INTERNAL,
			Resolution: networking.ServiceEntry_STATIC, Ports: []*networking.ServicePort{{Name: "http", Number: 80, Protocol: "HTTP"}}}
		for _, a := range addrs {
			se.Endpoints = append(se.Endpoints, &networking.WorkloadEntry{Address: a, Labels: map[string]string{"version": "v1"},
				Locality: "r/z", ServiceAccount: "sa"})
		}
		return istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: "a", Namespace: "ns-a"}, Spec: se}
	}
	vs := istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "a", Namespace: "ns-a"},
		Spec: &networking.VirtualService{Hosts: []string{"a"}}}
	for _, tc := range []struct {
		name  string
		pods  bool
		steps [][]istioconfig.Config
		want  [][]string // sorted calls per step
	}{
		{"services", false, [][]istioconfig.Config{
			{svc("10.0.0.1"), vs},
			{svc("10.0.0.1", "10.0.0.2"), vs},
			{svc("10.0.0.1", "10.0.0.2"), vs},
		}, [][]string{
			{"patch endpointslices", "patch namespaces", "patch services"},
			{"patch endpointslices"},
			nil,
		}},
		{"pods", true, [][]istioconfig.Config{
			{svc("10.0.0.1")},
			{svc("10.0.0.1", "10.0.0.2")},
			{svc("10.0.0.2")},
		}, [][]string{
			{"patch endpointslices", "patch namespaces", "patch nodes", "patch pods", "patch pods/status", "patch serviceaccounts", "patch services"},
			{"patch endpointslices", "patch pods", "patch pods/status"},
			{"delete pods", "patch endpointslices"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube, calls := countingKube()
			istio := istiofake.NewSimpleClientset()
			rec := newIstioRecorder(istio)
			sink, err := NewKube(KubeOptions{Kube: kube, Istio: istio, Pods: tc.pods})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, step := range tc.steps {
				rec.mu.Lock()
				rec.calls = nil
				rec.mu.Unlock()
				if i == 0 {
					err = sink.Init(ctx, step)
				} else {
					err = sink.Apply(ctx, simulator.Event{ID: uint64(i), Upserts: step})
				}
				if err != nil {
					t.Fatal(err)
				}
				got := calls()
				slices.Sort(got)
				if d := cmp.Diff(tc.want[i], got); d != "" {
					t.Errorf("step %d: Kubernetes calls (-want +got):\n%s", i, d)
				}
				rec.mu.Lock()
				istioCalls := len(rec.calls)
				rec.mu.Unlock()
				wantIstio := 0
				if i == 0 && slices.ContainsFunc(step, func(c istioconfig.Config) bool { return c.Kind == istioconfig.KindVirtualService }) {
					wantIstio = 1 // written once, then unchanged
				}
				if istioCalls != wantIstio {
					t.Errorf("step %d: %d Istio calls, want %d", i, istioCalls, wantIstio)
				}
			}
			if st := sink.Stats(); st.Unchanged == 0 {
				t.Errorf("stats %+v: no unchanged write counted", st)
			}
		})
	}
}

// TestKubeSinkIstioKinds: each of Istio's six networking kinds goes to its own resource
// through istio.io/client-go, and a delete removes it.
func TestKubeSinkIstioKinds(t *testing.T) {
	specs := map[istioconfig.Kind]proto.Message{
		istioconfig.KindServiceEntry:    &networking.ServiceEntry{Hosts: []string{"x.example.com"}, Resolution: networking.ServiceEntry_DNS},
		istioconfig.KindWorkloadEntry:   &networking.WorkloadEntry{Address: "10.0.0.9", Labels: map[string]string{"app": "x"}},
		istioconfig.KindVirtualService:  &networking.VirtualService{Hosts: []string{"x.example.com"}},
		istioconfig.KindDestinationRule: &networking.DestinationRule{Host: "x.example.com"},
		istioconfig.KindSidecar:         &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}},
		istioconfig.KindGateway:         &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}},
	}
	kube := kubefake.NewClientset()
	istio := istiofake.NewSimpleClientset()
	rec := newIstioRecorder(istio)
	sink, err := NewKube(KubeOptions{Kube: kube, Istio: istio})
	if err != nil {
		t.Fatal(err)
	}
	var all []istioconfig.Config
	for _, k := range slices.Sorted(maps.Keys(specs)) {
		all = append(all, istioconfig.Config{Meta: istioconfig.Meta{Kind: k, Name: "x", Namespace: "ns-a"}, Spec: specs[k]})
	}
	ctx := context.Background()
	if err := sink.Init(ctx, all); err != nil {
		t.Fatal(err)
	}
	checkKubeState(t, kube, rec, all, false)
	for _, c := range all {
		if err := sink.Apply(ctx, simulator.Event{ID: 1, Deletes: []istioconfig.Key{c.Key()}}); err != nil {
			t.Fatal(err)
		}
	}
	checkKubeState(t, kube, rec, nil, false)
}

// TestKubeSinkNamespacesFirst: an API server refuses an object in a namespace it does not hold
// yet. Namespaces are written in a step of their own, before the service accounts that the
// Pods name, even when a namespace is slow to be created and other writes could overtake it.
func TestKubeSinkNamespacesFirst(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.Topology = simtest.SmallTopology()
	sim, err := simulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset()
	var (
		mu  sync.Mutex
		nss = map[string]bool{}
	)
	kube.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "create" && a.GetVerb() != "patch" && a.GetVerb() != "update" {
			return false, nil, nil
		}
		if a.GetResource().Resource == "namespaces" {
			time.Sleep(20 * time.Millisecond) // slower than the writes that could overtake it
			mu.Lock()
			defer mu.Unlock()
			if pa, ok := a.(k8stesting.PatchAction); ok {
				nss[pa.GetName()] = true
			} else if ca, ok := a.(k8stesting.CreateAction); ok {
				if m, err := meta.Accessor(ca.GetObject()); err == nil {
					nss[m.GetName()] = true
				}
			}
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if ns := a.GetNamespace(); ns != "" && !nss[ns] {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, ns)
		}
		return false, nil, nil
	})
	istio := istiofake.NewSimpleClientset()
	newIstioRecorder(istio) // answers the server-side applies of Istio kinds, as in initKubeSink
	sink, err := NewKube(KubeOptions{Kube: kube, Istio: istio, Workers: 8, Pods: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Init(context.Background(), sim.Initial()); err != nil {
		t.Fatalf("initial topology: %v", err)
	}
	if len(nss) == 0 {
		t.Fatal("no namespace was written: the test checks nothing")
	}
}
