package xds

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/internal/pki"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// writeCertFiles writes a server certificate, its key and its CA as PEM files under dir, as a
// gateway pod mounts them, and returns their paths.
func writeCertFiles(t *testing.T, dir string) (cert, key, ca string) {
	t.Helper()
	now := time.Now()
	authority, err := pki.NewCA(now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := authority.IssueServer([]string{"files.gw.example"}, nil, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, ca = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	for path, b := range map[string][]byte{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		ca:   authority.CertPEM(),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key, ca
}

// A gateway whose servers terminate TLS in every mode xdslab generates (ISTIO_MUTUAL, files
// the agent reads, files it cannot read, credentials xdslab does not serve; HTTPS and protocol
// TLS) and pass it through to SNI-DNAT clusters (AUTO_PASSTHROUGH) reaches a full config on
// the fake Envoy (SotW and Delta, realistic NACK policy), with its istio-agent serving the
// workload and file secrets, without a NACK. The missing file and credential are waited out
// by their initial fetch timeout, as Envoy does with istiod's config; a file secret that
// waited forever would hold the listener. A new mTLS endpoint reaches the SNI-DNAT cluster's
// assignment.
func TestFakeEnvoyGatewayTLSModesWarm(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(3, 1)
	cert, key, ca := writeCertFiles(t, t.TempDir())
	missing := filepath.Join(t.TempDir(), "absent")
	tlsServer := func(num uint32, name, proto, host string, tls *networking.ServerTLSSettings) *networking.Server {
		return &networking.Server{Port: &networking.Port{Number: num, Name: name, Protocol: proto}, Hosts: []string{host}, Tls: tls}
	}
	servers := []*networking.Server{
		tlsServer(9443, "https-mesh", "HTTPS", "mesh.gw.example", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_ISTIO_MUTUAL}),
		tlsServer(9443, "https-files", "HTTPS", "files.gw.example", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, ServerCertificate: cert, PrivateKey: key}),
		tlsServer(9443, "https-mutual", "HTTPS", "mutual.gw.example", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, ServerCertificate: cert, PrivateKey: key, CaCertificates: ca}),
		tlsServer(9443, "https-missing", "HTTPS", "missing.gw.example", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_OPTIONAL_MUTUAL, ServerCertificate: missing + ".crt", PrivateKey: missing + ".key", CaCertificates: missing + "-ca.crt"}),
		tlsServer(9443, "https-cred", "HTTPS", "cred.gw.example", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_OPTIONAL_MUTUAL, CredentialName: "not-served"}),
		tlsServer(9444, "tls-files", "TLS", "db.gw.example", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, ServerCertificate: cert, PrivateKey: key, CaCertificates: ca}),
		tlsServer(9444, "tls-mesh", "TLS", "cache.gw.example", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_ISTIO_MUTUAL}),
		tlsServer(15443, "tls-auto", "TLS", "*.ns-0.svc.cluster.local", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}),
	}
	dest := &networking.Destination{Host: "svc-0.ns-0.svc.cluster.local", Port: &networking.PortSelector{Number: 8080}}
	in.Configs = []*istioconfig.Config{
		{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: "tls", Namespace: "istio-system"}, Spec: &networking.Gateway{Servers: servers}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "web", Namespace: "ns-0"}, Spec: &networking.VirtualService{
			Hosts: []string{"mesh.gw.example", "files.gw.example", "mutual.gw.example", "missing.gw.example", "cred.gw.example"}, Gateways: []string{"istio-system/tls"},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: dest}}}}}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "db", Namespace: "ns-0"}, Spec: &networking.VirtualService{
			Hosts: []string{"db.gw.example", "cache.gw.example"}, Gateways: []string{"istio-system/tls"},
			Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: dest}}}}}},
	}
	ts.push(in, true)

	const n = 2
	rec := &recorder{full: map[int]bool{}, ready: make(chan int, n), seen: map[int]chan struct{}{}}
	sniDNAT := gen.IstioSNI(8080, "", "svc-0.ns-0.svc.cluster.local")
	rec.want = &probe.Expectation{All: []probe.Predicate{{Op: probe.ListenerPresent, Resource: "0.0.0.0_9443"}, {Op: probe.ListenerPresent, Resource: "0.0.0.0_9444"},
		{Op: probe.ListenerPresent, Resource: "0.0.0.0_15443"}, {Op: probe.ClusterPresent, Resource: sniDNAT}}}
	chans := make([]chan struct{}, n)
	for i := range n {
		chans[i] = make(chan struct{})
		rec.seen[i] = chans[i]
	}
	tmpl := fakeenvoy.IdentityTemplate{Type: "router", Namespace: "istio-system", IPBase: "10.201.0.1"}
	runFakeEnvoys(t, ts, rec, n, 20*time.Second, func(i int) fakeEnvoy {
		return fakeEnvoy{node: tmpl.Node(i), delta: i == 1, fetchTimeout: 50 * time.Millisecond}
	})
	for i, ch := range chans {
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("gateway %d (delta=%v) has a full config without the TLS listeners and the SNI-DNAT cluster", i, i == 1)
		}
	}
	// An endpoint with a sidecar joins the SNI-DNAT assignment.
	host := "svc-0.ns-0.svc.cluster.local"
	want := probe.Expectation{EventID: 1, Kind: "endpoint-add", All: []probe.Predicate{{Op: probe.EndpointPresent, Resource: sniDNAT, Address: "10.78.0.1", Port: 8080}}}
	rec.mu.Lock()
	rec.want = &want
	for i := range n {
		chans[i] = make(chan struct{})
		rec.seen[i] = chans[i]
	}
	rec.mu.Unlock()
	ep := endpoint(host, "10.78.0.1")
	ep.Labels[gen.TLSModeLabel] = "istio"
	in.Endpoints[host] = append(in.Endpoints[host], ep)
	ts.push(in, false, host)
	for i, ch := range chans {
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("gateway %d (delta=%v) never observed %s", i, i == 1, want.All[0])
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.nacks != 0 {
		t.Errorf("%d NACKs: %v", rec.nacks, rec.errors)
	}
}
