package fakeenvoy

import (
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// deltaState is what a Delta client holds of one cluster and its assignment, read in Applied.
type deltaState struct {
	mu      sync.Mutex
	cluster bool // c2 in effect (warmed)
	claAddr string
	claSub  bool
}

func (d *deltaState) read(c probe.ClientInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, d.cluster = c.State.Effective(resource.ClusterType, "c2").(*clusterv3.Cluster)
	d.claAddr = ""
	if cla, ok := c.State.Resource(resource.EndpointType, "c2").(*endpointv3.ClusterLoadAssignment); ok {
		d.claAddr = cla.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress()
	}
	d.claSub = c.State.Subscribed(resource.EndpointType, "c2")
}

func (d *deltaState) wait(t *testing.T, what string, ok func(d *deltaState) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		d.mu.Lock()
		good := ok(d)
		d.mu.Unlock()
		if good {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t.Fatalf("%s: c2 in effect %v, its assignment address %q, subscribed %v", what, d.cluster, d.claAddr, d.claSub)
}

// TestDeltaDeleteRecreateOnGoControlPlane: against go-control-plane's Delta server, a cluster
// deleted (removed_resources) is dropped with its EDS subscription, and the same name created
// again with other endpoints is subscribed again, warmed and in effect with the new endpoints.
func TestDeltaDeleteRecreateOnGoControlPlane(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	st := &deltaState{}
	h.onApplied = func(c probe.ClientInfo, _ probe.ResponseInfo, _ probe.View) { st.read(c) }
	c := newTestClient(t, ClientConfig{Delta: true, Nack: policy.Nack{Realistic: true}}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")
	st.wait(t, "v1", func(d *deltaState) bool { return d.cluster && d.claAddr == "10.1.0.2" && d.claSub })

	res := fetest.BaseResources(t)
	res[resource.ClusterType] = []types.Resource{fetest.EDSCluster("c1")}
	res[resource.EndpointType] = []types.Resource{fetest.CLA("c1", "10.1.0.1", 8080)}
	srv.Set(t, c.NodeID(), "v2", res)
	st.wait(t, "c2 deleted", func(d *deltaState) bool { return !d.cluster && !d.claSub })

	res = fetest.BaseResources(t)
	res[resource.EndpointType] = []types.Resource{fetest.CLA("c1", "10.1.0.1", 8080), fetest.CLA("c2", "10.1.0.9", 8080)}
	srv.Set(t, c.NodeID(), "v3", res)
	st.wait(t, "c2 recreated", func(d *deltaState) bool { return d.cluster && d.claAddr == "10.1.0.9" && d.claSub })
}

// TestDeltaChangedWhileAwayOnGoControlPlane: a cluster deleted while the client was
// disconnected is gone, with its EDS subscription, once the client restated its
// initial_resource_versions on a new stream.
func TestDeltaChangedWhileAwayOnGoControlPlane(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	st := &deltaState{}
	h.onApplied = func(c probe.ClientInfo, _ probe.ResponseInfo, _ probe.View) { st.read(c) }
	c := newTestClient(t, ClientConfig{Delta: true, Nack: policy.Nack{Realistic: true}}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	stop := runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")
	st.wait(t, "v1", func(d *deltaState) bool { return d.cluster && d.claAddr == "10.1.0.2" && d.claSub })
	stop()
	res := fetest.BaseResources(t)
	res[resource.ClusterType] = []types.Resource{fetest.EDSCluster("c1")}
	res[resource.EndpointType] = []types.Resource{fetest.CLA("c1", "10.1.0.7", 8080)}
	srv.Set(t, c.NodeID(), "v2", res)
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "resynced")
	st.wait(t, "c2 deleted while away", func(d *deltaState) bool { return !d.cluster && !d.claSub })
}

// TestDeltaChangedClusterWarmsOnGoControlPlane: go-control-plane's Delta server sends a
// changed cluster without its (unchanged) assignment, and Envoy's Delta mux asks for nothing
// new (the name is already subscribed): the changed cluster warms until initial_fetch_timeout,
// and the copy held before stays in effect meanwhile.
func TestDeltaChangedClusterWarmsOnGoControlPlane(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	var mu sync.Mutex
	var timeout string
	effective := map[string]string{} // c2's connect timeout in effect, by response
	h.onApplied = func(c probe.ClientInfo, r probe.ResponseInfo, _ probe.View) {
		mu.Lock()
		defer mu.Unlock()
		if cl, ok := c.State.Effective(resource.ClusterType, "c2").(*clusterv3.Cluster); ok {
			timeout = cl.GetConnectTimeout().AsDuration().String()
		}
		effective[r.Nonce] = timeout
	}
	c := newTestClient(t, ClientConfig{Delta: true, Nack: policy.Nack{Realistic: true}, InitialFetchTimeout: 300 * time.Millisecond, SourceFetchTimeout: 300 * time.Millisecond}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")

	res := fetest.BaseResources(t)
	changed := fetest.EDSCluster("c2")
	changed.ConnectTimeout = durationpb.New(2 * time.Second)
	res[resource.ClusterType] = []types.Resource{fetest.EDSCluster("c1"), changed}
	srv.Set(t, c.NodeID(), "v2", res)
	start := time.Now()
	h.waitEvent(t, "warming-timeout envoy.config.endpoint.v3.ClusterLoadAssignment") // the warming clusters' wait
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("the changed cluster stopped warming after %s, before initial_fetch_timeout", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(effective) < 5 {
		t.Errorf("%d responses applied, want the 4 of the initial config and the changed cluster's", len(effective))
	}
	for n, e := range effective {
		if e == "2s" { // "" before c2 first warmed
			t.Errorf("after response %s the changed c2 was in effect while warming", n)
		}
	}
}
