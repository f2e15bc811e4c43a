package mcpsource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/registry"
	"github.com/xdslab/xdslab/internal/mcp"
)

// Counter and Gauge are the metric hooks (prometheus.Counter and prometheus.Gauge fit).
type (
	Counter interface{ Inc() }
	Gauge   interface{ Set(float64) }
)

// Defaults.
const (
	DefaultMaxRecvBytes = 64 << 20
	DefaultBackoffBase  = 500 * time.Millisecond
	DefaultBackoffMax   = 30 * time.Second
	// DefaultNodeID has the four parts istiod requires of a node id (type~ip~id~domain), as
	// Istio's own MCP client builds it.
	DefaultNodeID = "sidecar~127.0.0.1~xdslab-controlplane.istio-system~istio-system.svc.cluster.local"
)

// Options configures a Source.
type Options struct {
	// Addr is the MCP server, host:port.
	Addr string
	// CAFile, when set, turns TLS on: the server's certificate must chain to a CA in this PEM
	// file. Empty: plaintext.
	CAFile string
	// CertFile and KeyFile, with CAFile, are a client certificate for mTLS (the secure ADS
	// listener of an xdslab control plane authenticates MCP clients as it does proxies).
	CertFile, KeyFile string
	// TLS, when set, replaces the TLS settings above (tests, embedding programs).
	TLS *tls.Config
	// ServerName overrides the name the server's certificate is checked against (default: the
	// host of Addr).
	ServerName string
	// NodeID is the node id sent on the stream (default DefaultNodeID); Namespace its NAMESPACE
	// metadata (default istio-system, the root namespace istiod's api generator admits).
	NodeID, Namespace string
	// MaxRecvBytes bounds one response (default DefaultMaxRecvBytes); a larger one fails the
	// stream (logged, counted) and the source reconnects.
	MaxRecvBytes int
	// BackoffBase and BackoffMax bound the reconnect delay (doubling from the base, with
	// jitter: a delay d is drawn from [d/2, d)).
	BackoffBase, BackoffMax time.Duration
	// Logger receives the source's logs; nil discards them.
	Logger *slog.Logger
	// Rejected counts rejected objects and responses (xdslab_cp_mcp_rejected_total);
	// Disconnects counts streams lost (xdslab_cp_mcp_disconnects_total); Connected is 1 while a
	// stream is up (xdslab_cp_mcp_connected). Nil hooks are skipped.
	Rejected, Disconnects Counter
	Connected             Gauge
	// Dial, when set, replaces net dialing (tests).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// ParseURL reads an xds:// config source URL: xds://host:port, with optional query parameters
// caFile (TLS with that CA), certFile and keyFile (a client certificate) and serverName.
func ParseURL(raw string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Options{}, fmt.Errorf("config source %q: %w", raw, err)
	}
	if u.Scheme != "xds" {
		return Options{}, fmt.Errorf("config source %q: scheme %q is not xds", raw, u.Scheme)
	}
	if u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return Options{}, fmt.Errorf("config source %q: want xds://host:port (an MCP-over-xDS server), optionally ?caFile=ca.pem", raw)
	}
	o := Options{Addr: u.Host}
	for k, v := range u.Query() {
		switch k {
		case "caFile":
			o.CAFile = v[0]
		case "serverName":
			o.ServerName = v[0]
		case "certFile":
			o.CertFile = v[0]
		case "keyFile":
			o.KeyFile = v[0]
		default:
			return Options{}, fmt.Errorf("config source %q: unknown parameter %q: use caFile, certFile, keyFile or serverName", raw, k)
		}
	}
	return o, nil
}

// Source feeds the config store from one MCP server. It is a controlplane.Source with no
// services of its own (ServiceEntries become services in the aggregate).
type Source struct {
	opts   Options
	creds  credentials.TransportCredentials
	synced chan struct{}
	once   sync.Once

	mu     sync.Mutex
	status Status
}

// Status is what /debug and tests read.
type Status struct {
	Connected bool
	// Answered lists the collection type URLs answered at least once.
	Answered map[string]bool
	Objects  int
	// Rejected and Disconnects count as the metrics do; LastError is the latest rejection or
	// stream error.
	Rejected, Disconnects int
	LastError             string
}

