package xds

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// triggerMetrics counts PushTriggered and PushSkipped by reason.
type triggerMetrics struct {
	NopMetrics
	mu              sync.Mutex
	pushed, skipped map[string]int
}

func (m *triggerMetrics) PushTriggered(r string, n int) {
	m.mu.Lock()
	m.pushed[r] += n
	m.mu.Unlock()
}

func (m *triggerMetrics) PushSkipped(r string, n int) {
	m.mu.Lock()
	m.skipped[r] += n
	m.mu.Unlock()
}

func (m *triggerMetrics) counts() (map[string]int, map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.pushed), maps.Clone(m.skipped)
}

func sidecarConfig(ns string, hosts ...string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: ns},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: hosts}}}}
}

// pushKeys publishes a snapshot of in with a request naming keys, as the control plane's
// pipeline does.
func (ts *testServer) pushKeys(in model.SnapshotInput, full bool, reason model.TriggerReason, keys ...istioconfig.Key) {
	ts.seq++
	req := &model.PushRequest{Full: full, Start: time.Now(), Reasons: map[model.TriggerReason]int{reason: 1},
		ConfigsUpdated: map[istioconfig.Key]struct{}{}}
	for _, k := range keys {
		req.ConfigsUpdated[k] = struct{}{}
	}
	ts.Push(model.NewSnapshot(ts.seq, in), req)
}

func clusterNames(t *testing.T, r *discoveryv3.DiscoveryResponse) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(decode(t, r, func() *clusterv3.Cluster { return &clusterv3.Cluster{} })))
}

func outboundHosts(names []string) []string {
	var out []string
	for _, n := range names {
		if p, err := gen.ParseClusterName(n); err == nil && p.Direction == gen.Outbound {
			out = append(out, p.Host)
		}
	}
	return out
}

// A proxy whose Sidecar does not import a changed service receives nothing for it, while a
// proxy that sees it is pushed; changing the Sidecar pushes only the proxies it applies to,
// with the new view. pilot_push_triggers counts the connections pushed, the skipped count
// the others.
func TestPushReachesOnlyScopesThatSeeTheChange(t *testing.T) {
	m := &triggerMetrics{pushed: map[string]int{}, skipped: map[string]int{}}
	opts := testOptions()
	opts.Metrics = m
	ts := startServer(t, opts)
	in := topology(6, 1) // svc-0..5 in ns-0, ns-1, ns-2
	in.Configs = []*istioconfig.Config{sidecarConfig("ns-0", "./*")}
	ts.push(in, true)

	scoped := dial(t, ts.addr, sidecarNode(t, "10.250.0.1", "ns-0", ""))
	mesh := dial(t, ts.addr, sidecarNode(t, "10.250.0.2", "ns-1", ""))
	var got [2][]string
	for i, c := range []*adsClient{scoped, mesh} {
		c.send(gen.ClusterType, "", "", nil, "")
		r := c.recv()
		got[i] = outboundHosts(clusterNames(t, r))
		c.ack(r)
	}
	if want := []string{"svc-0.ns-0.svc.cluster.local", "svc-3.ns-0.svc.cluster.local"}; !slices.Equal(got[0], want) {
		t.Errorf("ns-0 proxy (Sidecar ./*) has clusters of %v, want %v", got[0], want)
	}
	if len(got[1]) != 6 {
		t.Errorf("ns-1 proxy (no Sidecar) has clusters of %v, want all 6 services", got[1])
	}
	ts.settle(t)
	base, baseSkip := m.counts()

	// A new service in ns-1: only the unscoped proxy hears of it.
	host := "svc-new.ns-1.svc.cluster.local"
	in.Services = append(in.Services, &model.Service{Hostname: host, Namespace: "ns-1",
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}})
	ts.pushKeys(in, true, model.ReasonServiceUpdate, istioconfig.Key{Kind: model.KindService, Name: host, Namespace: "ns-1"})
	r := mesh.recv()
	if r.TypeUrl != gen.ClusterType || !slices.Contains(outboundHosts(clusterNames(t, r)), host) {
		t.Fatalf("ns-1 proxy got %s without %s", r.TypeUrl, host)
	}
	mesh.ack(r)
	ts.settle(t)
	scoped.barrier()
	pushed, skipped := m.counts()
	if d, s := pushed["service"]-base["service"], skipped["service"]-baseSkip["service"]; d != 1 || s != 1 {
		t.Errorf("service change: pushed %d, skipped %d connections; want 1 and 1", d, s)
	}

	// The Sidecar now also imports ns-1: the ns-0 proxy is pushed its wider view, the ns-1
	// proxy (whose view did not change) is not.
	in.Configs = []*istioconfig.Config{sidecarConfig("ns-0", "./*", "ns-1/*")}
	ts.pushKeys(in, true, model.ReasonConfigUpdate, istioconfig.Key{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "ns-0"})
	r = scoped.recv()
	hosts := outboundHosts(clusterNames(t, r))
	if r.TypeUrl != gen.ClusterType || !slices.Contains(hosts, host) || !slices.Contains(hosts, "svc-1.ns-1.svc.cluster.local") || slices.Contains(hosts, "svc-2.ns-2.svc.cluster.local") {
		t.Fatalf("ns-0 proxy after the Sidecar change has clusters of %v, want ns-0 and ns-1 only", hosts)
	}
	scoped.ack(r)
	ts.settle(t)
	mesh.barrier()
	pushed2, skipped2 := m.counts()
	if d, s := pushed2["config"]-pushed["config"], skipped2["config"]-skipped["config"]; d != 1 || s != 1 {
		t.Errorf("Sidecar change: pushed %d, skipped %d connections; want 1 and 1", d, s)
	}
}

