package xds

import (
	"errors"
	"io"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/gen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testOptions() Options {
	o := DefaultOptions(2)
	o.AdmissionRate = 0
	return o
}

func decode[T proto.Message](t *testing.T, r *discoveryv3.DiscoveryResponse, newT func() T) map[string]T {
	t.Helper()
	out := map[string]T{}
	for _, a := range r.Resources {
		m := newT()
		if err := a.UnmarshalTo(m); err != nil {
			t.Fatalf("decode %s: %v", r.TypeUrl, err)
		}
		var name string
		switch v := any(m).(type) {
		case *clusterv3.Cluster:
			name = v.Name
		case *endpointv3.ClusterLoadAssignment:
			name = v.ClusterName
		case *listenerv3.Listener:
			name = v.Name
		case *routev3.RouteConfiguration:
			name = v.Name
		}
		if _, dup := out[name]; dup {
			t.Fatalf("duplicate %s %q in one response", r.TypeUrl, name)
		}
		out[name] = m
	}
	return out
}

// edsNames lists the EDS cluster names of a CDS response, as Envoy does.
func edsNames(t *testing.T, r *discoveryv3.DiscoveryResponse) []string {
	var names []string
	for name, c := range decode(t, r, func() *clusterv3.Cluster { return &clusterv3.Cluster{} }) {
		if c.GetType() == clusterv3.Cluster_EDS {
			names = append(names, name)
		}
	}
	return names
}

// routeNames lists the RDS names of an LDS response.
func routeNames(t *testing.T, r *discoveryv3.DiscoveryResponse) []string {
	seen := map[string]bool{}
	var names []string
	for _, l := range decode(t, r, func() *listenerv3.Listener { return &listenerv3.Listener{} }) {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(h) == nil && h.GetRds() != nil && !seen[h.GetRds().GetRouteConfigName()] {
					seen[h.GetRds().GetRouteConfigName()] = true
					names = append(names, h.GetRds().GetRouteConfigName())
				}
			}
		}
	}
	return names
}

// sync runs Envoy's initial sequence and returns the responses by type.
func initialSync(t *testing.T, c *adsClient) map[string]*discoveryv3.DiscoveryResponse {
	t.Helper()
	got := map[string]*discoveryv3.DiscoveryResponse{}
	c.send(gen.ClusterType, "", "", nil, "")
	cds := c.recv()
	if cds.TypeUrl != gen.ClusterType {
		t.Fatalf("first response %s, want CDS", cds.TypeUrl)
	}
	got[gen.ClusterType] = cds
	eds := edsNames(t, cds)
	c.send(gen.EndpointType, "", "", eds, "") // EDS before the CDS ACK, like Envoy
	c.ack(cds)
	r := c.recv()
	if r.TypeUrl != gen.EndpointType || len(r.Resources) != len(eds) {
		t.Fatalf("EDS: got %s with %d resources, want %d assignments", r.TypeUrl, len(r.Resources), len(eds))
	}
	got[gen.EndpointType] = r
	c.ack(r)
	c.send(gen.ListenerType, "", "", nil, "")
	lds := c.recv()
	got[gen.ListenerType] = lds
	rds := routeNames(t, lds)
	c.send(gen.RouteType, "", "", rds, "")
	c.ack(lds)
	r = c.recv()
	if r.TypeUrl != gen.RouteType || len(r.Resources) != len(rds) {
		t.Fatalf("RDS: got %s with %d resources, want %d", r.TypeUrl, len(r.Resources), len(rds))
	}
	got[gen.RouteType] = r
	c.ack(r)
	return got
}

func TestSidecarReceivesAndAcksEverything(t *testing.T) {
	ts := startServer(t, testOptions())
	snap := ts.push(topology(100, 3), true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	got := initialSync(t, c)
	if n := len(edsNames(t, got[gen.ClusterType])); n != 100 {
		t.Errorf("%d EDS clusters, want 100 (one per service port)", n)
	}
	for _, r := range got {
		if r.VersionInfo != snap.Version {
			t.Errorf("%s version %q, want %q", r.TypeUrl, r.VersionInfo, snap.Version)
		}
	}
	c.barrier()
	st := ts.Syncz()
	if len(st) != 1 {
		t.Fatalf("syncz has %d clients", len(st))
	}
	for _, ty := range st[0].Types {
		if ty.TypeURL == gen.ClusterType || ty.TypeURL == gen.EndpointType || ty.TypeURL == gen.ListenerType || ty.TypeURL == gen.RouteType {
			if ty.Acked != snap.Version || ty.Sent != snap.Version || ty.Nacks != 0 {
				t.Errorf("syncz %s: %+v", ty.TypeURL, ty)
			}
		}
	}
}

func TestEndpointChangeSendsOnlyThatAssignment(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(20, 2)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	initialSync(t, c)

	host := "svc-4.ns-1.svc.cluster.local"
	in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, "10.9.9.9"))
	snap := ts.push(in, false, host)
	r := c.recv()
	if r.TypeUrl != gen.EndpointType || len(r.Resources) != 1 || r.VersionInfo != snap.Version {
		t.Fatalf("got %s v%s with %d resources, want one EDS resource at v%s", r.TypeUrl, r.VersionInfo, len(r.Resources), snap.Version)
	}
	cla := decode(t, r, func() *endpointv3.ClusterLoadAssignment { return &endpointv3.ClusterLoadAssignment{} })
	if _, ok := cla["outbound|8080||"+host]; !ok {
		t.Fatalf("EDS push for %v, want %s", cla, host)
	}
	c.ack(r)
	ts.settle(t)
	c.barrier() // no CDS, LDS or RDS followed
}

