package sinks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/internal/mcp"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
)

// MCPOptions configures an MCP sink.
type MCPOptions struct {
	// Listen is the address the MCP server listens on (host:port; port 0 picks one).
	Listen string
	// MaxSendBytes bounds one response (default 256 MiB; a type's full state goes in one).
	MaxSendBytes int
	// Logger receives NACKs from subscribers; nil discards them.
	Logger *slog.Logger
	// Superseded and NACKs, when set, count as Stats does (metric hooks: a prometheus.Counter
	// fits).
	Superseded, NACKs mcp.Counter
}

// MCP serves the simulated mesh over MCP (Istio's MCP over xDS, what an `xds://` config
// source of istiod or of our control plane reads) to any number of subscribed control planes.
// Each response is the full state of its type, with a content hash as each object's version;
// every requested type is answered, empty when the mesh has none of it. Apply hands the
// event's new state to every subscribed stream, so t0 (taken when Apply returns) is when the
// change was handed to every subscriber; each stream sends on its own goroutine and keeps at
// most one pending state per type, so a slow subscriber skips intermediate states (counted
// in Stats().Superseded) instead of delaying the others.
type MCP struct {
	srv  *mcp.Server
	g    *grpc.Server
	lis  net.Listener
	wg   sync.WaitGroup
	once sync.Once
}

var _ simulator.Sink = (*MCP)(nil)

// NewMCP listens on opts.Listen and starts serving (an empty state until Init).
func NewMCP(opts MCPOptions) (*MCP, error) {
	if opts.Listen == "" {
		return nil, errors.New("mcp sink: no listen address given (--listen HOST:PORT)")
	}
	if opts.MaxSendBytes <= 0 {
		opts.MaxSendBytes = 256 << 20
	}
	lis, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("mcp sink: %w: pick a free address with --listen", err)
	}
	s := &MCP{srv: mcp.NewServer(mcp.ServerOptions{Logger: opts.Logger, Superseded: opts.Superseded, NACKs: opts.NACKs}), lis: lis,
		g: grpc.NewServer(grpc.MaxSendMsgSize(opts.MaxSendBytes))}
	s.srv.Register(s.g)
	s.wg.Go(func() { _ = s.g.Serve(lis) })
	return s, nil
}

// Addr is the address the sink serves on.
func (s *MCP) Addr() string { return s.lis.Addr().String() }

// Stats returns the server's counters (streams, responses sent, superseded, NACKs).
func (s *MCP) Stats() mcp.Stats { return s.srv.Stats() }

// Init publishes the initial topology.
func (s *MCP) Init(_ context.Context, initial []istioconfig.Config) error {
	if err := s.srv.Apply(pointers(initial), nil); err != nil {
		return fmt.Errorf("mcp sink: initial topology: %w", err)
	}
	return nil
}

// Apply publishes the event's upserts and deletes as one change.
func (s *MCP) Apply(_ context.Context, ev simulator.Event) error {
	if err := s.srv.Apply(pointers(ev.Upserts), ev.Deletes); err != nil {
		return fmt.Errorf("mcp sink: event %d (%s): %w", ev.ID, ev.Kind, err)
	}
	return nil
}

// Close stops serving: every stream ends.
func (s *MCP) Close() error {
	s.once.Do(func() {
		s.g.Stop()
		s.wg.Wait()
	})
	return nil
}