// An endpoint change of a service outside a proxy's scope is not queued for it at all; one
// inside is pushed as EDS.
func TestEndpointPushSkipsProxiesOutsideTheScope(t *testing.T) {
	m := &triggerMetrics{pushed: map[string]int{}, skipped: map[string]int{}}
	opts := testOptions()
	opts.Metrics = m
	ts := startServer(t, opts)
	in := topology(6, 1)
	in.Configs = []*istioconfig.Config{sidecarConfig("ns-0", "./*"), sidecarConfig("ns-1", "./*")}
	ts.push(in, true)
	clients := []*adsClient{dial(t, ts.addr, sidecarNode(t, "10.250.0.1", "ns-0", "")), dial(t, ts.addr, sidecarNode(t, "10.250.0.2", "ns-1", ""))}
	for _, c := range clients {
		c.send(gen.ClusterType, "", "", nil, "")
		r := c.recv()
		c.ack(r)
		names := outboundHosts(clusterNames(t, r))
		var eds []string
		for _, h := range names {
			eds = append(eds, gen.ClusterName(gen.Outbound, 8080, "", h))
		}
		c.send(gen.EndpointType, "", "", eds, "")
		c.ack(c.recv())
	}
	ts.settle(t)
	base, baseSkip := m.counts()
	for i := range 3 {
		host := fmt.Sprintf("svc-%d.ns-0.svc.cluster.local", 3*(i%2))
		in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, fmt.Sprintf("10.99.0.%d", i+1)))
		ts.pushKeys(in, false, model.ReasonEndpointUpdate, istioconfig.Key{Kind: model.KindEndpoint, Name: host, Namespace: "ns-0"})
		r := clients[0].recv()
		if r.TypeUrl != gen.EndpointType || len(r.Resources) != 1 {
			t.Fatalf("ns-0 proxy got %s with %d resources, want one assignment", r.TypeUrl, len(r.Resources))
		}
		clients[0].ack(r)
	}
	ts.settle(t)
	clients[1].barrier()
	pushed, skipped := m.counts()
	if d, s := pushed["endpoint"]-base["endpoint"], skipped["endpoint"]-baseSkip["endpoint"]; d != 3 || s != 3 {
		t.Errorf("3 endpoint changes in ns-0: pushed %d, skipped %d; want 3 and 3", d, s)
	}
}

// Proxies with the same view share cached bytes; a proxy with another view gets its own.
func TestCacheClassFollowsTheView(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(6, 1)
	in.Configs = []*istioconfig.Config{sidecarConfig("ns-0", "./*")}
	ts.push(in, true)
	st := ts.state.Load()
	parse := func(ip, ns string) *model.Proxy {
		p, err := model.ParseProxy(sidecarNode(t, ip, ns, ""))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := parse("10.250.0.1", "ns-0"), parse("10.250.0.2", "ns-0"), parse("10.250.0.3", "ns-1")
	for _, typeURL := range gen.Types() {
		for _, wildcard := range []bool{true, false} {
			ka, kb, kc := ts.class(a, st, typeURL, wildcard), ts.class(b, st, typeURL, wildcard), ts.class(c, st, typeURL, wildcard)
			if ka != kb {
				t.Errorf("%s wildcard=%v: two ns-0 proxies have classes %q and %q", typeURL, wildcard, ka, kb)
			}
			shared := typeURL == gen.EndpointType && !wildcard
			if (ka == kc) != shared {
				t.Errorf("%s wildcard=%v: ns-0 class %q, ns-1 class %q; shared = %v, want %v", typeURL, wildcard, ka, kc, ka == kc, shared)
			}
		}
	}
}

// TestCacheClassNamesEveryOwnEndpointIP checks that a sidecar's CDS and LDS class names each of
// its addresses (INSTANCE_IPS) that is an endpoint's, not only the first: a proxy whose second
// address is an endpoint has inbound config of its own.
func TestCacheClassNamesEveryOwnEndpointIP(t *testing.T) {
	ts := startServer(t, testOptions())
	ts.push(topology(3, 1), true)
	st := ts.state.Load()
	parse := func(instanceIPs string) *model.Proxy {
		md, err := structpb.NewStruct(map[string]any{"NAMESPACE": "ns-0", "INSTANCE_IPS": instanceIPs})
		if err != nil {
			t.Fatal(err)
		}
		p, err := model.ParseProxy(&corev3.Node{Id: "sidecar~10.250.0.1~pod.ns-0~ns-0.svc.cluster.local", Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 10.0.1.1 is svc-1's endpoint; 10.250.0.1 and 10.250.0.2 are no endpoint's.
	plain, other, second := parse("10.250.0.1,10.250.0.2"), parse("10.250.0.2"), parse("10.250.0.1,10.0.1.1")
	for _, typeURL := range []string{gen.ClusterType, gen.ListenerType} {
		if a, b := ts.class(plain, st, typeURL, true), ts.class(other, st, typeURL, true); a != b {
			t.Errorf("%s: proxies at no endpoint's address have classes %q and %q", typeURL, a, b)
		}
		if a, b := ts.class(plain, st, typeURL, true), ts.class(second, st, typeURL, true); a == b {
			t.Errorf("%s: a proxy whose second address is an endpoint's shares class %q with one that has none", typeURL, a)
		}
	}
}
