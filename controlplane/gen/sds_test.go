package gen

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane/security"
)

func TestSDSSecrets(t *testing.T) {
	ca, err := security.LoadOrCreateCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueWorkload(security.Identity{TrustDomain: "cluster.local", Namespace: "default", ServiceAccount: "app"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	m := SDSMaterial{
		CertChainPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		PrivateKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		RootCAPEM:     ca.CertPEM(),
	}
	for _, tc := range []struct {
		names   []string
		want    []string
		wantErr bool
	}{
		{nil, []string{SecretRootCA, SecretDefault}, false},
		{[]string{SecretDefault}, []string{SecretDefault}, false},
		{[]string{SecretRootCA, "bogus"}, []string{SecretRootCA}, true},
	} {
		got, err := SDSSecrets(m, tc.names)
		if (err != nil) != tc.wantErr {
			t.Errorf("%v: err %v, wantErr %v", tc.names, err, tc.wantErr)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%v: got %d secrets, want %v", tc.names, len(got), tc.want)
		}
		for i, s := range got {
			if s.GetName() != tc.want[i] {
				t.Errorf("%v: secret %d = %s, want %s", tc.names, i, s.GetName(), tc.want[i])
			}
			if err := s.ValidateAll(); err != nil {
				t.Errorf("%s: %v", s.GetName(), err)
			}
		}
	}
	// The ROOTCA secret's bundle verifies the default secret's certificate.
	all, _ := SDSSecrets(m, nil)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(all[0].GetValidationContext().GetTrustedCa().GetInlineBytes()) {
		t.Fatal("ROOTCA: no certificate")
	}
	b, _ := pem.Decode(all[1].GetTlsCertificate().GetCertificateChain().GetInlineBytes())
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("default secret does not chain to ROOTCA: %v", err)
	}
	if _, err := SDSSecrets(SDSMaterial{}, nil); err == nil {
		t.Fatal("empty material accepted")
	}
}
