package sinks

import (
	"context"
	"errors"
	"testing"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
)

// recordingStore records each Apply batch.
type recordingStore struct {
	batches [][2]int // upserts, deletes
	err     error
}

func (r *recordingStore) Apply(up []*istioconfig.Config, del []istioconfig.Key) error {
	r.batches = append(r.batches, [2]int{len(up), len(del)})
	return r.err
}

func TestInProcessSink(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.Topology.Services = 5
	cfg.Topology.Namespaces = 2
	sim, err := simulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := config.NewMemory(config.MemoryOptions{})
	sink, err := NewInProcess(store)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	initial := sim.Initial()
	if err := sink.Init(ctx, initial); err != nil {
		t.Fatal(err)
	}
	if got := store.Len(); got != len(initial) {
		t.Fatalf("store holds %d objects after Init, want %d", got, len(initial))
	}
	// Apply every event of the run; the store must then hold exactly the simulator's mesh.
	simtest.ApplyChurn(t, ctx, sim, sink)
	cur := sim.Current()
	if got := store.Len(); got != len(cur) {
		t.Fatalf("store holds %d objects after churn, want the simulator's %d", got, len(cur))
	}
	for _, c := range cur {
		got, ok := store.Get(c.Key())
		if !ok {
			t.Fatalf("store lacks %s", c.Key())
		}
		if !config.Equal(got, &c) {
			t.Fatalf("store's %s differs from the simulator's", c.Key())
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Apply(ctx, simulator.Event{ID: 1}); err == nil {
		t.Fatal("Apply after Close succeeded")
	}
}

func TestInProcessSinkBatchesAndErrors(t *testing.T) {
	if _, err := NewInProcess(nil); err == nil {
		t.Fatal("a nil store was accepted")
	}
	rec := &recordingStore{}
	sink, err := NewInProcess(rec)
	if err != nil {
		t.Fatal(err)
	}
	ev := simulator.Event{ID: 3, Kind: simulator.EndpointFlap, Upserts: make([]istioconfig.Config, 2), Deletes: make([]istioconfig.Key, 1)}
	if err := sink.Apply(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if len(rec.batches) != 1 || rec.batches[0] != [2]int{2, 1} {
		t.Fatalf("batches %v, want one of 2 upserts and 1 delete", rec.batches)
	}
	rec.err = errors.New("invalid ServiceEntry")
	err = sink.Apply(context.Background(), ev)
	if err == nil || !errors.Is(err, rec.err) {
		t.Fatalf("error %v does not wrap the store's", err)
	}
}
