package fleet

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/pprofcpu"
)

var (
	pushClients = flag.Int("fleet.push.clients", 1000, "clients of BenchmarkPushCPU (each fleet: the fake Envoys and the floor)")
	pushCount   = flag.Int("fleet.push.pushes", 20, "endpoint changes per measured window of BenchmarkPushCPU")
	pushProfile = flag.String("fleet.push.profile", "", "write the CPU profile of BenchmarkPushCPU's last fake-Envoy window to this file")
	pushWindows = flag.String("fleet.push.windows", "bdp", "BenchmarkPushCPU's server receive windows: bdp (grpc-go's default, as istiod: a PING and a WINDOW_UPDATE after each request read) or fixed (xdslab's control plane: none)")
)

// BenchmarkPushCPU measures what the fleet spends per pushed response, against a floor taken
// in the same iteration. A minimal ADS server (pushServer, goroutines labelled side=server)
// serves a small mesh (10 EDS clusters, one listener, one route) to two fleets of
// -fleet.push.clients clients, each client on its own connection:
//   - the fake Envoys (a Fleet of realistic sidecars, with its observer and matcher; labelled
//     side=harness);
//   - the floor (labelled side=floor): bare gRPC streams that read each response without
//     decoding it and answer with the ACK a fake Envoy sends for it, pre-encoded.
//
// Once both hold their config, the server pushes -fleet.push.pushes endpoint changes (one
// ClusterLoadAssignment, the same bytes to every stream) to one fleet at a time, waiting for
// every ACK of a push before the next; each fleet's window is CPU-profiled and its CPU split by
// label:
//   - cpu-µs/response: the fake Envoys' own CPU (side=harness) per response;
//   - floor-cpu-µs/response: the floor's, per response; floor-ratio is the first over the second;
//   - runtime-cpu-µs/response: CPU in the fake Envoys' window with no label (GC workers, timers:
//     shared by the fleet and the server), per response;
//   - server-cpu-µs/response: the server's, in the fake Envoys' window;
//   - segs/response and floor-segs/response: TCP segments sent in each window per response
//     (both directions: the protocol's four are the response, its ACK, the server's BDP PING
//     and the PING's ACK, two under -fleet.push.windows fixed; more are the kernel's own ACKs). The kernel counts them for the
//     whole network namespace: run the benchmark in one of its own (unshare -n, after
//     `ip link set lo up`) for figures that are the benchmark's alone. Left out where
//     /proc/net/snmp cannot be read.
func BenchmarkPushCPU(b *testing.B) {
	if testing.Short() {
		b.Skip("2,000 connections: not under -short")
	}
	n, pushes := *pushClients, *pushCount
	mesh := newPushMesh(b, 10)
	srv := startPushServer(b, mesh)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var f *Fleet
	pprof.Do(ctx, pprof.Labels("side", "harness"), func(ctx context.Context) {
		var err error
		f, err = New(Config{
			Target: srv.addr,
			Groups: []Group{{Name: "sidecars", Count: n, Identity: fakeenvoy.IdentityTemplate{Namespaces: 10},
				Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}},
			Ramp: 500, Seed: 1,
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Start(ctx); err != nil {
			b.Fatal(err)
		}
	})
	defer f.Stop()
	floor := startFloor(ctx, b, srv, mesh, n)
	defer floor.stop()
	waitFullConfig(b, f, n, 20*time.Millisecond)
	srv.waitSubscribed(b, groupEnvoy, n)
	srv.waitSubscribed(b, groupFloor, n)

	var envoy, flr, runtimeCPU, server time.Duration
	var responses int
	var segs, floorSegs int64
	segsKnown := true
	k := 0
	for b.Loop() {
		r0 := f.Progress().Responses
		s0, ok0 := tcpOutSegs()
		split := srv.window(b, *pushProfile, func() {
			for range pushes {
				srv.push(b, groupEnvoy, k, floor)
				k++
			}
		})
		responses += int(f.Progress().Responses - r0)
		s1, ok1 := tcpOutSegs()
		envoy += split["harness"]
		runtimeCPU += split["runtime"]
		server += split["server"]
		split = srv.window(b, "", func() {
			for range pushes {
				srv.push(b, groupFloor, k, floor)
				k++
			}
		})
		flr += split["floor"]
		s2, ok2 := tcpOutSegs()
		segsKnown = segsKnown && ok0 && ok1 && ok2
		segs += s1 - s0
		floorSegs += s2 - s1
	}
	if nacks := f.Progress().Nacks; nacks != 0 {
		b.Fatalf("%d NACKs of a valid mesh", nacks)
	}
	if want := b.N * pushes * n; responses < want {
		b.Fatalf("fleet received %d responses, want at least %d", responses, want)
	}
	per := func(d time.Duration, count int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(count) }
	floorResp := b.N * pushes * n
	b.ReportMetric(per(envoy, responses), "cpu-µs/response")
	b.ReportMetric(per(flr, floorResp), "floor-cpu-µs/response")
	b.ReportMetric(float64(envoy)/float64(responses)/(float64(flr)/float64(floorResp)), "floor-ratio")
	b.ReportMetric(per(runtimeCPU, responses), "runtime-cpu-µs/response")
	b.ReportMetric(per(server, responses), "server-cpu-µs/response")
	if segsKnown {
		b.ReportMetric(float64(segs)/float64(responses), "segs/response")
		b.ReportMetric(float64(floorSegs)/float64(floorResp), "floor-segs/response")
	}
}

// tcpOutSegs reads the network namespace's count of TCP segments sent (/proc/net/snmp,
// Tcp OutSegs); ok is false where it cannot be read.
func tcpOutSegs() (int64, bool) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, false
	}
	return parseOutSegs(string(b))
}

