package mcpsource

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	mcpapi "istio.io/api/mcp/v1alpha1"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/internal/mcp"
	"github.com/xdslab/xdslab/internal/syncbuf"
	"github.com/xdslab/xdslab/istioconfig"
)

// serve runs g on a loopback listener (addr "" picks a port) until the test ends or stop.
func serve(t *testing.T, g *grpc.Server, addr string) (string, func()) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	var err error
	for range 50 { // the port of a stopped server may take a moment to be free again
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	var once sync.Once
	stop := func() { once.Do(func() { g.Stop(); <-done }) }
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}

// startSource runs a source against addr into a new store until the test ends.
func startSource(t *testing.T, opts Options) (*Source, *config.Memory, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.BackoffBase == 0 {
		opts.BackoffBase, opts.BackoffMax = 20*time.Millisecond, 100*time.Millisecond
	}
	src, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	store := config.NewMemory(config.MemoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = store.Run(ctx) })
	wg.Go(func() {
		for range store.Events() {
		}
	})
	wg.Go(func() {
		if err := src.Run(ctx, store); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return src, store, logs
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hosts(store *config.Memory) string {
	var out []string
	for _, c := range store.List(istioconfig.KindServiceEntry, "") {
		out = append(out, c.Name+"="+strings.Join(c.Spec.(interface{ GetHosts() []string }).GetHosts(), "+"))
	}
	return strings.Join(out, ",")
}

// TestSourceFollowsServer: the source mirrors an MCP server's state (adds, updates, deletes),
// is synced once every collection was answered, and keeps the last good config while the
// server is gone, then catches up when it is back on the same address.
func TestSourceFollowsServer(t *testing.T) {
	srv := mcp.NewServer(mcp.ServerOptions{})
	if err := srv.Apply([]*istioconfig.Config{se("a", "a.com"), se("b", "b.com")}, nil); err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv.Register(g)
	addr, stop := serve(t, g, "")
	src, store, logs := startSource(t, Options{Addr: addr})
	select {
	case <-src.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced")
	}
	if got := hosts(store); got != "a=a.com,b=b.com" {
		t.Fatalf("store %q", got)
	}
	if c, _ := store.Get(istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "ns", Name: "a"}); c.Source != "xds://"+addr {
		t.Errorf("source %q", c.Source)
	}
	if err := srv.Apply([]*istioconfig.Config{se("a", "a2.com"), se("c", "c.com")}, []istioconfig.Key{se("b", "").Key()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "update", func() bool { return hosts(store) == "a=a2.com,c=c.com" })
	if st := srv.Stats(); st.NACKs != 0 {
		t.Errorf("server saw %d NACKs", st.NACKs)
	}

	stop() // the server goes away: the config stays
	eventually(t, "disconnect", func() bool { return !src.Status().Connected && src.Status().Disconnects > 0 })
	time.Sleep(50 * time.Millisecond)
	if got := hosts(store); got != "a=a2.com,c=c.com" {
		t.Fatalf("after losing the server: store %q", got)
	}
	if !strings.Contains(logs.String(), "MCP server lost; keeping the last good config") {
		t.Errorf("no log line for the lost server:\n%s", logs)
	}

	srv2 := mcp.NewServer(mcp.ServerOptions{})
	if err := srv2.Apply([]*istioconfig.Config{se("c", "c.com"), se("d", "d.com")}, nil); err != nil {
		t.Fatal(err)
	}
	g2 := grpc.NewServer()
	srv2.Register(g2)
	serve(t, g2, addr)
	eventually(t, "reconnect", func() bool { return hosts(store) == "c=c.com,d=d.com" })
}

// scripted is an ADS server that answers the first request of each stream with a fixed list
// of responses, then records what the client sends.
type scripted struct {
	discoverygrpc.UnimplementedAggregatedDiscoveryServiceServer
	script func(send func(*discoverygrpc.DiscoveryResponse) error) error
	mu     sync.Mutex
	reqs   []*discoverygrpc.DiscoveryRequest
}

func (s *scripted) StreamAggregatedResources(st discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.reqs = append(s.reqs, r)
			s.mu.Unlock()
		}
	}()
	if err := s.script(st.Send); err != nil {
		return err
	}
	<-st.Context().Done()
	return nil
}

func (s *scripted) nacks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.reqs {
		if r.ErrorDetail != nil {
			out = append(out, r.ErrorDetail.Message)
		}
	}
	return out
}

// allTypes answers every collection with good objects (for ServiceEntry: a and c).
func allTypes(t *testing.T, send func(*discoverygrpc.DiscoveryResponse) error) error {
	for _, u := range mcp.RequestTypeURLs() {
		r := &discoverygrpc.DiscoveryResponse{TypeUrl: u, VersionInfo: "1", Nonce: "n-" + u}
		if u == seURL {
			r.Resources = []*anypb.Any{enc(t, se("a", "a.com"), "1"), enc(t, se("c", "c.com"), "1")}
		}
		if err := send(r); err != nil {
			return err
		}
	}
	return nil
}

