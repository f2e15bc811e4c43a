package controlplane

import (
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"

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
	// JWTAudience.
	JWKSFile    string
	JWTIssuer   string
	JWTAudience string
	// CertTTL is the server certificate lifetime; zero means DefaultServerCertTTL.
	CertTTL time.Duration
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
	if o.CertTTL < 0 {
		errs = append(errs, fmt.Errorf("secure grpc: cert TTL %v is negative", o.CertTTL))
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
	if o.JWKSFile != "" {
		verifier, err = security.LoadJWKS(o.JWKSFile, security.JWTConfig{Issuer: o.JWTIssuer, Audience: o.JWTAudience, TrustDomain: s.trustDomain()})
		if err != nil {
			return err
		}
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
	run("secure-grpc", func() error { return s.secureSrv.Serve(ln) })
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
		s.secureSrv.Stop()
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
