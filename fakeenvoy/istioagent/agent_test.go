package istioagent

import (
	"errors"
	"strings"
	"testing"
	"time"

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

// TestAgentFileCertificates: the agent's file-cert: and file-root: names read PEM files.
func TestAgentFileCertificates(t *testing.T) {
	a := testAgent(t, Config{})
	files := map[string][]byte{"/c/root.pem": []byte(a.RootPEM()), "/c/key.pem": []byte("KEY"), "/c/bad.pem": []byte("nope")}
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
	if s, _, err := a.Serve(w, "file-cert:/c/root.pem~/c/key.pem"); err != nil || s.GetTlsCertificate().GetPrivateKey().GetInlineString() != "KEY" {
		t.Fatalf("file-cert: %v %v", s, err)
	}
	for name, want := range map[string]string{
		"file-root:/c/bad.pem":            "no PEM certificate",
		"file-root:/c/none.pem":           "no such file",
		"file-cert:/c/root.pem":           "want file-cert:CERT~KEY",
		"file-cert:/c/bad.pem~/c/key.pem": "no PEM certificate",
	} {
		if _, _, err := a.Serve(w, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

// TestAgentWithIssueDelay: a group's own issue delay keeps the fleet's CA (one root for the
// whole fleet), each certificate with a serial of its own.
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
		cert, err := parseCertPEM([]byte(s.GetTlsCertificate().GetCertificateChain().GetInlineString()))
		if err != nil {
			t.Fatal(err)
		}
		if serials[cert.SerialNumber.String()] {
			t.Fatalf("serial %v issued twice", cert.SerialNumber)
		}
		serials[cert.SerialNumber.String()] = true
	}
}
