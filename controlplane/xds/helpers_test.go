package xds

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// topology builds n HTTP services svc-i.ns-(i%3) with eps endpoints each.
func topology(n, eps int) model.SnapshotInput {
	in := model.SnapshotInput{Endpoints: map[string][]*model.Endpoint{}}
	for i := range n {
		ns := fmt.Sprintf("ns-%d", i%3)
		host := fmt.Sprintf("svc-%d.%s.svc.cluster.local", i, ns)
		in.Services = append(in.Services, &model.Service{Hostname: host, Namespace: ns,
			Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}, ServiceAccounts: []string{"sa"}})
		for j := range eps {
			in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+1)))
		}
	}
	return in
}

func endpoint(host, addr string) *model.Endpoint {
	return &model.Endpoint{Service: host, Address: addr, Weight: 1, Locality: model.Locality{Region: "r1", Zone: "z1"},
		Labels: map[string]string{"app": "x"}}
}

type testServer struct {
	*Server
	addr string
	seq  uint64
}

// startServer serves an xds.Server on 127.0.0.1:0 until the test ends.
func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(ServerOptions()...)
	s.Register(g)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = g.Serve(lis); done <- struct{}{} }()
	go func() { s.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		g.Stop()
		<-done
		<-done
	})
	return &testServer{Server: s, addr: lis.Addr().String()}
}

// push publishes a snapshot built from in.
func (ts *testServer) push(in model.SnapshotInput, full bool, hosts ...string) *model.Snapshot {
	ts.seq++
	snap := model.NewSnapshot(ts.seq, in)
	req := &model.PushRequest{Full: full, Start: time.Now(), Reasons: map[model.TriggerReason]int{model.ReasonEndpointUpdate: 1}}
	if !full {
		req.ConfigsUpdated = map[istioconfig.Key]struct{}{}
		for _, h := range hosts {
			req.ConfigsUpdated[istioconfig.Key{Kind: model.KindEndpoint, Name: h}] = struct{}{}
		}
	}
	ts.Push(snap, req)
	return snap
}

// adsClient is a scripted SotW ADS client.
type adsClient struct {
	t      *testing.T
	stream discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
	resps  chan *discoveryv3.DiscoveryResponse
	errc   chan error
	cancel context.CancelFunc
	subs   map[string][]string // the last names sent per type
}

func sidecarNode(t testing.TB, ip, ns, generator string) *corev3.Node {
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": ns, "GENERATOR": generator})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Node{Id: fmt.Sprintf("sidecar~%s~pod.%s~%s.svc.cluster.local", ip, ns, ns), Metadata: md}
}

// dial opens a scripted SotW ADS stream to addr; extra dial options come after the defaults.
func dial(t *testing.T, addr string, node *corev3.Node, extra ...grpc.DialOption) *adsClient {
	t.Helper()
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20))}, extra...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &adsClient{t: t, stream: stream, node: node, resps: make(chan *discoveryv3.DiscoveryResponse, 100),
		errc: make(chan error, 1), cancel: cancel, subs: map[string][]string{}}
	done := pump(stream.Recv, c.resps, c.errc)
	t.Cleanup(func() {
		cancel()
		<-done
		_ = cc.Close()
	})
	return c
}

func (c *adsClient) send(typeURL, version, nonce string, names []string, nack string) {
	c.t.Helper()
	c.subs[typeURL] = names
	req := &discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: typeURL, VersionInfo: version, ResponseNonce: nonce, ResourceNames: names}
	if nack != "" {
		req.ErrorDetail = &status.Status{Code: 13, Message: nack}
	}
	if err := c.stream.Send(req); err != nil {
		c.t.Fatal(err)
	}
}

// ack acknowledges r, restating the type's subscription.
func (c *adsClient) ack(r *discoveryv3.DiscoveryResponse) {
	c.send(r.TypeUrl, r.VersionInfo, r.Nonce, c.subs[r.TypeUrl], "")
}

