package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Counter is the metric hook the server counts into (a prometheus.Counter fits).
type Counter interface{ Inc() }

// ServerOptions configures a Server.
type ServerOptions struct {
	// Logger receives NACKs and stream errors; nil discards them.
	Logger *slog.Logger
	// MeshConfig, when set, is the one resource of every MeshConfig response (istiod sends its
	// mesh config); nil answers MeshConfig with an empty response.
	MeshConfig proto.Message
	// Authorize, when set, is asked about every stream's first request: an error ends the
	// stream with it (use a gRPC status).
	Authorize func(ctx context.Context, node *corev3.Node) error
	// Superseded counts responses a stream never received because a newer state of the same
	// type replaced them while it was still sending (its queue holds one state per type).
	Superseded Counter
	// NACKs counts requests that rejected a response (error_detail set).
	NACKs Counter
}

// Server serves a config state over MCP (SotW ADS, istiod's api generator protocol) to any
// number of streams. Apply changes the state; every stream subscribed to a changed type is
// marked and its own goroutine sends the type's full current state. A stream keeps at most one
// pending state per type, so a slow subscriber skips intermediate states (counted as
// Superseded) instead of delaying Apply or the other streams, and always ends with the latest.
type Server struct {
	opts ServerOptions

	mu      sync.Mutex
	types   map[string]*typeState // by type URL
	streams map[*stream]struct{}

	nonce      atomic.Uint64
	subscribed atomic.Uint64
	sent       atomic.Uint64
	superseded atomic.Uint64
	nacks      atomic.Uint64
}

type typeState struct {
	seq  uint64
	objs map[string]entry // by namespace/name
	// resources is the type's full state sorted by name, nil after a change until a stream
	// needs it; never modified once built (responses share it).
	resources []*anypb.Any
}

type entry struct {
	version string
	res     *anypb.Any
}

// stream is one subscriber; mu of the Server guards subs and dirty.
type stream struct {
	subs  map[string]bool // type URL → subscribed
	dirty map[string]bool // types whose state it has not been sent
	wake  chan struct{}   // cap 1
}

var _ discoverygrpc.AggregatedDiscoveryServiceServer = (*Server)(nil)

// NewServer returns a server with an empty state.
func NewServer(opts ServerOptions) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, types: map[string]*typeState{}, streams: map[*stream]struct{}{}}
}

// Register adds the ADS service to g.
func (s *Server) Register(g *grpc.Server) {
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, s)
}

// Stats are the server's counters.
type Stats struct {
	// Streams are open now; Subscribed counts every stream ever served.
	Streams                 int
	Subscribed              uint64
	Sent, Superseded, NACKs uint64
	Objects                 int
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.types {
		n += len(t.objs)
	}
	return Stats{Streams: len(s.streams), Subscribed: s.subscribed.Load(), Sent: s.sent.Load(), Superseded: s.superseded.Load(), NACKs: s.nacks.Load(), Objects: n}
}