// New checks opts and builds a Source; nothing runs until Run.
func New(opts Options) (*Source, error) {
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return nil, fmt.Errorf("mcp source: address %q: %w: want host:port", opts.Addr, err)
	}
	if opts.NodeID == "" {
		opts.NodeID = DefaultNodeID
	}
	if opts.Namespace == "" {
		opts.Namespace = "istio-system"
	}
	if opts.MaxRecvBytes <= 0 {
		opts.MaxRecvBytes = DefaultMaxRecvBytes
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = DefaultBackoffBase
	}
	if opts.BackoffMax < opts.BackoffBase {
		opts.BackoffMax = max(DefaultBackoffMax, opts.BackoffBase)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	creds := insecure.NewCredentials()
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("mcp source %s: CA file: %w", opts.Addr, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mcp source %s: CA file %s holds no PEM certificate", opts.Addr, opts.CAFile)
		}
		tc := &tls.Config{RootCAs: pool, ServerName: opts.ServerName, MinVersion: tls.VersionTLS12}
		if opts.CertFile != "" || opts.KeyFile != "" {
			cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("mcp source %s: client certificate: %w", opts.Addr, err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(tc)
	}
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	return &Source{opts: opts, creds: creds, synced: make(chan struct{}), status: Status{Answered: map[string]bool{}}}, nil
}

// Name identifies the source: xds://host:port.
func (s *Source) Name() string { return "xds://" + s.opts.Addr }

// Subscribe reports the source's (empty) service registry once.
func (s *Source) Subscribe(fn func(registry.Update)) { fn(registry.Update{}) }

// Synced is closed once every collection was answered at least once.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// Status returns a copy of the source's status.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Answered = make(map[string]bool, len(s.status.Answered))
	for k, v := range s.status.Answered {
		st.Answered[k] = v
	}
	return st
}

func (s *Source) update(fn func(*Status)) {
	s.mu.Lock()
	fn(&s.status)
	s.mu.Unlock()
}

// Run keeps the store in step with the server until ctx ends; it returns nil then. A lost
// stream is retried forever with backoff; the store keeps the last good config meanwhile.
func (s *Source) Run(ctx context.Context, store *config.Memory) error {
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(s.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(s.opts.MaxRecvBytes)),
	}
	if s.opts.Dial != nil {
		dialOpts = append(dialOpts, grpc.WithContextDialer(s.opts.Dial))
	}
	cc, err := grpc.NewClient(s.opts.Addr, dialOpts...)
	if err != nil {
		return fmt.Errorf("mcp source %s: %w", s.opts.Addr, err)
	}
	defer cc.Close()
	state := NewState(s.Name())
	attempt := 0
	for {
		got, err := s.stream(ctx, discoverygrpc.NewAggregatedDiscoveryServiceClient(cc), state, store)
		if ctx.Err() != nil {
			return nil
		}
		s.update(func(st *Status) { st.Connected = false; st.Disconnects++; st.LastError = err.Error() })
		if s.opts.Connected != nil {
			s.opts.Connected.Set(0)
		}
		if s.opts.Disconnects != nil {
			s.opts.Disconnects.Inc()
		}
		if got {
			attempt = 0
		}
		d := backoff(s.opts.BackoffBase, s.opts.BackoffMax, attempt)
		attempt++
		if status.Code(err) == codes.ResourceExhausted {
			s.reject()
		}
		s.opts.Logger.Warn("MCP server lost; keeping the last good config", "server", s.opts.Addr,
			"objects", state.Len(), "retryIn", d.Round(time.Millisecond), "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// backoff is the delay before reconnect attempt n (0-based): base·2ⁿ capped at max, drawn
// uniformly from its upper half so that many clients do not reconnect in step.
func backoff(base, maxD time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	return d/2 + rand.N(d/2+1)
}

func (s *Source) reject() {
	s.update(func(st *Status) { st.Rejected++ })
	if s.opts.Rejected != nil {
		s.opts.Rejected.Inc()
	}
}

// stream runs one ADS stream; got says whether any response arrived.
func (s *Source) stream(ctx context.Context, client discoverygrpc.AggregatedDiscoveryServiceClient, state *State, store *config.Memory) (got bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := client.StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	md, _ := structpb.NewStruct(map[string]any{"GENERATOR": "api", "NAMESPACE": s.opts.Namespace})
	node := &corev3.Node{Id: s.opts.NodeID, Metadata: md}
	versions := map[string]string{} // type URL → last accepted version (a NACK restates it)
	for i, t := range mcp.RequestTypeURLs() {
		req := &discoverygrpc.DiscoveryRequest{TypeUrl: t}
		if i == 0 {
			req.Node = node
		}
		if err := st.Send(req); err != nil {
			return false, sendErr(st, err)
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return got, err
		}
		if !got {
			got = true
			s.update(func(st *Status) { st.Connected = true })
			if s.opts.Connected != nil {
				s.opts.Connected.Set(1)
			}
			s.opts.Logger.Info("MCP server connected", "server", s.opts.Addr)
		}
		ack := &discoverygrpc.DiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(), VersionInfo: resp.GetVersionInfo()}
		if nack := s.handle(resp, state, store); nack != nil {
			ack.VersionInfo = versions[resp.GetTypeUrl()]
			ack.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: nack.Error()}
		} else {
			versions[resp.GetTypeUrl()] = resp.GetVersionInfo()
		}
		if err := st.Send(ack); err != nil {
			return got, sendErr(st, err)
		}
	}
}

