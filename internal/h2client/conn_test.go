package h2client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoADS answers each request with a response whose version is the request's version and
// whose one resource is the request's error detail message repeated to the size the request's
// response nonce names; a request with type URL "end" ends the stream with the status its
// version names ("ok" or a code number).
type echoADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	streams atomic.Int64
}

func (e *echoADS) StreamAggregatedResources(s discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	e.streams.Add(1)
	md, _ := metadata.FromIncomingContext(s.Context())
	_ = s.SendHeader(metadata.Pairs("echo-who", strings.Join(md["who"], ",")))
	for {
		req, err := s.Recv()
		if err != nil {
			return nil
		}
		if req.GetTypeUrl() == "end" {
			if req.GetVersionInfo() == "ok" {
				s.SetTrailer(metadata.Pairs("bye", "ok"))
				return nil
			}
			var code int
			fmt.Sscan(req.GetVersionInfo(), &code)
			return status.Error(codes.Code(code), "ended: 100% on purpose")
		}
		n := 0
		fmt.Sscan(req.GetResponseNonce(), &n)
		resp := &discoveryv3.DiscoveryResponse{VersionInfo: req.GetVersionInfo(), TypeUrl: req.GetTypeUrl(),
			Nonce: fmt.Sprint(len(req.GetResourceNames()))}
		if n > 0 {
			resp.Resources = []*anypb.Any{{TypeUrl: "x", Value: []byte(strings.Repeat("r", n))}}
		}
		if err := s.Send(resp); err != nil {
			return err
		}
	}
}

// server is a grpc-go ADS server on loopback that counts its connections.
type server struct {
	addr  string
	srv   *grpc.Server
	ads   *echoADS
	conns atomic.Int64
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func startServer(t *testing.T, addr string, opts ...grpc.ServerOption) *server {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: lis.Addr().String(), srv: grpc.NewServer(opts...), ads: &echoADS{}}
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s.srv, s.ads)
	go s.srv.Serve(countingListener{lis, &s.conns})
	t.Cleanup(s.srv.Stop)
	return s
}

// stampCodec is the proto codec, recording the receive stamps Conn.Take gives it.
type stampCodec struct {
	encoding.CodecV2
	c      *Conn
	mu     sync.Mutex
	stamps []time.Time
}

func (s *stampCodec) Unmarshal(data mem.BufferSlice, v any) error {
	at, ok := s.c.Take(data.Len())
	s.mu.Lock()
	if ok {
		s.stamps = append(s.stamps, at)
	} else {
		s.stamps = append(s.stamps, time.Time{})
	}
	s.mu.Unlock()
	return s.CodecV2.Unmarshal(data, v)
}

func newConn(t *testing.T, cfg Config) (*Conn, *stampCodec) {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &stampCodec{CodecV2: encoding.GetCodecV2("proto"), c: c}
}

func openADS(ctx context.Context, c *Conn, codec encoding.CodecV2) (discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, error) {
	return discoveryv3.NewAggregatedDiscoveryServiceClient(c).StreamAggregatedResources(ctx, grpc.ForceCodecV2(codec))
}

func req(version string, respSize int, names int) *discoveryv3.DiscoveryRequest {
	r := &discoveryv3.DiscoveryRequest{VersionInfo: version, TypeUrl: "t", ResponseNonce: fmt.Sprint(respSize)}
	for i := range names {
		r.ResourceNames = append(r.ResourceNames, fmt.Sprintf("outbound|80||service-%06d.namespace.svc.cluster.local", i))
	}
	return r
}

// echo sends a request of version on s and checks the response that comes back.
func echo(t *testing.T, s discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, version string) {
	t.Helper()
	if err := s.Send(req(version, 10, 0)); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recv(); err != nil || r.GetVersionInfo() != version {
		t.Fatalf("echo of %q: %v, %v", version, r, err)
	}
}

