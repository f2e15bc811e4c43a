package fleet

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
)

var (
	heapClients  = flag.Int("fleet.heap.clients", 500, "clients of BenchmarkFleetHeapPerClient")
	heapServices = flag.Int("fleet.heap.services", 1000, "services of BenchmarkFleetHeapPerClient's mesh (10 endpoints each)")
	heapProfile  = flag.String("fleet.heap.profile", "", "write BenchmarkFleetHeapPerClient's heap profile (after the churn) to this file")
	fullProfile  = flag.String("fleet.heap.cpuprofile", "", "write BenchmarkFleetHeapPerClient's CPU profile of the fleet taking its full config (from start to the last client's) to this file")
	churnProfile = flag.String("fleet.heap.churnprofile", "", "write BenchmarkFleetHeapPerClient's CPU profile of the fleet during the churn to this file")
	// serveMesh makes the test binary a control plane serving a mesh of that many services
	// (BenchmarkFleetHeapPerClient starts itself with it, so the fleet has its process alone).
	serveMesh = flag.Int("fleet.serve-mesh", 0, "internal: serve a control plane with a mesh of N services until stdin closes")
)

// BenchmarkFleetHeapPerClient runs a fleet of realistic SotW sidecars (policy.Nack.Realistic:
// every resource validated as Envoy does) against xdslab's control plane serving a mesh of
// 1,000 services × 10 endpoints: 3.1 MB of CDS+EDS+LDS+RDS per client (1.2, 1.5, 0.006 and
// 0.4 MB). The control plane
// runs in a child process (this test binary started with -fleet.serve-mesh), as in a split
// run, so every figure is the fleet's alone:
//   - heap-B/client: live heap once every client holds its full config and idles, minus the
//     heap before the fleet started, per client;
//   - stack-B/client: goroutine stacks in use at the same moment, minus before, per client;
//     idle-B/client is the two together (issue 28's target: ≤ 40 KiB);
//   - peak-heap-B/client: the highest heap in use (live and garbage not yet collected) sampled
//     every 10 ms while the fleet converges, minus the heap before, per client: what drives
//     the process's RSS;
//   - cpu-ms/client: process CPU (getrusage) from the start to the last first full config, per
//     client; cp-cpu-ms/client the control plane's (its process's) in the same window, and
//     full-config-cpu-ratio the first over the second (issue 28's target: ≤ 0.25);
//   - churn-peak-heap-B/client, churn-cpu-µs/response, churn-responses/client: the same while
//     the control plane then applies 100 endpoint flaps (10/s) and pushes them to every client;
//   - peak-rss-MiB: the process's peak resident set (getrusage maxrss; the whole process
//     lifetime, so run this benchmark alone);
//   - connect-failures/client: streams refused or failed before the full config (0 unless
//     something is wrong: the control plane admits every stream), whose retries both sides'
//     CPU would count.
func BenchmarkFleetHeapPerClient(b *testing.B) {
	if testing.Short() {
		b.Skip("a 1,000-service mesh and 500 clients: not under -short")
	}
	n := *heapClients
	srv := startMeshServer(b, *heapServices)
	for b.Loop() {
		runHeapFleet(b, srv, n)
	}
}

