package fakeenvoy

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/probe"
)

type countHooks struct {
	probe.NopHooks
	full      atomic.Int64
	responses atomic.Int64
	done      chan struct{}
	want      int64
}

func (h *countHooks) Response(probe.ClientInfo, probe.ResponseInfo) { h.responses.Add(1) }
func (h *countHooks) FirstFullConfig(probe.ClientInfo, time.Time) {
	if h.full.Add(1) == h.want {
		close(h.done)
	}
}

// BenchmarkIdleClients connects 1,000 SotW clients over one shared connection to an
// in-process go-control-plane server, waits until all hold their first full config, and
// reports the heap and goroutine stack per idle client. Both include the server's per-stream
// state and the per-node snapshots, since both live in this process; the fleet benchmark
// measures the fleet alone.
func BenchmarkIdleClients(b *testing.B) {
	const n = 1000
	t := &testing.T{}
	for b.Loop() {
		srv := fetest.NewCPServerB(b)
		cc, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		h := &countHooks{done: make(chan struct{}), want: n}
		clients := make([]*Client, n)
		for i := range clients {
			c, err := NewClient(ClientConfig{Index: i, Node: IdentityTemplate{}.Node(i), Seed: uint64(i)}, h)
			if err != nil {
				b.Fatal(err)
			}
			clients[i] = c
			srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { _ = c.Run(ctx, func(context.Context) (grpc.ClientConnInterface, error) { return cc, nil }) })
		}
		select {
		case <-h.done:
		case <-time.After(2 * time.Minute):
			b.Fatalf("only %d of %d clients reached a full config", h.full.Load(), n)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/client")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/n, "stackB/client")
		cancel()
		wg.Wait()
		cc.Close()
		srv.Close()
	}
}
