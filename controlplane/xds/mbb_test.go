package xds

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/xdslab/xdslab/controlplane/gen"
)

// turnMetrics signals each finished push turn.
type turnMetrics struct {
	NopMetrics
	turns chan struct{}
}

func (m turnMetrics) Converged(time.Duration, time.Duration) { m.turns <- struct{}{} }

// TestFlowControlKeepsMakeBeforeBreak: while the client has not answered a CDS response, a push
// that adds a service must not send the route that references its cluster ahead of the
// cluster itself; both come, cluster first, once the client ACKs.
func TestFlowControlKeepsMakeBeforeBreak(t *testing.T) {
	const newCluster = "outbound|8080||svc-1.ns-1.svc.cluster.local"
	o := testOptions()
	o.AckTimeout = 0 // hold until the client answers
	m := turnMetrics{turns: make(chan struct{}, 16)}
	o.Metrics = m
	ts := startServer(t, o)
	ts.push(topology(1, 1), true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	c.send(gen.ClusterType, "", "", nil, "")
	cds := c.recv() // not acked yet
	c.send(gen.RouteType, "", "", []string{"8080"}, "")
	rds := c.recv()
	if rds.TypeUrl != gen.RouteType || len(rds.Resources) != 1 {
		t.Fatalf("route request answered with %s, %d resources", rds.TypeUrl, len(rds.Resources))
	}
	c.ack(rds)

	ts.push(topology(2, 1), true) // adds svc-1: a new cluster and a new virtual host
	select {
	case <-m.turns:
	case <-time.After(10 * time.Second):
		t.Fatal("push turn did not finish")
	}
	c.barrier() // nothing may have gone out: CDS is held, and the route needs its cluster

	c.ack(cds)
	r := c.recv()
	if r.TypeUrl != gen.ClusterType {
		t.Fatalf("after the CDS ACK: %s, want the clusters first", r.TypeUrl)
	}
	if _, ok := decode(t, r, func() *clusterv3.Cluster { return &clusterv3.Cluster{} })[newCluster]; !ok {
		t.Fatalf("CDS after the ACK lacks %s", newCluster)
	}
	r = c.recv()
	if r.TypeUrl != gen.RouteType {
		t.Fatalf("after the clusters: %s, want the route", r.TypeUrl)
	}
	vhosts := 0
	for _, rc := range decode(t, r, func() *routev3.RouteConfiguration { return &routev3.RouteConfiguration{} }) {
		vhosts += len(rc.VirtualHosts)
	}
	if vhosts < 2 {
		t.Fatalf("route has %d virtual hosts, want the new service's too", vhosts)
	}
}

// A named-CDS client (grpc-go) whose answer to a held CDS also changes its subscription gets
// the CDS answer and then the listeners held behind it: they are not left waiting for some
// later CDS release.
func TestNamedCDSSubscriptionChangeReleasesHeldListeners(t *testing.T) {
	o := testOptions()
	o.AckTimeout = 0 // hold until the client answers
	m := turnMetrics{turns: make(chan struct{}, 16)}
	o.Metrics = m
	ts := startServer(t, o)
	ts.push(topology(2, 1), true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", "grpc"))
	const (
		c0 = "outbound|8080||svc-0.ns-0.svc.cluster.local"
		c2 = "outbound|8080||svc-2.ns-2.svc.cluster.local"
		l2 = "svc-2.ns-2.svc.cluster.local:8080"
	)
	c.send(gen.ClusterType, "", "", []string{c0}, "")
	cds := c.recv() // not acked yet
	c.send(gen.ListenerType, "", "", []string{l2}, "")
	if r := c.recv(); r.TypeUrl != gen.ListenerType || len(r.Resources) != 0 {
		t.Fatalf("LDS for a service that does not exist yet: %s with %d resources", r.TypeUrl, len(r.Resources))
	} else {
		c.ack(r)
	}
	ts.push(topology(3, 1), true) // adds svc-2: its listener is held behind the unanswered CDS
	select {
	case <-m.turns:
	case <-time.After(10 * time.Second):
		t.Fatal("push turn did not finish")
	}
	c.barrier()

	c.send(gen.ClusterType, cds.VersionInfo, cds.Nonce, []string{c0, c2}, "") // ACK + new name
	if r := c.recv(); r.TypeUrl != gen.ClusterType || len(r.Resources) != 2 {
		t.Fatalf("answer to the subscription change: %s with %d resources, want CDS with 2", r.TypeUrl, len(r.Resources))
	}
	r := c.recv()
	if r.TypeUrl != gen.ListenerType || len(r.Resources) != 1 {
		t.Fatalf("after the CDS answer: %s with %d resources, want the held listener %s", r.TypeUrl, len(r.Resources), l2)
	}
}
