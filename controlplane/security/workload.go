package security

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"sync"
	"time"
)

// DefaultWorkloadCertTTL is the lifetime of a workload certificate served over SDS (Istio's
// default workload certificate TTL is 24h too).
const DefaultWorkloadCertTTL = 24 * time.Hour

// WorkloadCert is one identity's current certificate, in the PEM forms SDS serves.
type WorkloadCert struct {
	CertChainPEM  []byte
	PrivateKeyPEM []byte
	RootPEM       []byte
	NotAfter      time.Time
	// renewAt is half-way through the certificate's life: Rotate re-issues it from then on.
	renewAt time.Time
}

// WorkloadCerts issues one workload certificate per identity from the CA, on first use, and
// re-issues it at half its lifetime (Rotate). It is safe for concurrent use. It keeps one entry
// per identity served (a mesh has one per service account).
type WorkloadCerts struct {
	ca  *CA
	ttl time.Duration

	mu    sync.Mutex
	certs map[Identity]*WorkloadCert
}

// NewWorkloadCerts returns an issuer of ttl-long workload certificates (0: the default).
func NewWorkloadCerts(ca *CA, ttl time.Duration) (*WorkloadCerts, error) {
	if ca == nil {
		return nil, errors.New("workload certificates: no CA")
	}
	if ttl < 0 {
		return nil, errors.New("workload certificates: negative TTL")
	}
	if ttl == 0 {
		ttl = DefaultWorkloadCertTTL
	}
	return &WorkloadCerts{ca: ca, ttl: ttl, certs: map[Identity]*WorkloadCert{}}, nil
}

// TTL is the lifetime of the certificates issued.
func (w *WorkloadCerts) TTL() time.Duration { return w.ttl }

// Get returns id's current certificate, issuing one when it has none. Get does not rotate:
// every stream of one identity sees the same certificate until Rotate replaces it, so the
// rotation is pushed to all of them at once.
func (w *WorkloadCerts) Get(id Identity, now time.Time) (*WorkloadCert, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.certs[id]; c != nil {
		return c, nil
	}
	c, err := w.issue(id, now)
	if err != nil {
		return nil, err
	}
	w.certs[id] = c
	return c, nil
}

func (w *WorkloadCerts) issue(id Identity, now time.Time) (*WorkloadCert, error) {
	cert, err := w.ca.IssueWorkload(id, now, w.ttl)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, err
	}
	return &WorkloadCert{
		CertChainPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		PrivateKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		RootPEM:       w.ca.CertPEM(),
		NotAfter:      cert.Leaf.NotAfter,
		renewAt:       now.Add(w.ttl / 2),
	}, nil
}

// Rotate re-issues every certificate that has reached half its lifetime at now and returns
// the identities whose certificate changed, sorted, so their streams can be pushed. An
// identity whose re-issue fails keeps its old certificate (still valid for the other half) and
// is retried by the next Rotate; the errors are joined.
func (w *WorkloadCerts) Rotate(now time.Time) ([]Identity, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Identity
	var errs []error
	for id, c := range w.certs {
		if now.Before(c.renewAt) {
			continue
		}
		nc, err := w.issue(id, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.certs[id] = nc
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b Identity) int {
		if a.String() < b.String() {
			return -1
		}
		if a.String() > b.String() {
			return 1
		}
		return 0
	})
	return out, errors.Join(errs...)
}

// NextRotation is when the earliest certificate reaches half its lifetime; zero when none is
// held (a certificate issued later renews at least TTL/2 after it is issued).
func (w *WorkloadCerts) NextRotation() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next time.Time
	for _, c := range w.certs {
		if next.IsZero() || c.renewAt.Before(next) {
			next = c.renewAt
		}
	}
	return next
}

// Len is the number of identities holding a certificate.
func (w *WorkloadCerts) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.certs)
}