// parseOutSegs finds OutSegs in the Tcp header line of /proc/net/snmp's text and reads it from
// the values line that follows.
func parseOutSegs(snmp string) (int64, bool) {
	lines := strings.Split(snmp, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "Tcp: ") || !strings.HasPrefix(lines[i+1], "Tcp: ") {
			continue
		}
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j, name := range names {
			if name == "OutSegs" && j < len(values) {
				n, err := strconv.ParseInt(values[j], 10, 64)
				return n, err == nil
			}
		}
		return 0, false
	}
	return 0, false
}

// pushMesh is the bench's config, pre-encoded: the initial response of each type, and the
// endpoint change of push k (one assignment, cluster k mod clusters, a new address).
type pushMesh struct {
	clusters int
	initial  map[string][]byte // type URL → encoded DiscoveryResponse
	edsNames []string
}

func newPushMesh(tb testing.TB, clusters int) *pushMesh {
	m := &pushMesh{clusters: clusters, initial: map[string][]byte{}}
	var cds, eds []proto.Message
	for i := range clusters {
		name := fmt.Sprintf("outbound|80||svc%d.ns.svc.cluster.local", i)
		cds = append(cds, fetest.EDSCluster(name))
		eds = append(eds, fetest.CLA(name, fmt.Sprintf("10.1.%d.1", i), 8080))
		m.edsNames = append(m.edsNames, name)
	}
	m.initial[resource.ClusterType] = encodeResponse(tb, resource.ClusterType, "1", "i1", cds...)
	m.initial[resource.EndpointType] = encodeResponse(tb, resource.EndpointType, "1", "i1", eds...)
	m.initial[resource.ListenerType] = encodeResponse(tb, resource.ListenerType, "1", "i1", fetest.RDSListener(tb, "l1", 15001, "r1"))
	m.initial[resource.RouteType] = encodeResponse(tb, resource.RouteType, "1", "i1", fetest.Route("r1", "svc0.ns", m.edsNames[0]))
	return m
}

