package xds

import (
	"context"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
)

// A CDS push held by flow control, once released, is followed by the assignments of the
// clusters it changed (Envoy keeps a changed cluster warming until it gets one).
func TestReleasedClusterPushIsFollowedByAssignments(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(5, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	initialSync(t, c)

	in.Services[1] = grpcPort(in.Services[1])
	ts.push(in, true)
	var cds *discoveryv3.DiscoveryResponse
	for range 2 { // CDS (left unanswered) and EDS (acked)
		r := c.recv()
		if r.TypeUrl == gen.ClusterType {
			cds = r
		} else {
			c.ack(r)
		}
	}
	in.Services[2] = grpcPort(in.Services[2])
	ts.push(in, true) // CDS held: the last CDS response is unanswered
	ts.settle(t)
	c.barrier()
	c.ack(cds)
	if r := c.recv(); r.TypeUrl != gen.ClusterType {
		t.Fatalf("released push: got %s, want CDS", r.TypeUrl)
	}
	r := c.recv()
	if r.TypeUrl != gen.EndpointType {
		t.Fatalf("after the released CDS: got %s, want the changed cluster's EDS", r.TypeUrl)
	}
	if _, ok := decode(t, r, newCLA)["outbound|8080||svc-2.ns-2.svc.cluster.local"]; !ok {
		t.Errorf("the changed cluster's assignment is missing")
	}
}

// A wildcard EDS subscriber gets endpoint-only pushes.
func TestWildcardEDSGetsEndpointPushes(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(5, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	c.send(gen.EndpointType, "", "", []string{"*"}, "")
	c.ack(c.recv())
	host := "svc-3.ns-0.svc.cluster.local"
	in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, "10.9.9.9"))
	ts.push(in, false, host)
	r := c.recv()
	got := decode(t, r, newCLA)
	if cla, ok := got["outbound|8080||"+host]; !ok || len(cla.GetEndpoints()[0].GetLbEndpoints()) != 2 {
		t.Fatalf("endpoint push to a wildcard subscriber: %v", got)
	}
}

// A request that drops "*" but keeps the other names changes the subscription.
func TestDroppingWildcardIsASubscriptionChange(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(5, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	name := "outbound|8080||svc-1.ns-1.svc.cluster.local"
	c.send(gen.EndpointType, "", "", []string{"*", name}, "")
	r := c.recv()
	c.send(gen.EndpointType, r.VersionInfo, r.Nonce, []string{name}, "")
	c.barrier()
	host := "svc-3.ns-0.svc.cluster.local"
	in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, "10.9.9.9"))
	ts.push(in, false, host)
	ts.settle(t)
	c.barrier() // nothing for svc-3: the client no longer watches it
}

// A Delta wildcard EDS subscription answered after a cluster change removes nothing.
func TestDeltaWildcardEDSKeepsOtherAssignments(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(5, 1)
	ts.push(in, true)
	cc, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := sidecarNode(t, "10.200.0.1", "ns-0", "")
	send := func(r *discoveryv3.DeltaDiscoveryRequest) {
		t.Helper()
		r.Node = node
		if err := st.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() *discoveryv3.DeltaDiscoveryResponse {
		t.Helper()
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: gen.ClusterType})
	r := recv()
	send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: gen.ClusterType, ResponseNonce: r.Nonce})
	send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: gen.EndpointType, ResourceNamesSubscribe: []string{"*"}})
	r = recv()
	if r.TypeUrl != gen.EndpointType || len(r.Resources) != 5 || len(r.RemovedResources) != 0 {
		t.Fatalf("initial wildcard EDS: %s with %d resources, removed %v", r.TypeUrl, len(r.Resources), r.RemovedResources)
	}
	send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: gen.EndpointType, ResponseNonce: r.Nonce})
	in.Services[2] = grpcPort(in.Services[2])
	ts.push(in, true)
	for range 2 {
		if r := recv(); r.TypeUrl == gen.EndpointType && len(r.RemovedResources) > 0 {
			t.Errorf("wildcard EDS push removed %v", r.RemovedResources)
		}
	}
}

// Requests made before the first snapshot are answered by the first push, even when empty.
func TestRequestsBeforeFirstSnapshotAreAnswered(t *testing.T) {
	ts := startServer(t, testOptions())
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	c.send(gen.RouteType, "", "", []string{"9999"}, "")
	ts.push(topology(3, 1), true) // whether it comes before or after the request, an answer must
	// Port 9999 has no service: istiod (and xdslab) still answer it, with allow_any.
	if r := c.recv(); r.TypeUrl != gen.RouteType || len(r.Resources) != 1 {
		t.Fatalf("got %s with %d resources, want route configuration 9999 alone", r.TypeUrl, len(r.Resources))
	}
}