func runHeapFleet(b *testing.B, srv *meshServer, n int) {
	f, err := New(Config{
		Target: srv.addr,
		Groups: []Group{{Name: "sidecars", Count: n, Identity: fakeenvoy.IdentityTemplate{Namespaces: 10},
			Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}},
		Ramp: 250, Seed: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	heap0, stack0 := liveHeap(), stackInUse()
	cpu0, cp0 := cpuTime(), procCPU(b, srv.pid)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peak := samplePeakHeap()
	stopProfile := startCPUProfile(b, *fullProfile)
	if err := f.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer f.Stop()
	waitFullConfig(b, f, n, 20*time.Millisecond)
	cpu, cpCPU := cpuTime()-cpu0, procCPU(b, srv.pid)-cp0
	stopProfile()
	peakFull := peak()
	if nacks := f.Progress().Nacks; nacks != 0 {
		b.Fatalf("%d NACKs of a valid mesh", nacks)
	}
	// Retries would count in both sides' CPU: say how many there were.
	refused := f.Progress().ConnectFailures
	time.Sleep(time.Second) // let the last ACKs settle
	heap1, stack1 := liveHeap(), stackInUse()

	// Churn: endpoint flaps pushed to every client.
	resp0 := f.Progress().Responses
	cpu0 = cpuTime()
	peak = samplePeakHeap()
	stopProfile = startCPUProfile(b, *churnProfile)
	srv.churn(b)
	churnCPU := cpuTime() - cpu0
	stopProfile()
	peakChurn := peak()
	churnResp := f.Progress().Responses - resp0
	if *heapProfile != "" {
		if w, err := os.Create(*heapProfile); err == nil {
			_ = pprof.WriteHeapProfile(w)
			w.Close()
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	perClient := func(v uint64) float64 { return float64(v-min(v, heap0)) / float64(n) }
	b.ReportMetric(perClient(heap1), "heap-B/client")
	b.ReportMetric((float64(stack1)-float64(stack0))/float64(n), "stack-B/client")
	b.ReportMetric((float64(heap1)+float64(stack1)-float64(heap0)-float64(stack0))/float64(n), "idle-B/client")
	b.ReportMetric(perClient(peakFull), "peak-heap-B/client")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(n), "cpu-ms/client")
	b.ReportMetric(float64(cpCPU.Microseconds())/1e3/float64(n), "cp-cpu-ms/client")
	b.ReportMetric(float64(cpu)/float64(max(1, cpCPU)), "full-config-cpu-ratio")
	b.ReportMetric(perClient(peakChurn), "churn-peak-heap-B/client")
	b.ReportMetric(float64(churnCPU.Microseconds())/max(1, float64(churnResp)), "churn-cpu-µs/response")
	b.ReportMetric(float64(churnResp)/float64(n), "churn-responses/client")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MiB")
	b.ReportMetric(float64(refused)/float64(n), "connect-failures/client")
}

// startCPUProfile starts a CPU profile into file (none when file is empty) and returns what
// stops it.
func startCPUProfile(b *testing.B, file string) (stop func()) {
	if file == "" {
		return func() {}
	}
	w, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(w); err != nil {
		w.Close()
		b.Fatalf("%v (-test.cpuprofile and -fleet.heap.cpuprofile cannot run together)", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := w.Close(); err != nil {
			b.Error(err)
		}
	}
}

// procCPU returns the CPU time (user and system) process pid has used, from /proc/pid/stat.
func procCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("control plane CPU: %v", err)
	}
	// The command is in parentheses and may hold spaces: the fields follow the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		tb.Fatalf("control plane CPU: short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("control plane CPU: /proc/%d/stat: %v %v", pid, err1, err2)
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// samplePeakHeap samples the heap in use (live and not yet collected) every 10 ms until the
// returned function is called, which returns the highest sample.
func samplePeakHeap() func() uint64 {
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak.Store(max(peak.Load(), s[0].Value.Uint64()))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// startMeshServer starts this test binary as a control plane serving a mesh of services
// services × 10 endpoints and returns its ADS address; the child exits when the benchmark
// ends (its stdin closes).
type meshServer struct {
	pid  int
	addr string
	in   io.Writer
	out  *bufio.Scanner
}

// churn makes the child apply one churn phase and waits until it has.
func (s *meshServer) churn(b *testing.B) {
	if _, err := fmt.Fprintln(s.in, "churn"); err != nil {
		b.Fatal(err)
	}
	for s.out.Scan() {
		if s.out.Text() == "done" {
			return
		}
	}
	b.Fatalf("mesh server exited during churn: %v", s.out.Err())
}

func startMeshServer(b *testing.B, services int) *meshServer {
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
			return &meshServer{pid: cmd.Process.Pid, addr: a, in: stdin, out: sc}
		}
	}
	b.Fatalf("mesh server exited before serving: %v", sc.Err())
	return nil
}

// serveMeshMain is the child's main: a control plane with a mesh of services × 10 endpoints,
// its ADS address on stdout, until stdin closes.
func serveMeshMain(services int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, sim, err := startMeshControlPlane(ctx, services)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	fmt.Printf("ADS %s\n", srv.GRPCAddr())
	// Each line "churn" on stdin applies the simulator's next heapChurnEvents events (endpoint
	// flaps), paced on their schedule from now, then answers "done".
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "churn" {
			continue
		}
		start := time.Now()
		var first time.Duration
		for i := 0; i < heapChurnEvents; {
			ev, ok, err := sim.Next()
			if err != nil || !ok {
				fmt.Fprintln(os.Stderr, "churn:", err, ok)
				return 1
			}
			if ev.Skip != "" {
				continue
			}
			if i == 0 {
				first = ev.Scheduled
			}
			time.Sleep(time.Until(start.Add(ev.Scheduled - first)))
			up := make([]*istioconfig.Config, len(ev.Upserts))
			for j := range ev.Upserts {
				up[j] = &ev.Upserts[j]
			}
			if err := srv.ConfigStore().Apply(up, ev.Deletes); err != nil {
				fmt.Fprintln(os.Stderr, "churn:", err)
				return 1
			}
			i++
		}
		time.Sleep(2 * time.Second) // the debounce window and the last pushes
		fmt.Println("done")
	}
	return 0
}

// startMeshControlPlane starts, in process, a control plane serving a mesh of services × 10
// endpoints (and no admission limit: the benchmarks ramp their clients faster than the
// default 25 streams a second of a 2-core machine, and a refused stream's retries are not the
// cost of taking a full config), once it has built the mesh's snapshot. The simulator's next
// events are endpoint flaps, 10 a second.
func startMeshControlPlane(ctx context.Context, services int) (*controlplane.Server, *simulator.Simulator, error) {
	sim, err := simulator.New(simulator.Config{Seed: 1, Duration: time.Hour, Topology: meshTopology(services),
		Churn: []simulator.Churn{{Kind: simulator.EndpointFlap, Rate: 10, Down: time.Second}}})
	if err != nil {
		return nil, nil, err
	}
	opts := controlplane.DefaultOptions()
	opts.GRPCAddr, opts.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.AdmissionRate = -1
	reg := prometheus.NewRegistry()
	opts.Registerer, opts.Gatherer = reg, reg
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := controlplane.New(opts)
	if err != nil {
		return nil, nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, nil, err
	}
	initial := sim.Initial()
	cfgs := make([]*istioconfig.Config, len(initial))
	for i := range initial {
		cfgs[i] = &initial[i]
	}
	if err := srv.ConfigStore().Apply(cfgs, nil); err != nil {
		srv.Stop()
		return nil, nil, err
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if _, err := srv.WaitForSnapshot(wctx, func(s *model.Snapshot) bool { return s.ServiceCount() >= services }); err != nil {
		srv.Stop()
		return nil, nil, err
	}
	return srv, sim, nil
}

// heapChurnEvents is how many endpoint flaps (10/s) one churn phase applies.
const heapChurnEvents = 100

func meshTopology(services int) simulator.Topology {
	t := simulator.DefaultTopology()
	t.Services = services
	t.EndpointsPerService = dist.Constant(10)
	return t
}
