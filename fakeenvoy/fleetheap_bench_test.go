package fakeenvoy

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/simulator"
)

var (
	heapClients  = flag.Int("fleet.heap.clients", 500, "clients of BenchmarkFleetHeapPerClient")
	heapServices = flag.Int("fleet.heap.services", 1000, "services of BenchmarkFleetHeapPerClient's mesh (10 endpoints each)")
	heapProfile  = flag.String("fleet.heap.profile", "", "write BenchmarkFleetHeapPerClient's heap profile (all clients idle with a full config) to this file")
	// serveMesh makes the test binary a control plane serving a mesh of that many services
	// (BenchmarkFleetHeapPerClient starts itself with it, so the fleet has its process alone).
	serveMesh = flag.Int("fleet.serve-mesh", 0, "internal: serve a control plane with a mesh of N services until stdin closes")
)

// BenchmarkFleetHeapPerClient runs a fleet of realistic SotW sidecars (NackPolicy.Realistic:
// every resource validated as Envoy does) against xdslab's control plane serving a mesh of
// 1,000 services × 10 endpoints, about 1 MB of CDS+EDS+LDS+RDS per client. The control plane
// runs in a child process (this test binary started with -fleet.serve-mesh), as in a split
// run, so every figure is the fleet's alone:
//   - heap-B/client: live heap once every client holds its full config and idles, minus the
//     heap before the fleet started, per client;
//   - peak-heap-B/client: the highest heap in use (live and garbage not yet collected) sampled
//     every 10 ms while the fleet converges, minus the heap before, per client: what drives
//     the process's RSS;
//   - cpu-ms/client: process CPU (getrusage) from the start to the last first full config, per
//     client;
//   - peak-rss-MiB: the process's peak resident set (getrusage maxrss; the whole process
//     lifetime, so run this benchmark alone).
func BenchmarkFleetHeapPerClient(b *testing.B) {
	if testing.Short() {
		b.Skip("a 1,000-service mesh and 500 clients: not under -short")
	}
	n := *heapClients
	addr := startMeshServer(b, *heapServices)
	for b.Loop() {
		runHeapFleet(b, addr, n)
	}
}

func runHeapFleet(b *testing.B, addr string, n int) {
	f, err := NewFleet(FleetConfig{
		Target: addr,
		Groups: []Group{{Name: "sidecars", Count: n, Identity: IdentityTemplate{Namespaces: 10},
			Client: ClientConfig{Nack: NackPolicy{Realistic: true}}}},
		Ramp: 250, Seed: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	heap0 := liveHeap()
	cpu0 := cpuTime()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peak atomic.Uint64
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()
	if err := f.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer f.Stop()
	deadline := time.Now().Add(5 * time.Minute)
	for f.Progress().FullConfig < uint64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d clients reached a full config in 5 minutes (NACKs %d)", f.Progress().FullConfig, n, f.Progress().Nacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cpu := cpuTime() - cpu0
	close(stopSampling)
	<-sampled
	if nacks := f.Progress().Nacks; nacks != 0 {
		b.Fatalf("%d NACKs of a valid mesh", nacks)
	}
	time.Sleep(time.Second) // let the last ACKs settle
	heap1 := liveHeap()
	if *heapProfile != "" {
		if w, err := os.Create(*heapProfile); err == nil {
			_ = pprof.WriteHeapProfile(w)
			w.Close()
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/client")
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), heap0))/float64(n), "peak-heap-B/client")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(n), "cpu-ms/client")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MiB")
	b.ReportMetric(float64(f.Progress().Responses)/float64(n), "responses/client")
}

// startMeshServer starts this test binary as a control plane serving a mesh of services
// services × 10 endpoints and returns its ADS address; the child exits when the benchmark
// ends (its stdin closes).
func startMeshServer(b *testing.B, services int) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$", fmt.Sprintf("-fleet.serve-mesh=%d", services))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("mesh server: %v", err)
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADS "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return a
		}
	}
	b.Fatalf("mesh server exited before serving: %v", sc.Err())
	return ""
}

// serveMeshMain is the child's main: a control plane with a mesh of services × 10 endpoints,
// its ADS address on stdout, until stdin closes.
func serveMeshMain(services int) int {
	sim, err := simulator.New(simulator.Config{Seed: 1, Duration: time.Second, Topology: meshTopology(services)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := controlplane.DefaultOptions()
	opts.GRPCAddr, opts.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	reg := prometheus.NewRegistry()
	opts.Registerer, opts.Gatherer = reg, reg
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := controlplane.New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	initial := sim.Initial()
	cfgs := make([]*model.Config, len(initial))
	for i := range initial {
		cfgs[i] = &initial[i]
	}
	if err := srv.ConfigStore().Apply(cfgs, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	_, err = srv.WaitForSnapshot(wctx, func(s *model.Snapshot) bool { return s.ServiceCount() >= services })
	wcancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADS %s\n", srv.GRPCAddr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

func meshTopology(services int) simulator.Topology {
	t := simulator.DefaultTopology()
	t.Services = services
	t.EndpointsPerService = dist.Constant(10)
	return t
}
