package pki

import (
	"crypto/x509"
	"net/url"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNewCAIssue: an in-memory root signs a leaf with the SANs and usages of its template,
// valid from five minutes before now for ttl, verifiable against the root's pool.
func TestNewCAIssue(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ca, err := NewCA(now)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := url.Parse(Identity{TrustDomain: "cluster.local", Namespace: "ns", ServiceAccount: "sa"}.String())
	c, err := ca.Issue(&x509.Certificate{URIs: []*url.URL{id},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if c.Leaf.URIs[0].String() != "spiffe://cluster.local/ns/ns/sa/sa" || !c.Leaf.NotBefore.Equal(now.Add(-5*time.Minute)) || !c.Leaf.NotAfter.Equal(now.Add(time.Hour)) {
		t.Fatalf("leaf %v %v–%v", c.Leaf.URIs, c.Leaf.NotBefore, c.Leaf.NotAfter)
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{u}, CurrentTime: now}); err != nil {
			t.Errorf("usage %v: %v", u, err)
		}
	}
}

// TestIssueWorkloadBothUsages: a workload certificate verifies for client and for server use
// (the sidecar presents it on both sides of in-mesh mTLS), with the SPIFFE id as its only SAN.
func TestIssueWorkloadBothUsages(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ca, err := NewCA(now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.IssueWorkload(Identity{TrustDomain: "cluster.local", Namespace: "ns", ServiceAccount: "sa"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Leaf.URIs) != 1 || c.Leaf.URIs[0].String() != "spiffe://cluster.local/ns/ns/sa/sa" || len(c.Leaf.DNSNames) != 0 {
		t.Fatalf("SANs %v %v", c.Leaf.URIs, c.Leaf.DNSNames)
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{u}, CurrentTime: now}); err != nil {
			t.Errorf("usage %v: %v", u, err)
		}
	}
}
