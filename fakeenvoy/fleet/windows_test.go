package fleet

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/internal/h2tally"
)

// tallyListener wraps each accepted connection to tally the frames its client sends.
type tallyListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*h2tally.Conn
}

func (l *tallyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := h2tally.FromClient(c)
	l.mu.Lock()
	l.conns = append(l.conns, tc)
	l.mu.Unlock()
	return tc, nil
}

func (l *tallyListener) counts() h2tally.Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum h2tally.Counts
	for _, c := range l.conns {
		n := c.Counts()
		sum.Frames += n.Frames
		sum.Pings += n.Pings
		sum.ConnWindowUpdates += n.ConnWindowUpdates
	}
	return sum
}

// echoADS answers every request with a response of one 4 KiB resource.
type echoADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
}

func (echoADS) StreamAggregatedResources(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	res := &anypb.Any{TypeUrl: "type.googleapis.com/xdslab.test.Blob", Value: []byte(strings.Repeat("x", 4096))}
	for i := 0; ; i++ {
		req, err := st.Recv()
		if err != nil {
			return err
		}
		if err := st.Send(&discoveryv3.DiscoveryResponse{TypeUrl: req.TypeUrl, VersionInfo: "v", Nonce: string(rune('a' + i%26)), Resources: []*anypb.Any{res}}); err != nil {
			return err
		}
	}
}

// TestFleetGRPCConnsSendNoPings: the fleet's grpc-go connections (TLS, shared, custom dial)
// keep Envoy's fixed windows, as its own transport does: grpc-go's default probed the
// bandwidth with a PING after each response it read, PINGs no Envoy sends and a control plane
// under test would have answered.
func TestFleetGRPCConnsSendNoPings(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := &tallyListener{Listener: lis}
	srv := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, echoADS{})
	go func() { _ = srv.Serve(tl) }()
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(), fleetDialOptions(mem.DefaultBufferPool())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const exchanges = 20
	for range exchanges {
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: "type.googleapis.com/xdslab.test.Blob"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	if got := tl.counts(); got.Pings != 0 {
		t.Errorf("over %d responses the fleet's gRPC connection sent %d PINGs, want none (Envoy's fixed windows)", exchanges, got.Pings)
	}
}