// streamErr waits for the stream to end and returns its error.
func (c *adsClient) streamErr() error {
	c.t.Helper()
	select {
	case err := <-c.errc:
		return err
	case r := <-c.resps:
		c.t.Fatalf("got a %s response, want the stream to end", r.TypeUrl)
	case <-time.After(10 * time.Second):
		c.t.Fatal("stream did not end within 10s")
	}
	return nil
}

// recv waits for the next response (failing after 10 s: a hang, not a timing assertion).
func (c *adsClient) recv() *discoveryv3.DiscoveryResponse {
	c.t.Helper()
	select {
	case r := <-c.resps:
		return r
	case <-time.After(10 * time.Second):
		c.t.Fatal("no response within 10s")
		return nil
	}
}

// settle waits until every enqueued push has been handed out and finished.
func (ts *testServer) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for ts.queue.Len() > 0 || ts.queue.Processing() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("pushes did not finish within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// barrier proves that nothing else was sent before it: it subscribes to a type the server does
// not serve (always answered at once, in order with earlier requests) and requires that answer
// to be the next response.
func (c *adsClient) barrier() {
	c.t.Helper()
	const probeType = "type.googleapis.com/xdslab.test.Barrier"
	c.send(probeType, "", "", nil, "")
	if r := c.recv(); r.TypeUrl != probeType {
		c.t.Fatalf("unexpected response before the barrier: type %s version %s with %d resources", r.TypeUrl, r.VersionInfo, len(r.Resources))
	}
}

// deltaClient is a scripted Delta ADS client.
type deltaClient struct {
	t      *testing.T
	stream discoverygrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	node   *corev3.Node
	resps  chan *discoveryv3.DeltaDiscoveryResponse
	errc   chan error
}

func dialDelta(t *testing.T, addr string, node *corev3.Node) *deltaClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &deltaClient{t: t, stream: stream, node: node, resps: make(chan *discoveryv3.DeltaDiscoveryResponse, 100), errc: make(chan error, 1)}
	done := pump(stream.Recv, c.resps, c.errc)
	t.Cleanup(func() {
		cancel()
		<-done
		_ = cc.Close()
	})
	return c
}

// send writes one Delta request; nack non-empty adds error_detail.
func (c *deltaClient) send(typeURL string, subscribe, unsubscribe []string, nonce, nack string) {
	c.t.Helper()
	req := &discoveryv3.DeltaDiscoveryRequest{Node: c.node, TypeUrl: typeURL, ResourceNamesSubscribe: subscribe,
		ResourceNamesUnsubscribe: unsubscribe, ResponseNonce: nonce}
	if nack != "" {
		req.ErrorDetail = &status.Status{Code: 13, Message: nack}
	}
	if err := c.stream.Send(req); err != nil {
		c.t.Fatal(err)
	}
}

// recv waits for the next response (failing after 10 s: a hang, not a timing assertion).
func (c *deltaClient) recv() *discoveryv3.DeltaDiscoveryResponse {
	c.t.Helper()
	select {
	case r := <-c.resps:
		return r
	case err := <-c.errc:
		c.t.Fatalf("stream ended: %v", err)
	case <-time.After(10 * time.Second):
		c.t.Fatal("no response within 10s")
	}
	return nil
}

// barrier proves that nothing else was sent before it (see adsClient.barrier).
func (c *deltaClient) barrier() {
	c.t.Helper()
	const probeType = "type.googleapis.com/xdslab.test.Barrier"
	c.send(probeType, []string{"x"}, nil, "", "")
	if r := c.recv(); r.TypeUrl != probeType {
		c.t.Fatalf("unexpected response before the barrier: type %s with %d resources, removed %v", r.TypeUrl, len(r.Resources), r.RemovedResources)
	}
}

// waitFor polls cond until it holds (failing after 10 s: a hang, not a timing assertion).
// pump delivers every message recv returns to out until it fails, then the error to errc;
// done closes when it stops (the stream's context was cancelled).
func pump[T any](recv func() (T, error), out chan<- T, errc chan<- error) (done <-chan struct{}) {
	d := make(chan struct{})
	go func() {
		defer close(d)
		for {
			r, err := recv()
			if err != nil {
				errc <- err
				return
			}
			out <- r
		}
	}()
	return d
}
