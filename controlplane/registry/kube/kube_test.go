package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
	istionet "istio.io/client-go/pkg/apis/networking/v1"
	istiosec "istio.io/client-go/pkg/apis/security/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/features"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
	"github.com/xdslab/xdslab/internal/syncbuf"
	"github.com/xdslab/xdslab/istioconfig"
)

func TestMain(m *testing.M) {
	// Istio's generated fake clientset does not declare that it cannot stream lists (client-go's
	// own fakes do), so informers on it would wait for a bookmark that never comes: list and
	// watch the classic way in these tests. The real API server streams lists.
	features.ReplaceFeatureGates(noWatchList{features.FeatureGates()})
	goleak.VerifyTestMain(m)
}

type noWatchList struct{ features.Gates }

func (g noWatchList) Enabled(f features.Feature) bool {
	return f != features.WatchListClient && g.Gates.Enabled(f)
}

func service(ns, name string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, Ports: ports}}
}

func slice(ns, svc, name string, addrs ...string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http-80"), Port: new(int32(8080))}},
	}
	for _, a := range addrs {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Zone: new("z1")})
	}
	return es
}

// harness runs a Controller on fake clients into an Aggregate, collecting its changes.
type harness struct {
	kube    *kubefake.Clientset
	istio   *istiofake.Clientset
	store   *config.Memory
	agg     *registry.Aggregate
	changes chan registry.Change
	stop    func()
}

func start(t *testing.T, kube *kubefake.Clientset, istio *istiofake.Clientset) *harness {
	t.Helper()
	return startWith(t, Options{Kube: kube, Istio: istio})
}

func startWith(t *testing.T, opts Options) *harness {
	t.Helper()
	kube, istio := opts.Kube.(*kubefake.Clientset), opts.Istio.(*istiofake.Clientset)
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{kube: kube, istio: istio, store: config.NewMemory(config.MemoryOptions{}), changes: make(chan registry.Change, 100)}
	h.agg = registry.NewAggregate(registry.AggregateOptions{Registries: []registry.Registry{c}, OnChange: func(ch registry.Change) { h.changes <- ch }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- c.Run(ctx, h.store) }()
	go func() { done <- h.store.Run(ctx) }()
	// The config store's events reach the aggregate as they do in the server.
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		for ev := range h.store.Events() {
			h.agg.ConfigChanged(ev.Old, ev.New, ev.State)
		}
	}()
	h.stop = func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
		<-evDone
	}
	t.Cleanup(h.stop)
	select {
	case <-c.Synced():
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not sync")
	}
	return h
}

// next returns the next change that satisfies ok, failing after a bounded wait.
func (h *harness) next(t *testing.T, what string, ok func(registry.Change) bool) registry.Change {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ch := <-h.changes:
			if ok(ch) {
				return ch
			}
		case <-timeout:
			t.Fatalf("no change: %s", what)
		}
	}
}

func has(ch registry.Change, k istioconfig.Key) bool { _, ok := ch.Keys[k]; return ok }

const host = "web.shop.svc.cluster.local"

