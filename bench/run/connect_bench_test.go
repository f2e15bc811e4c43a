package run

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/scenarios"
)

// connectServices is the mesh the connecting fleet receives: small, so that the figures are
// dominated by the connection (TCP, TLS handshake, authentication) and the first push.
const connectServices = 20

// BenchmarkFleetConnect connects b.N fake Envoys (run with -benchtime=1000x for 1,000 clients),
// all at once, each on its own connection, to the in-process control plane: plaintext, mTLS
// (a workload certificate per namespace) and JWT (TLS plus a bearer token), and waits until each
// holds its first full config. Admission control is off, so the rate is the control plane's.
// It reports streams/s (clients ÷ time to the last full config), cp-cpu-us/stream (the control
// plane's CPU, from a CPU profile labelled by side: TLS handshakes, authentication,
// generation and sending) and cpu-us/stream (the whole process, the fleet's side included).
// Credentials are made before the clock starts.
func BenchmarkFleetConnect(b *testing.B) {
	for _, mode := range []string{"plaintext", "mtls", "jwt"} {
		b.Run(mode, func(b *testing.B) { benchConnect(b, mode) })
	}
}

func benchConnect(b *testing.B, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	keyFile := writeTestKey(b)
	opts := controlplane.DefaultOptions()
	opts.GRPCAddr, opts.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.AdmissionRate = -1
	opts.Cores = runtime.GOMAXPROCS(0)
	opts.Logger = slog.New(slog.DiscardHandler)
	auth := scenarios.Auth{CADir: dir + "/ca"}
	switch mode {
	case "mtls":
		auth.MTLS = true
	case "jwt":
		auth.JWT, auth.JWTKey, auth.Issuer, auth.Audience = true, keyFile, "https://lab.test", "xdslab"
	}
	if auth.Enabled() {
		opts.Secure = controlplane.SecureOptions{Addr: "127.0.0.1:0", CADir: auth.CADir}
		if auth.JWT {
			jwks, err := writeJWKS(keyFile, dir)
			if err != nil {
				b.Fatal(err)
			}
			opts.Secure.JWKSFile, opts.Secure.JWTIssuer, opts.Secure.JWTAudience = jwks, auth.Issuer, auth.Audience
		}
	}
	cp, err := startControlPlane(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer cp.stop()
	for i := range connectServices {
		ns := fmt.Sprintf("ns-%d", i%2)
		se := &networking.ServiceEntry{Hosts: []string{fmt.Sprintf("svc-%d.%s.svc.cluster.local", i, ns)}, Location: networking.ServiceEntry_MESH_INTERNAL,
			Resolution: networking.ServiceEntry_STATIC, Ports: []*networking.ServicePort{{Name: "http", Number: 8080, Protocol: "HTTP"}},
			Endpoints: []*networking.WorkloadEntry{{Address: fmt.Sprintf("10.1.%d.1", i)}, {Address: fmt.Sprintf("10.1.%d.2", i)}}}
		if _, err := cp.srv.ConfigStore().Create(&istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: fmt.Sprintf("svc-%d", i), Namespace: ns}, Spec: se}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := cp.srv.WaitForSnapshot(ctx, func(s *model.Snapshot) bool { return s.ServiceCount() == connectServices }); err != nil {
		b.Fatal(err)
	}
	g := fleet.Group{Name: mode, Count: b.N, Identity: fakeenvoy.IdentityTemplate{Namespaces: 2}}
	target := cp.addr
	if auth.Enabled() {
		if g.Auth, err = ClientAuth(auth, ""); err != nil {
			b.Fatal(err)
		}
		target = cp.srv.SecureGRPCAddr()
	}
	f, err := fleet.New(fleet.Config{Target: target, Groups: []fleet.Group{g}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Stop()
	usage0 := collect.ReadUsage()
	prof := collect.StartProfile(true)
	b.ResetTimer()
	t0 := time.Now()
	if err := f.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for f.Observer().Stats().FullConfig < uint64(b.N) {
		if ctx.Err() != nil {
			b.Fatalf("only %d of %d clients reached a full config", f.Observer().Stats().FullConfig, b.N)
		}
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(t0)
	b.StopTimer()
	bySide := prof.Stop()
	usage1 := collect.ReadUsage()
	b.ReportMetric(float64(b.N)/el.Seconds(), "streams/s")
	b.ReportMetric(float64((usage1.CPU()-usage0.CPU()).Microseconds())/float64(b.N), "cpu-us/stream")
	if bySide != nil {
		b.ReportMetric(float64(bySide[collect.SideControlPlane].Microseconds())/float64(b.N), "cp-cpu-us/stream")
	} else if prof.Err() != nil {
		fmt.Fprintln(os.Stderr, "BenchmarkFleetConnect: no CPU profile (", prof.Err(), "): cp-cpu-us/stream not reported")
	}
	if st := f.Observer().Stats(); st.ConnectFailuresTotal() != 0 {
		b.Fatalf("connect failures: %v", st.ConnectFailures)
	}
}
