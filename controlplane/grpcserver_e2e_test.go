package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	xdscreds "google.golang.org/grpc/credentials/xds"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/gen"
)

// grpcServerMesh is the config of TestGRPCXDSServerServes: the ServiceEntry echo.default whose
// one endpoint, 127.0.0.1:target, is the gRPC server's workload (labels app: echo, account
// echo), an AuthorizationPolicy that denies the health service's Watch method on it, and with
// mtls a PeerAuthentication STRICT for it and a DestinationRule ISTIO_MUTUAL for its clients.
func grpcServerMesh(target int, mtls bool) map[string]string {
	files := map[string]string{
		"echo.yaml": fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: default}
spec:
  hosts: [echo.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  subjectAltNames: [spiffe://cluster.local/ns/default/sa/echo]
  ports:
  - {name: grpc, number: 7070, protocol: GRPC}
  endpoints:
  - {address: 127.0.0.1, ports: {grpc: %d}, labels: {app: echo}}
`, target),
		"authz.yaml": `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: no-watch, namespace: default}
spec:
  selector: {matchLabels: {app: echo}}
  action: DENY
  rules:
  - to: [{operation: {paths: [/grpc.health.v1.Health/Watch]}}]
`,
	}
	if mtls {
		files["mtls.yaml"] = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: echo, namespace: default}
spec:
  selector: {matchLabels: {app: echo}}
  mtls: {mode: STRICT}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: echo, namespace: default}
spec:
  host: echo.default.svc.cluster.local
  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}
`
	}
	return files
}