func TestControllerServicesAndEndpoints(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(
		service("shop", "web", corev1.ServicePort{Name: "http-80", Port: 80}),
		slice("shop", "web", "web-a", "10.1.0.1", "10.1.0.2"),
		// A slice of a Service that does not exist yet, and one of no Service at all.
		slice("shop", "late", "late-a", "10.2.0.1"),
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "shop"}, AddressType: discoveryv1.AddressTypeIPv4},
	)
	h := start(t, kube, istiofake.NewSimpleClientset())
	// Every initial object has been applied once Synced is closed: drop the changes they made.
	for len(h.changes) > 0 {
		<-h.changes
	}
	svc := h.agg.Service(host)
	if svc == nil || len(svc.Ports) != 1 || svc.Ports[0].Protocol != model.ProtocolHTTP || svc.Addresses[0] != "10.96.0.10" {
		t.Fatalf("service after sync: %+v", svc)
	}
	eps := h.agg.Endpoints(host)
	if len(eps) != 2 || eps[0].Address != "10.1.0.1" || eps[0].TargetPort(svc.Ports[0]) != 8080 || eps[0].Locality != (model.Locality{}) {
		t.Fatalf("endpoints after sync: %v", eps)
	}

	// An EndpointSlice change alone is an endpoint-only change.
	es := slice("shop", "web", "web-a", "10.1.0.1", "10.1.0.3")
	es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.1.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: new(false)}})
	if _, err := kube.DiscoveryV1().EndpointSlices("shop").Update(ctx, es, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	epKey := istioconfig.Key{Kind: model.KindEndpoint, Name: host, Namespace: "shop"}
	ch := h.next(t, "endpoint update", func(ch registry.Change) bool { return has(ch, epKey) })
	if ch.Full || len(ch.Keys) != 1 || ch.Reason() != model.ReasonEndpointUpdate {
		t.Fatalf("slice update gave %+v, want an endpoint-only change of %s", ch, host)
	}
	if eps := h.agg.Endpoints(host); len(eps) != 2 || eps[1].Address != "10.1.0.3" {
		t.Fatalf("endpoints after update: %v (the not-ready one must be left out)", eps)
	}

	// A second slice of the same Service adds to the endpoints; a duplicate address counts once.
	if _, err := kube.DiscoveryV1().EndpointSlices("shop").Create(ctx, slice("shop", "web", "web-b", "10.1.0.3", "10.1.0.4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.next(t, "second slice", func(ch registry.Change) bool { return has(ch, epKey) })
	if eps := h.agg.Endpoints(host); len(eps) != 3 {
		t.Fatalf("endpoints with two slices: %v, want 10.1.0.1, .3, .4", eps)
	}

	// The late Service picks up the slice that was waiting for it.
	if _, err := kube.CoreV1().Services("shop").Create(ctx, service("shop", "late", corev1.ServicePort{Name: "tcp", Port: 9000}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lateHost := "late.shop.svc.cluster.local"
	ch = h.next(t, "late service", func(ch registry.Change) bool {
		return has(ch, istioconfig.Key{Kind: model.KindService, Name: lateHost, Namespace: "shop"})
	})
	if !ch.Full || ch.ServicesAdded != 1 || len(h.agg.Endpoints(lateHost)) != 1 {
		t.Fatalf("late service change %+v, endpoints %v", ch, h.agg.Endpoints(lateHost))
	}

	// Deleting the Service removes it and its endpoints.
	if err := kube.CoreV1().Services("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ch = h.next(t, "service delete", func(ch registry.Change) bool { return ch.ServicesRemoved == 1 })
	if h.agg.Service(host) != nil || len(h.agg.Endpoints(host)) != 0 {
		t.Fatal("deleted service still in the aggregate")
	}
}

func TestControllerIstioConfig(t *testing.T) {
	ctx := context.Background()
	vs := &istionet.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: networking.VirtualService{Hosts: []string{host}}}
	istio := istiofake.NewSimpleClientset(vs)
	h := start(t, kubefake.NewClientset(), istio)
	vsKey := istioconfig.Key{Kind: istioconfig.KindVirtualService, Name: "web", Namespace: "shop"}
	h.next(t, "initial VirtualService", func(ch registry.Change) bool { return has(ch, vsKey) })
	if got, ok := h.store.Get(vsKey); !ok || got.Spec.(*networking.VirtualService).Hosts[0] != host || got.Source != "kubernetes" {
		t.Fatalf("store holds %v, %v", got, ok)
	}

	// A ServiceEntry from the cluster becomes services through the aggregate.
	se := &istionet.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "shop"},
		Spec: networking.ServiceEntry{Hosts: []string{"api.example.com"}, Location: networking.ServiceEntry_MESH_EXTERNAL,
			Resolution: networking.ServiceEntry_DNS, Ports: []*networking.ServicePort{{Name: "https", Number: 443, Protocol: "TLS"}}}}
	if _, err := istio.NetworkingV1().ServiceEntries("shop").Create(ctx, se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.next(t, "ServiceEntry service", func(ch registry.Change) bool { return ch.ServicesAdded == 1 })
	if svc := h.agg.Service("api.example.com"); svc == nil || !svc.MeshExternal {
		t.Fatalf("ServiceEntry service %+v", svc)
	}

	dr := &istionet.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: networking.DestinationRule{Host: host}}
	if _, err := istio.NetworkingV1().DestinationRules("shop").Create(ctx, dr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	drKey := istioconfig.Key{Kind: istioconfig.KindDestinationRule, Name: "web", Namespace: "shop"}
	h.next(t, "DestinationRule create", func(ch registry.Change) bool { return has(ch, drKey) })
	if got, ok := h.store.Get(drKey); !ok || got.Spec.(*networking.DestinationRule).Host != host {
		t.Fatalf("store holds %v, %v", got, ok)
	}

	pa := &istiosec.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "shop"},
		Spec: securityapi.PeerAuthentication{Mtls: &securityapi.PeerAuthentication_MutualTLS{Mode: securityapi.PeerAuthentication_MutualTLS_STRICT}}}
	if _, err := istio.SecurityV1().PeerAuthentications("shop").Create(ctx, pa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	paKey := istioconfig.Key{Kind: istioconfig.KindPeerAuthentication, Name: "default", Namespace: "shop"}
	h.next(t, "PeerAuthentication create", func(ch registry.Change) bool { return has(ch, paKey) })
	if got, ok := h.store.Get(paKey); !ok || got.Spec.(*securityapi.PeerAuthentication).GetMtls().GetMode() != securityapi.PeerAuthentication_MutualTLS_STRICT {
		t.Fatalf("store holds %v, %v", got, ok)
	}

	ap := &istiosec.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-all", Namespace: "shop"}}
	if _, err := istio.SecurityV1().AuthorizationPolicies("shop").Create(ctx, ap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apKey := istioconfig.Key{Kind: istioconfig.KindAuthorizationPolicy, Name: "deny-all", Namespace: "shop"}
	h.next(t, "AuthorizationPolicy create", func(ch registry.Change) bool { return has(ch, apKey) })
	if got, ok := h.store.Get(apKey); !ok || got.Spec.(*securityapi.AuthorizationPolicy).GetAction() != securityapi.AuthorizationPolicy_ALLOW {
		t.Fatalf("store holds %v, %v", got, ok)
	}

	if err := istio.NetworkingV1().DestinationRules("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.next(t, "DestinationRule delete", func(ch registry.Change) bool { return has(ch, drKey) })
	if _, ok := h.store.Get(drKey); ok {
		t.Fatal("deleted DestinationRule still in the store")
	}
}

func TestConvertService(t *testing.T) {
	for _, tc := range []struct {
		name string
		port corev1.ServicePort
		want model.Protocol
	}{
		{"name prefix", corev1.ServicePort{Name: "grpc-api", Port: 1}, model.ProtocolGRPC},
		{"appProtocol wins", corev1.ServicePort{Name: "tcp-x", AppProtocol: new("http"), Port: 1}, model.ProtocolHTTP},
		{"unknown appProtocol falls back to the name", corev1.ServicePort{Name: "http2-x", AppProtocol: new("kubernetes.io/h2c"), Port: 1}, model.ProtocolHTTP2},
		{"udp", corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}, model.ProtocolUDP},
		{"unnamed", corev1.ServicePort{Port: 1}, model.ProtocolUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := ConvertService(service("ns", "s", tc.port), "s.ns.svc.cluster.local")
			if got := svc.Ports[0].Protocol; got != tc.want {
				t.Errorf("protocol %s, want %s", got, tc.want)
			}
		})
	}
	headless := service("ns", "h")
	headless.Spec.ClusterIP, headless.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	if svc := ConvertService(headless, "h"); svc.Resolution != model.ResolutionPassthrough || len(svc.Addresses) != 0 {
		t.Errorf("headless service %+v", svc)
	}
	exported := service("ns", "x")
	exported.Annotations = map[string]string{AnnotationExportTo: " ., other ,"}
	if svc := ConvertService(exported, "x"); !slices.Equal(svc.ExportTo, []string{".", "other"}) {
		t.Errorf("exportTo annotation: ExportTo %q, want [. other]", svc.ExportTo)
	}
	close := service("ns", "c")
	close.Spec.TrafficDistribution = new("PreferClose")
	if svc := ConvertService(close, "c"); svc.TrafficDistribution != model.TrafficDistributionPreferSameZone {
		t.Errorf("trafficDistribution PreferClose: %d, want PreferSameZone", svc.TrafficDistribution)
	}
	annotated := service("ns", "a")
	annotated.Annotations = map[string]string{model.AnnotationTrafficDistribution: "PreferSameNode"}
	if svc := ConvertService(annotated, "a"); svc.TrafficDistribution != model.TrafficDistributionPreferSameNode {
		t.Errorf("traffic-distribution annotation PreferSameNode: %d, want PreferSameNode", svc.TrafficDistribution)
	}
	ext := service("ns", "e")
	ext.Spec.Type = corev1.ServiceTypeExternalName
	if svc := ConvertService(ext, "e"); svc != nil {
		t.Errorf("ExternalName service converted: %+v", svc)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("no clients accepted")
	}
	if _, err := New(Options{Kube: kubefake.NewClientset(), Resync: -time.Second}); err == nil {
		t.Error("negative resync accepted")
	}
	if _, err := istioConfig(fmt.Sprint("x")); err == nil {
		t.Error("a non-Istio object converted")
	}
}

// pod is a running, ready Pod at ip.
func pod(ns, name, sa, ip string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{ServiceAccountName: sa},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

// TestControllerPods: with Pods, an endpoint takes its Pod's labels, service account (a
// SPIFFE id) and istio-locality, as istiod's; an endpoint whose Pod is not known yet is left
// out until the Pod is ready; a label change is an endpoint-only change; a Pod's deletion
// changes nothing until its slice changes; a new service account redefines the service.
func TestControllerPods(t *testing.T) {
	ctx := context.Background()
	es := slice("shop", "web", "web-a", "10.1.0.1", "10.1.0.2")
	for i := range es.Endpoints {
		es.Endpoints[i].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("web-%d", i+1), Namespace: "shop"}
	}
	svc := service("shop", "web", corev1.ServicePort{Name: "http-80", Port: 80})
	svc.Spec.Selector = map[string]string{"app": "web"}
	kube := kubefake.NewClientset(svc, es,
		pod("shop", "web-1", "sa-web", "10.1.0.1", map[string]string{"app": "web", "version": "v1", LocalityLabel: "r1.z2.s3"}),
	)
	h := startWith(t, Options{Kube: kube, Istio: istiofake.NewSimpleClientset(), Pods: true})
	for len(h.changes) > 0 {
		<-h.changes
	}
	spiffe := "spiffe://cluster.local/ns/shop/sa/sa-web"
	eps := h.agg.Endpoints(host)
	if len(eps) != 1 {
		t.Fatalf("endpoints after sync: %v, want only the one whose Pod is known", eps)
	}
	if e := eps[0]; e.Labels["version"] != "v1" || e.ServiceAccount != spiffe || e.Locality != (model.Locality{Region: "r1", Zone: "z2", SubZone: "s3"}) {
		t.Errorf("endpoint of a known Pod: %+v", e)
	}
	// The topology labels istiod's registry adds to a Pod's: its cluster and locality.
	if e := eps[0]; e.Labels[model.LabelCluster] != model.RegistryClusterID || e.Labels[model.LabelRegion] != "r1" ||
		e.Labels[model.LabelZone] != "z2" || e.Labels[model.LabelSubzone] != "s3" {
		t.Errorf("endpoint of a known Pod: labels %v, want its cluster and locality's topology labels too", e.Labels)
	}
	if sas := h.agg.Service(host).ServiceAccounts; !slices.Equal(sas, []string{spiffe}) {
		t.Errorf("service accounts %q, want the Pod's", sas)
	}

	epKey := istioconfig.Key{Kind: model.KindEndpoint, Name: host, Namespace: "shop"}
	svcKey := istioconfig.Key{Kind: model.KindService, Name: host, Namespace: "shop"}
	endpointOnly := func(what string) {
		t.Helper()
		ch := h.next(t, what, func(ch registry.Change) bool { return has(ch, epKey) })
		if ch.Full || len(ch.Keys) != 1 {
			t.Fatalf("%s gave %+v, want an endpoint-only change of %s", what, ch, host)
		}
	}
	// The second Pod arrives, not ready yet, then ready; then the first one's version
	// changes (a rollout relabels it).
	p2 := pod("shop", "web-2", "sa-web", "10.1.0.2", map[string]string{"app": "web", "version": "v2"})
	p2.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := kube.CoreV1().Pods("shop").Create(ctx, p2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p2.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := kube.CoreV1().Pods("shop").UpdateStatus(ctx, p2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointOnly("late Pod")
	if eps := h.agg.Endpoints(host); len(eps) != 2 || eps[1].Labels["version"] != "v2" || eps[1].ServiceAccount != spiffe {
		t.Errorf("endpoints after the Pod arrived: %v", eps)
	}
	if _, err := kube.CoreV1().Pods("shop").Update(ctx, pod("shop", "web-1", "sa-web", "10.1.0.1", map[string]string{"app": "web", "version": "v3"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointOnly("Pod relabel")
	if e := h.agg.Endpoints(host)[0]; e.Labels["version"] != "v3" || e.Locality != (model.Locality{}) {
		t.Errorf("endpoint after its Pod was relabelled (no istio-locality any more): %+v", e)
	}
	// A deleted Pod leaves its endpoint as it was (istiod's endpoint cache) until its slice changes.
	if err := kube.CoreV1().Pods("shop").Delete(ctx, "web-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Pod under another account joins: the service's accounts change, a full push.
	p3 := pod("shop", "web-3", "sa-new", "10.1.0.3", map[string]string{"app": "web"})
	if _, err := kube.CoreV1().Pods("shop").Create(ctx, p3, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	es = es.DeepCopy()
	es.Endpoints[1].Addresses[0], es.Endpoints[1].TargetRef.Name = "10.1.0.3", "web-3"
	if _, err := kube.DiscoveryV1().EndpointSlices("shop").Update(ctx, es, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Pod and slice informers race: the slice may come first and wait for the Pod.
	ch := h.next(t, "slice update", func(ch registry.Change) bool { return has(ch, svcKey) })
	if !ch.Full || !has(ch, epKey) {
		t.Errorf("a new service account gave %+v, want a service change (full push)", ch)
	}
	want := []string{"spiffe://cluster.local/ns/shop/sa/sa-new", spiffe}
	if sas := h.agg.Service(host).ServiceAccounts; !slices.Equal(sas, want) {
		t.Errorf("service accounts %q, want %q", sas, want)
	}
	if eps := h.agg.Endpoints(host); len(eps) != 2 || eps[1].Address != "10.1.0.3" {
		t.Errorf("endpoints after the slice update: %v", eps)
	}
}

// TestControllerIstioKinds: each of Istio's six networking kinds read through istio.io/client-go
// lands in the config store under its kind.
func TestControllerIstioKinds(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "shop"} }
	objs := map[istioconfig.Kind]runtime.Object{
		istioconfig.KindServiceEntry: &istionet.ServiceEntry{ObjectMeta: meta("se"), Spec: networking.ServiceEntry{Hosts: []string{"x.example.com"},
			Resolution: networking.ServiceEntry_DNS, Ports: []*networking.ServicePort{{Name: "http", Number: 80, Protocol: "HTTP"}}}},
		istioconfig.KindWorkloadEntry:   &istionet.WorkloadEntry{ObjectMeta: meta("we"), Spec: networking.WorkloadEntry{Address: "10.0.0.9"}},
		istioconfig.KindVirtualService:  &istionet.VirtualService{ObjectMeta: meta("vs"), Spec: networking.VirtualService{Hosts: []string{"x.example.com"}}},
		istioconfig.KindDestinationRule: &istionet.DestinationRule{ObjectMeta: meta("dr"), Spec: networking.DestinationRule{Host: "x.example.com"}},
		istioconfig.KindSidecar:         &istionet.Sidecar{ObjectMeta: meta("sc"), Spec: networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}}},
		istioconfig.KindGateway: &istionet.Gateway{ObjectMeta: meta("gw"), Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"},
			Servers: []*networking.Server{{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*"}}}}},
	}
	// Created through the typed clients: the fake's object tracker files a Gateway given to
	// NewSimpleClientset under another version than the one its client lists.
	istio := istiofake.NewSimpleClientset()
	ctx := context.Background()
	n := istio.NetworkingV1()
	for _, err := range []error{
		create(n.ServiceEntries("shop").Create(ctx, objs[istioconfig.KindServiceEntry].(*istionet.ServiceEntry), metav1.CreateOptions{})),
		create(n.WorkloadEntries("shop").Create(ctx, objs[istioconfig.KindWorkloadEntry].(*istionet.WorkloadEntry), metav1.CreateOptions{})),
		create(n.VirtualServices("shop").Create(ctx, objs[istioconfig.KindVirtualService].(*istionet.VirtualService), metav1.CreateOptions{})),
		create(n.DestinationRules("shop").Create(ctx, objs[istioconfig.KindDestinationRule].(*istionet.DestinationRule), metav1.CreateOptions{})),
		create(n.Sidecars("shop").Create(ctx, objs[istioconfig.KindSidecar].(*istionet.Sidecar), metav1.CreateOptions{})),
		create(n.Gateways("shop").Create(ctx, objs[istioconfig.KindGateway].(*istionet.Gateway), metav1.CreateOptions{})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	h := start(t, kubefake.NewClientset(), istio)
	for kind, o := range objs {
		name := o.(metav1.Object).GetName()
		got, ok := h.store.Get(istioconfig.Key{Kind: kind, Name: name, Namespace: "shop"})
		if !ok || got.Source != "kubernetes" || got.Spec == nil {
			t.Errorf("%s shop/%s: store holds %+v, %v", kind, name, got, ok)
		}
	}
}

func create[T any](_ T, err error) error { return err }

// A resource the API server forbids the control plane to list (Nodes, with an RBAC from
// before it read them) keeps the registry waiting, as istiod waits; the log says what to grant.
func TestForbiddenListIsLogged(t *testing.T) {
	kube := kubefake.NewClientset()
	kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("RBAC: not granted"))
	})
	var logs syncbuf.Buffer
	c, err := New(Options{Kube: kube, Pods: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, config.NewMemory(config.MemoryOptions{})) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "forbids listing or watching") {
		if time.Now().After(deadline) {
			t.Fatalf("no log naming the forbidden resource; logs:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-c.Synced():
		t.Fatal("synced without the Nodes")
	default:
	}
	if !strings.Contains(logs.String(), "Node") {
		t.Errorf("the log does not name Nodes:\n%s", logs.String())
	}
}

// TestPodRelabelOutOfSelector: a Pod relabelled out of its Service's selector (the slice still
// lists it until the EndpointSlice controller catches up) and a selectorless Service's endpoint
// at a Pod's IP both carry the Pod's new labels at once.
func TestPodRelabelOutOfSelector(t *testing.T) {
	ctx := context.Background()
	es := slice("shop", "web", "web-a", "10.1.0.1")
	es.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "web-1", Namespace: "shop"}
	svc := service("shop", "web", corev1.ServicePort{Name: "http-80", Port: 80})
	svc.Spec.Selector = map[string]string{"app": "web"}
	manual := service("shop", "manual", corev1.ServicePort{Name: "http-80", Port: 80})
	mes := slice("shop", "manual", "manual-a", "10.1.0.1")
	kube := kubefake.NewClientset(svc, es, manual, mes, pod("shop", "web-1", "sa-web", "10.1.0.1", map[string]string{"app": "web", "version": "v1"}))
	h := startWith(t, Options{Kube: kube, Istio: istiofake.NewSimpleClientset(), Pods: true})
	manualHost := "manual.shop.svc.cluster.local"
	if eps := h.agg.Endpoints(manualHost); len(eps) != 1 || eps[0].Labels["version"] != "v1" {
		t.Fatalf("selectorless service's endpoint after sync: %v, want the Pod's labels (found by IP)", eps)
	}
	if _, err := kube.CoreV1().Pods("shop").Update(ctx, pod("shop", "web-1", "sa-web", "10.1.0.1", map[string]string{"app": "other", "version": "v2"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		web, man := h.agg.Endpoints(host), h.agg.Endpoints(manualHost)
		if len(web) == 1 && web[0].Labels["version"] == "v2" && len(man) == 1 && man[0].Labels["version"] == "v2" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the relabel: %s %v, %s %v; want both with version v2", host, web, manualHost, man)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
