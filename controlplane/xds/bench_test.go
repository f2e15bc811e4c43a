package xds

import (
	"context"
	"fmt"
	"net"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fullConfig does the server's work for one sidecar's initial config: every type generated or
// taken from the cache and encoded into a response.
func fullConfig(b *testing.B, s *Server, st *pushState, p *model.Proxy) int {

	bytes := 0
	cds, err := s.resources(p, st, gen.ClusterType, nil, true)
	if err != nil {
		b.Fatal(err)
	}
	var eds []string
	for _, svc := range st.snap.Services() {
		for _, port := range svc.Ports {
			eds = append(eds, gen.ClusterName(gen.Outbound, port.Number, "", svc.Hostname))
		}
	}
	for _, t := range []struct {
		typeURL  string
		names    []string
		wildcard bool
	}{{gen.EndpointType, eds, false}, {gen.ListenerType, nil, true}, {gen.RouteType, []string{"8080"}, false}} {
		res, err := s.resources(p, st, t.typeURL, t.names, t.wildcard)
		if err != nil {
			b.Fatal(err)
		}
		bytes += encode(res)
	}
	return bytes + encode(cds)
}

func encode(res []*cache.Resource) int {
	r := &encodedResponse{resources: res, tail: responseTail("1", gen.ClusterType, "n")}
	bs, _ := newCodec().Marshal(r)
	defer bs.Free() // as the transport does once the bytes are written
	return bs.Len()
}

func benchProxy(i int) *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{fmt.Sprintf("10.250.%d.%d", i/250%250, i%250+1)},
		ID: fmt.Sprintf("pod-%d.ns-0", i), Namespace: "ns-0"}
}

// BenchmarkFullSidecarConfig: a full sidecar config (CDS, EDS, LDS, RDS) for 1,000 services ×
// 10 endpoints, cold (empty cache) and cached (another proxy of the same class got it first).
func BenchmarkFullSidecarConfig(b *testing.B) {
	snap := model.NewSnapshot(1, topology(1000, 10))
	for _, cached := range []bool{false, true} {
		name := "cold"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := New(testOptions())
			st := &pushState{snap: snap, fullGen: 1}
			if cached {
				fullConfig(b, s, st, benchProxy(0))
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			var bytes int
			for i := 0; b.Loop(); i++ {
				if !cached {
					s.cache = cache.New(nil)
				}
				bytes = fullConfig(b, s, st, benchProxy(i+1))
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/client")
			b.ReportMetric(float64(bytes), "bytes/client")
		})
	}
}

// lastSend records when the server last wrote a response (the end of a push: "debounce end →
// last send").
type lastSend struct {
	NopMetrics
	at    atomic.Int64
	acked atomic.Int64
}

func (l *lastSend) ResponseSent(string, int, time.Duration) { l.at.Store(time.Now().UnixNano()) }
func (l *lastSend) Acked(string, time.Duration)             { l.acked.Add(1) }

// quiesce waits (untimed) until the server has taken n ACKs, so that the next push starts from
// a quiet state, as a debounced push does, rather than overlapping the previous one's ACKs.
func (l *lastSend) quiesce(b *testing.B, n int64) {
	b.StopTimer()
	defer b.StartTimer()
	deadline := time.Now().Add(30 * time.Second)
	for l.acked.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d ACKs processed", l.acked.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// leanClient is a minimal ADS client for load: it subscribes like Envoy and ACKs everything,
// decoding nothing but the envelope.
type leanClient struct {
	stream discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
	eds    []string
	got    chan string // version of each EDS response received
}

func (l *leanClient) run() {
	for {
		r, err := l.stream.Recv()
		if err != nil {
			return
		}
		var names []string
		if r.TypeUrl == gen.EndpointType {
			names = l.eds
			select {
			case l.got <- r.VersionInfo:
			default:
			}
		}
		if err := l.stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: r.TypeUrl, VersionInfo: r.VersionInfo, ResponseNonce: r.Nonce, ResourceNames: names}); err != nil {
			return
		}
	}
}

// BenchmarkEDSPush1000Clients: one endpoint change pushed to 1,000 connected sidecars that watch
// every cluster of a 1,000-service mesh; measured from Push (the debounce's end) to the last
// client receiving its response.
func BenchmarkEDSPush1000Clients(b *testing.B) {
	const clients, streamsPerConn = 1000, 100
	in := topology(1000, 10)
	opts := testOptions()
	sent := &lastSend{}
	opts.Metrics = sent
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	g := grpc.NewServer(ServerOptions()...)
	s.Register(g)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Serve(lis) })
	wg.Go(func() { s.Run(ctx) })
	defer func() { cancel(); g.Stop(); wg.Wait() }()

	seq := uint64(1)
	s.Push(model.NewSnapshot(seq, in), &model.PushRequest{Full: true})
	var eds []string
	for _, svc := range in.Services {
		eds = append(eds, gen.ClusterName(gen.Outbound, 8080, "", svc.Hostname))
	}
	var conns []*grpc.ClientConn
	var leans []*leanClient
	for i := range clients {
		if i%streamsPerConn == 0 {
			cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)), experimental.WithBufferPool(FineBufferPool()), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(newCodec())))
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, cc)
		}
		stream, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(conns[len(conns)-1]).StreamAggregatedResources(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p := benchProxy(i)
		l := &leanClient{stream: stream, node: &corev3.Node{Id: "sidecar~" + p.IP() + "~" + p.ID + "~ns-0.svc.cluster.local"},
			eds: eds, got: make(chan string, 4)}
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: l.node, TypeUrl: gen.EndpointType, ResourceNames: eds}); err != nil {
			b.Fatal(err)
		}
		leans = append(leans, l)
		// Labelled so a CPU profile separates the clients from the server (-tagfocus side=harness).
		wg.Go(func() { pprof.Do(ctx, pprof.Labels("side", "harness"), func(context.Context) { l.run() }) })
	}
	defer func() {
		for _, cc := range conns {
			_ = cc.Close()
		}
	}()
	for _, l := range leans {
		<-l.got // initial EDS
	}
	sent.quiesce(b, clients)
	host := in.Services[0].Hostname
	cpu0 := cpuTime()
	var total, toLastSend time.Duration
	for i := 0; b.Loop(); i++ {
		in.Endpoints[host] = append(in.Endpoints[host][:9:9], endpoint(host, fmt.Sprintf("10.240.%d.%d", i/250%250, i%250+1)))
		seq++
		snap := model.NewSnapshot(seq, in)
		start := time.Now()
		s.Push(snap, &model.PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: host}: {}}})
		for _, l := range leans {
			if v := <-l.got; v != snap.Version {
				b.Fatalf("client got version %s, want %s", v, snap.Version)
			}
		}
		total += time.Since(start)
		toLastSend += time.Unix(0, sent.at.Load()).Sub(start)
		sent.quiesce(b, int64(clients*(i+2)))
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/push-received")
	b.ReportMetric(float64(toLastSend.Microseconds())/1e3/float64(b.N), "ms/push-sent")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N)/clients, "cpu-µs/client")
}
