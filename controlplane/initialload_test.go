package controlplane_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
)

// slowSource delivers its initial content in two steps, with the server's debounce run out in
// between (step says when to go on), and is synced only after the second.
type slowSource struct {
	*registry.Memory
	step   chan struct{}
	synced chan struct{}
}

func (s *slowSource) Run(ctx context.Context, _ *config.Memory) error {
	s.SetService(&model.Service{Hostname: "first.load.svc.cluster.local", Namespace: "load",
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}})
	select {
	case <-s.step:
	case <-ctx.Done():
		return nil
	}
	s.SetService(&model.Service{Hostname: "second.load.svc.cluster.local", Namespace: "load",
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}})
	close(s.synced)
	<-ctx.Done()
	return nil
}

func (s *slowSource) Synced() <-chan struct{} { return s.synced }

// signalHandler closes hit the first time a record's message starts with prefix.
type signalHandler struct {
	slog.Handler
	prefix string
	once   *sync.Once
	hit    chan struct{}
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.once.Do(func() { close(h.hit) })
	}
	return h.Handler.Handle(ctx, r)
}

func (h signalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h signalHandler) WithGroup(g string) slog.Handler {
	h.Handler = h.Handler.WithGroup(g)
	return h
}

// TestNoSnapshotBeforeInitialLoad: a change a source delivers while it loads its initial
// content is not pushed on its own, even when the debounce runs out before the source has
// synced: the first snapshot is the initial push's, with everything loaded (a proxy that
// connects meanwhile waits for it). Before, the debounced change built a snapshot of part of
// the mesh, which proxies were served; istiod serves none before its caches have synced.
func TestNoSnapshotBeforeInitialLoad(t *testing.T) {
	src := &slowSource{Memory: registry.NewMemory("slow"), step: make(chan struct{}), synced: make(chan struct{})}
	opts := controlplanetest.Options(t)
	opts.Sources = []controlplane.Source{src}
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = time.Millisecond, 10*time.Millisecond
	hit := make(chan struct{})
	opts.Logger = slog.New(signalHandler{Handler: opts.Logger.Handler(), prefix: "push: before the initial load", once: &sync.Once{}, hit: hit})
	s := controlplanetest.NewServer(t, opts)

	// Wait until the first service's change has come out of the debouncer: either it was
	// left to the first push (logged) or, wrongly, it built a snapshot.
	deadline := time.After(30 * time.Second)
	for {
		if s.Snapshot().Seq != 0 {
			t.Fatalf("snapshot %d built from part of the initial load (%d services) before the source synced",
				s.Snapshot().Seq, s.Snapshot().ServiceCount())
		}
		select {
		case <-hit:
		case <-time.After(time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("the first service's change never came out of the debouncer")
		}
		break
	}
	close(src.step)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := s.WaitForSnapshot(ctx, func(sn *model.Snapshot) bool { return sn.Seq != 0 })
	if err != nil {
		t.Fatal(err)
	}
	if n := snap.ServiceCount(); n != 2 {
		t.Errorf("first snapshot holds %d services, want both of the initial load", n)
	}
}

// TestFirstSnapshotHoldsTheWholeDirectory: with a debounce too short to merge anything, the
// first snapshot still holds every object the config directory's initial read wrote: the
// initial push waits until the aggregate has applied all of the store's events (before, it
// took the view as it was when the directory source synced, and 2,000 entries came out as a few
// hundred).
func TestFirstSnapshotHoldsTheWholeDirectory(t *testing.T) {
	const n = 2000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: e%d, namespace: load}\nspec:\n  hosts: [e%d.example.com]\n  ports: [{number: 80, name: http, protocol: HTTP}]\n  resolution: DNS\n", i, i)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "entries.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = time.Microsecond, time.Microsecond
	s := controlplanetest.NewServer(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	snap, err := s.WaitForSnapshot(ctx, func(sn *model.Snapshot) bool { return sn.Seq != 0 })
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.ServiceCount(); got != n {
		t.Errorf("first snapshot holds %d services, want the directory's %d", got, n)
	}
}
