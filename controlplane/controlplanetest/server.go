package controlplanetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/controlplane"
)

// Options returns controlplane.DefaultOptions adjusted for tests: both addresses on
// 127.0.0.1:0, a registry of the test's own, logs to the test's output, a 1s drain timeout.
func Options(t testing.TB) controlplane.Options {
	o := controlplane.DefaultOptions()
	o.GRPCAddr, o.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	o.DrainTimeout = time.Second // a test's stuck client must not hold its cleanup for the default
	reg := prometheus.NewRegistry()
	o.Registerer, o.Gatherer = reg, reg
	o.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return o
}

// NewServer creates and starts a control plane with opts (start from Options(t)). Empty
// addresses are replaced by 127.0.0.1:0, a nil Registerer by a fresh registry, a nil Logger by
// one writing to the test's output. The server is stopped, and its goroutines waited for, when
// the test ends.
func NewServer(t testing.TB, opts controlplane.Options) *controlplane.Server {
	t.Helper()
	def := Options(t)
	if opts.GRPCAddr == "" {
		opts.GRPCAddr = def.GRPCAddr
	}
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = def.MetricsAddr
	}
	if opts.Registerer == nil {
		opts.Registerer, opts.Gatherer = def.Registerer, def.Gatherer
	}
	if opts.Logger == nil {
		opts.Logger = def.Logger
	}
	s, err := controlplane.New(opts)
	if err != nil {
		t.Fatalf("controlplanetest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		cancel()
		t.Fatalf("controlplanetest: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		s.Stop()
	})
	return s
}