// TestStreamAgainstGRPCServer runs streams against grpc-go's server: small and large messages
// both ways (a request above the server's 64 KiB window, a response of many frames and above
// the receive buffer), headers, trailers and statuses, and the connection kept across streams.
func TestStreamAgainstGRPCServer(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	c, codec := newConn(t, Config{Target: srv.addr, MaxRecvMsgSize: 8 << 20})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "who", "client-1")
	tests := []struct {
		name       string
		respSize   int
		names      int
		end        string
		wantCode   codes.Code
		wantMsg    string
		wantTraile string
	}{
		{name: "small", respSize: 100, end: "ok", wantTraile: "ok"},
		{name: "response of 1 MiB", respSize: 1 << 20, end: "ok", wantTraile: "ok"},
		{name: "request of 200 KB", respSize: 10, names: 3000, end: "9", wantCode: codes.FailedPrecondition, wantMsg: "ended: 100% on purpose"},
		{name: "empty response", respSize: 0, end: "14", wantCode: codes.Unavailable, wantMsg: "ended: 100% on purpose"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := openADS(ctx, c, codec)
			if err != nil {
				t.Fatal(err)
			}
			md, err := s.Header()
			if err != nil || md.Get("echo-who")[0] != "client-1" {
				t.Fatalf("header %v, %v; want echo-who client-1", md, err)
			}
			for i := range 3 {
				if err := s.Send(req(fmt.Sprint(i), tt.respSize, tt.names)); err != nil {
					t.Fatal(err)
				}
				r, err := s.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if r.GetVersionInfo() != fmt.Sprint(i) || r.GetNonce() != fmt.Sprint(tt.names) {
					t.Fatalf("response %d: version %q nonce %q", i, r.GetVersionInfo(), r.GetNonce())
				}
				if got := len(r.GetResources()); (tt.respSize > 0) != (got == 1) || got == 1 && len(r.GetResources()[0].GetValue()) != tt.respSize {
					t.Fatalf("response %d: resources %d", i, got)
				}
			}
			if err := s.Send(&discoveryv3.DiscoveryRequest{TypeUrl: "end", VersionInfo: tt.end}); err != nil {
				t.Fatal(err)
			}
			_, err = s.Recv()
			if tt.wantCode == codes.OK {
				if err != io.EOF {
					t.Fatalf("end: %v, want io.EOF", err)
				}
				if got := s.Trailer().Get("bye"); len(got) != 1 || got[0] != tt.wantTraile {
					t.Fatalf("trailer %v", s.Trailer())
				}
			} else if st := status.Convert(err); st.Code() != tt.wantCode || st.Message() != tt.wantMsg {
				t.Fatalf("end: %v, want %s %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections for %d streams, want one kept", n, len(tests))
	}
	codec.mu.Lock()
	defer codec.mu.Unlock()
	if len(codec.stamps) != 3*len(tests) {
		t.Fatalf("%d stamps, want %d", len(codec.stamps), 3*len(tests))
	}
	// The kernel stamps the first segments after SO_TIMESTAMPNS is first set in the process
	// only once its static key is on (the codec then keeps its own clock): the last stream's
	// messages must all have a stamp.
	for i, at := range codec.stamps {
		if at.IsZero() && i < len(codec.stamps)-3 {
			continue
		}
		if at.IsZero() || time.Since(at) > time.Minute || time.Since(at) < 0 {
			t.Errorf("message %d: receive stamp %v", i, at)
		}
	}
}

// TestCancelKeepsConnection cancels a stream blocked in Recv: Recv returns Canceled, the server
// sees the stream end, and the next stream runs on the same connection.
func TestCancelKeepsConnection(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	c, codec := newConn(t, Config{Target: srv.addr})
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := openADS(ctx, c, codec)
		if err != nil {
			t.Fatal(err)
		}
		echo(t, s, "v")
		errc := make(chan error, 1)
		go func() {
			_, err := s.Recv()
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond)
		cancel()
		select {
		case err := <-errc:
			if status.Code(err) != codes.Canceled {
				t.Fatalf("stream %d: Recv after cancel: %v, want Canceled", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d: Recv still blocked 10 s after cancel", i)
		}
		if err := s.Send(req("v", 10, 0)); err != io.EOF {
			t.Fatalf("stream %d: Send after cancel: %v, want io.EOF", i, err)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestServerGoneThenBack: the server stops (Unavailable), a new stream while it is down fails to
// connect (Unavailable), and once it is back the next stream dials a new connection.
func TestServerGoneThenBack(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	c, codec := newConn(t, Config{Target: srv.addr})
	ctx := context.Background()
	s, err := openADS(ctx, c, codec)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, s, "v")
	srv.srv.Stop()
	if _, err := s.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Recv after the server stopped: %v, want Unavailable", err)
	}
	if _, err := openADS(ctx, c, codec); status.Code(err) != codes.Unavailable {
		t.Fatalf("a stream while the server is down: %v, want Unavailable", err)
	}
	back := startServer(t, srv.addr)
	s, err = openADS(ctx, c, codec)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, s, "v2") // after the server came back
	if back.conns.Load() != 1 {
		t.Errorf("the server that came back saw %d connections, want 1", back.conns.Load())
	}
}

// TestGracefulStopDrains: GracefulStop's GOAWAY lets the open stream finish; the next stream
// goes to a new connection.
func TestGracefulStopDrains(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	c, codec := newConn(t, Config{Target: srv.addr})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := openADS(ctx, c, codec)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, s, "v")
	stopped := make(chan struct{})
	go func() { srv.srv.GracefulStop(); close(stopped) }()
	// The stream still works while the server drains.
	time.Sleep(50 * time.Millisecond)
	echo(t, s, "v2") // during the drain
	if err := c.t.reusable(); err == nil {
		t.Error("the connection takes new streams after GOAWAY")
	}
	cancel()
	<-stopped
}

func TestErrors(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	t.Run("dial refused", func(t *testing.T) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := lis.Addr().String()
		lis.Close()
		c, codec := newConn(t, Config{Target: addr})
		if _, err := openADS(context.Background(), c, codec); status.Code(err) != codes.Unavailable {
			t.Fatalf("%v, want Unavailable", err)
		}
	})
	t.Run("message above the maximum", func(t *testing.T) {
		c, codec := newConn(t, Config{Target: srv.addr, MaxRecvMsgSize: 1000})
		s, err := openADS(context.Background(), c, codec)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(req("v", 5000, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("%v, want ResourceExhausted", err)
		}
	})
	t.Run("unknown method", func(t *testing.T) {
		c, codec := newConn(t, Config{Target: srv.addr})
		s, err := c.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/no.Such/Method", grpc.ForceCodecV2(codec))
		if err != nil {
			t.Fatal(err)
		}
		// A trailers-only response: no headers, and the status from RecvMsg.
		if md, err := s.Header(); md != nil || err != nil {
			t.Fatalf("Header of a trailers-only response: %v, %v; want nil, nil", md, err)
		}
		if err := s.RecvMsg(&discoveryv3.DiscoveryResponse{}); status.Code(err) != codes.Unimplemented {
			t.Fatalf("%v, want Unimplemented", err)
		}
	})
	t.Run("second stream while one is open", func(t *testing.T) {
		c, codec := newConn(t, Config{Target: srv.addr})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := openADS(ctx, c, codec); err != nil {
			t.Fatal(err)
		}
		if _, err := openADS(ctx, c, codec); status.Code(err) != codes.Unavailable {
			t.Fatalf("%v, want Unavailable", err)
		}
	})
	t.Run("bad target", func(t *testing.T) {
		if _, err := New(Config{Target: "no-port"}); err == nil || !strings.Contains(err.Error(), "host:port") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("invoke", func(t *testing.T) {
		c, _ := newConn(t, Config{Target: srv.addr})
		if err := c.Invoke(context.Background(), "/x/y", nil, nil); status.Code(err) != codes.Unimplemented {
			t.Fatalf("%v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		c, codec := newConn(t, Config{Target: srv.addr})
		c.Close()
		if _, err := openADS(context.Background(), c, codec); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("%v, want an error", err)
		}
	})
}

func TestEncodeTimeout(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "0n"}, {time.Second, "1000000u"}, {200 * time.Second, "200000m"}, {100 * time.Hour, "360000S"}} {
		if got := encodeTimeout(tt.d); got != tt.want {
			t.Errorf("encodeTimeout(%s) = %s, want %s", tt.d, got, tt.want)
		}
	}
	if got := decodeGrpcMessage("a%25b%zz"); got != "a%b%zz" {
		t.Errorf("decodeGrpcMessage: %q", got)
	}
}

func TestPoolTiers(t *testing.T) {
	p := NewPool()
	for _, size := range []int{0, 1, 256, 257, 32 << 10, 32<<10 + 1, 16 << 20, 16<<20 + 1} {
		b := p.Get(size)
		if len(*b) != size {
			t.Fatalf("Get(%d): length %d", size, len(*b))
		}
		if c := cap(*b); size > 0 && c > 2*max(size, 256) {
			t.Errorf("Get(%d): capacity %d, want at most %d", size, c, 2*max(size, 256))
		}
		(*b)[:cap(*b)][cap(*b)-1] = 7 // the whole capacity is usable
		p.Put(b)
		if again := p.Get(size); cap(*again) < size || len(*again) != size {
			t.Fatalf("Get(%d) after Put: %d/%d", size, len(*again), cap(*again))
		}
	}
	small := make([]byte, 10, 300) // not a tier's capacity: dropped
	p.Put(&small)
}