// Apply upserts and deletes objects (versions are content hashes) and hands the new state of
// every changed type to every stream subscribed to it. It returns once all streams have been
// handed the change (they send it on their own goroutines). It implements sinks.ConfigApplier
// (simulator/sinks). A kind that is not a config collection is an error and nothing is applied.
func (s *Server) Apply(upserts []*istioconfig.Config, deletes []istioconfig.Key) error {
	type enc struct {
		typeURL, name, version string
		res                    *anypb.Any
	}
	encs := make([]enc, 0, len(upserts))
	for _, c := range upserts {
		t := TypeURL(c.Kind)
		if t == "" {
			return fmt.Errorf("mcp: %s: kind %s is not an MCP collection", c.Key(), c.Kind)
		}
		v, err := ContentVersion(c)
		if err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		a, err := Encode(c, v)
		if err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		encs = append(encs, enc{t, c.Namespace + "/" + c.Name, v, a})
	}
	for _, k := range deletes {
		if TypeURL(k.Kind) == "" {
			return fmt.Errorf("mcp: delete %s: kind %s is not an MCP collection", k, k.Kind)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := map[string]bool{}
	for _, e := range encs {
		ts := s.typeLocked(e.typeURL)
		if old, ok := ts.objs[e.name]; ok && old.version == e.version {
			continue
		}
		ts.objs[e.name] = entry{e.version, e.res}
		changed[e.typeURL] = true
	}
	for _, k := range deletes {
		t := TypeURL(k.Kind)
		ts := s.typeLocked(t)
		name := k.Namespace + "/" + k.Name
		if _, ok := ts.objs[name]; ok {
			delete(ts.objs, name)
			changed[t] = true
		}
	}
	for t := range changed {
		ts := s.types[t]
		ts.seq++
		ts.resources = nil // rebuilt by the first stream that sends it
		for st := range s.streams {
			if st.subs[t] {
				s.markLocked(st, t)
			}
		}
	}
	return nil
}

func (s *Server) typeLocked(t string) *typeState {
	ts := s.types[t]
	if ts == nil {
		ts = &typeState{objs: map[string]entry{}}
		s.types[t] = ts
	}
	return ts
}

func (s *Server) markLocked(st *stream, t string) {
	if st.dirty[t] {
		s.superseded.Add(1)
		if s.opts.Superseded != nil {
			s.opts.Superseded.Inc()
		}
		return
	}
	st.dirty[t] = true
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// DeltaAggregatedResources is not part of MCP over xDS.
func (s *Server) DeltaAggregatedResources(discoverygrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return status.Error(codes.Unimplemented, "MCP over xDS is served over SotW ADS only")
}

// StreamAggregatedResources serves one MCP stream.
func (s *Server) StreamAggregatedResources(ss discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	first, err := ss.Recv()
	if err != nil {
		return err
	}
	return s.Serve(ss.Context(), first, ss.Recv, ss.Send)
}

// Serve runs one stream whose first request has already been read (so that an ADS server can
// hand over streams it recognises as MCP); recv and send are the stream's.
func (s *Server) Serve(ctx context.Context, first *discoverygrpc.DiscoveryRequest,
	recv func() (*discoverygrpc.DiscoveryRequest, error), send func(*discoverygrpc.DiscoveryResponse) error) error {
	if s.opts.Authorize != nil {
		if err := s.opts.Authorize(ctx, first.GetNode()); err != nil {
			return err
		}
	}
	s.subscribed.Add(1)
	st := &stream{subs: map[string]bool{}, dirty: map[string]bool{}, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.streams[st] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, st)
		s.mu.Unlock()
	}()
	node := first.GetNode().GetId()
	s.request(st, node, first)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recvErr := make(chan error, 1)
	go func() {
		for {
			req, err := recv()
			if err != nil {
				recvErr <- err
				return
			}
			s.request(st, node, req)
		}
	}()
	for {
		select {
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-st.wake:
		}
		for _, r := range s.pending(st) {
			if err := send(r); err != nil {
				return err
			}
			s.sent.Add(1)
		}
	}
}

// request handles one request: a new subscription is answered with the type's current state
// (empty when it has none); an ACK is noted; a NACK is logged and counted, never retried.
func (s *Server) request(st *stream, node string, req *discoverygrpc.DiscoveryRequest) {
	t := req.GetTypeUrl()
	if e := req.GetErrorDetail(); e != nil {
		s.nacks.Add(1)
		if s.opts.NACKs != nil {
			s.opts.NACKs.Inc()
		}
		s.opts.Logger.Warn("MCP client rejected a response", "node", node, "type", t, "nonce", req.GetResponseNonce(), "err", e.GetMessage())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !st.subs[t] {
		st.subs[t] = true
		s.markLocked(st, t)
	}
}

// pending takes the responses a stream owes: the current state of each dirty type.
func (s *Server) pending(st *stream) []*discoverygrpc.DiscoveryResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	types := make([]string, 0, len(st.dirty))
	for t := range st.dirty {
		types = append(types, t)
	}
	clear(st.dirty)
	// MeshConfig first, as istiod sends it: a client may need it before the collections.
	slices.SortFunc(types, func(a, b string) int {
		return cmp.Or(-cmp.Compare(boolInt(a == MeshConfigTypeURL), boolInt(b == MeshConfigTypeURL)), cmp.Compare(a, b))
	})
	out := make([]*discoverygrpc.DiscoveryResponse, 0, len(types))
	for _, t := range types {
		r := &discoverygrpc.DiscoveryResponse{TypeUrl: t, Nonce: strconv.FormatUint(s.nonce.Add(1), 10)}
		switch ts := s.types[t]; {
		case t == MeshConfigTypeURL:
			r.VersionInfo = "1"
			if s.opts.MeshConfig != nil {
				a, err := anypb.New(s.opts.MeshConfig)
				if err == nil {
					r.Resources = []*anypb.Any{a}
				}
			}
		case ts != nil:
			r.VersionInfo = strconv.FormatUint(ts.seq, 10)
			r.Resources = ts.sorted()
		default:
			r.VersionInfo = "0"
		}
		out = append(out, r)
	}
	return out
}

// sorted returns the type's resources sorted by name, building the list after a change.
func (ts *typeState) sorted() []*anypb.Any {
	if ts.resources == nil {
		names := slices.Sorted(maps.Keys(ts.objs))
		res := make([]*anypb.Any, len(names))
		for i, n := range names {
			res[i] = ts.objs[n].res
		}
		ts.resources = res
	}
	return ts.resources
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
