package fleet

import (
	"context"
	"flag"
	"math"
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
// the fleet holds its config, then every twentieth of the soak, and reports:
//   - heap-growth-B/client: live heap at the end minus at the start, per client;
//   - max-heap-growth-B/client: the largest sample minus the start, per client;
//   - heap-slope-B/client/min and heap-slope-se-B/client/min: the least-squares slope of the
//     samples after the first quarter (the pools and the codec's memo fill in it) and its
//     standard error. One sample moves by kilobytes per client with where each client is in
//     its restart cycle; a leak per response or per reconnect shows as a slope several
//     standard errors above zero, and grows no matter where the soak stops;
//   - goroutine-growth: goroutines at the end minus at the start;
//   - responses/client: responses each client received in the soak.
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
		var xs, ys []float64 // minutes into the soak, live heap per client, after the first quarter
		k := 0
		tick := time.NewTicker(100 * time.Millisecond)
		began := time.Now()
		end := began.Add(*soakDuration)
		every := *soakDuration / 20
		nextSample := began.Add(every)
		sample := func() uint64 {
			h := liveHeap()
			if at := time.Since(began); at >= *soakDuration/4 {
				xs, ys = append(xs, at.Minutes()), append(ys, float64(h)/float64(n))
			}
			return h
		}
		for time.Now().Before(end) {
			<-tick.C
			srv.broadcast(b, groupEnvoy, k)
			k++
			if time.Now().After(nextSample) {
				nextSample = nextSample.Add(every)
				maxHeap = max(maxHeap, sample())
			}
		}
		tick.Stop()
		heapEnd, gEnd = sample(), runtime.NumGoroutine()
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
		if slope, se, ok := leastSquares(xs, ys); ok {
			b.ReportMetric(slope, "heap-slope-B/client/min")
			b.ReportMetric(se, "heap-slope-se-B/client/min")
		}
		b.ReportMetric(float64(gEnd-g0), "goroutine-growth")
		b.ReportMetric(float64(responses)/float64(n), "responses/client")
		b.ReportMetric(float64(heap0)/float64(n), "heap-B/client")
	}
}

// leastSquares fits y = a + slope·x and returns the slope and its standard error; ok is false
// with fewer than three points or no spread in x.
func leastSquares(xs, ys []float64) (slope, se float64, ok bool) {
	n := float64(len(xs))
	if len(xs) < 3 || len(xs) != len(ys) {
		return 0, 0, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	var rss float64
	for i := range xs {
		r := ys[i] - (my + slope*(xs[i]-mx))
		rss += r * r
	}
	return slope, math.Sqrt(rss / (n - 2) / sxx), true
}

func TestLeastSquares(t *testing.T) {
	tests := []struct {
		name      string
		xs, ys    []float64
		slope, se float64
		ok        bool
	}{
		{"a line", []float64{1, 2, 3, 4}, []float64{3, 5, 7, 9}, 2, 0, true},
		{"flat with noise", []float64{1, 2, 3, 4}, []float64{10, 12, 10, 12}, 0.4, 0.5656854, true},
		{"two points", []float64{1, 2}, []float64{1, 2}, 0, 0, false},
		{"no spread in x", []float64{2, 2, 2}, []float64{1, 2, 3}, 0, 0, false},
	}
	for _, tc := range tests {
		slope, se, ok := leastSquares(tc.xs, tc.ys)
		if ok != tc.ok || math.Abs(slope-tc.slope) > 1e-6 || math.Abs(se-tc.se) > 1e-6 {
			t.Errorf("%s: got %v ± %v (%v), want %v ± %v (%v)", tc.name, slope, se, ok, tc.slope, tc.se, tc.ok)
		}
	}
}
