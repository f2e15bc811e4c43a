package mcp

import (
	"context"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/istioconfig"
)

func startServer(t *testing.T, srv *Server) discoverygrpc.AggregatedDiscoveryServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv.Register(g)
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close(); g.Stop(); <-done })
	return discoverygrpc.NewAggregatedDiscoveryServiceClient(cc)
}

// TestServerStream: every requested type is answered (empty for a type with no objects or one
// that is no collection), a change is pushed as the type's full state with a new version, a
// NACK is counted and not answered, and Delta is refused.
func TestServerStream(t *testing.T) {
	srv := NewServer(ServerOptions{})
	cfgs := sampleConfigs()
	if err := srv.Apply(cfgs[:2], nil); err != nil { // a ServiceEntry and a WorkloadEntry
		t.Fatal(err)
	}
	client := startServer(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := client.StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seURL := TypeURL(istioconfig.KindServiceEntry)
	for i, u := range []string{MeshConfigTypeURL, seURL, "networking.istio.io/v1/Gateway", "example.com/v1/Thing"} {
		req := &discoverygrpc.DiscoveryRequest{TypeUrl: u}
		if i == 0 {
			req.Node = &corev3.Node{Id: "test"}
		}
		if err := st.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]*discoverygrpc.DiscoveryResponse{}
	for len(got) < 4 {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got[r.TypeUrl] = r
	}
	if n := len(got[seURL].Resources); n != 1 {
		t.Errorf("ServiceEntry response holds %d resources, want 1", n)
	}
	for _, u := range []string{MeshConfigTypeURL, "networking.istio.io/v1/Gateway", "example.com/v1/Thing"} {
		if n := len(got[u].Resources); n != 0 {
			t.Errorf("%s: %d resources, want an empty answer", u, n)
		}
	}
	first := got[seURL]
	if err := st.Send(&discoverygrpc.DiscoveryRequest{TypeUrl: seURL, ResponseNonce: first.Nonce, VersionInfo: first.VersionInfo}); err != nil {
		t.Fatal(err)
	}
	se2 := *cfgs[0]
	se2.Name = "ratings"
	if err := srv.Apply([]*istioconfig.Config{&se2}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if r.TypeUrl != seURL || len(r.Resources) != 2 || r.VersionInfo == first.VersionInfo {
		t.Fatalf("after a change: %s with %d resources, version %s (was %s); want the full state, 2, a new version", r.TypeUrl, len(r.Resources), r.VersionInfo, first.VersionInfo)
	}
	if err := st.Send(&discoverygrpc.DiscoveryRequest{TypeUrl: seURL, ResponseNonce: r.Nonce, VersionInfo: first.VersionInfo,
		ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: "bad"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().NACKs != 1 {
		if time.Now().After(deadline) {
			t.Fatal("NACK not counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := srv.Apply([]*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.Kind("Service"), Namespace: "a", Name: "b"}}}, nil); err == nil {
		t.Error("a kind that is no MCP collection was accepted")
	}
	d, err := client.DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Recv(); status.Code(err) != codes.Unimplemented {
		t.Errorf("delta: %v, want Unimplemented", err)
	}
}
