package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/structpb"
)

// AuthConfig makes a fleet authenticate to a secure ADS listener (issue 17): TLS verified
// against CAFile, plus a client certificate (CertFile, KeyFile) and/or a bearer token read from
// TokenFile. Every client of the fleet presents the same credential, so its nodes must all be
// in the credential's namespace.
type AuthConfig struct {
	CAFile     string
	ServerName string // expected server certificate name; empty: the target's host
	CertFile   string
	KeyFile    string
	TokenFile  string
}

// DialOptions returns the options that apply c; append them to Config.DialOptions (the
// later transport credentials replace the fleet's insecure default).
func (c AuthConfig) DialOptions() ([]grpc.DialOption, error) {
	if c.CAFile == "" {
		return nil, errors.New("auth: caFile is required: the PEM root that signed the server certificate")
	}
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("auth: %s holds no PEM certificate", c.CAFile)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: c.ServerName, MinVersion: tls.VersionTLS13}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("auth: certFile and keyFile go together: give both or neither")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("auth: %s / %s: %w", c.CertFile, c.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return nil, fmt.Errorf("auth: %s is empty: write the JWT into it", c.TokenFile)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(tok)))
	}
	if c.CertFile == "" && c.TokenFile == "" {
		return nil, errors.New("auth: no credential: give certFile and keyFile, or tokenFile")
	}
	return opts, nil
}

type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity keeps the token off plaintext connections.
func (bearerToken) RequireTransportSecurity() bool { return true }

// ClientAuth gives every client of a group a credential of its own (issue 17): TLS verified
// against Roots, with a client certificate and/or a bearer token for the client's namespace and
// ServiceAccount, so a group spread over namespaces passes per-namespace authorization. The
// functions are called once per namespace (clients of one namespace share the credential; each
// client still makes its own TLS handshake on its own connection). fakeenvoy does not issue
// certificates or sign tokens itself: the caller (bench, tests) provides both.
type ClientAuth struct {
	Roots      *x509.CertPool
	ServerName string // expected server certificate name; empty: the target's host
	// ServiceAccount of every client (default "default").
	ServiceAccount string
	// Certificate returns the client certificate for ns/sa; nil: no certificate.
	Certificate func(ns, sa string) (tls.Certificate, error)
	// Token returns the bearer token for ns/sa; nil: no token.
	Token func(ns, sa string) (string, error)
}

// Validate reports an unusable ClientAuth.
func (a *ClientAuth) Validate() error {
	if a.Roots == nil {
		return errors.New("auth: no root CA to verify the server certificate with")
	}
	if a.Certificate == nil && a.Token == nil {
		return errors.New("auth: no credential: give a certificate (mtls) or a token (jwt) source")
	}
	return nil
}

// serviceAccount is the service account the clients authenticate as.
func (a *ClientAuth) serviceAccount() string {
	if a.ServiceAccount == "" {
		return "default"
	}
	return a.ServiceAccount
}

// claimServiceAccount makes a node that names a service account (SERVICE_ACCOUNT metadata)
// name the one its client authenticates as: a control plane that checks, as istiod does,
// refuses a node claiming another account than its credential's.
func claimServiceAccount(n *corev3.Node, sa string) {
	if f := n.GetMetadata().GetFields(); f != nil && f["SERVICE_ACCOUNT"] != nil {
		f["SERVICE_ACCOUNT"] = structpb.NewStringValue(sa)
	}
}

// dialOptions returns the transport credentials (and per-RPC token) of a client in ns.
func (a *ClientAuth) dialOptions(ns string) ([]grpc.DialOption, error) {
	sa := a.serviceAccount()
	cfg := &tls.Config{RootCAs: a.Roots, ServerName: a.ServerName, MinVersion: tls.VersionTLS13}
	if a.Certificate != nil {
		cert, err := a.Certificate(ns, sa)
		if err != nil {
			return nil, fmt.Errorf("auth: certificate for %s/%s: %w", ns, sa, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}
	if a.Token != nil {
		tok, err := a.Token(ns, sa)
		if err != nil {
			return nil, fmt.Errorf("auth: token for %s/%s: %w", ns, sa, err)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(tok)))
	}
	return opts, nil
}
