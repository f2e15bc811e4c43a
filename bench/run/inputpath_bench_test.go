package run

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// inputPath is one way the simulator's changes reach the control plane's config store.
type inputPath struct {
	name string
	// start returns the sink writing to the path and runs the path's reader into store until
	// ctx ends.
	start func(tb testing.TB, ctx context.Context, wg *sync.WaitGroup, store *config.Memory) simulator.Sink
}

var inputPaths = []inputPath{
	{"direct", func(tb testing.TB, _ context.Context, _ *sync.WaitGroup, store *config.Memory) simulator.Sink {
		s, err := sinks.NewInProcess(store)
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}},
	{"dir", func(tb testing.TB, ctx context.Context, wg *sync.WaitGroup, store *config.Memory) simulator.Sink {
		dir := tb.TempDir()
		s, err := sinks.NewDir(sinks.DirOptions{Dir: dir})
		if err != nil {
			tb.Fatal(err)
		}
		fs, err := config.NewFileSource(store, config.FileOptions{Dir: dir})
		if err != nil {
			tb.Fatal(err)
		}
		wg.Go(func() { _ = fs.Run(ctx) })
		<-fs.Synced()
		return s
	}},
	{"mcp", func(tb testing.TB, ctx context.Context, wg *sync.WaitGroup, store *config.Memory) simulator.Sink {
		s, err := sinks.NewMCP(sinks.MCPOptions{Listen: "127.0.0.1:0"})
		if err != nil {
			tb.Fatal(err)
		}
		src, err := mcpsource.New(mcpsource.Options{Addr: s.Addr()})
		if err != nil {
			tb.Fatal(err)
		}
		wg.Go(func() { _ = src.Run(ctx, store) })
		<-src.Synced()
		return s
	}},
}

// BenchmarkInputPath measures the input path of each config source: t0 (the sink's Apply
// returned: the change is in the source) → the control plane's config store emits the event
// for the last object the change touched. One op is one simulator event on a mesh of 200
// services; reported as input-p50-µs and input-p99-µs.
//
//	go test -tags vtprotobuf -run XXX -bench InputPath -benchtime 200x ./bench
func BenchmarkInputPath(b *testing.B) {
	for _, p := range inputPaths {
		b.Run(p.name, func(b *testing.B) {
			cfg := simulator.DefaultConfig()
			cfg.Topology.Services, cfg.Topology.Namespaces = 200, 5
			cfg.Duration = time.Hour
			sim, err := simulator.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			store := config.NewMemory(config.MemoryOptions{})
			wg.Go(func() { _ = store.Run(ctx) })
			seen := make(chan istioconfig.Key, 1<<16)
			wg.Go(func() {
				for ev := range store.Events() {
					seen <- ev.Key()
				}
			})
			sink := p.start(b, ctx, &wg, store)
			defer sink.Close()
			initial := sim.Initial()
			if err := sink.Init(ctx, initial); err != nil {
				b.Fatal(err)
			}
			waitKeys(b, seen, keysOf(initial, nil))
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				var ev simulator.Event
				for {
					if ev, _, err = sim.Next(); err != nil {
						b.Fatal(err)
					}
					if ev.Skip == "" {
						break
					}
				}
				if err := sink.Apply(ctx, ev); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				waitKeys(b, seen, keysOf(ev.Upserts, ev.Deletes))
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "input-p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "input-p99-µs")
		})
	}
}

func keysOf(up []istioconfig.Config, del []istioconfig.Key) map[istioconfig.Key]bool {
	out := map[istioconfig.Key]bool{}
	for _, c := range up {
		out[c.Key()] = true
	}
	for _, k := range del {
		out[k] = true
	}
	return out
}

// waitKeys reads store events until every key in want was seen (an upsert of an unchanged
// object emits no event: the simulator's events always change what they name).
func waitKeys(tb testing.TB, seen <-chan istioconfig.Key, want map[istioconfig.Key]bool) {
	tb.Helper()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	for len(want) > 0 {
		select {
		case k := <-seen:
			delete(want, k)
		case <-t.C:
			tb.Fatalf("%d changed objects never reached the config store", len(want))
		}
	}
}