// sendErr turns a failed Send into the stream's real status: gRPC reports io.EOF on Send when
// the server ended the stream, and the reason (Unauthenticated, …) on Recv.
func sendErr(st grpc.BidiStreamingClient[discoverygrpc.DiscoveryRequest, discoverygrpc.DiscoveryResponse], err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	if _, rerr := st.Recv(); rerr != nil {
		return rerr
	}
	return err
}

// handle applies one response; a non-nil error is the NACK's detail.
func (s *Source) handle(resp *discoverygrpc.DiscoveryResponse, state *State, store *config.Memory) error {
	t := resp.GetTypeUrl()
	if t == mcp.MeshConfigTypeURL {
		// xdslab has no mesh config of its own to take from a server: acknowledged, unused.
		return nil
	}
	r := state.Response(t, resp.GetResources())
	if len(r.Upserts) > 0 || len(r.Deletes) > 0 {
		if err := store.Apply(r.Upserts, r.Deletes); err != nil {
			// Decode validated every object as the store does, so this is not expected; the
			// state stays as it was, and the NACK says why.
			r.Rejected = append(r.Rejected, fmt.Errorf("%s: store refused the response: %w", t, err))
			s.rejected(t, r.Rejected)
			return r.Err()
		}
	}
	state.Commit(r)
	if r.Ignored > 0 {
		s.opts.Logger.Debug("MCP objects of a kind xdslab does not use were ignored", "type", t, "objects", r.Ignored)
	}
	if _, ok := mcp.Lookup(t); ok {
		s.answered(t)
	}
	s.update(func(st *Status) { st.Objects = state.Len() })
	if len(r.Upserts)+len(r.Deletes) > 0 {
		s.opts.Logger.Debug("MCP response applied", "type", t, "version", resp.GetVersionInfo(), "upserts", len(r.Upserts), "deletes", len(r.Deletes))
	}
	if len(r.Rejected) > 0 {
		s.rejected(t, r.Rejected)
		return r.Err()
	}
	return nil
}

func (s *Source) rejected(t string, errs []error) {
	for _, e := range errs {
		s.opts.Logger.Warn("MCP object rejected; its last good version is kept", "server", s.opts.Addr, "type", t, "err", e)
		s.reject()
	}
	s.update(func(st *Status) { st.LastError = errors.Join(errs...).Error() })
}

// answered marks a collection answered; Synced closes once all are.
func (s *Source) answered(t string) {
	col, _ := mcp.Lookup(t)
	s.mu.Lock()
	s.status.Answered[col.TypeURL()] = true
	// A server may answer under another version than asked (v1alpha3 for v1): count the kind.
	done := true
	for _, c := range mcp.Collections() {
		found := false
		for a := range s.status.Answered {
			if ac, _ := mcp.Lookup(a); ac.Group == c.Group && ac.Kind == c.Kind {
				found = true
				break
			}
		}
		if !found {
			done = false
			break
		}
	}
	s.mu.Unlock()
	if done {
		s.once.Do(func() {
			close(s.synced)
			s.opts.Logger.Info("MCP source synced: every collection answered", "server", s.opts.Addr)
		})
	}
}
