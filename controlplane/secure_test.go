package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/security"
)

// TestSecureADS runs the real control plane with the secure listener: an mTLS ADS client of
// the node's namespace receives clusters; one of another namespace is refused.
func TestSecureADS(t *testing.T) {
	dir, caDir := t.TempDir(), t.TempDir()
	writeEchoEntry(t, dir, 7070)
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Secure.Addr, opts.Secure.CADir = "127.0.0.1:0", caDir
	srv := controlplanetest.NewServer(t, opts)
	ca, err := security.LoadOrCreateCA(caDir, time.Now()) // the root the server created
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueWorkload(security.Identity{TrustDomain: "cluster.local", Namespace: "default", ServiceAccount: "client"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(srv.SecureGRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
	})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for _, tc := range []struct {
		ns   string
		want codes.Code
	}{{"default", codes.OK}, {"other", codes.PermissionDenied}} {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		md, _ := structpb.NewStruct(map[string]any{"NAMESPACE": tc.ns})
		node := &corev3.Node{Id: "sidecar~127.0.0.1~client-0." + tc.ns + "~" + tc.ns + ".svc.cluster.local", Metadata: md}
		if err := st.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: "type.googleapis.com/envoy.config.cluster.v3.Cluster"}); err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		cancel()
		if got := status.Code(err); got != tc.want {
			t.Fatalf("namespace %s: %v, want %v", tc.ns, err, tc.want)
		}
		if tc.want == codes.OK && len(resp.GetResources()) == 0 {
			t.Fatalf("namespace %s: CDS response without clusters", tc.ns)
		}
	}
}

// TestSecureGRPCXDSClient points grpc-go's own xDS client at the secure listener with TLS
// channel credentials and a SPIFFE client certificate, and calls a backend through it.
func TestSecureGRPCXDSClient(t *testing.T) {
	port := healthBackend(t, "a")
	dir, caDir, files := t.TempDir(), t.TempDir(), t.TempDir()
	writeEchoEntry(t, dir, port)
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	opts.Secure.Addr, opts.Secure.CADir = "127.0.0.1:0", caDir
	srv := controlplanetest.NewServer(t, opts)
	ca, err := security.LoadOrCreateCA(caDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueWorkload(security.Identity{TrustDomain: "cluster.local", Namespace: "default", ServiceAccount: "client"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.pem", ca.CertPEM())
	certFile := write("cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}))
	keyFile := write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	// The certificate names localhost, so the client dials by that name.
	_, p, _ := splitHostPort(srv.SecureGRPCAddr())
	bootstrap := fmt.Sprintf(`{"xds_servers":[{"server_uri":"localhost:%s","channel_creds":[{"type":"tls","config":{"ca_certificate_file":%q,"certificate_file":%q,"private_key_file":%q}}],"server_features":[]}],
		"node":{"id":"sidecar~127.0.0.1~client-0.default~default.svc.cluster.local","metadata":{"GENERATOR":"grpc","NAMESPACE":"default"}}}`, p, caFile, certFile, keyFile)
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("xds:///echo.default.svc.cluster.local:7070", grpc.WithResolvers(rb), grpc.WithTransportCredentials(insecureCreds()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	defer cc.Close()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "a"}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("call through the secure xDS config: %v", err)
	}
}

func splitHostPort(a string) (string, string, error) { return net.SplitHostPort(a) }

func insecureCreds() credentials.TransportCredentials { return insecure.NewCredentials() }