// grpcBootstrap is a proxyless gRPC bootstrap for the ADS server at cp: node id
// sidecar~IP~POD.default~default.svc.cluster.local with GENERATOR grpc and labels, the server
// listener name template istio-agent writes, and with certs (a directory holding cert.pem,
// key.pem and root.pem) the file_watcher certificate provider gen.GRPCCertProviderInstance.
func grpcBootstrap(t *testing.T, cp, ip, pod string, labels map[string]string, certs string) []byte {
	t.Helper()
	b := map[string]any{
		"xds_servers": []any{map[string]any{"server_uri": cp, "channel_creds": []any{map[string]any{"type": "insecure"}}, "server_features": []any{}}},
		"node": map[string]any{
			"id":       "sidecar~" + ip + "~" + pod + ".default~default.svc.cluster.local",
			"metadata": map[string]any{"GENERATOR": "grpc", "NAMESPACE": "default", "LABELS": labels},
		},
		"server_listener_resource_name_template": gen.GRPCServerListenerPrefix + "%s",
	}
	if certs != "" {
		b["certificate_providers"] = map[string]any{gen.GRPCCertProviderInstance: map[string]any{
			"plugin_name": "file_watcher",
			"config": map[string]any{
				"certificate_file":    filepath.Join(certs, "cert.pem"),
				"private_key_file":    filepath.Join(certs, "key.pem"),
				"ca_certificate_file": filepath.Join(certs, "root.pem"),
				"refresh_interval":    "600s",
			},
		}}
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testCA issues certificates for SPIFFE ids under a fresh root.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "xdslab test root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes cert.pem, key.pem and root.pem for SPIFFE id spiffe into a new directory.
func (ca *testCA) issue(t *testing.T, spiffe string, serial int64) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(spiffe)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		URIs: []*url.URL{u}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
		"root.pem": ca.pem,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGRPCXDSServerServes runs a real grpc-go xDS server (xds.NewGRPCServer, bootstrapped as
// istio-agent bootstraps it) against xdslab's control plane: it fetches its server listener
// (gen.GRPCServerListenerPrefix + its address), goes SERVING, and serves a grpc-go xDS client's
// RPC; the AuthorizationPolicy's RBAC filter denies the Watch method, until the policy changes
// (a push reaches the server). Plaintext without
// PeerAuthentication; with a PeerAuthentication STRICT the listener takes mTLS on the
// file_watcher certificate provider (a plaintext client is refused) and the client's
// ISTIO_MUTUAL cluster presents its certificate and checks the server's SPIFFE id. Neither
// side NACKs anything.
func TestGRPCXDSServerServes(t *testing.T) {
	for _, mtls := range []bool{false, true} {
		name := "plaintext"
		if mtls {
			name = "mtls"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			target := lis.Addr().(*net.TCPAddr).Port
			dir := t.TempDir()
			for f, content := range grpcServerMesh(target, mtls) {
				writeFile(t, dir, f, content)
			}
			opts := controlplanetest.Options(t)
			opts.ConfigDir = dir
			opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
			cp := controlplanetest.NewServer(t, opts)

			var serverCerts, clientCerts string
			if mtls {
				ca := newTestCA(t)
				serverCerts = ca.issue(t, "spiffe://cluster.local/ns/default/sa/echo", 2)
				clientCerts = ca.issue(t, "spiffe://cluster.local/ns/default/sa/client", 3)
			}

			// The server: SERVING once the control plane has sent its listener. The callback
			// may run after the test (on Stop): it only records.
			serving := make(chan struct{}, 1)
			var notServing atomic.Value // the last reason it was not serving
			creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := xds.NewGRPCServer(grpc.Creds(creds),
				xds.BootstrapContentsForTesting(grpcBootstrap(t, cp.GRPCAddr(), "127.0.0.1", "echo-0", map[string]string{"app": "echo"}, serverCerts)),
				xds.ServingModeCallback(func(_ net.Addr, a xds.ServingModeChangeArgs) {
					if a.Mode == connectivity.ServingModeServing {
						select {
						case serving <- struct{}{}:
						default:
						}
					} else if a.Err != nil {
						notServing.Store(a.Err.Error())
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			healthpb.RegisterHealthServer(srv, health.NewServer())
			done := make(chan struct{})
			go func() { _ = srv.Serve(lis); close(done) }()
			defer func() { srv.Stop(); <-done }()
			select {
			case <-serving:
			case <-ctx.Done():
				t.Fatalf("the xDS server never went SERVING (last: %v)", notServing.Load())
			}

			// The client, through xDS.
			rb, err := xds.NewXDSResolverWithConfigForTesting(grpcBootstrap(t, cp.GRPCAddr(), "127.0.0.2", "client-0", map[string]string{"app": "client"}, clientCerts))
			if err != nil {
				t.Fatal(err)
			}
			ccreds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
			if err != nil {
				t.Fatal(err)
			}
			cc, err := grpc.NewClient("xds:///echo.default.svc.cluster.local:7070", grpc.WithResolvers(rb), grpc.WithTransportCredentials(ccreds))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			hc := healthpb.NewHealthClient(cc)
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("Check through xDS: %v, %v", resp, err)
			}
			// The DENY policy: Watch is refused by the server's RBAC filter.
			w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err == nil {
				_, err = w.Recv()
			}
			if status.Code(err) != codes.PermissionDenied {
				t.Errorf("Watch: %v, want PermissionDenied from the RBAC filter", err)
			}

			// A policy change reaches the server: denying another method, Watch is served.
			writeFile(t, dir, "authz.yaml", strings.Replace(grpcServerMesh(target, mtls)["authz.yaml"], "/grpc.health.v1.Health/Watch", "/other.Service/*", 1))
			for {
				wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
				w, err := hc.Watch(wctx, &healthpb.HealthCheckRequest{})
				if err == nil {
					_, err = w.Recv()
				}
				wcancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("Watch still refused after the policy changed: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}

			// A plaintext client dialling the server directly: served without mTLS, refused
			// with it.
			direct, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			defer dcancel()
			_, err = healthpb.NewHealthClient(direct).Check(dctx, &healthpb.HealthCheckRequest{})
			if mtls && err == nil {
				t.Error("a plaintext client was served by the mTLS listener")
			}
			if !mtls && err != nil {
				t.Errorf("a plaintext client was refused by the plaintext listener: %v", err)
			}

			for _, c := range cp.XDS().Syncz() {
				for _, ty := range c.Types {
					if ty.Nacks != 0 {
						t.Errorf("%s NACKed %s: %s", c.NodeID, ty.TypeURL, ty.LastError)
					}
				}
			}
		})
	}
}
