package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
)

// These tests hold the registry to what istiod's Kubernetes controller makes of the same
// objects (pilot/pkg/serviceregistry/kube/controller), applying events synchronously.

// recorder is a Controller fed directly, with its notifications.
type recorder struct {
	c       *Controller
	updates []registry.Update
}

func newRecorder(t *testing.T, pods bool) *recorder {
	t.Helper()
	c, err := New(Options{Kube: kubefake.NewClientset(), Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{c: c}
	c.Subscribe(func(u registry.Update) { r.updates = append(r.updates, u) })
	return r
}

// apply applies objects (a *deleted wrapper deletes) and returns the updates they caused.
func (r *recorder) apply(objs ...any) []registry.Update {
	n := len(r.updates)
	for _, o := range objs {
		if d, ok := o.(deleted); ok {
			r.c.handle(event{old: d.obj}, nil)
		} else {
			r.c.handle(event{obj: o}, nil)
		}
	}
	return r.updates[n:]
}

type deleted struct{ obj any }

func (r *recorder) eps(host string) []*model.Endpoint {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.endpoints[host]
}

func (r *recorder) svc(host string) *model.Service {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	for _, s := range r.c.services {
		if s.Hostname == host {
			return s
		}
	}
	return nil
}

// describe is an endpoint as a line: address, ports, health, version label, locality.
func describe(eps []*model.Endpoint) []string {
	var out []string
	for _, e := range eps {
		var ports []string
		for _, n := range slices.Sorted(maps.Keys(e.Ports)) {
			ports = append(ports, fmt.Sprintf("%s:%d", n, e.Ports[n]))
		}
		s := e.Address + " " + strings.Join(ports, ",")
		if !e.OnlyListedPorts {
			s += " serves-unlisted-ports" // a slice's endpoint serves only the ports it lists
		}
		if e.Health == model.Unhealthy {
			s += " unhealthy"
		}
		if v, ok := e.Labels["version"]; ok {
			s += " version=" + v
		}
		if l := e.Locality.String(); l != "" {
			s += " loc=" + l
		}
		out = append(out, s)
	}
	return out
}

func sliceWith(ns, svc, name string, ports map[string]int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
	}
	for _, n := range slices.Sorted(maps.Keys(ports)) {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: new(n), Port: new(ports[n])})
	}
	return es
}

func entry(pod string, cond discoveryv1.EndpointConditions, addrs ...string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: addrs, Conditions: cond, Zone: new("slice-zone")}
	if pod != "" {
		e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "shop"}
	}
	return e
}

var ready = discoveryv1.EndpointConditions{Ready: new(true)}

