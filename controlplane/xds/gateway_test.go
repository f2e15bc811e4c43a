package xds

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// gatewayConfigs is an ingress Gateway (HTTP on 80, TLS passthrough on 443) selecting routers
// labelled istio=ingressgateway, and a VirtualService binding app.example.com to backend.
func gatewayConfigs(backend string) []*istioconfig.Config {
	pass := &networking.Server{Port: &networking.Port{Number: 443, Name: "tls", Protocol: "TLS"}, Hosts: []string{"*/*.example.com"},
		Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH}}
	gw := &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{
		{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*/*.example.com"}}, pass}}
	d := &networking.Destination{Host: backend, Port: &networking.PortSelector{Number: 8080}}
	vs := &networking.VirtualService{Hosts: []string{"app.example.com"}, Gateways: []string{"istio-system/ingress"},
		Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: d}}}},
		Tls: []*networking.TLSRoute{{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"app.example.com"}}},
			Route: []*networking.RouteDestination{{Destination: d}}}}}
	return []*istioconfig.Config{
		{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: "ingress", Namespace: "istio-system"}, Spec: gw},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "app", Namespace: "ns-0"}, Spec: vs},
	}
}

// Routers (SotW and Delta, realistic NACK policy) get gateway listeners, the http.80 route and
// only the backend's cluster, never sidecar listeners; they follow a re-binding and the new
// backend's endpoint changes; sidecars on the same server keep their own config. Nothing is
// NACKed.
func TestFakeEnvoyRoutersConverge(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(30, 2)
	first, second := "svc-7.ns-1.svc.cluster.local", "svc-8.ns-2.svc.cluster.local"
	in.Configs = gatewayConfigs(first)
	ts.push(in, true)

	const routers, sidecars = 4, 2
	const n = routers + sidecars
	rec := &recorder{full: map[int]bool{}, ready: make(chan int, n), seen: map[int]chan struct{}{}}
	router := fakeenvoy.IdentityTemplate{Type: "router", Namespace: "istio-system", IPBase: "10.200.0.1", Labels: map[string]string{"istio": "ingressgateway"}}
	sidecar := fakeenvoy.IdentityTemplate{Type: "sidecar", Namespace: "ns-0", IPBase: "10.201.0.1"}
	cluster := func(h string) string { return gen.ClusterName(gen.Outbound, 8080, "", h) }
	routerWants := probe.Expectation{All: []probe.Predicate{
		{Op: probe.ListenerPresent, Resource: "0.0.0.0_80"},
		{Op: probe.ListenerPresent, Resource: "0.0.0.0_443"},
		{Op: probe.ListenerAbsent, Resource: gen.VirtualOutboundListener},
		{Op: probe.RouteTo, Resource: "http.80", Host: "app.example.com", Cluster: cluster(first)},
		{Op: probe.ClusterPresent, Resource: cluster(first)},
		{Op: probe.ClusterAbsent, Resource: cluster(second)},
		{Op: probe.EndpointCount, Resource: cluster(first), Count: 2},
	}}
	sidecarWants := probe.Expectation{All: []probe.Predicate{
		{Op: probe.ListenerPresent, Resource: gen.VirtualOutboundListener},
		{Op: probe.ListenerAbsent, Resource: "0.0.0.0_443"},
		{Op: probe.ClusterPresent, Resource: cluster(second)},
	}}
	views := make([]*viewHolder, n)
	runFakeEnvoys(t, ts, rec, n, 30*time.Second, func(i int) fakeEnvoy {
		node := router.Node(i)
		views[i] = &viewHolder{want: routerWants}
		if i >= routers {
			node = sidecar.Node(i)
			views[i].want = sidecarWants
		}
		return fakeEnvoy{node: node, delta: i%2 == 1, hooks: hookTee{rec, views[i]}}
	})
	for i, v := range views {
		if !v.holds() {
			t.Fatalf("client %d's first full config fails %v", i, v.want.All)
		}
	}

	// Re-bind the host to the second backend (a full push), then change its endpoints.
	step := func(name string, want probe.Expectation, clients []int, apply func()) {
		t.Helper()
		rec.mu.Lock()
		rec.want = &want
		chans := map[int]chan struct{}{}
		for _, i := range clients {
			chans[i] = make(chan struct{})
			rec.seen[i] = chans[i]
		}
		rec.mu.Unlock()
		apply()
		for i, ch := range chans {
			select {
			case <-ch:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: client %d (delta=%v) never observed %v", name, i, i%2 == 1, want.All)
			}
		}
	}
	allRouters := []int{0, 1, 2, 3}
	step("re-bind", probe.Expectation{All: []probe.Predicate{
		{Op: probe.RouteTo, Resource: "http.80", Host: "app.example.com", Cluster: cluster(second)},
		{Op: probe.ClusterPresent, Resource: cluster(second)},
		{Op: probe.ClusterAbsent, Resource: cluster(first)},
		{Op: probe.EndpointCount, Resource: cluster(second), Count: 2},
	}}, allRouters, func() {
		in.Configs = gatewayConfigs(second)
		ts.push(in, true)
	})
	step("endpoint", probe.Expectation{All: []probe.Predicate{
		{Op: probe.EndpointPresent, Resource: cluster(second), Address: "10.77.0.1", Port: 8080},
	}}, []int{0, 1, 2, 3, 4, 5}, func() {
		in.Endpoints[second] = append(in.Endpoints[second], endpoint(second, "10.77.0.1"))
		ts.push(in, false, second)
	})
	for i := routers; i < n; i++ {
		if !views[i].holds() {
			t.Errorf("sidecar %d lost its config", i)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.nacks != 0 {
		t.Errorf("%d NACKs: %v", rec.nacks, rec.errors)
	}
}

// viewHolder evaluates want against a client's view after every applied response (the view is
// only valid during the hook).
type viewHolder struct {
	want probe.Expectation
	mu   sync.Mutex
	ok   bool
}

func (h *viewHolder) Applied(_ probe.ClientInfo, _ probe.ResponseInfo, v probe.View) {
	ok := h.want.Holds(v)
	h.mu.Lock()
	h.ok = ok
	h.mu.Unlock()
}

func (h *viewHolder) holds() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ok
}

// hookTee calls the recorder, then the view holder.
type hookTee struct {
	*recorder
	views *viewHolder
}

func (t hookTee) Applied(c probe.ClientInfo, info probe.ResponseInfo, v probe.View) {
	t.views.Applied(c, info, v)
	t.recorder.Applied(c, info, v)
}

// TestRouterCacheClass: routers whose IPs are endpoints (a gateway pod is one of its Service)
// still share one cache class, which is never a sidecar's.
func TestRouterCacheClass(t *testing.T) {
	in := topology(3, 2) // endpoints 10.0.0.1, 10.0.0.2, 10.0.1.1, ...
	in.Configs = gatewayConfigs("svc-1.ns-1.svc.cluster.local")
	st := &pushState{snap: model.NewSnapshot(1, in)}
	proxy := func(typ model.NodeType, ip string) *model.Proxy {
		return &model.Proxy{Type: typ, IPAddresses: []string{ip}, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
	}
	var s Server
	for _, typeURL := range []string{gen.ClusterType, gen.ListenerType, gen.RouteType} {
		a, b := s.class(proxy(model.Router, "10.0.0.1"), st, typeURL, true), s.class(proxy(model.Router, "10.0.1.1"), st, typeURL, true)
		if a != b {
			t.Errorf("%s: routers at endpoint IPs have classes %q and %q", typeURL, a, b)
		}
		if side := s.class(proxy(model.SidecarProxy, "10.200.0.1"), st, typeURL, true); side == a {
			t.Errorf("%s: router and sidecar share class %q", typeURL, a)
		}
	}
}

// TestRouterClassIgnoresUnreadLabels: router replicas on different nodes and zones (labels
// istiod adds to every proxy) share their CDS, LDS and RDS bytes; a router a Gateway selects
// and one it does not never do.
func TestRouterClassIgnoresUnreadLabels(t *testing.T) {
	in := topology(3, 2)
	in.Configs = gatewayConfigs("svc-1.ns-1.svc.cluster.local")
	st := &pushState{snap: model.NewSnapshot(1, in)}
	router := func(app, node, zone string) *model.Proxy {
		return &model.Proxy{Type: model.Router, IPAddresses: []string{"10.200.0.1"}, Namespace: "istio-system", Labels: map[string]string{
			"istio": app, model.LabelHostname: node, model.LabelZone: zone, model.LabelCluster: "Kubernetes"}}
	}
	var s Server
	for _, typeURL := range []string{gen.ClusterType, gen.ListenerType, gen.RouteType} {
		a, b := s.class(router("ingressgateway", "node-1", "z1"), st, typeURL, true), s.class(router("ingressgateway", "node-2", "z2"), st, typeURL, true)
		if a != b {
			t.Errorf("%s: replicas on two nodes have classes %q and %q", typeURL, a, b)
		}
		if other := s.class(router("egressgateway", "node-1", "z1"), st, typeURL, true); other == a {
			t.Errorf("%s: a router the Gateway selects and one it does not share class %q", typeURL, a)
		}
	}
}

// TestSidecarIngressClassFollowsIP: a Sidecar's ingress listener binds to the proxy's IP and its
// 0.0.0.0 default endpoint sends to it, so two sidecars under it that are no endpoints do not
// share CDS or LDS bytes (nor one in interception mode NONE with one in REDIRECT); without
// ingress listeners they do.
func TestSidecarIngressClassFollowsIP(t *testing.T) {
	sidecar := func(ip, mode string) *model.Proxy {
		return &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{ip}, Namespace: "ns-1", InterceptionMode: mode}
	}
	var s Server
	in := topology(3, 2)
	st := &pushState{snap: model.NewSnapshot(1, in)}
	for _, typeURL := range []string{gen.ClusterType, gen.ListenerType} {
		if a, b := s.class(sidecar("100.64.0.1", "REDIRECT"), st, typeURL, true), s.class(sidecar("100.64.0.2", "REDIRECT"), st, typeURL, true); a != b {
			t.Errorf("%s without ingress listeners: classes %q and %q, want one", typeURL, a, b)
		}
	}
	in.Configs = []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "ns-1"},
		Spec: &networking.Sidecar{Ingress: []*networking.IstioIngressListener{{
			Port: &networking.SidecarPort{Number: 9080, Protocol: "HTTP", Name: "http"}, DefaultEndpoint: "0.0.0.0:8080"}, {
			Port: &networking.SidecarPort{Number: 9081, Protocol: "TCP", Name: "tcp"}, DefaultEndpoint: "127.0.0.1:8081", CaptureMode: networking.CaptureMode_NONE}}}}}
	st = &pushState{snap: model.NewSnapshot(1, in)}
	for _, typeURL := range []string{gen.ClusterType, gen.ListenerType} {
		a := s.class(sidecar("100.64.0.1", "REDIRECT"), st, typeURL, true)
		if b := s.class(sidecar("100.64.0.2", "REDIRECT"), st, typeURL, true); a == b {
			t.Errorf("%s with ingress listeners: sidecars at two IPs share class %q", typeURL, a)
		}
		if b := s.class(sidecar("100.64.0.1", "NONE"), st, typeURL, true); a == b {
			t.Errorf("%s with ingress listeners: REDIRECT and NONE share class %q", typeURL, a)
		}
		unpriv := sidecar("100.64.0.1", "REDIRECT")
		unpriv.Unprivileged = true
		if b := s.class(unpriv, st, typeURL, true); a == b {
			t.Errorf("%s with ingress listeners: a privileged and an unprivileged pod share class %q", typeURL, a)
		}
		agent := sidecar("100.64.0.1", "REDIRECT")
		agent.StaticPorts = []uint32{9080}
		if b := s.class(agent, st, typeURL, true); a == b {
			t.Errorf("%s with ingress listeners: proxies with other agent ports share class %q", typeURL, a)
		}
	}
	// What the class guards: the generated bytes differ.
	for _, typeURL := range []string{gen.ClusterType, gen.ListenerType} {
		x, err := gen.ForType(typeURL, nil).Generate(sidecar("100.64.0.1", "REDIRECT"), st.snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		y, err := gen.ForType(typeURL, nil).Generate(sidecar("100.64.0.2", "REDIRECT"), st.snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sameResources(t, x, y) {
			t.Errorf("%s: sidecars at two IPs under ingress listeners got the same resources; the class test above guards nothing", typeURL)
		}
	}
}

// TestSidecarListenerClassFollowsPeerAuthentication: two sidecars that are no endpoint see the
// same mesh, but a namespace PeerAuthentication makes their virtualInbound catch-all chains
// differ, so their listeners must not share a cache class; without any PeerAuthentication
// they do.
func TestSidecarListenerClassFollowsPeerAuthentication(t *testing.T) {
	in := topology(3, 2)
	proxy := func(ns string) *model.Proxy {
		return &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.200.0.1"}, Namespace: ns}
	}
	var s Server
	st := &pushState{snap: model.NewSnapshot(1, in)}
	if a, b := s.class(proxy("ns-1"), st, gen.ListenerType, true), s.class(proxy("ns-2"), st, gen.ListenerType, true); a != b {
		t.Errorf("without PeerAuthentication: classes %q and %q, want one", a, b)
	}
	in.Configs = []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindPeerAuthentication, Name: "default", Namespace: "ns-1"},
		Spec: &securityapi.PeerAuthentication{Mtls: &securityapi.PeerAuthentication_MutualTLS{Mode: securityapi.PeerAuthentication_MutualTLS_STRICT}}}}
	st = &pushState{snap: model.NewSnapshot(1, in)}
	if a, b := s.class(proxy("ns-1"), st, gen.ListenerType, true), s.class(proxy("ns-2"), st, gen.ListenerType, true); a == b {
		t.Errorf("ns-1 STRICT, ns-2 none: both sidecars have listener class %q", a)
	}
}

// TestLoopbackClassFollowsFamily: under an egress listener with captureMode NONE and no bind,
// an IPv6-only sidecar's listener binds ::1 and an IPv4 one's 127.0.0.1, endpoints or not, so
// they never share listener bytes.
func TestLoopbackClassFollowsFamily(t *testing.T) {
	in := topology(3, 2)
	in.Configs = []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "ns-1"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{
			Port: &networking.SidecarPort{Number: 8080, Protocol: "HTTP", Name: "http"}, CaptureMode: networking.CaptureMode_NONE, Hosts: []string{"*/*"}}}}}}
	st := &pushState{snap: model.NewSnapshot(1, in)}
	v4 := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"100.64.0.1"}, Namespace: "ns-1"}
	v6 := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"fd00::1"}, Namespace: "ns-1"}
	var s Server
	x, err := gen.ForType(gen.ListenerType, nil).Generate(v4, st.snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	y, err := gen.ForType(gen.ListenerType, nil).Generate(v6, st.snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sameResources(t, x, y) {
		t.Fatal("IPv4 and IPv6-only sidecars got the same listeners; the class check below guards nothing")
	}
	if a, b := s.class(v4, st, gen.ListenerType, true), s.class(v6, st, gen.ListenerType, true); a == b {
		t.Errorf("IPv4 and IPv6-only sidecars share listener class %q", a)
	}
	v4b := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"100.64.0.2"}, Namespace: "ns-1"}
	if a, b := s.class(v4, st, gen.ListenerType, true), s.class(v4b, st, gen.ListenerType, true); a != b {
		t.Errorf("two IPv4 sidecars: classes %q and %q, want one", a, b)
	}
	// An IPv6-only router's listeners are on :: and its DNS clusters resolve IPv6 only.
	r4 := &model.Proxy{Type: model.Router, IPAddresses: []string{"100.64.0.1"}, Namespace: "istio-system"}
	r6 := &model.Proxy{Type: model.Router, IPAddresses: []string{"fd00::1"}, Namespace: "istio-system"}
	for _, typeURL := range []string{gen.ListenerType, gen.ClusterType} {
		if a, b := s.class(r4, st, typeURL, true), s.class(r6, st, typeURL, true); a == b {
			t.Errorf("IPv4 and IPv6-only routers share %s class %q", typeURL, a)
		}
	}
}