func TestNackedVersionIsNotResent(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(10, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	c.send(gen.ClusterType, "", "", nil, "")
	cds := c.recv()
	c.send(cds.TypeUrl, "", cds.Nonce, nil, "cluster rejected") // NACK: no accepted version yet

	// A full push whose clusters did not change must not re-send the rejected clusters.
	ts.push(in, true)
	ts.settle(t)
	c.barrier()
	st := ts.Syncz()[0]
	for _, ty := range st.Types {
		if ty.TypeURL == gen.ClusterType && (ty.Nacks != 1 || ty.Nacked != cds.VersionInfo || ty.LastError != "cluster rejected" || ty.Acked != "") {
			t.Errorf("syncz CDS after NACK: %+v", ty)
		}
	}

	// A real change sends a new version.
	host := "svc-99.ns-0.svc.cluster.local"
	in.Services = append(in.Services, topology(100, 1).Services[99])
	snap := ts.push(in, true)
	r := c.recv()
	if r.TypeUrl != gen.ClusterType || r.VersionInfo != snap.Version {
		t.Fatalf("after a change got %s v%s, want CDS v%s", r.TypeUrl, r.VersionInfo, snap.Version)
	}
	if _, ok := decode(t, r, func() *clusterv3.Cluster { return &clusterv3.Cluster{} })["outbound|8080||"+host]; !ok {
		t.Error("new cluster missing")
	}
}

func TestStaleNonceIsIgnored(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(5, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	c.send(gen.ClusterType, "", "", nil, "")
	cds := c.recv()
	eds := edsNames(t, cds)
	c.send(gen.EndpointType, "", "", eds[:1], "")
	first := c.recv()
	// Subscribe to more names but with a stale nonce: ignored, nothing sent.
	c.send(gen.EndpointType, "", "stale-nonce", eds, "")
	c.barrier()
	// With the right nonce the new names are answered, and only they.
	c.send(gen.EndpointType, first.VersionInfo, first.Nonce, eds, "")
	r := c.recv()
	if r.TypeUrl != gen.EndpointType || len(r.Resources) != len(eds)-1 {
		t.Fatalf("got %s with %d resources, want the %d newly subscribed", r.TypeUrl, len(r.Resources), len(eds)-1)
	}
}

func TestFlowControlMergesPushesWhileAckOutstanding(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(5, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	initialSync(t, c)

	hostA, hostB := "svc-1.ns-1.svc.cluster.local", "svc-2.ns-2.svc.cluster.local"
	in.Endpoints[hostA] = append(in.Endpoints[hostA], endpoint(hostA, "10.8.0.1"))
	ts.push(in, false, hostA)
	r1 := c.recv() // not ACKed yet
	if r1.TypeUrl != gen.EndpointType || len(r1.Resources) != 1 {
		t.Fatalf("first EDS push: %s with %d", r1.TypeUrl, len(r1.Resources))
	}
	in.Endpoints[hostB] = append(in.Endpoints[hostB], endpoint(hostB, "10.8.0.2"))
	ts.push(in, false, hostB)
	in.Endpoints[hostA] = append(in.Endpoints[hostA], endpoint(hostA, "10.8.0.3"))
	snap := ts.push(in, false, hostA)
	ts.settle(t)
	c.barrier() // both pushes held
	c.ack(r1)
	r := c.recv()
	got := decode(t, r, func() *endpointv3.ClusterLoadAssignment { return &endpointv3.ClusterLoadAssignment{} })
	if len(got) != 2 || r.VersionInfo != snap.Version {
		t.Fatalf("released push: v%s with %d assignments, want both changed hosts at v%s", r.VersionInfo, len(got), snap.Version)
	}
	if n := len(got["outbound|8080||"+hostA].GetEndpoints()[0].GetLbEndpoints()); n != 3 {
		t.Errorf("host A has %d endpoints, want 3 (the latest state)", n)
	}
}

func TestUnknownTypeGetsEmptyResponse(t *testing.T) {
	ts := startServer(t, testOptions())
	ts.push(topology(1, 1), true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	const secret = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
	c.send(secret, "", "", []string{"default"}, "")
	if r := c.recv(); r.TypeUrl != secret || len(r.Resources) != 0 {
		t.Fatalf("got %s with %d resources", r.TypeUrl, len(r.Resources))
	}
}

func TestMalformedNodeClosesOnlyThatStream(t *testing.T) {
	ts := startServer(t, testOptions())
	ts.push(topology(1, 1), true)
	bad := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	bad.node.Id = "not-an-istio-id"
	bad.send(gen.ClusterType, "", "", nil, "")
	err := bad.streamErr()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "node id") {
		t.Fatalf("err %v, want InvalidArgument about the node id", err)
	}
	good := dial(t, ts.addr, sidecarNode(t, "10.200.0.2", "ns-0", ""))
	good.send(gen.ClusterType, "", "", nil, "")
	if r := good.recv(); r.TypeUrl != gen.ClusterType {
		t.Fatal("second stream not served")
	}
}

func TestAdmissionLimitsNewStreams(t *testing.T) {
	o := testOptions()
	o.AdmissionRate, o.AdmissionBurst = 0.001, 1
	ts := startServer(t, o)
	ts.push(topology(1, 1), true)
	a := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	a.send(gen.ClusterType, "", "", nil, "")
	a.recv()
	b := dial(t, ts.addr, sidecarNode(t, "10.200.0.2", "ns-0", ""))
	// The server may refuse the stream before this request is written: Send then reports
	// io.EOF, and the status comes from Recv.
	if err := b.stream.Send(&discoveryv3.DiscoveryRequest{Node: b.node, TypeUrl: gen.ClusterType}); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if err := b.streamErr(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second stream: %v, want ResourceExhausted", err)
	}
}