// TestSourceBadInput: each kind of bad input is logged naming the type and object, counted,
// NACKed, and leaves the rest of the state applied.
func TestSourceBadInput(t *testing.T) {
	undecodable, _ := anypb.New(&mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/a"},
		Body: &anypb.Any{TypeUrl: "type.googleapis.com/istio.networking.v1alpha3.ServiceEntry", Value: []byte{0xff}}})
	big := &anypb.Any{TypeUrl: mcp.ResourceTypeURL, Value: make([]byte, 2<<20)}
	tests := []struct {
		name     string
		then     []*discoverygrpc.DiscoveryResponse
		closeNow bool
		want     string // in the logs (and the NACK unless stream-level)
		hosts    string
		nack     bool
	}{
		{name: "unknown type", then: []*discoverygrpc.DiscoveryResponse{{TypeUrl: "example.com/v1/Thing", Nonce: "x", Resources: []*anypb.Any{enc(t, se("z", "z.com"), "1")}}},
			want: "example.com/v1/Thing", hosts: "a=a.com,c=c.com", nack: true},
		{name: "undecodable body", then: []*discoverygrpc.DiscoveryResponse{{TypeUrl: seURL, Nonce: "x", VersionInfo: "2", Resources: []*anypb.Any{undecodable, enc(t, se("c", "c2.com"), "2")}}},
			want: "networking.istio.io/v1/ServiceEntry ns/a: body does not decode", hosts: "a=a.com,c=c2.com", nack: true},
		{name: "duplicate name", then: []*discoverygrpc.DiscoveryResponse{{TypeUrl: seURL, Nonce: "x", VersionInfo: "2", Resources: []*anypb.Any{enc(t, se("a", "x.com"), "2"), enc(t, se("a", "y.com"), "2"), enc(t, se("c", "c.com"), "1")}}},
			want: "ns/a: name appears 2 times", hosts: "a=a.com,c=c.com", nack: true},
		{name: "response over the size limit", then: []*discoverygrpc.DiscoveryResponse{{TypeUrl: seURL, Nonce: "x", Resources: []*anypb.Any{big}}},
			want: "ResourceExhausted", hosts: "a=a.com,c=c.com"},
		{name: "close mid-stream", closeNow: true, want: "MCP server lost", hosts: "a=a.com,c=c.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var once sync.Once
			fake := &scripted{}
			fake.script = func(send func(*discoverygrpc.DiscoveryResponse) error) error {
				if err := allTypes(t, send); err != nil {
					return err
				}
				first := true
				once.Do(func() { first = false })
				if first { // later streams (reconnects) only restate the good state
					return nil
				}
				time.Sleep(50 * time.Millisecond)
				for _, r := range tt.then {
					if err := send(r); err != nil {
						return err
					}
				}
				if tt.closeNow {
					return context.Canceled // ends the stream with an error status
				}
				return nil
			}
			g := grpc.NewServer()
			discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, fake)
			addr, _ := serve(t, g, "")
			src, store, logs := startSource(t, Options{Addr: addr, MaxRecvBytes: 1 << 20})
			eventually(t, "rejection", func() bool { return strings.Contains(logs.String(), tt.want) })
			eventually(t, "state", func() bool { return hosts(store) == tt.hosts })
			time.Sleep(100 * time.Millisecond) // nothing else arrives
			if got := hosts(store); got != tt.hosts {
				t.Errorf("store %q, want %q", got, tt.hosts)
			}
			if tt.nack {
				nacks := fake.nacks()
				if len(nacks) != 1 || !strings.Contains(nacks[0], strings.TrimPrefix(tt.want, "networking.istio.io/v1/ServiceEntry ")) {
					t.Errorf("NACKs %q, want one with %q", nacks, tt.want)
				}
				if src.Status().Rejected == 0 {
					t.Error("rejection not counted")
				}
			} else if src.Status().Disconnects == 0 {
				t.Error("lost stream not counted")
			}
			select {
			case <-src.Synced():
			default:
				t.Error("not synced")
			}
		})
	}
}

// TestSource100MBResponse: with the default receive limit a 100 MB response fails the stream
// (gRPC's ResourceExhausted, logged and counted), the state stays, and the source reconnects.
func TestSource100MBResponse(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 100 MB")
	}
	var sent sync.Once
	fake := &scripted{}
	fake.script = func(send func(*discoverygrpc.DiscoveryResponse) error) error {
		if err := allTypes(t, send); err != nil {
			return err
		}
		var err error
		sent.Do(func() {
			huge := &anypb.Any{TypeUrl: mcp.ResourceTypeURL, Value: make([]byte, 100<<20)}
			err = send(&discoverygrpc.DiscoveryResponse{TypeUrl: seURL, Nonce: "big", VersionInfo: "2", Resources: []*anypb.Any{huge}})
		})
		return err
	}
	g := grpc.NewServer(grpc.MaxSendMsgSize(200 << 20))
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, fake)
	addr, _ := serve(t, g, "")
	src, store, logs := startSource(t, Options{Addr: addr})
	eventually(t, "the oversized response", func() bool {
		return strings.Contains(logs.String(), "ResourceExhausted") && src.Status().Rejected > 0
	})
	eventually(t, "reconnect", func() bool { return src.Status().Connected && hosts(store) == "a=a.com,c=c.com" })
}
