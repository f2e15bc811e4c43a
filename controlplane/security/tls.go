package security

import (
	"crypto/tls"
	"sync/atomic"

	"google.golang.org/grpc/credentials"
)

// CertSource holds the current server certificate. Set swaps it atomically; new handshakes use
// the new certificate while established connections, and the streams on them, are untouched.
type CertSource struct {
	cur atomic.Pointer[tls.Certificate]
}

// Set installs cert for future handshakes.
func (c *CertSource) Set(cert tls.Certificate) { c.cur.Store(&cert) }

// Get is the tls.Config.GetCertificate hook.
func (c *CertSource) Get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cur.Load(), nil }

// ServerCredentials are TLS 1.3 server credentials that verify a client certificate against
// ca when one is presented. A client without a certificate may still connect and present a
// bearer token; the Authenticator refuses a stream carrying neither.
func ServerCredentials(ca *CA, certs *CertSource) credentials.TransportCredentials {
	return credentials.NewTLS(&tls.Config{
		MinVersion:     tls.VersionTLS13,
		GetCertificate: certs.Get,
		ClientAuth:     tls.VerifyClientCertIfGiven,
		ClientCAs:      ca.Pool(),
	})
}
