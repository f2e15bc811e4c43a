package security

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// AuthFailuresName is the counter of refused xDS streams, labelled by gRPC code.
const AuthFailuresName = "xdslab_cp_xds_auth_failures_total"

// NewAuthFailures makes the refusal counter; the caller registers it.
func NewAuthFailures() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: AuthFailuresName,
		Help: "xDS streams refused: Unauthenticated (no or invalid credential) or PermissionDenied (namespace mismatch).",
	}, []string{"code"})
}

// maxLoggedPeers bounds the once-per-peer log memory; past it, refusals are only counted.
const maxLoggedPeers = 10000

// Authenticator identifies the peer of an xDS stream (SPIFFE client certificate first, then a
// bearer token) and authorizes it: the identity's namespace must equal the NAMESPACE metadata
// of the node in the stream's first request, as istiod checks.
type Authenticator struct {
	trustDomain string
	jwt         *JWTVerifier // nil: bearer tokens are not accepted
	failures    *prometheus.CounterVec
	log         *slog.Logger
	now         func() time.Time

	mu     sync.Mutex
	logged map[string]struct{}
}

// AuthConfig configures an Authenticator.
type AuthConfig struct {
	TrustDomain string
	JWT         *JWTVerifier
	Failures    *prometheus.CounterVec // nil: not counted
	Log         *slog.Logger           // nil: slog.Default()
	Now         func() time.Time       // nil: time.Now
}

// NewAuthenticator builds an Authenticator.
func NewAuthenticator(cfg AuthConfig) *Authenticator {
	a := &Authenticator{trustDomain: strings.ToLower(cfg.TrustDomain), jwt: cfg.JWT, failures: cfg.Failures, log: cfg.Log, now: cfg.Now, logged: map[string]struct{}{}}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

var errNoCredential = errors.New("no client certificate and no bearer token")

// Identify returns the peer's identity from its verified client certificate or bearer token.
func (a *Authenticator) Identify(ctx context.Context) (Identity, error) {
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			leaf := ti.State.VerifiedChains[0][0]
			if len(leaf.URIs) != 1 {
				return Identity{}, errors.New("client certificate must carry exactly one URI SAN (a SPIFFE id)")
			}
			id, err := ParseSPIFFE(leaf.URIs[0].String())
			if err != nil {
				return Identity{}, err
			}
			if id.TrustDomain != a.trustDomain {
				return Identity{}, errors.New("client certificate trust domain " + id.TrustDomain + " is not " + a.trustDomain)
			}
			return id, nil
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		tok, ok := strings.CutPrefix(v, "Bearer ")
		if !ok {
			continue
		}
		if a.jwt == nil {
			return Identity{}, errors.New("bearer tokens are not accepted (no JWKS configured)")
		}
		id, err := a.jwt.Verify(tok, a.now())
		if err != nil {
			return Identity{}, err
		}
		if id.TrustDomain != a.trustDomain {
			return Identity{}, errors.New("token trust domain " + id.TrustDomain + " is not " + a.trustDomain)
		}
		return id, nil
	}
	return Identity{}, errNoCredential
}

// StreamInterceptor refuses unauthenticated streams before the handler runs and checks the
// node of the first request against the identity.
func (a *Authenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		id, err := a.Identify(ss.Context())
		if err != nil {
			return a.refuse(ss.Context(), codes.Unauthenticated, err.Error())
		}
		return handler(srv, &authzStream{ServerStream: ss, a: a, id: id, ctx: ContextWithIdentity(ss.Context(), id)})
	}
}

func (a *Authenticator) refuse(ctx context.Context, code codes.Code, why string) error {
	if a.failures != nil {
		a.failures.WithLabelValues(code.String()).Inc()
	}
	addr := "unknown"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		addr = p.Addr.String()
		if host, _, ok := strings.Cut(addr, ":"); ok && !strings.HasPrefix(addr, "[") {
			addr = host // one log line per client host, not per ephemeral port
		}
	}
	a.mu.Lock()
	_, seen := a.logged[addr]
	if !seen && len(a.logged) < maxLoggedPeers {
		a.logged[addr] = struct{}{}
	}
	a.mu.Unlock()
	if !seen {
		a.log.Warn("xds stream refused", "peer", addr, "code", code.String(), "reason", why)
	}
	return status.Error(code, why)
}

// nodeRequest is what DiscoveryRequest and DeltaDiscoveryRequest have in common.
type nodeRequest interface{ GetNode() *corev3.Node }

type authzStream struct {
	grpc.ServerStream
	a       *Authenticator
	id      Identity
	ctx     context.Context // the stream's context, carrying id
	checked bool
}

// Context carries the verified identity (IdentityFromContext), for the ADS server's SDS.
func (s *authzStream) Context() context.Context { return s.ctx }

type identityKey struct{}

// ContextWithIdentity returns ctx carrying the verified identity id.
func ContextWithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the identity the Authenticator verified for the stream whose
// context is ctx; ok is false on a stream it did not authenticate (the plaintext listener).
func IdentityFromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// RecvMsg checks the first request's node; only the first request must carry the node.
func (s *authzStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if s.checked {
		return nil
	}
	s.checked = true
	req, ok := m.(nodeRequest)
	if !ok {
		return s.a.refuse(s.Context(), codes.PermissionDenied, "first message carries no node")
	}
	fields := req.GetNode().GetMetadata().GetFields()
	ns := fields["NAMESPACE"].GetStringValue()
	if ns != s.id.Namespace {
		return s.a.refuse(s.Context(), codes.PermissionDenied, "identity "+s.id.String()+" may not act for a node in namespace \""+ns+"\"")
	}
	// As istiod: a node that names its service account must be that account.
	if sa := fields["SERVICE_ACCOUNT"].GetStringValue(); sa != "" && sa != s.id.ServiceAccount {
		return s.a.refuse(s.Context(), codes.PermissionDenied, "identity "+s.id.String()+" may not act for a node of service account \""+sa+"\"")
	}
	return nil
}
