package xds

import (
	"maps"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// A proxy's labels are its workload's in the registry, not its node's (istiod's
// SetWorkloadLabels): a sidecar whose node says app a but whose endpoint says app x is not
// selected by a policy for app a, while a sidecar with the same node labels and no workload is;
// an endpoint-only change of the workload's labels re-pushes the sidecar's listeners with the
// new selection, and back.
func TestWorkloadLabelsSelectAndRepush(t *testing.T) {
	const rbac = "envoy.filters.http.rbac"
	ts := startServer(t, testOptions())
	in := topology(3, 1)
	in.Configs = []*istioconfig.Config{authzPolicy("ns-0", "deny-all", "a")}
	ts.push(in, true)
	const host = "svc-0.ns-0.svc.cluster.local" // its endpoint is 10.0.0.1, labelled app x

	// No workload at its address: the node's labels select it.
	bare := dial(t, ts.addr, labeledNode(t, "10.250.0.9", "ns-0", "a"))
	bare.send(gen.ListenerType, "", "", nil, "")
	if n := httpFilterCount(t, bare.recv(), rbac); n == 0 {
		t.Fatalf("sidecar without a workload, labelled app a by its node: no %s filter", rbac)
	}

	wl := dial(t, ts.addr, labeledNode(t, "10.0.0.1", "ns-0", "a"))
	wl.send(gen.ListenerType, "", "", nil, "")
	r := wl.recv()
	if n := httpFilterCount(t, r, rbac); n != 0 {
		t.Fatalf("sidecar whose workload is app x has %d %s filters (its node's labels were used)", n, rbac)
	}
	wl.ack(r)
	ts.settle(t)

	relabel := func(app string) {
		eps := maps.Clone(in.Endpoints)
		ep := *eps[host][0]
		ep.Labels = map[string]string{"app": app}
		eps[host] = []*model.Endpoint{&ep}
		in.Endpoints = eps
		ts.push(in, false, host)
	}
	relabel("a")
	r = wl.recv()
	if r.TypeUrl != gen.ListenerType || httpFilterCount(t, r, rbac) == 0 {
		t.Fatalf("after its workload became app a: got %s without %s filters", r.TypeUrl, rbac)
	}
	wl.ack(r)
	ts.settle(t)

	relabel("x")
	r = wl.recv()
	if r.TypeUrl != gen.ListenerType || httpFilterCount(t, r, rbac) != 0 {
		t.Fatalf("after its workload went back to app x: got %s with %s filters", r.TypeUrl, rbac)
	}
	wl.ack(r)
	ts.settle(t)

	// The same change in a full push scoped to the service's endpoints (as the aggregate
	// registry sends for some entries): still everything for the relabelled proxy.
	eps := maps.Clone(in.Endpoints)
	ep := *eps[host][0]
	ep.Labels = map[string]string{"app": "a"}
	eps[host] = []*model.Endpoint{&ep}
	in.Endpoints = eps
	ts.seq++
	ts.Push(model.NewSnapshot(ts.seq, in), &model.PushRequest{Full: true, Start: time.Now(),
		ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: host}: {}},
		Reasons:        map[model.TriggerReason]int{model.ReasonEndpointUpdate: 1}})
	r = wl.recv()
	if r.TypeUrl != gen.ListenerType || httpFilterCount(t, r, rbac) == 0 {
		t.Fatalf("after a scoped full push made its workload app a: got %s without %s filters", r.TypeUrl, rbac)
	}
	wl.ack(r)
	ts.settle(t)
	bare.barrier()
}
