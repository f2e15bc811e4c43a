package fleet

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/probe"
)

// BenchmarkFleet10k runs 10,000 SotW clients against one in-process go-control-plane server
// and reports:
//   - heap-B/idle-client: live heap after every client holds its full config and idles, minus
//     the heap before the fleet started, per client (fleet AND server side of each stream);
//   - cpu-µs/response: process CPU (fleet + server, getrusage) per response received while
//     each iteration pushes an endpoint change to every client (go-control-plane resends all
//     four types on a new snapshot version) and waits until every client observed it;
//   - allocs/response, alloc-B/response: heap allocations of the whole process (fleet, server
//     and the snapshot updates) over the same iterations, per response;
//   - convergence-ms: the slowest iteration's convergence (max push latency over 10,000), and
//     set-snapshots-ms the time the benchmark itself took to set the new snapshot for every
//     node (included in the latencies: t0 is taken before).
//
// Sub-benchmarks share connections (streams-per-conn) because 10,000 connections need 20,000
// file descriptors in one process; the per-client-conn case runs 9,000 clients to fit.
func BenchmarkFleet10k(b *testing.B) {
	if testing.Short() {
		b.Skip("10,000 clients: run with make bench (not under -short)")
	}
	for _, bc := range []struct {
		clients, streamsPerConn int
	}{{*benchClients, 16}, {min(*benchClients, 9000), 1}} {
		b.Run(fmt.Sprintf("clients=%d/streams-per-conn=%d", bc.clients, bc.streamsPerConn), func(b *testing.B) {
			benchFleet(b, bc.clients, bc.streamsPerConn)
		})
	}
}

var (
	benchClients     = flag.Int("fleet.clients", 10000, "clients of BenchmarkFleet10k")
	benchHeapProfile = flag.String("fleet.heapprofile", "", "write a heap profile of the idle fleet to this file")
)

func benchFleet(b *testing.B, n, streamsPerConn int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	cache := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	gs := grpc.NewServer(grpc.SharedWriteBuffer(true), grpc.ReadBufferSize(4<<10), grpc.WriteBufferSize(4<<10))
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, serverv3.NewServer(ctx, cache, nil))
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	f, err := New(Config{
		Target: lis.Addr().String(),
		Groups: []Group{{Name: "bench", Count: n, Identity: fakeenvoy.IdentityTemplate{Namespaces: 10}}},
		Ramp:   4000, StreamsPerConn: streamsPerConn, Seed: 1,
		DialOptions: []grpc.DialOption{grpc.WithReadBufferSize(4 << 10), grpc.WithWriteBufferSize(4 << 10)},
	})
	if err != nil {
		b.Fatal(err)
	}
	setAll := func(version string, res map[resource.Type][]types.Resource) {
		snap, err := cachev3.NewSnapshot(version, res)
		if err != nil {
			b.Fatal(err)
		}
		for _, fc := range f.clients {
			if err := cache.SetSnapshot(ctx, fc.c.NodeID(), snap); err != nil {
				b.Fatal(err)
			}
		}
	}
	res := benchResources(b, 0)
	setAll("v0", res)
	heap0 := liveHeap()

	if err := f.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer f.Stop()
	waitFullConfig(b, f, n, 50*time.Millisecond)
	time.Sleep(time.Second) // let the last ACKs settle
	heap1 := liveHeap()
	if *benchHeapProfile != "" {
		if w, err := os.Create(*benchHeapProfile); err == nil {
			_ = pprof.WriteHeapProfile(w)
			w.Close()
		}
	}

	var worst, setWorst time.Duration
	resp0 := f.Progress().Responses
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		h, err := f.Expect(probe.Expectation{EventID: uint64(i + 1), Kind: "endpoint-add",
			All: []probe.Predicate{{Op: probe.EndpointPresent, Resource: "c0", Address: "10.200.0.1", Port: uint32(1000 + i)}}})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		setAll(fmt.Sprintf("v%d", i+1), benchResources(b, i+1))
		setWorst = max(setWorst, time.Since(t0))
		if err := h.SetT0(t0); err != nil {
			b.Fatal(err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Minute)
		left, err := f.Matcher().Drain(dctx, 10*time.Millisecond)
		dcancel()
		if left != 0 || err != nil {
			b.Fatalf("iteration %d: %d clients never observed the change: %v", i, left, err)
		}
		worst = max(worst, f.Matcher().Results().Events[i].Convergence)
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	responses := f.Progress().Responses - resp0
	b.ReportMetric(float64(cpu.Microseconds())/float64(responses), "cpu-µs/response")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(responses), "allocs/response")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(responses), "alloc-B/response")
	b.ReportMetric(float64(responses)/float64(b.N), "responses/op")
	b.ReportMetric(float64(worst.Milliseconds()), "convergence-ms")
	b.ReportMetric(float64(setWorst.Milliseconds()), "set-snapshots-ms")
	pl := f.Matcher().Results().PushLatencyAll
	b.ReportMetric(float64(pl.ValueAtPercentile(50))/1e3, "push-p50-ms")
	b.ReportMetric(float64(pl.ValueAtPercentile(99))/1e3, "push-p99-ms")
	b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/idle-client")
	b.ReportMetric(float64(heap1)/float64(n), "total-heap-B/client")
}

// benchResources is a small mesh: 10 EDS clusters with 3 endpoints each, one listener with
// routes; version v adds endpoint 10.200.0.1:(1000+v-1) to c0.
func benchResources(b *testing.B, v int) map[resource.Type][]types.Resource {
	var clusters, clas []types.Resource
	for i := range 10 {
		name := fmt.Sprintf("c%d", i)
		clusters = append(clusters, fetest.EDSCluster(name))
		c := fetest.CLA(name, fmt.Sprintf("10.100.%d.1", i), 8080)
		c.Endpoints = append(c.Endpoints, fetest.CLA(name, fmt.Sprintf("10.100.%d.2", i), 8080).Endpoints...)
		c.Endpoints = append(c.Endpoints, fetest.CLA(name, fmt.Sprintf("10.100.%d.3", i), 8080).Endpoints...)
		if i == 0 && v > 0 {
			c.Endpoints = append(c.Endpoints, fetest.CLA(name, "10.200.0.1", uint32(1000+v-1)).Endpoints...)
		}
		clas = append(clas, c)
	}
	return map[resource.Type][]types.Resource{
		resource.ClusterType:  clusters,
		resource.EndpointType: clas,
		resource.ListenerType: {fetest.RDSListener(b, "l1", 15001, "r1")},
		resource.RouteType:    {fetest.Route("r1", "svc.example", "c0")},
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// stackInUse is the goroutine stacks' memory in use.
func stackInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitFullConfig waits (polling every poll, at most 5 minutes) until n of the fleet's clients
// hold a full config.
func waitFullConfig(b *testing.B, f *Fleet, n int, poll time.Duration) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for f.Progress().FullConfig < uint64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d clients reached a full config in 5 minutes (NACKs %d, connect failures %+v)",
				f.Progress().FullConfig, n, f.Progress().Nacks, f.Observer().Stats().ConnectFailures)
		}
		time.Sleep(poll)
	}
}
