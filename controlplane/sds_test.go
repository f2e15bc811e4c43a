package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/security"
)

// openADS dials addr with creds and opens one SotW ADS stream; both end with the test (the
// stream after waitTimeout at the latest).
func openADS(t *testing.T, addr string, creds credentials.TransportCredentials) discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func sdsNode(ns string) *corev3.Node {
	md, _ := structpb.NewStruct(map[string]any{"NAMESPACE": ns})
	return &corev3.Node{Id: "sidecar~127.0.0.1~client-0." + ns + "~" + ns + ".svc.cluster.local", Metadata: md}
}

// decodeSecrets unpacks an SDS response by name.
func decodeSecrets(t *testing.T, resp *discovery.DiscoveryResponse) map[string]*tlsv3.Secret {
	t.Helper()
	out := map[string]*tlsv3.Secret{}
	for _, a := range resp.GetResources() {
		s := &tlsv3.Secret{}
		if err := a.UnmarshalTo(s); err != nil {
			t.Fatal(err)
		}
		if err := s.ValidateAll(); err != nil {
			t.Fatalf("secret %s: %v", s.GetName(), err)
		}
		out[s.GetName()] = s
	}
	return out
}

// checkWorkloadSecret verifies that the default secret is a key pair whose certificate chains to
// ca and names want as its only URI SAN, and returns the certificate.
func checkWorkloadSecret(t *testing.T, s *tlsv3.Secret, ca *security.CA, want string) *x509.Certificate {
	t.Helper()
	tc := s.GetTlsCertificate()
	pair, err := tls.X509KeyPair(tc.GetCertificateChain().GetInlineBytes(), tc.GetPrivateKey().GetInlineBytes())
	if err != nil {
		t.Fatalf("default secret: key pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("default secret does not chain to the root: %v", err)
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != want {
		t.Fatalf("default secret URI SANs %v, want [%s]", leaf.URIs, want)
	}
	return leaf
}

// TestSDSOverADS: an mTLS stream asks for default and ROOTCA over ADS and gets the workload
// certificate of the identity it authenticated as (not of the node it claims) and the root; at
// half the workload certificate's TTL a new certificate is pushed on the same stream, without
// a request.
func TestSDSOverADS(t *testing.T) {
	caDir := t.TempDir()
	opts := controlplanetest.Options(t)
	opts.ConfigDir = t.TempDir()
	writeEchoEntry(t, opts.ConfigDir, 7070) // responses wait for the first snapshot
	opts.Secure.Addr, opts.Secure.CADir = "127.0.0.1:0", caDir
	opts.Secure.WorkloadCertTTL = 2 * time.Second
	srv := controlplanetest.NewServer(t, opts)
	ca, err := security.LoadOrCreateCA(caDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	id := security.Identity{TrustDomain: "cluster.local", Namespace: "default", ServiceAccount: "client"}
	cert, err := ca.IssueWorkload(id, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st := openADS(t, srv.SecureGRPCAddr(), credentials.NewTLS(&tls.Config{
		RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
	}))
	if err := st.Send(&discovery.DiscoveryRequest{Node: sdsNode("default"), TypeUrl: gen.SecretType, ResourceNames: []string{gen.SecretDefault, gen.SecretRootCA}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	secs := decodeSecrets(t, resp)
	if len(secs) != 2 {
		t.Fatalf("SDS response holds %d secrets, want default and ROOTCA", len(secs))
	}
	if got := string(secs[gen.SecretRootCA].GetValidationContext().GetTrustedCa().GetInlineBytes()); got != string(ca.CertPEM()) {
		t.Fatalf("ROOTCA is not the server's root:\n%s", got)
	}
	first := checkWorkloadSecret(t, secs[gen.SecretDefault], ca, id.String())
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: gen.SecretType, VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(),
		ResourceNames: []string{gen.SecretDefault, gen.SecretRootCA}}); err != nil {
		t.Fatal(err)
	}
	// The rotation (at 1s) pushes the new certificate; the root is unchanged and not re-sent.
	pushed, err := st.Recv()
	if err != nil {
		t.Fatalf("waiting for the rotated certificate: %v", err)
	}
	secs = decodeSecrets(t, pushed)
	if _, ok := secs[gen.SecretRootCA]; ok || len(secs) != 1 {
		t.Fatalf("rotation pushed %d secrets (%v), want only default", len(secs), secs)
	}
	next := checkWorkloadSecret(t, secs[gen.SecretDefault], ca, id.String())
	if next.SerialNumber.Cmp(first.SerialNumber) == 0 || !next.NotAfter.After(first.NotAfter) {
		t.Fatalf("pushed certificate is not a new one: serial %v -> %v, notAfter %v -> %v", first.SerialNumber, next.SerialNumber, first.NotAfter, next.NotAfter)
	}
}

// TestSDSPlaintextRefused: a client of the plaintext listener asking for secrets gets an empty
// response: no identity was verified, so no certificate is issued (an Envoy keeps warming).
func TestSDSPlaintextRefused(t *testing.T) {
	opts := controlplanetest.Options(t)
	opts.ConfigDir = t.TempDir()
	writeEchoEntry(t, opts.ConfigDir, 7070) // responses wait for the first snapshot
	opts.Secure.Addr, opts.Secure.CADir = "127.0.0.1:0", t.TempDir()
	srv := controlplanetest.NewServer(t, opts)
	st := openADS(t, srv.GRPCAddr(), insecure.NewCredentials())
	if err := st.Send(&discovery.DiscoveryRequest{Node: sdsNode("default"), TypeUrl: gen.SecretType, ResourceNames: []string{gen.SecretDefault, gen.SecretRootCA}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTypeUrl() != gen.SecretType || len(resp.GetResources()) != 0 {
		t.Fatalf("plaintext SDS answer: type %s with %d resources, want an empty Secret response", resp.GetTypeUrl(), len(resp.GetResources()))
	}
}