// change returns push k's response and the ACK a fake Envoy answers it with.
func (m *pushMesh) change(tb testing.TB, k int) (resp, ack []byte) {
	c := k % m.clusters
	a := fetest.CLA(m.edsNames[c], fmt.Sprintf("10.2.%d.%d", k/250%250, k%250+1), 8080)
	version, nonce := fmt.Sprintf("p%d", k), fmt.Sprintf("n%d", k)
	resp = encodeResponse(tb, resource.EndpointType, version, nonce, a)
	ack, err := proto.Marshal(&discoveryv3.DiscoveryRequest{
		VersionInfo: version, ResponseNonce: nonce, TypeUrl: resource.EndpointType, ResourceNames: m.edsNames,
		Node: &corev3.Node{Id: "floor"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return resp, ack
}

func encodeResponse(tb testing.TB, typeURL, version, nonce string, res ...proto.Message) []byte {
	r := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce}
	for _, m := range res {
		a, err := anypb.New(m)
		if err != nil {
			tb.Fatal(err)
		}
		r.Resources = append(r.Resources, a)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// rawMsg is an encoded message passed through rawCodec untouched.
type rawMsg struct{ b []byte }

// rawCodec writes rawMsgs as they are and decodes requests with proto (the server), or reads
// responses without decoding them (the floor: only their length).
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *rawMsg:
		return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
	case proto.Message:
		b, err := proto.Marshal(m)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *rawMsg:
		m.b = m.b[:0] // the floor reads the message and keeps nothing
		return nil
	case proto.Message:
		return proto.Unmarshal(data.Materialize(), m)
	}
	return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
}

const (
	groupEnvoy = iota
	groupFloor
)

// pushServer is a minimal SotW ADS server: it answers every initial request of a type with
// the mesh's response and pushes endpoint changes to one group of streams on demand, counting
// their ACKs. Streams whose node id starts with "floor" are the floor's.
type pushServer struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	addr string
	mesh *pushMesh
	srv  *grpc.Server

	mu      sync.Mutex
	streams [2][]chan *rawMsg
	subs    [2]atomic.Int64 // streams that ACKed their initial EDS response
	nacks   atomic.Int64
	acked   [2]atomic.Int64 // ACKs of the current push's nonce
	nonce   atomic.Pointer[string]
	want    atomic.Int64
	reached chan struct{}
}

func startPushServer(tb testing.TB, mesh *pushMesh) *pushServer {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &pushServer{addr: lis.Addr().String(), mesh: mesh, reached: make(chan struct{}, 1)}
	opts := []grpc.ServerOption{grpc.ForceServerCodecV2(rawCodec{})}
	switch *pushWindows {
	case "bdp":
	case "fixed":
		opts = append(opts, grpc.InitialWindowSize(1<<20), grpc.InitialConnWindowSize(1<<20))
	default:
		tb.Fatalf("-fleet.push.windows %q: want bdp or fixed", *pushWindows)
	}
	s.srv = grpc.NewServer(opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s.srv, s)
	pprof.Do(context.Background(), pprof.Labels("side", "server"), func(context.Context) {
		go func() { _ = s.srv.Serve(lis) }()
	})
	tb.Cleanup(s.srv.Stop)
	return s
}

func (s *pushServer) StreamAggregatedResources(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	reqs := make(chan *discoveryv3.DiscoveryRequest, 16)
	go func() {
		defer close(reqs)
		for {
			r := &discoveryv3.DiscoveryRequest{}
			if err := st.RecvMsg(r); err != nil {
				return
			}
			reqs <- r
		}
	}()
	sends := make(chan *rawMsg, 64)
	group := -1
	for {
		select {
		case <-st.Context().Done():
			return nil
		case m := <-sends:
			if err := st.SendMsg(m); err != nil {
				return err
			}
		case r, ok := <-reqs:
			if !ok {
				return nil
			}
			if group < 0 {
				group = groupEnvoy
				if strings.HasPrefix(r.GetNode().GetId(), "floor") {
					group = groupFloor
				}
				s.mu.Lock()
				s.streams[group] = append(s.streams[group], sends)
				s.mu.Unlock()
				defer s.forget(group, sends)
			}
			switch {
			case r.GetErrorDetail() != nil:
				s.nacks.Add(1)
			case r.GetResponseNonce() == "":
				if b, ok := s.mesh.initial[r.GetTypeUrl()]; ok {
					if err := st.SendMsg(&rawMsg{b: b}); err != nil {
						return err
					}
				}
			case r.GetTypeUrl() == resource.EndpointType && r.GetResponseNonce() == "i1":
				s.subs[group].Add(1)
			case r.GetTypeUrl() == resource.EndpointType:
				if p := s.nonce.Load(); p != nil && *p == r.GetResponseNonce() {
					if s.acked[group].Add(1) == s.want.Load() {
						s.reached <- struct{}{}
					}
				}
			}
		}
	}
}

// forget removes a stream that ended from its group.
func (s *pushServer) forget(group int, sends chan *rawMsg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams[group] = slices.DeleteFunc(s.streams[group], func(c chan *rawMsg) bool { return c == sends })
}

// broadcast sends change k to every stream of group that has room for it, without waiting
// for ACKs (streams come and go under churn).
func (s *pushServer) broadcast(tb testing.TB, group, k int) {
	resp, _ := s.mesh.change(tb, k)
	m := &rawMsg{b: resp}
	s.mu.Lock()
	streams := slices.Clone(s.streams[group])
	s.mu.Unlock()
	for _, c := range streams {
		select {
		case c <- m:
		default:
		}
	}
}

// waitSubscribed waits until n streams of group ACKed their first EDS response.
func (s *pushServer) waitSubscribed(tb testing.TB, group, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for s.subs[group].Load() < int64(n) {
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d streams of group %d subscribed", s.subs[group].Load(), n, group)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// push sends change k to every stream of group and waits for all their ACKs.
func (s *pushServer) push(tb testing.TB, group, k int, floor *floorFleet) {
	resp, ack := s.mesh.change(tb, k)
	floor.ack.Store(&ack)
	nonce := fmt.Sprintf("n%d", k)
	s.mu.Lock()
	streams := s.streams[group]
	s.mu.Unlock()
	s.acked[group].Store(0)
	s.want.Store(int64(len(streams)))
	s.nonce.Store(&nonce)
	m := &rawMsg{b: resp}
	pprof.Do(context.Background(), pprof.Labels("side", "server"), func(context.Context) {
		for _, c := range streams {
			c <- m
		}
	})
	select {
	case <-s.reached:
	case <-time.After(2 * time.Minute):
		tb.Fatalf("push %d: %d of %d ACKs (NACKs %d)", k, s.acked[group].Load(), len(streams), s.nacks.Load())
	}
}

// window runs fn under a CPU profile and returns its CPU split by the label side (unlabelled
// samples under "runtime"), scaled to the process's CPU time (rusage) in the window.
func (s *pushServer) window(tb testing.TB, profile string, fn func()) map[string]time.Duration {
	var buf bytes.Buffer
	profiling := pprof.StartCPUProfile(&buf) == nil
	cpu0 := cpuTime()
	fn()
	total := cpuTime() - cpu0
	if !profiling {
		tb.Fatal("BenchmarkPushCPU takes its own CPU profile: run it without -cpuprofile")
	}
	pprof.StopCPUProfile()
	if profile != "" {
		if err := os.WriteFile(profile, buf.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	by, err := pprofcpu.ByLabel(buf.Bytes(), "side")
	if err != nil {
		tb.Fatal(err)
	}
	var sum time.Duration
	for _, d := range by {
		sum += d
	}
	out := map[string]time.Duration{}
	for k, d := range by {
		if sum > 0 {
			out[k] = time.Duration(float64(total) * float64(d) / float64(sum))
		}
	}
	return out
}

// floorFleet is n bare gRPC streams, each on its own connection dialled with the fleet's
// options, that read responses without
// decoding them and answer each push with the fake Envoy's ACK (ack), pre-encoded.
type floorFleet struct {
	ack  atomic.Pointer[[]byte]
	wg   sync.WaitGroup
	ccs  []*grpc.ClientConn
	stop func()
}

func startFloor(ctx context.Context, tb testing.TB, srv *pushServer, mesh *pushMesh, n int) *floorFleet {
	ff := &floorFleet{}
	ctx, cancel := context.WithCancel(ctx)
	subscribe := func(typeURL string, names []string) []byte {
		b, err := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names, Node: &corev3.Node{Id: "floor"}})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	initial := [][]byte{subscribe(resource.ClusterType, nil), subscribe(resource.EndpointType, mesh.edsNames)}
	// The ACK of the initial EDS response, which the server counts as subscribed.
	edsAck, err := proto.Marshal(&discoveryv3.DiscoveryRequest{TypeUrl: resource.EndpointType, VersionInfo: "1", ResponseNonce: "i1",
		ResourceNames: mesh.edsNames, Node: &corev3.Node{Id: "floor"}})
	if err != nil {
		tb.Fatal(err)
	}
	pool := newBufferPool() // the floor's connections are dialled as the fleet's
	pprof.Do(ctx, pprof.Labels("side", "floor"), func(ctx context.Context) {
		for range n {
			cc, err := grpc.NewClient(srv.addr, append(fleetDialOptions(pool),
				grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))...)
			if err != nil {
				tb.Fatal(err)
			}
			ff.ccs = append(ff.ccs, cc)
			ff.wg.Go(func() {
				st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
					"/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources")
				if err != nil {
					return
				}
				for _, b := range initial {
					if st.SendMsg(&rawMsg{b: b}) != nil {
						return
					}
				}
				var m rawMsg
				for i := 0; ; i++ {
					if st.RecvMsg(&m) != nil {
						return
					}
					switch {
					case i < 2: // the CDS and EDS responses, in either order
						if i == 1 && st.SendMsg(&rawMsg{b: edsAck}) != nil {
							return
						}
					default:
						if st.SendMsg(&rawMsg{b: *ff.ack.Load()}) != nil {
							return
						}
					}
				}
			})
		}
	})
	ff.stop = func() {
		cancel()
		for _, cc := range ff.ccs {
			cc.Close()
		}
		ff.wg.Wait()
	}
	return ff
}

func TestParseOutSegs(t *testing.T) {
	const snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n" +
		"Tcp: RtoAlgorithm RtoMin ActiveOpens OutSegs RetransSegs\nTcp: 1 200 12 98765 3\n" +
		"Udp: InDatagrams\nUdp: 4\n"
	for _, tt := range []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"count", snmp, 98765, true},
		{"no tcp", "Ip: Forwarding\nIp: 1\n", 0, false},
		{"header only", "Tcp: OutSegs\n", 0, false},
		{"short values", "Tcp: ActiveOpens OutSegs\nTcp: 12\n", 0, false},
		{"not a number", "Tcp: OutSegs\nTcp: x\n", 0, false},
	} {
		if got, ok := parseOutSegs(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