// sameResources reports whether x and y are the same resources with the same marshalled bytes.
func sameResources(t *testing.T, x, y []gen.Resource) bool {
	t.Helper()
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		bx, err := gen.Marshal(x[i].Message)
		if err != nil {
			t.Fatal(err)
		}
		by, err := gen.Marshal(y[i].Message)
		if err != nil {
			t.Fatal(err)
		}
		if x[i].Name != y[i].Name || !bytes.Equal(bx, by) {
			return false
		}
	}
	return true
}

// ingressService is istio-system's ingress Service sending port 80 to target 8080 of an
// endpoint at ip: a router at ip listens on 8080 for a Gateway's port 80 server.
func ingressService(in *model.SnapshotInput, ip string) {
	host := "ingress.istio-system.svc.cluster.local"
	in.Services = append(in.Services, &model.Service{Hostname: host, Namespace: "istio-system",
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}})
	ep := endpoint(host, ip)
	ep.Ports = map[string]uint32{"http": 8080}
	in.Endpoints[host] = append(in.Endpoints[host], ep)
}

// TestRouterClassFollowsPortTranslation: two routers differing only in their IP, one at an
// endpoint of a service translating the Gateway's port 80 to 8080 and one not, get different
// LDS and RDS bytes and so different classes; two routers without translation share them.
func TestRouterClassFollowsPortTranslation(t *testing.T) {
	in := topology(3, 1)
	in.Configs = gatewayConfigs("svc-1.ns-1.svc.cluster.local")
	ingressService(&in, "10.9.0.1")
	st := &pushState{snap: model.NewSnapshot(1, in)}
	router := func(ip string) *model.Proxy {
		return &model.Proxy{Type: model.Router, IPAddresses: []string{ip}, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
	}
	var s Server
	for _, typeURL := range []string{gen.ListenerType, gen.RouteType} {
		if a, b := s.class(router("10.9.0.2"), st, typeURL, true), s.class(router("10.9.0.3"), st, typeURL, true); a != b {
			t.Errorf("%s: routers without translation have classes %q and %q", typeURL, a, b)
		}
		if a, b := s.class(router("10.9.0.1"), st, typeURL, true), s.class(router("10.9.0.2"), st, typeURL, true); a == b {
			t.Errorf("%s: a translating router and one that is not share class %q", typeURL, a)
		}
		// What the class guards: the generated bytes differ.
		var names []string
		if typeURL == gen.RouteType {
			names = []string{"http.80", "http.8080"}
		}
		x, err := gen.ForType(typeURL, router("10.9.0.1")).Generate(router("10.9.0.1"), st.snap, names)
		if err != nil {
			t.Fatal(err)
		}
		y, err := gen.ForType(typeURL, router("10.9.0.2")).Generate(router("10.9.0.2"), st.snap, names)
		if err != nil {
			t.Fatal(err)
		}
		if sameResources(t, x, y) {
			t.Errorf("%s: a translating router and one that is not got the same resources; the class test guards nothing", typeURL)
		}
	}
}

// TestRouterRepushedWhenItsPortsTranslate: an endpoint-only push that makes a router's
// address an endpoint of a service translating its Gateway's port 80 to 8080 re-pushes the
// router's listeners, now on 8080.
func TestRouterRepushedWhenItsPortsTranslate(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(3, 1)
	in.Configs = gatewayConfigs("svc-1.ns-1.svc.cluster.local")
	in.Services = append(in.Services, &model.Service{Hostname: "ingress.istio-system.svc.cluster.local", Namespace: "istio-system",
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}})
	// The router's workload, already an endpoint of a service of no Gateway port: the push
	// below changes none of its labels.
	workloadAt := func(host string) *model.Endpoint {
		ep := endpoint(host, "10.9.0.1")
		ep.Labels = map[string]string{"istio": "ingressgateway"}
		return ep
	}
	in.Services = append(in.Services, &model.Service{Hostname: "metrics.istio-system.svc.cluster.local", Namespace: "istio-system",
		Ports: []model.Port{{Name: "http-metrics", Number: 15020, Protocol: model.ProtocolHTTP}}})
	in.Endpoints["metrics.istio-system.svc.cluster.local"] = []*model.Endpoint{workloadAt("metrics.istio-system.svc.cluster.local")}
	ts.push(in, true)
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr, &corev3.Node{Id: "router~10.9.0.1~ingress-1.istio-system~istio-system.svc.cluster.local", Metadata: md})
	c.send(gen.ListenerType, "", "", nil, "")
	r := c.recv()
	ls := decode(t, r, func() *listenerv3.Listener { return &listenerv3.Listener{} })
	if _, ok := ls["0.0.0.0_80"]; !ok {
		t.Fatalf("before the ingress Service has an endpoint at the router: listeners %v, want 0.0.0.0_80", slices.Collect(maps.Keys(ls)))
	}
	c.ack(r)
	ts.settle(t)

	in.Endpoints = maps.Clone(in.Endpoints)
	ep := workloadAt("ingress.istio-system.svc.cluster.local")
	ep.Ports = map[string]uint32{"http": 8080}
	in.Endpoints["ingress.istio-system.svc.cluster.local"] = []*model.Endpoint{ep}
	ts.push(in, false, "ingress.istio-system.svc.cluster.local")
	r = c.recv()
	if r.TypeUrl != gen.ListenerType {
		t.Fatalf("after the endpoint push: got %s, want listeners", r.TypeUrl)
	}
	ls = decode(t, r, func() *listenerv3.Listener { return &listenerv3.Listener{} })
	if _, ok := ls["0.0.0.0_8080"]; !ok {
		t.Fatalf("after the ingress Service got an endpoint at the router: listeners %v, want 0.0.0.0_8080", slices.Collect(maps.Keys(ls)))
	}
	c.ack(r)
	ts.settle(t)
}
