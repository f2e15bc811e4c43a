package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/security"
	"github.com/xdslab/xdslab/controlplane/xds"
)

// DefaultServerCertTTL is the lifetime of the secure ADS server's certificate; it is re-issued
// at half its lifetime, under connected clients.
const DefaultServerCertTTL = 24 * time.Hour

// SecureOptions configures the secure ADS listener (mTLS and JWT, issue 17). An empty Addr
// disables it; the plaintext GRPCAddr listener is unaffected either way.
type SecureOptions struct {
	// Addr is where the TLS ADS server listens (host:port; port 0 picks one).
	Addr string
	// CADir keeps the root CA (ca.pem, ca-key.pem); created with a new root when empty of both.
	CADir string
	// DNSNames and IPs are the server certificate's names; none means localhost, 127.0.0.1
	// and ::1.
	DNSNames []string
	IPs      []net.IP
	// JWKSFile, when set, accepts bearer JWTs signed by its keys, with iss JWTIssuer and aud
	// JWTAudience. Without it, a JWTIssuer is an OIDC issuer: its keys are discovered
	// (ISSUER/.well-known/openid-configuration → jwks_uri) at start and refreshed every
	// JWKSRefresh (zero: security.DefaultJWKSRefresh).
	JWKSFile    string
	JWTIssuer   string
	JWTAudience string
	JWKSRefresh time.Duration
	// CertTTL is the server certificate lifetime; zero means DefaultServerCertTTL.
	CertTTL time.Duration
	// WorkloadCertTTL is the lifetime of the workload certificates served over SDS; they are
	// re-issued at half of it and pushed to the streams of their identity. Zero means
	// security.DefaultWorkloadCertTTL.
	WorkloadCertTTL time.Duration
}

func (o SecureOptions) validate() []error {
	if o.Addr == "" {
		return nil
	}
	var errs []error
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		errs = append(errs, fmt.Errorf("secure grpc address %q: %v: write host:port, e.g. 127.0.0.1:15012", o.Addr, err))
	}
	if o.CADir == "" {
		errs = append(errs, errors.New("secure grpc: no CA directory: pass --ca-dir DIR (created with a new root on first start)"))
	}
	if o.JWKSFile != "" && (o.JWTIssuer == "" || o.JWTAudience == "") {
		errs = append(errs, errors.New("secure grpc: --jwks-file needs --jwt-issuer and --jwt-audience"))
	}
	if o.JWKSFile == "" && o.JWTIssuer != "" {
		if o.JWTAudience == "" {
			errs = append(errs, errors.New("secure grpc: --jwt-issuer (OIDC discovery) needs --jwt-audience"))
		}
		if err := security.CheckIssuerURL(o.JWTIssuer); err != nil {
			errs = append(errs, fmt.Errorf("secure grpc: %w", err))
		}
	}
	if o.JWKSRefresh < 0 {
		errs = append(errs, fmt.Errorf("secure grpc: jwks refresh %v is negative: pass a positive --jwks-refresh", o.JWKSRefresh))
	}
	if o.CertTTL < 0 {
		errs = append(errs, fmt.Errorf("secure grpc: cert TTL %v is negative", o.CertTTL))
	}
	if o.WorkloadCertTTL < 0 {
		errs = append(errs, fmt.Errorf("secure grpc: workload cert TTL %v is negative: pass a positive --workload-cert-ttl", o.WorkloadCertTTL))
	}
	return errs
}