func TestIstiodEndpoints(t *testing.T) {
	web := service("shop", "web", corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Name: "grpc", Port: 9090})
	web.Spec.Selector = map[string]string{"app": "web"}
	http := map[string]int32{"http": 8080}
	for _, tc := range []struct {
		name string
		pods bool
		objs []any
		want []string
	}{
		{name: "several slices with different ports: an address serves the ports of each",
			objs: []any{web, sliceWith("shop", "web", "web-a", http, entry("", ready, "10.1.5.1")),
				sliceWith("shop", "web", "web-b", map[string]int32{"grpc": 9191}, entry("", ready, "10.1.5.1"), entry("", ready, "10.1.5.2"))},
			want: []string{"10.1.5.1 grpc:9191,http:8080", "10.1.5.2 grpc:9191"}},
		{name: "the same port in two slices: the first slice's",
			objs: []any{web, sliceWith("shop", "web", "web-a", http, entry("", ready, "10.1.5.1")),
				sliceWith("shop", "web", "web-b", map[string]int32{"http": 9999}, entry("", ready, "10.1.5.1"))},
			want: []string{"10.1.5.1 http:8080"}},
		{name: "not ready: unhealthy unless terminating (unset counts as terminating)",
			objs: []any{web, sliceWith("shop", "web", "web-a", http,
				entry("", ready, "10.0.0.1"), entry("", discoveryv1.EndpointConditions{}, "10.0.0.2"),
				entry("", discoveryv1.EndpointConditions{Ready: new(false)}, "10.0.0.3"),
				entry("", discoveryv1.EndpointConditions{Ready: new(false), Terminating: new(false)}, "10.0.0.4"),
				entry("", discoveryv1.EndpointConditions{Ready: new(false), Serving: new(true), Terminating: new(true)}, "10.0.0.5"))},
			want: []string{"10.0.0.1 http:8080", "10.0.0.2 http:8080", "10.0.0.4 http:8080 unhealthy"}},
		{name: "an entry with several addresses: one endpoint each",
			objs: []any{web, sliceWith("shop", "web", "web-a", http, entry("", ready, "10.1.3.5", "10.1.3.6"))},
			want: []string{"10.1.3.5 http:8080", "10.1.3.6 http:8080"}},
		{name: "an FQDN slice gives nothing",
			objs: []any{web, func() any {
				es := sliceWith("shop", "web", "web-f", http, entry("", ready, "backend.example.com"))
				es.AddressType = discoveryv1.AddressTypeFQDN
				return es
			}(), sliceWith("shop", "web", "web-a", http, entry("", ready, "10.1.10.1"))},
			want: []string{"10.1.10.1 http:8080"}},
		{name: "no Pod, no locality (not the slice's zone)", pods: true,
			objs: []any{web, sliceWith("shop", "web", "web-a", http, entry("", ready, "10.0.0.1"))},
			want: []string{"10.0.0.1 http:8080"}},
		{name: "a Pod found by IP for an entry without targetRef", pods: true,
			objs: []any{pod("shop", "manual", "sa", "10.0.0.1", map[string]string{"version": "v1"}),
				web, sliceWith("shop", "web", "web-a", http, entry("", ready, "10.0.0.1"))},
			want: []string{"10.0.0.1 http:8080 version=v1"}},
		{name: "an entry whose Pod is not known yet is left out", pods: true,
			objs: []any{web, pod("shop", "p1", "sa", "10.0.0.1", map[string]string{"version": "v1", LocalityLabel: "r.z"}),
				sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1"), entry("p2", ready, "10.0.0.2"))},
			want: []string{"10.0.0.1 http:8080 version=v1 loc=r/z"}},
		{name: "locality from the Pod's Node", pods: true,
			objs: []any{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{NodeRegionLabel: "r9", NodeZoneLabel: "z9", NodeSubzoneLabel: "s9"}}},
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{nodeRegionLabelBeta: "r8", nodeZoneLabelBeta: "z8"}}},
				func() any { p := pod("shop", "p1", "sa", "10.0.0.1", nil); p.Spec.NodeName = "n1"; return p }(),
				func() any { p := pod("shop", "p2", "sa", "10.0.0.2", nil); p.Spec.NodeName = "n2"; return p }(),
				func() any { p := pod("shop", "p3", "sa", "10.0.0.3", nil); p.Spec.NodeName = "unknown"; return p }(),
				web, sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1"), entry("p2", ready, "10.0.0.2"), entry("p3", ready, "10.0.0.3"))},
			want: []string{"10.0.0.1 http:8080 loc=r9/z9/s9", "10.0.0.2 http:8080 loc=r8/z8", "10.0.0.3 http:8080"}},
		{name: "locality labels as istiod reads them", pods: true,
			objs: []any{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{NodeRegionLabel: "r9", NodeZoneLabel: "z9", NodeSubzoneLabel: "s9"}}},
				// topology.istio.io/locality first, over the Node's.
				func() any {
					p := pod("shop", "p1", "sa", "10.0.0.1", map[string]string{"topology.istio.io/locality": "north1.north1-c.rack7"})
					p.Spec.NodeName = "n1"
					return p
				}(),
				// Parts past the third are dropped.
				pod("shop", "p2", "sa", "10.0.0.2", map[string]string{LocalityLabel: "north2.north2-a.rack8.shelf3"}),
				// An empty topology.istio.io/locality hides istio-locality: the Node's.
				func() any {
					p := pod("shop", "p3", "sa", "10.0.0.3", map[string]string{"topology.istio.io/locality": "", LocalityLabel: "north3.north3-b"})
					p.Spec.NodeName = "n1"
					return p
				}(),
				web, sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1"), entry("p2", ready, "10.0.0.2"), entry("p3", ready, "10.0.0.3"))},
			want: []string{"10.0.0.1 http:8080 loc=north1/north1-c/rack7", "10.0.0.2 http:8080 loc=north2/north2-a/rack8", "10.0.0.3 http:8080 loc=r9/z9/s9"}},
		{name: "then it arrives ready", pods: true,
			objs: []any{web, sliceWith("shop", "web", "web-a", http, entry("p2", ready, "10.0.0.2")),
				pod("shop", "p2", "sa", "10.0.0.2", map[string]string{"version": "v2"})},
			want: []string{"10.0.0.2 http:8080 version=v2"}},
		{name: "a deleted Pod leaves its endpoint as it was", pods: true,
			objs: []any{web, pod("shop", "p1", "sa", "10.0.0.1", map[string]string{"version": "v1"}),
				sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1")),
				deleted{pod("shop", "p1", "sa", "10.0.0.1", nil)}},
			want: []string{"10.0.0.1 http:8080 version=v1"}},
		{name: "until its slice changes", pods: true,
			objs: []any{web, pod("shop", "p1", "sa", "10.0.0.1", map[string]string{"version": "v1"}),
				sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1")),
				deleted{pod("shop", "p1", "sa", "10.0.0.1", nil)},
				sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1"))},
			want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, tc.pods)
			r.apply(tc.objs...)
			if got := describe(r.eps(host)); !slices.Equal(got, tc.want) {
				t.Errorf("endpoints\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestIstiodPodLifecycle: the notifications of Pod events, and no state left behind.
func TestIstiodPodLifecycle(t *testing.T) {
	web := service("shop", "web", corev1.ServicePort{Name: "http", Port: 80})
	http := map[string]int32{"http": 8080}
	r := newRecorder(t, true)
	r.apply(web, pod("shop", "p1", "sa", "10.0.0.1", nil), sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1")))
	if us := r.apply(deleted{pod("shop", "p1", "sa", "10.0.0.1", nil)}); len(us) != 0 {
		t.Errorf("a Pod deletion notified %+v; istiod keeps the endpoint and pushes nothing", us)
	}
	// 100 Pods deleted before the slice drops them (a force delete): nothing must stay behind.
	for i := range 100 {
		name, ip := fmt.Sprintf("q%d", i), fmt.Sprintf("10.2.0.%d", i)
		r.apply(pod("shop", name, "sa", ip, nil), sliceWith("shop", "web", "web-a", http, entry(name, ready, ip)),
			deleted{pod("shop", name, "sa", ip, nil)}, sliceWith("shop", "web", "web-a", http))
	}
	// And 100 slices that waited for a Pod that never came, then dropped it.
	for i := range 100 {
		name, ip := fmt.Sprintf("w%d", i), fmt.Sprintf("10.3.0.%d", i)
		r.apply(sliceWith("shop", "web", "web-a", http, entry(name, ready, ip)), sliceWith("shop", "web", "web-a", http))
	}
	c := r.c
	if len(c.pods) != 0 || len(c.podsByIP) != 0 || len(c.ipOfPod) != 0 || len(c.waiting) != 0 || len(c.waitsOn) != 0 {
		t.Errorf("state left: pods %d, by IP %d, IPs %d, waiting %d/%d", len(c.pods), len(c.podsByIP), len(c.ipOfPod), len(c.waiting), len(c.waitsOn))
	}
	r.apply(deleted{sliceWith("shop", "web", "web-a", http)}, deleted{web})
	if len(c.slicesOf) != 0 || len(c.sliceEps) != 0 || len(c.sliceSvc) != 0 || len(c.services) != 0 || len(c.epAccounts) != 0 {
		t.Errorf("state left: slices %d/%d/%d, services %d, accounts %d", len(c.slicesOf), len(c.sliceEps), len(c.sliceSvc), len(c.services), len(c.epAccounts))
	}
}

// TestIstiodServiceAccounts: a service's accounts are its Pods' and its annotations'; a
// change of them is a service change (istiod: a full push).
func TestIstiodServiceAccounts(t *testing.T) {
	web := service("shop", "web", corev1.ServicePort{Name: "http", Port: 80})
	web.Annotations = map[string]string{AnnotationKubernetesServiceAccounts: "db-sa", AnnotationCanonicalServiceAccounts: "spiffe://other/ns/x/sa/y"}
	http := map[string]int32{"http": 8080}
	id := func(sa string) string { return "spiffe://cluster.local/ns/shop/sa/" + sa }
	for _, tc := range []struct {
		name        string
		objs        []any
		want        []string
		serviceSent bool
	}{
		{"annotations only", nil, []string{"spiffe://cluster.local/ns/shop/sa/db-sa", "spiffe://other/ns/x/sa/y"}, false},
		{"a Pod's account joins", []any{pod("shop", "p1", "a", "10.0.0.1", nil), sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1"))},
			[]string{id("a"), id("db-sa"), "spiffe://other/ns/x/sa/y"}, true},
		{"a second Pod of the same account: endpoints only", []any{pod("shop", "p1", "a", "10.0.0.1", nil), pod("shop", "p2", "a", "10.0.0.2", nil),
			sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1")), sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1"), entry("p2", ready, "10.0.0.2"))},
			[]string{id("a"), id("db-sa"), "spiffe://other/ns/x/sa/y"}, false},
		{"no endpoints left: istiod keeps the accounts", []any{pod("shop", "p1", "a", "10.0.0.1", nil),
			sliceWith("shop", "web", "web-a", http, entry("p1", ready, "10.0.0.1")), sliceWith("shop", "web", "web-a", http)},
			[]string{id("a"), id("db-sa"), "spiffe://other/ns/x/sa/y"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, true)
			r.apply(web)
			var us []registry.Update
			for _, o := range tc.objs {
				us = r.apply(o)
			}
			if got := r.svc(host).ServiceAccounts; !slices.Equal(got, tc.want) {
				t.Errorf("service accounts\n got %q\nwant %q", got, tc.want)
			}
			sent := false
			for _, u := range us {
				sent = sent || u.Services[host] != nil
			}
			if tc.objs != nil && sent != tc.serviceSent {
				t.Errorf("last object's updates %+v: service sent %v, want %v", us, sent, tc.serviceSent)
			}
		})
	}
}

// TestIstiodServiceConversion: ports' protocols as Istio's ConvertProtocol; one address for
// a dual-stack Service (ISTIO_DUAL_STACK off).
func TestIstiodServiceConversion(t *testing.T) {
	for _, tc := range []struct {
		name string
		port corev1.ServicePort
		want model.Protocol
	}{
		{"UDP is not served", corev1.ServicePort{Name: "http-dns", Protocol: corev1.ProtocolUDP, Port: 53}, model.ProtocolUDP},
		{"SCTP: the name decides", corev1.ServicePort{Name: "http-sctp", Protocol: corev1.ProtocolSCTP, Port: 7010}, model.ProtocolHTTP},
		{"unknown appProtocol wins over the name", corev1.ServicePort{Name: "http-odd", AppProtocol: new("foo"), Port: 7072}, model.ProtocolUnknown},
		{"kubernetes.io/h2c", corev1.ServicePort{Name: "x", AppProtocol: new("kubernetes.io/h2c"), Port: 1}, model.ProtocolHTTP2},
		{"kubernetes.io/ws", corev1.ServicePort{Name: "x", AppProtocol: new("kubernetes.io/ws"), Port: 1}, model.ProtocolHTTP},
		{"kubernetes.io/wss", corev1.ServicePort{Name: "x", AppProtocol: new("kubernetes.io/wss"), Port: 1}, model.ProtocolHTTPS},
		{"appProtocol case-insensitive", corev1.ServicePort{Name: "x", AppProtocol: new("HTTP"), Port: 1}, model.ProtocolHTTP},
		{"grpc-web name prefix", corev1.ServicePort{Name: "grpc-web-x", Port: 7001}, model.ProtocolGRPCWeb},
		{"SMTP port unnamed", corev1.ServicePort{Name: "smtp", Port: 25}, model.ProtocolTCP},
		{"DNS port over TCP", corev1.ServicePort{Name: "dns", Port: 53}, model.ProtocolTCP},
		{"MySQL port", corev1.ServicePort{Name: "mysqlport", Port: 3306}, model.ProtocolTCP},
		{"MongoDB port with an unknown appProtocol", corev1.ServicePort{Name: "db", AppProtocol: new("foo"), Port: 27017}, model.ProtocolTCP},
		{"MongoDB by name", corev1.ServicePort{Name: "mongo-db", Port: 27017}, model.ProtocolMongo},
		{"a known name on a well-known port", corev1.ServicePort{Name: "http", Port: 25}, model.ProtocolHTTP},
		{"upper-case name", corev1.ServicePort{Name: "HTTP-upper", Port: 7073}, model.ProtocolHTTP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConvertService(service("ns", "s", tc.port), "h").Ports[0].Protocol; got != tc.want {
				t.Errorf("protocol %s, want %s", got, tc.want)
			}
		})
	}
	ds := service("ns", "ds", corev1.ServicePort{Name: "http", Port: 80})
	ds.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::23"}
	if got := ConvertService(ds, "h").Addresses; !slices.Equal(got, []string{"10.96.0.10"}) {
		t.Errorf("dual-stack Service addresses %q, want only its ClusterIP", got)
	}
}

// TestSlimPods: the Pod cache keeps what the registry reads and no more.
func TestSlimPods(t *testing.T) {
	p := pod("shop", "p", "sa", "10.0.0.1", map[string]string{"app": "x"})
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	p.Annotations = map[string]string{"big": strings.Repeat("x", 1000)}
	p.Spec.NodeName = "n1"
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "x", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, Message: "m"})
	o, err := slim(p)
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*corev1.Pod)
	if got.ManagedFields != nil || got.Annotations != nil || got.Spec.Containers != nil || len(got.Status.Conditions) != 1 {
		t.Errorf("slim Pod keeps %+v", got)
	}
	if got.Name != "p" || got.Labels["app"] != "x" || got.Spec.ServiceAccountName != "sa" || got.Spec.NodeName != "n1" || !podServing(got) {
		t.Errorf("slim Pod lost what the registry reads: %+v", got)
	}
	s := service("ns", "s")
	s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	if o, _ := slim(s); o.(*corev1.Service).ManagedFields != nil || s.ManagedFields == nil {
		t.Error("slim Service keeps its managed fields, or changed the informer's object")
	}
}