func newCLA() *endpointv3.ClusterLoadAssignment { return &endpointv3.ClusterLoadAssignment{} }

// grpcPort returns a copy of svc whose port speaks gRPC (snapshots share services: never
// modify one in place).
func grpcPort(svc *model.Service) *model.Service {
	c := *svc
	c.Ports = []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolGRPC}}
	return &c
}

// A client that stops reading is cut off after the send timeout, so it cannot hold the only
// push worker: another client still gets its pushes.
func TestClientThatStopsReadingDoesNotStallPushes(t *testing.T) {
	o := testOptions()
	o.PushThrottle, o.FlowControl, o.SendTimeout = 1, false, 300*time.Millisecond
	ts := startServer(t, o)
	in := topology(3000, 3) // a CDS response far larger than the HTTP/2 windows
	ts.push(in, true)
	b := dial(t, ts.addr, sidecarNode(t, "10.200.0.2", "ns-0", ""))
	b.send(gen.ClusterType, "", "", nil, "")
	b.ack(b.recv())

	cc, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A subscribes and then never reads.
	if err := a.Send(&discoveryv3.DiscoveryRequest{Node: sidecarNode(t, "10.200.0.1", "ns-0", ""), TypeUrl: gen.ClusterType}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		in.Services[i] = grpcPort(in.Services[i])
		ts.push(in, true)
		r := b.recv()
		if r.TypeUrl != gen.ClusterType {
			t.Fatalf("push %d: B got %s, want CDS", i, r.TypeUrl)
		}
		b.ack(r)
	}
}

// The shell's flow-control timer: a push held for a client that never answers goes out when
// the ACK timeout passes, not before (a lower bound: load can only delay the release).
func TestAckTimeoutReleasesHeldPush(t *testing.T) {
	o := testOptions()
	o.AckTimeout = 200 * time.Millisecond
	ts := startServer(t, o)
	in := topology(2, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	host := "svc-1.ns-1.svc.cluster.local"
	start := time.Now() // before the first response is written, so before its wait starts
	c.send(gen.EndpointType, "", "", []string{"outbound|8080||" + host}, "")
	first := c.recv() // never acknowledged
	in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, "10.9.9.9"))
	snap := ts.push(in, false, host)
	r := c.recv()
	if waited := time.Since(start); waited < o.AckTimeout {
		t.Fatalf("the held push came %v after the first response, before the %v ACK timeout", waited, o.AckTimeout)
	}
	if r.VersionInfo != snap.Version || r.Nonce == first.Nonce {
		t.Fatalf("got version %s nonce %s, want the held push's version %s", r.VersionInfo, r.Nonce, snap.Version)
	}
	if cla := decode(t, r, newCLA)["outbound|8080||"+host]; len(cla.GetEndpoints()[0].GetLbEndpoints()) != 2 {
		t.Fatalf("released push carries %v, want 2 endpoints", cla)
	}
}

// A Delta EDS subscription that grows after an endpoint push still gets endpoint pushes for the
// names it added (the session re-indexes the subscription by host when it changes; it used to
// keep the index built by the first endpoint push and miss the later names).
func TestDeltaLaterEDSSubscriptionGetsEndpointPushes(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(3, 1)
	ts.push(in, true)
	c := dialDelta(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	hostA, hostB := in.Services[0].Hostname, in.Services[1].Hostname
	nameA, nameB := "outbound|8080||"+hostA, "outbound|8080||"+hostB
	c.send(gen.EndpointType, []string{nameA}, nil, "", "")
	r := c.recv()
	c.send(gen.EndpointType, nil, nil, r.Nonce, "")
	in.Endpoints[hostA] = append(in.Endpoints[hostA], endpoint(hostA, "10.9.9.1"))
	ts.push(in, false, hostA)
	r = c.recv()
	c.send(gen.EndpointType, []string{nameB}, nil, r.Nonce, "")
	if r = c.recv(); len(r.Resources) != 1 || r.Resources[0].Name != nameB {
		t.Fatalf("subscribing %s: got %d resources", nameB, len(r.Resources))
	}
	c.send(gen.EndpointType, nil, nil, r.Nonce, "")
	in.Endpoints[hostB] = append(in.Endpoints[hostB], endpoint(hostB, "10.9.9.2"))
	ts.push(in, false, hostB)
	if r = c.recv(); len(r.Resources) != 1 || r.Resources[0].Name != nameB {
		t.Fatalf("endpoint push for %s: got %d resources", hostB, len(r.Resources))
	}
}