// startSecure binds the secure ADS listener and serves the same ADS server on it, behind TLS
// credentials and the authenticating interceptor; run starts the parts that must keep running.
func (s *Server) startSecure(run func(string, func() error)) error {
	o := s.opts.Secure
	ca, err := security.LoadOrCreateCA(o.CADir, s.opts.Now())
	if err != nil {
		return err
	}
	var verifier *security.JWTVerifier
	jcfg := security.JWTConfig{Issuer: o.JWTIssuer, Audience: o.JWTAudience, TrustDomain: s.trustDomain()}
	switch {
	case o.JWKSFile != "":
		if verifier, err = security.LoadJWKS(o.JWKSFile, jcfg); err != nil {
			return err
		}
	case o.JWTIssuer != "":
		oidc := security.OIDC{Issuer: o.JWTIssuer}
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		verifier, err = oidc.NewVerifier(ctx, jcfg)
		cancel()
		if err != nil {
			return fmt.Errorf("secure grpc: %w", err)
		}
		every := o.JWKSRefresh
		if every == 0 {
			every = security.DefaultJWKSRefresh
		}
		run("jwks-refresh", func() error {
			oidc.RefreshLoop(s.ctx, verifier, every, s.log.With("component", "xds-auth"))
			return nil
		})
	}
	names, ips := o.DNSNames, o.IPs
	if len(names) == 0 && len(ips) == 0 {
		names, ips = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	ttl := o.CertTTL
	if ttl == 0 {
		ttl = DefaultServerCertTTL
	}
	certs := &security.CertSource{}
	issue := func() error {
		c, err := ca.IssueServer(names, ips, s.opts.Now(), ttl)
		if err != nil {
			return err
		}
		certs.Set(c)
		return nil
	}
	if err := issue(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("control plane: listen on secure gRPC address %s: %w: pick a free port with --secure-grpc-addr", o.Addr, err)
	}
	auth := security.NewAuthenticator(security.AuthConfig{TrustDomain: s.trustDomain(), JWT: verifier, Failures: s.authFails, Log: s.log.With("component", "xds-auth"), Now: s.opts.Now})
	s.secureLn = ln
	s.secureSrv = grpc.NewServer(append(xds.ServerOptions(), grpc.Creds(security.ServerCredentials(ca, certs)), grpc.StreamInterceptor(auth.StreamInterceptor()))...)
	s.xds.Register(s.secureSrv)
	wc, err := security.NewWorkloadCerts(ca, o.WorkloadCertTTL)
	if err != nil {
		return err
	}
	s.secrets.certs.Store(wc)
	nl := newNotifyListener(ln)
	run("secure-grpc", func() error { return s.secureSrv.Serve(nl) })
	run("workload-certs", func() error { return s.rotateWorkloadCerts(wc) })
	run("server-cert", func() error {
		t := time.NewTicker(ttl / 2)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return nil
			case <-t.C:
				if err := issue(); err != nil {
					return fmt.Errorf("re-issue server certificate: %w", err)
				}
			}
		}
	})
	s.wg.Go(func() {
		<-s.ctx.Done()
		s.drain("secure-grpc", s.secureSrv, nl)
	})
	return nil
}

func (s *Server) trustDomain() string {
	if s.opts.TrustDomain == "" {
		return "cluster.local"
	}
	return s.opts.TrustDomain
}

// SecureGRPCAddr is the address of the secure ADS listener; empty when it is disabled or
// before Start.
func (s *Server) SecureGRPCAddr() string {
	if s.secureLn == nil {
		return ""
	}
	return s.secureLn.Addr().String()
}

// rotateWorkloadCerts re-issues workload certificates at half their lifetime and pushes them
// to the streams of their identity, until the server stops.
func (s *Server) rotateWorkloadCerts(wc *security.WorkloadCerts) error {
	t := time.NewTimer(wc.TTL() / 2)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-t.C:
		}
		now := s.opts.Now()
		ids, err := wc.Rotate(now)
		if err != nil {
			s.log.Warn("re-issuing workload certificates; the old ones stay valid until expiry", "error", err)
		}
		if len(ids) > 0 {
			names := make([]string, len(ids))
			for i, id := range ids {
				names[i] = id.String()
			}
			s.xds.PushSecrets(names)
		}
		// Certificates issued after now renew at least TTL/2 later, so the next wake-up is
		// the earliest renewal held, or TTL/2 from now when none is.
		next := wc.TTL() / 2
		if at := wc.NextRotation(); !at.IsZero() {
			next = min(next, max(at.Sub(now), time.Millisecond))
		}
		t.Reset(next)
	}
}

// workloadSecrets adapts the workload certificates (created when the secure listener starts)
// to the ADS server's SDS.
type workloadSecrets struct {
	certs atomic.Pointer[security.WorkloadCerts]
}

var _ xds.Secrets = (*workloadSecrets)(nil)

func (w *workloadSecrets) Identity(ctx context.Context) (string, bool) {
	id, ok := security.IdentityFromContext(ctx)
	if !ok {
		return "", false
	}
	return id.String(), true
}

func (w *workloadSecrets) Material(identity string, now time.Time) (gen.SDSMaterial, error) {
	wc := w.certs.Load()
	if wc == nil {
		return gen.SDSMaterial{}, errors.New("the secure listener has not started")
	}
	id, err := security.ParseSPIFFE(identity)
	if err != nil {
		return gen.SDSMaterial{}, err
	}
	c, err := wc.Get(id, now)
	if err != nil {
		return gen.SDSMaterial{}, err
	}
	return gen.SDSMaterial{CertChainPEM: c.CertChainPEM, PrivateKeyPEM: c.PrivateKeyPEM, RootCAPEM: c.RootPEM}, nil
}
