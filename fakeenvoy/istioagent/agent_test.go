package istioagent

import (
	"crypto/x509"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	// A Cluster in a secret file (TestSecretFromFile) must decode, as it does in the fleet,
	// which links every xDS type.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

func testAgent(t testing.TB, cfg Config) *Agent {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSecretFromFile reads Envoy's file format (a DiscoveryResponse, YAML or JSON) and names what
// is wrong with a bad one.
func TestSecretFromFile(t *testing.T) {
	good := `{"resources":[{"@type":"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret","name":"s","validation_context":{"trusted_ca":{"inline_string":"x"}}}]}`
	if s, err := secretFromFile([]byte(good), "s"); err != nil || s.GetValidationContext() == nil {
		t.Fatalf("JSON file: %v %v", s, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"resources: [", "not YAML or JSON"},
		{`{"resources": 3}`, "not a DiscoveryResponse"},
		{`{"resources":[{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster","name":"s"}]}`, "resource 0"},
		{good, `holds no secret "t"`},
	} {
		name := "s"
		if tc.in == good {
			name = "t"
		}
		if _, err := secretFromFile([]byte(tc.in), name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestAgentFileCertificates: the agent's file-cert: and file-root: names read PEM files; as
// istio-agent, it serves file-cert:CERT~KEY only when the pair loads as one (tls.X509KeyPair)
// and the name holds exactly one ~, and file-root:CA only without one.
func TestAgentFileCertificates(t *testing.T) {
	a := testAgent(t, Config{})
	pair := func(sa string) (cert, key []byte) {
		s, err := a.workloadSecret(Workload{namespace: "ns", serviceAccount: sa})
		if err != nil {
			t.Fatal(err)
		}
		tc := s.GetTlsCertificate()
		return []byte(tc.GetCertificateChain().GetInlineString()), []byte(tc.GetPrivateKey().GetInlineString())
	}
	cert, key := pair("a")
	_, otherKey := pair("b")
	files := map[string][]byte{
		"/c/root.pem": []byte(a.RootPEM()), "/c/cert.pem": cert, "/c/key.pem": key,
		"/c/other-key.pem": otherKey, "/c/junk-key.pem": []byte("KEY"), "/c/bad.pem": []byte("nope"),
	}
	a.cfg.ReadFile = func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, errors.New("no such file")
	}
	w := Workload{namespace: "ns", serviceAccount: "sa"}
	if s, d, err := a.Serve(w, "file-root:/c/root.pem"); err != nil || d != 0 || s.GetValidationContext() == nil {
		t.Fatalf("file-root: %v %v %v", s, d, err)
	}
	if s, _, err := a.Serve(w, "file-cert:/c/cert.pem~/c/key.pem"); err != nil || s.GetTlsCertificate().GetPrivateKey().GetInlineString() != string(key) {
		t.Fatalf("file-cert: %v %v", s, err)
	}
	for _, tc := range []struct{ name, want string }{
		{"file-root:/c/bad.pem", "no PEM certificate"},
		{"file-root:/c/none.pem", "no such file"},
		{"file-root:/c/root.pem~/c/key.pem", "want file-root:CA (no ~)"},
		{"file-cert:/c/root.pem", "want file-cert:CERT~KEY (one ~)"},
		{"file-cert:/c/cert.pem~/c/key.pem~/c/key.pem", "want file-cert:CERT~KEY (one ~)"},
		{"file-cert:/c/bad.pem~/c/key.pem", "no PEM certificate"},
		{"file-cert:/c/cert.pem~/c/none.pem", "no such file"},
		{"file-cert:/c/cert.pem~/c/junk-key.pem", "/c/cert.pem with key /c/junk-key.pem: tls: "},
		{"file-cert:/c/cert.pem~/c/other-key.pem", "/c/cert.pem with key /c/other-key.pem: tls: private key does not match public key"},
		{"file-cert:/c/root.pem~/c/key.pem", "/c/root.pem with key /c/key.pem: tls: private key does not match public key"},
	} {
		if s, _, err := a.Serve(w, tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: served %v, error %v, want %q", tc.name, s != nil, err, tc.want)
		}
	}
}

// TestAgentSystemRoot: file-root:system, the root istiod names for TLS to a service without
// caCertificates, is the operating system's CA bundle: the first of OSRoots that reads.
func TestAgentSystemRoot(t *testing.T) {
	a := testAgent(t, Config{})
	files := map[string][]byte{"/b/bundle.pem": []byte(a.RootPEM()), "/b/bad.pem": []byte("nope")}
	a.cfg.ReadFile = func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, errors.New("no such file")
	}
	w := Workload{namespace: "ns", serviceAccount: "sa"}
	for _, tc := range []struct {
		roots []string
		want  string // error; "" served
	}{
		{[]string{"/a/none.pem", "/b/bundle.pem"}, ""},
		{[]string{"/a/none.pem", "/b/bad.pem", "/b/bundle.pem"}, "/b/bad.pem (the operating system's CA bundle): no PEM certificate"},
		{[]string{"/a/none.pem"}, "no operating system CA bundle to serve as file-root:system (tried /a/none.pem)"},
	} {
		a.cfg.OSRoots = tc.roots
		s, d, err := a.Serve(w, "file-root:system")
		switch {
		case tc.want == "" && (err != nil || d != 0 || s.GetName() != "file-root:system" ||
			s.GetValidationContext().GetTrustedCa().GetInlineString() != a.RootPEM()):
			t.Errorf("%v: %v %v %v", tc.roots, s, d, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.roots, err, tc.want)
		}
	}
	// Where the bundle is, by default, on this machine, it is served.
	if _, err := os.Stat(DefaultOSRoots()[0]); err == nil {
		b := testAgent(t, Config{})
		if _, _, err := b.Serve(w, SecretSystemRoot); err != nil {
			t.Errorf("the default OS roots: %v", err)
		}
	}
}

// TestAgentWithIssueDelay: a group's own issue delay keeps the fleet's CA (one root for the
// whole fleet) and its certificates: a workload gets the same one from every group's agent.
func TestAgentWithIssueDelay(t *testing.T) {
	a := testAgent(t, Config{})
	b := a.WithIssueDelay(20 * time.Millisecond)
	c := a.WithIssueDelay(-1)
	if b.RootPEM() != a.RootPEM() || c.RootPEM() != a.RootPEM() {
		t.Fatal("a group's agent must share the fleet's CA")
	}
	w := Workload{namespace: "ns", serviceAccount: "sa"}
	serials := map[string]bool{}
	for _, ag := range []*Agent{a, b, c, b} {
		s, d, err := ag.Serve(w, SecretWorkload)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[*Agent]time.Duration{a: DefaultIssueDelay, b: 20 * time.Millisecond, c: 0}[ag]; d != want {
			t.Fatalf("issue delay %v, want %v", d, want)
		}
		serials[certOf(t, s).SerialNumber.String()] = true
	}
	if len(serials) != 1 {
		t.Fatalf("%d certificates for one workload across a fleet's agents, want 1", len(serials))
	}
}

// TestAgentCertificatePerIdentity: clients of one identity share its certificate, asked for
// at once or one after another, until half its lifetime has passed; another identity gets its
// own, naming it.
func TestAgentCertificatePerIdentity(t *testing.T) {
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := testAgent(t, Config{CertTTL: time.Hour, Now: clock})
	w := Workload{namespace: "ns-1", serviceAccount: "app-1"}

	const clients = 16
	secrets := make([]*tlsv3.Secret, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { secrets[i], _, errs[i] = a.Serve(w, SecretWorkload) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	first := certOf(t, secrets[0])
	for i, s := range secrets {
		if c := certOf(t, s); !c.Equal(first) {
			t.Fatalf("client %d got serial %v, client 0 %v: one identity, one certificate", i, c.SerialNumber, first.SerialNumber)
		}
	}
	if len(first.URIs) != 1 || first.URIs[0].String() != "spiffe://cluster.local/ns/ns-1/sa/app-1" {
		t.Fatalf("URI SANs %v, want the workload's SPIFFE id", first.URIs)
	}
	if want := now.Add(time.Hour); !first.NotAfter.Equal(want) {
		t.Fatalf("NotAfter %v, want %v (its TTL from the agent's clock)", first.NotAfter, want)
	}

	other := Workload{namespace: "ns-2", serviceAccount: "app-1"}
	s, _, err := a.Serve(other, SecretWorkload)
	if err != nil {
		t.Fatal(err)
	}
	if c := certOf(t, s); c.Equal(first) || c.URIs[0].String() != "spiffe://cluster.local/ns/ns-2/sa/app-1" {
		t.Fatalf("another identity got serial %v, URIs %v", c.SerialNumber, c.URIs)
	}

	for _, step := range []struct {
		advance time.Duration
		same    bool
	}{
		{29 * time.Minute, true}, // before half its lifetime: the same one
		{time.Minute, false},     // half its lifetime: a new one
		{29 * time.Minute, true}, // which is then kept
	} {
		mu.Lock()
		now = now.Add(step.advance)
		mu.Unlock()
		s, _, err := a.Serve(w, SecretWorkload)
		if err != nil {
			t.Fatal(err)
		}
		c := certOf(t, s)
		if c.Equal(first) != step.same {
			t.Fatalf("at %v: serial %v, first %v: same %v, want %v", clock(), c.SerialNumber, first.SerialNumber, c.Equal(first), step.same)
		}
		if !step.same {
			if !c.NotBefore.Before(clock()) || !c.NotAfter.Equal(clock().Add(time.Hour)) {
				t.Fatalf("renewed certificate valid %v–%v, want from before %v for an hour", c.NotBefore, c.NotAfter, clock())
			}
			first = c
		}
	}
}

func certOf(t *testing.T, s *tlsv3.Secret) *x509.Certificate {
	t.Helper()
	c, err := parseCertPEM([]byte(s.GetTlsCertificate().GetCertificateChain().GetInlineString()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
