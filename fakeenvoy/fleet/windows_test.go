package fleet

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
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

// blobADS answers each stream's first request with one response of a 3 MiB resource, then
// counts the stream's requests (reading each, so that every frame its client sent before one
// has been tallied once it is counted).
type blobADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	requests atomic.Int64
	// answered counts the streams that sent a request after their blob (each client's answer
	// to it: the blob was read to its end, and its WINDOW_UPDATEs written before).
	answered atomic.Int64
}

const blobSize = 3 << 20

func (b *blobADS) StreamAggregatedResources(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	res := &anypb.Any{TypeUrl: "type.googleapis.com/xdslab.test.Blob", Value: make([]byte, blobSize)}
	for i := 0; ; i++ {
		req, err := st.Recv()
		if err != nil {
			return err
		}
		b.requests.Add(1)
		if i == 1 {
			b.answered.Add(1)
		}
		if i == 0 {
			if err := st.Send(&discoveryv3.DiscoveryResponse{TypeUrl: req.TypeUrl, VersionInfo: "v", Nonce: "n", Resources: []*anypb.Any{res}}); err != nil {
				return err
			}
		}
	}
}

// startFleet starts a fleet of cfg, stopped when the test ends.
func startFleet(t *testing.T, cfg Config) *Fleet {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); f.Stop() })
	return f
}

// TestFleetGroupWindows: a group's Window and WindowUpdate reach its connections, on the
// fleet's own transport and on grpc-go's: with istio-agent's (1 MiB, a quarter given back at a
// time) a 3 MiB response takes a dozen connection WINDOW_UPDATEs, with Envoy's 256 MiB only the
// one that opens the connection window.
func TestFleetGroupWindows(t *testing.T) {
	for _, tc := range []struct {
		name           string
		window, update uint32
		spc            int // streams per connection: 2 dials grpc-go
		want           func(n int) bool
		wantText       string
	}{
		{"own transport, agent's", fakeenvoy.AgentWindow, fakeenvoy.AgentWindowUpdate, 1, func(n int) bool { return n == 1+12 }, "13"},
		{"own transport, Envoy's", 0, 0, 1, func(n int) bool { return n == 1 }, "1"},
		{"grpc-go, agent's", fakeenvoy.AgentWindow, fakeenvoy.AgentWindowUpdate, 2, func(n int) bool { return n >= 2*blobSize/fakeenvoy.AgentWindowUpdate }, "at least 24"},
		{"grpc-go, Envoy's", 0, 0, 2, func(n int) bool { return n == 1 }, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			tl := &tallyListener{Listener: lis}
			ads := &blobADS{}
			srv := grpc.NewServer()
			discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, ads)
			go func() { _ = srv.Serve(tl) }()
			defer srv.Stop()

			cfg := flConfig(lis.Addr().String(), 2, policy.Nack{})
			g := &cfg.Groups[0]
			g.Window, g.WindowUpdate, g.StreamsPerConn = tc.window, tc.update, tc.spc
			startFleet(t, cfg)
			// Each client's first request, then the one that answers the response (a NACK: the
			// blob is not a cluster), counted per stream: a client may ask for the next type
			// before the other has read its blob.
			deadline := time.Now().Add(time.Minute)
			for ads.answered.Load() < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("%d of 2 streams answered their response after a minute (%d requests)", ads.answered.Load(), ads.requests.Load())
				}
				time.Sleep(10 * time.Millisecond)
			}
			tl.mu.Lock()
			defer tl.mu.Unlock()
			for i, c := range tl.conns {
				if n := c.Counts().ConnWindowUpdates; !tc.want(n) {
					t.Errorf("connection %d: %d connection WINDOW_UPDATEs for its 3 MiB responses, want %s", i, n, tc.wantText)
				}
			}
		})
	}
}

// TestFleetGroupKeepalive: a group's keepalive reaches its connections, on the fleet's own
// transport and on grpc-go's (a group sharing connections): idle, each pings the server
// (istio-agent's connection does every 30s). grpc-go raises a keepalive under 10s to 10s, so
// its case waits that long for one PING.
func TestFleetGroupKeepalive(t *testing.T) {
	for _, tc := range []struct {
		name         string
		spc          int // streams per connection: 1 is the fleet's own transport, more grpc-go's
		conns, pings int
	}{
		{name: "own transport", spc: 1, conns: 2, pings: 2},
		{name: "grpc-go, shared", spc: 2, conns: 1, pings: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fleetKeepalive(t, tc.spc, tc.conns, tc.pings)
		})
	}
}

func fleetKeepalive(t *testing.T, spc, conns, pings int) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := &tallyListener{Listener: lis}
	srv := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Millisecond}))
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, &blobADS{}) // one response, then quiet
	go func() { _ = srv.Serve(tl) }()
	defer srv.Stop()

	cfg := flConfig(lis.Addr().String(), 2, policy.Nack{})
	cfg.Groups[0].KeepaliveTime, cfg.Groups[0].KeepaliveTimeout = 20*time.Millisecond, time.Minute
	cfg.Groups[0].StreamsPerConn = spc
	f := startFleet(t, cfg)
	deadline := time.Now().Add(time.Minute)
	for {
		tl.mu.Lock()
		pinged := 0
		for _, c := range tl.conns {
			if c.Counts().Pings >= pings {
				pinged++
			}
		}
		n := len(tl.conns)
		tl.mu.Unlock()
		if n == conns && pinged == conns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d of %d connections sent %d keepalive PINGs, want %d of %d", pinged, n, pings, conns, conns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p := f.Progress(); p.ConnectFailures != 0 {
		t.Errorf("%d connect failures", p.ConnectFailures)
	}
}
