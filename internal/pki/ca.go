package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// File names inside a CA directory.
const (
	CertFile = "ca.pem"
	KeyFile  = "ca-key.pem"
)

// Identity is a workload identity in Istio's SPIFFE form.
type Identity struct {
	TrustDomain    string
	Namespace      string
	ServiceAccount string
}

// String is the SPIFFE id spiffe://TRUST_DOMAIN/ns/NS/sa/SA.
func (id Identity) String() string {
	return "spiffe://" + id.TrustDomain + "/ns/" + id.Namespace + "/sa/" + id.ServiceAccount
}

// CA is a self-signed root that signs the control plane's server certificate and, for tests and
// the lab's fleet, workload client certificates. All crypto is the standard library's.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	pool    *x509.CertPool
}

// LoadOrCreateCA loads ca.pem and ca-key.pem from dir, or, when neither exists, creates a new
// root valid for ten years and writes both (key mode 0600) so a restart keeps the same root and
// already-issued client certificates stay valid.
func LoadOrCreateCA(dir string, now time.Time) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		return LoadCA(certPEM, keyPEM, certPath)
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	case certErr != nil && !errors.Is(certErr, os.ErrNotExist):
		return nil, fmt.Errorf("ca dir %s: %w", dir, certErr)
	case keyErr != nil && !errors.Is(keyErr, os.ErrNotExist):
		return nil, fmt.Errorf("ca dir %s: %w", dir, keyErr)
	default:
		return nil, fmt.Errorf("ca dir %s: exactly one of %s and %s exists; restore the other or remove both to create a new root", dir, CertFile, KeyFile)
	}
	ca, keyDER, err := newRoot(now)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ca dir %s: %w", dir, err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("ca dir %s: %w", dir, err)
	}
	if err := os.WriteFile(certPath, ca.certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("ca dir %s: %w", dir, err)
	}
	return ca, nil
}

// LoadCA parses a PEM root certificate and its PKCS#8 PEM key; name is used in errors.
func LoadCA(certPEM, keyPEM []byte, name string) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block", name)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s: certificate is not a CA (basicConstraints CA:FALSE)", name)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: key file has no PEM PRIVATE KEY (PKCS#8) block", name)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: key: %w", name, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: key type %T cannot sign", name, k)
	}
	return newCA(cert, signer, certPEM), nil
}

func newCA(cert *x509.Certificate, key crypto.Signer, certPEM []byte) *CA {
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{cert: cert, key: key, certPEM: certPEM, pool: pool}
}

// NewCA creates a root valid for ten years that lives only in memory (the lab's emulated
// istio-agent: one per fleet).
func NewCA(now time.Time) (*CA, error) {
	ca, _, err := newRoot(now)
	return ca, err
}

func newRoot(now time.Time) (*CA, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"xdslab"}, CommonName: "xdslab root CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return newCA(cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), keyDER, nil
}

// serial is a random 128-bit serial, as RFC 5280 asks for unpredictable serials.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}

// Pool is a cert pool holding only this root.
func (ca *CA) Pool() *x509.CertPool { return ca.pool }

// CertPEM is the root certificate in PEM form.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// IssueServer signs a server certificate for the given DNS names and IPs.
func (ca *CA) IssueServer(dnsNames []string, ips []net.IP, now time.Time, ttl time.Duration) (tls.Certificate, error) {
	if len(dnsNames) == 0 && len(ips) == 0 {
		return tls.Certificate{}, errors.New("server certificate: no DNS names or IPs")
	}
	return ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"xdslab"}},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now, ttl)
}

// IssueWorkload signs a workload certificate whose only URI SAN is the SPIFFE id of id, for
// client and server use: the same certificate (SDS "default") is presented by a sidecar's
// outbound mTLS and by its inbound listener, and Envoy checks an upstream's certificate for
// server use (istiod's CA issues both usages too).
func (ca *CA) IssueWorkload(id Identity, now time.Time, ttl time.Duration) (tls.Certificate, error) {
	u, err := url.Parse(id.String())
	if err != nil {
		return tls.Certificate{}, err
	}
	return ca.Issue(&x509.Certificate{
		URIs:        []*url.URL{u},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, now, ttl)
}

// Issue signs a leaf from tmpl (its subject, SANs and extended key usages): a new P-256 key, a
// random serial, valid from five minutes before now for ttl, for digital signatures.
func (ca *CA) Issue(tmpl *x509.Certificate, now time.Time, ttl time.Duration) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-5 * time.Minute) // tolerate small clock skew between peers
	tmpl.NotAfter = now.Add(ttl)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
