package sinks

import (
	"context"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
)

// TestMCPSink: two subscribers (our MCP config source) end with exactly the simulator's mesh
// after the whole churn, while a third subscriber that never reads does not hold them up (its
// skipped states are counted).
func TestMCPSink(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.Topology.Services = 20
	cfg.Topology.Namespaces = 3
	cfg.Duration /= 4
	sim, err := simulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewMCP(MCPOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The slow subscriber: asks for ServiceEntries, never reads a response.
	cc, err := grpc.NewClient(sink.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	slow, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := structpb.NewStruct(map[string]any{"GENERATOR": "api"})
	if err := slow.Send(&discoverygrpc.DiscoveryRequest{Node: &corev3.Node{Id: "slow", Metadata: md}, TypeUrl: "networking.istio.io/v1/ServiceEntry"}); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var stores []*config.Memory
	var sources []*mcpsource.Source
	for range 2 {
		store := config.NewMemory(config.MemoryOptions{})
		src, err := mcpsource.New(mcpsource.Options{Addr: sink.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = store.Run(ctx) })
		wg.Go(func() {
			for range store.Events() {
			}
		})
		wg.Go(func() { _ = src.Run(ctx, store) })
		stores, sources = append(stores, store), append(sources, src)
	}
	for _, src := range sources {
		select {
		case <-src.Synced(): // every type answered, though the mesh is still empty
		case <-time.After(20 * time.Second):
			t.Fatal("source never synced: not every requested type was answered")
		}
	}
	if err := sink.Init(ctx, sim.Initial()); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	kinds := simtest.ApplyChurn(t, ctx, sim, sink)
	t.Logf("churn %v applied in %v", kinds, time.Since(began))
	cur := sim.Current()
	for i, store := range stores {
		deadline := time.Now().Add(20 * time.Second)
		for {
			ok := store.Len() == len(cur)
			for _, c := range cur {
				got, found := store.Get(c.Key())
				want := c
				if found {
					want.Source = got.Source // the source stamps its own name
				}
				if !found || !config.Equal(got, &want) {
					ok = false
					break
				}
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscriber %d holds %d objects, want exactly the simulator's %d", i, store.Len(), len(cur))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := sources[i].Status(); st.Rejected != 0 {
			t.Errorf("subscriber %d rejected %d objects: %s", i, st.Rejected, st.LastError)
		}
	}
	st := sink.Stats()
	if st.Streams != 3 || st.NACKs != 0 || st.Objects != len(cur) {
		t.Errorf("stats %+v, want 3 streams, no NACKs, %d objects", st, len(cur))
	}
	t.Logf("sink stats: %+v; converged %v after the churn", st, time.Since(began))
}
