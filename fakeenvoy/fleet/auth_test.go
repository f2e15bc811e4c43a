package fleet

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/security"
)

type ackADS struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
}

func (ackADS) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	req, err := s.Recv()
	if err != nil {
		return err
	}
	return s.Send(&discovery.DiscoveryResponse{TypeUrl: req.GetTypeUrl(), VersionInfo: "1"})
}

// TestAuthDialOptions connects with the options built from files to a server that requires a
// SPIFFE client certificate of the node's namespace.
func TestAuthDialOptions(t *testing.T) {
	dir := t.TempDir()
	ca, err := security.LoadOrCreateCA(filepath.Join(dir, "ca"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := ca.IssueServer([]string{"localhost"}, nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certs := &security.CertSource{}
	certs.Set(srvCert)
	auth := security.NewAuthenticator(security.AuthConfig{TrustDomain: "cluster.local"})
	g := grpc.NewServer(grpc.Creds(security.ServerCredentials(ca, certs)), grpc.StreamInterceptor(auth.StreamInterceptor()))
	discovery.RegisterAggregatedDiscoveryServiceServer(g, ackADS{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Serve(lis) })
	defer func() { g.Stop(); wg.Wait() }()

	wl, err := ca.IssueWorkload(security.Identity{TrustDomain: "cluster.local", Namespace: "default", ServiceAccount: "fleet"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(wl.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := AuthConfig{
		CAFile: filepath.Join(dir, "ca", "ca.pem"), ServerName: "localhost",
		CertFile: write("cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: wl.Certificate[0]})),
		KeyFile:  write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
	}
	opts, err := cfg.DialOptions()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(lis.Addr().String(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "default"})
	if err := st.Send(&discovery.DiscoveryRequest{Node: &corev3.Node{Id: "n", Metadata: md}, TypeUrl: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatalf("authenticated fleet stream: %v", err)
	}

	for _, bad := range []AuthConfig{{}, {CAFile: cfg.CAFile}, {CAFile: cfg.CAFile, CertFile: cfg.CertFile}, {CAFile: filepath.Join(dir, "missing.pem"), TokenFile: cfg.CertFile}} {
		if _, err := bad.DialOptions(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
