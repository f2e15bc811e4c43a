package run

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/security"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/scenarios"
)

// labTrustDomain is the trust domain of the fleet's identities (the control plane's default).
const labTrustDomain = "cluster.local"

// labCredentialTTL is the lifetime of the certificates and tokens the fleet presents: longer
// than any run.
const labCredentialTTL = 24 * time.Hour

// authGroups returns the scenario's client groups that authenticate.
func authGroups(s *scenarios.Scenario) []scenarios.Client {
	var out []scenarios.Client
	for _, c := range s.Clients {
		if c.Auth.Enabled() {
			out = append(out, c)
		}
	}
	return out
}

// secureOptions returns the in-process control plane's secure listener for a scenario whose groups
// authenticate: the first caDir given (empty: the caller makes one), and the JWT issuer and
// audience of the jwt groups (which must agree: one control plane checks one pair).
func secureOptions(s *scenarios.Scenario) (o controlplane.SecureOptions, jwtKey string, err error) {
	groups := authGroups(s)
	if len(groups) == 0 {
		return o, "", nil
	}
	o.Addr = "127.0.0.1:0"
	for _, c := range groups {
		if o.CADir == "" {
			o.CADir = c.Auth.CADir
		}
		if !c.Auth.JWT {
			continue
		}
		if o.JWTIssuer == "" {
			o.JWTIssuer, o.JWTAudience, jwtKey = c.Auth.Issuer, c.Auth.Audience, c.Auth.JWTKey
		} else if o.JWTIssuer != c.Auth.Issuer || o.JWTAudience != c.Auth.Audience || jwtKey != c.Auth.JWTKey {
			return o, "", fmt.Errorf("scenario %s: clients %s: jwt issuer, audience and key differ from another group's; the in-process control plane checks one set", s.Name, c.Name)
		}
	}
	return o, jwtKey, nil
}

// writeJWKS writes the public half of the PEM private key at keyFile as a JWKS file in dir.
func writeJWKS(keyFile, dir string) (string, error) {
	key, err := loadSigningKey(keyFile)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "xdslab", Use: "sig"}}})
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "jwks.json")
	return p, os.WriteFile(p, b, 0o600)
}

func loadSigningKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth.jwtKey: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("auth.jwtKey %s: no PEM PRIVATE KEY (PKCS#8) block; convert with openssl pkcs8 -topk8 -nocrypt", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("auth.jwtKey %s: %w", path, err)
	}
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("auth.jwtKey %s: ECDSA keys must be P-256 (ES256)", path)
		}
		return k, nil
	case *rsa.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("auth.jwtKey %s: key type %T: use ECDSA P-256 or RSA", path, k)
}

// applyAuth gives each authenticating group of the scenario (cfg.Groups follow s.Clients) its
// per-client credentials, and secureAddr as its target when set (in-process: the control
// plane's secure listener; external: the groups dial --target). caDir is the CA directory of an
// in-process control plane, used when a group names none.
func applyAuth(cfg *fleet.Config, s *scenarios.Scenario, secureAddr, caDir string) error {
	if len(cfg.Groups) != len(s.Clients) {
		return errors.New("bench: fleet groups do not follow the scenario's clients")
	}
	for i, c := range s.Clients {
		if !c.Auth.Enabled() {
			continue
		}
		a, err := ClientAuth(c.Auth, caDir)
		if err != nil {
			return fmt.Errorf("scenario %s: clients[%d].auth: %w", s.Name, i, err)
		}
		cfg.Groups[i].Auth = a
		cfg.Groups[i].Target = secureAddr
	}
	return nil
}

// ClientAuth builds a group's per-client credentials from its auth settings; defaultCADir is
// used when a.CADir is empty.
func ClientAuth(a scenarios.Auth, defaultCADir string) (*fleet.ClientAuth, error) {
	dir := a.CADir
	if dir == "" {
		dir = defaultCADir
	}
	if dir == "" {
		return nil, errors.New("caDir is required against an external control plane: the directory holding its root ca.pem (and ca-key.pem for mtls)")
	}
	certPath := filepath.Join(dir, "ca.pem")
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("caDir: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, fmt.Errorf("caDir: %s holds no PEM certificate", certPath)
	}
	out := &fleet.ClientAuth{Roots: pool, ServerName: a.ServerName}
	if out.ServerName == "" {
		out.ServerName = "localhost"
	}
	if a.MTLS {
		keyPEM, err := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
		if err != nil {
			return nil, fmt.Errorf("caDir: mtls issues the clients' certificates and needs the root's key: %w", err)
		}
		ca, err := security.LoadCA(certPEM, keyPEM, certPath)
		if err != nil {
			return nil, err
		}
		out.Certificate = func(ns, sa string) (tls.Certificate, error) {
			return ca.IssueWorkload(security.Identity{TrustDomain: labTrustDomain, Namespace: ns, ServiceAccount: sa}, time.Now(), labCredentialTTL)
		}
	}
	if a.JWT {
		key, err := loadSigningKey(a.JWTKey)
		if err != nil {
			return nil, err
		}
		alg := jose.ES256
		if _, ok := key.(*rsa.PrivateKey); ok {
			alg = jose.RS256
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: "xdslab"}}, nil)
		if err != nil {
			return nil, err
		}
		out.Token = func(ns, sa string) (string, error) {
			now := time.Now()
			return jwt.Signed(signer).Claims(jwt.Claims{Issuer: a.Issuer, Audience: jwt.Audience{a.Audience},
				Subject: "system:serviceaccount:" + ns + ":" + sa, IssuedAt: jwt.NewNumericDate(now),
				Expiry: jwt.NewNumericDate(now.Add(labCredentialTTL))}).Serialize()
		}
	}
	return out, nil
}
