package fleet

import (
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

var (
	soakClients  = flag.Int("fleet.soak.clients", 1000, "clients of BenchmarkChurnSoak")
	soakDuration = flag.Duration("fleet.soak.duration", time.Minute, "how long BenchmarkChurnSoak churns (issue 28: 10m)")
	soakProfile  = flag.String("fleet.soak.profile", "", "write BenchmarkChurnSoak's heap profile at the end of the soak to this file")
)

// BenchmarkChurnSoak runs -fleet.soak.clients realistic sidecars, one connection each, against
// pushServer for -fleet.soak.duration: an endpoint change pushed to every stream every 100 ms,
// and every client restarted (a new Envoy process: stream and connection closed, state
// dropped) every 20 s ± 50 %. It samples the live heap (after two GCs) and the goroutines once
// the fleet holds its config, then after each quarter of the soak, and reports:
//   - heap-growth-B/client: live heap at the end minus at the start, per client;
//   - max-heap-growth-B/client: the largest quarter's sample minus the start, per client;
//   - goroutine-growth: goroutines at the end minus at the start;
//   - responses/client: responses each client received in the soak.
//
// A fleet that leaks per response or per reconnect grows with the soak's length: compare
// heap-growth-B/client across durations.
func BenchmarkChurnSoak(b *testing.B) {
	if testing.Short() {
		b.Skip("1,000 clients for a minute: not under -short")
	}
	n := *soakClients
	srv := startPushServer(b, newPushMesh(b, 10))
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		f, err := New(Config{
			Target: srv.addr,
			Groups: []Group{{Name: "sidecars", Count: n, Identity: fakeenvoy.IdentityTemplate{Namespaces: 10},
				Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}},
			Ramp: 500, Seed: 1,
			Churn: Churn{Every: 20 * time.Second, Jitter: 0.5},
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Start(ctx); err != nil {
			b.Fatal(err)
		}
		waitFullConfig(b, f, n, 20*time.Millisecond)
		heap0, g0 := liveHeap(), runtime.NumGoroutine()
		r0 := f.Progress().Responses
		var maxHeap uint64
		var heapEnd uint64
		var gEnd int
		k := 0
		tick := time.NewTicker(100 * time.Millisecond)
		end := time.Now().Add(*soakDuration)
		quarter := *soakDuration / 4
		nextSample := time.Now().Add(quarter)
		for time.Now().Before(end) {
			<-tick.C
			srv.broadcast(b, groupEnvoy, k)
			k++
			if time.Now().After(nextSample) {
				nextSample = nextSample.Add(quarter)
				maxHeap = max(maxHeap, liveHeap())
			}
		}
		tick.Stop()
		heapEnd, gEnd = liveHeap(), runtime.NumGoroutine()
		if *soakProfile != "" {
			if w, err := os.Create(*soakProfile); err == nil {
				_ = pprof.WriteHeapProfile(w)
				w.Close()
			}
		}
		maxHeap = max(maxHeap, heapEnd)
		responses := f.Progress().Responses - r0
		if nacks := f.Progress().Nacks; nacks != 0 {
			b.Fatalf("%d NACKs of a valid mesh", nacks)
		}
		cancel()
		f.Stop()
		growth := func(v uint64) float64 { return (float64(v) - float64(heap0)) / float64(n) }
		b.ReportMetric(growth(heapEnd), "heap-growth-B/client")
		b.ReportMetric(growth(maxHeap), "max-heap-growth-B/client")
		b.ReportMetric(float64(gEnd-g0), "goroutine-growth")
		b.ReportMetric(float64(responses)/float64(n), "responses/client")
		b.ReportMetric(float64(heap0)/float64(n), "heap-B/client")
	}
}
