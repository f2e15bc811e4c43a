package security

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	testTD  = "cluster.local"
	testIss = "https://issuer.test"
	testAud = "xdslab"
)

// echoADS answers every request with a response of the same type, version "1"; it stands in for
// the ADS server so these tests exercise only the transport and the interceptor.
type echoADS struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
}

func (echoADS) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	for {
		req, err := s.Recv()
		if err != nil {
			return err
		}
		if err := s.Send(&discovery.DiscoveryResponse{TypeUrl: req.GetTypeUrl(), VersionInfo: "1", Nonce: "n1"}); err != nil {
			return err
		}
	}
}

type fixture struct {
	ca       *CA
	certs    *CertSource
	addr     string
	signer   jose.Signer
	auth     *Authenticator
	failures *prometheus.CounterVec
}

func newFixture(t testing.TB, withTLS bool) *fixture {
	t.Helper()
	ca, err := LoadOrCreateCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseJWKS(jwks, "jwks.json", JWTConfig{Issuer: testIss, Audience: testAud, TrustDomain: testTD})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fails := NewAuthFailures()
	auth := NewAuthenticator(AuthConfig{TrustDomain: testTD, JWT: v, Failures: fails})
	certs := &CertSource{}
	sc, err := ca.IssueServer([]string{"xdslab.test"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certs.Set(sc)
	opts := []grpc.ServerOption{grpc.StreamInterceptor(auth.StreamInterceptor())}
	if withTLS {
		opts = append(opts, grpc.Creds(ServerCredentials(ca, certs)))
	}
	srv := grpc.NewServer(opts...)
	discovery.RegisterAggregatedDiscoveryServiceServer(srv, echoADS{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(lis) })
	t.Cleanup(func() { srv.Stop(); wg.Wait() })
	f := &fixture{ca: ca, certs: certs, addr: lis.Addr().String(), signer: signer, auth: auth, failures: fails}
	return f
}

func (f *fixture) token(t testing.TB, sub string, exp time.Time) string {
	t.Helper()
	s, err := jwt.Signed(f.signer).Claims(jwt.Claims{
		Issuer: testIss, Audience: jwt.Audience{testAud}, Subject: sub,
		Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(exp.Add(-time.Hour)),
	}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type bearer struct{ tok string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.tok}, nil
}
func (bearer) RequireTransportSecurity() bool { return true }

func (f *fixture) dial(t testing.TB, cert *tls.Certificate, tok string) *grpc.ClientConn {
	t.Helper()
	cfg := &tls.Config{RootCAs: f.ca.Pool(), ServerName: "xdslab.test", MinVersion: tls.VersionTLS13}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}
	if tok != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{tok}))
	}
	cc, err := grpc.NewClient(f.addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// node is a sidecar node in namespace ns; "ns/sa" also names its SERVICE_ACCOUNT.
func node(ns string) *corev3.Node {
	meta := map[string]any{"NAMESPACE": ns}
	if n, sa, ok := strings.Cut(ns, "/"); ok {
		ns, meta["NAMESPACE"], meta["SERVICE_ACCOUNT"] = n, n, sa
	}
	md, _ := structpb.NewStruct(meta)
	return &corev3.Node{Id: "sidecar~10.0.0.1~a." + ns + "~" + ns + ".svc.cluster.local", Metadata: md}
}

const cdsType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// roundTrip opens an ADS stream, sends one request for node ns and waits for the response.
func roundTrip(ctx context.Context, cc *grpc.ClientConn, ns string) (discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient, error) {
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(&discovery.DiscoveryRequest{Node: node(ns), TypeUrl: cdsType}); err != nil {
		_, err = st.Recv() // the refusal status arrives on Recv
		return nil, err
	}
	resp, err := st.Recv()
	if err != nil {
		return nil, err
	}
	if resp.GetVersionInfo() != "1" || resp.GetTypeUrl() != cdsType {
		return nil, status.Errorf(codes.Internal, "unexpected response %v", resp)
	}
	return st, nil
}

func TestAuth(t *testing.T) {
	f := newFixture(t, true)
	now := time.Now()
	good, err := f.ca.IssueWorkload(Identity{TrustDomain: testTD, Namespace: "default", ServiceAccount: "app"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherTD, err := f.ca.IssueWorkload(Identity{TrustDomain: "evil.local", Namespace: "default", ServiceAccount: "app"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := LoadOrCreateCA(t.TempDir(), now)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := otherCA.IssueWorkload(Identity{TrustDomain: testTD, Namespace: "default", ServiceAccount: "app"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		tok  string
		ns   string
		want codes.Code
	}{
		{"mtls ok", &good, "", "default", codes.OK},
		{"jwt ok k8s subject", nil, f.token(t, "system:serviceaccount:default:app", now.Add(time.Hour)), "default", codes.OK},
		{"jwt ok spiffe subject", nil, f.token(t, "spiffe://cluster.local/ns/default/sa/app", now.Add(time.Hour)), "default", codes.OK},
		{"no credential", nil, "", "default", codes.Unauthenticated},
		{"mtls wrong namespace", &good, "", "kube-system", codes.PermissionDenied},
		{"mtls node's service account", &good, "", "default/app", codes.OK},
		{"mtls other service account", &good, "", "default/other", codes.PermissionDenied},
		{"jwt other service account", nil, f.token(t, "system:serviceaccount:default:app", now.Add(time.Hour)), "default/other", codes.PermissionDenied},
		{"mtls wrong trust domain", &otherTD, "", "default", codes.Unauthenticated},
		{"jwt expired", nil, f.token(t, "system:serviceaccount:default:app", now.Add(-time.Hour)), "default", codes.Unauthenticated},
		{"jwt wrong namespace", nil, f.token(t, "system:serviceaccount:default:app", now.Add(time.Hour)), "other", codes.PermissionDenied},
		{"jwt garbage", nil, "not.a.jwt", "default", codes.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := roundTrip(ctx, f.dial(t, tc.cert, tc.tok), tc.ns)
			if got := status.Code(err); got != tc.want {
				t.Fatalf("code %v (%v), want %v", got, err, tc.want)
			}
		})
	}
	// A certificate from another CA fails the TLS handshake itself: the stream never opens.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := roundTrip(ctx, f.dial(t, &foreign, ""), "default"); status.Code(err) != codes.Unavailable {
		t.Fatalf("foreign CA cert: %v, want Unavailable (handshake failure)", err)
	}
	// Counted per code: 4 Unauthenticated and 4 PermissionDenied cases above.
	if u, p := testutil.ToFloat64(f.failures.WithLabelValues("Unauthenticated")), testutil.ToFloat64(f.failures.WithLabelValues("PermissionDenied")); u != 4 || p != 4 {
		t.Fatalf("auth failures: Unauthenticated=%v PermissionDenied=%v, want 4 and 4", u, p)
	}
}

// TestRotationKeepsStreams re-issues the server certificate under connected clients: their
// streams keep working and a new connection sees the new certificate.
func TestRotationKeepsStreams(t *testing.T) {
	f := newFixture(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cert, err := f.ca.IssueWorkload(Identity{TrustDomain: testTD, Namespace: "default", ServiceAccount: "app"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var streams []discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	for range 3 {
		st, err := roundTrip(ctx, f.dial(t, &cert, ""), "default")
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	next, err := f.ca.IssueServer([]string{"xdslab.test"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.certs.Set(next)
	for i, st := range streams {
		if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: cdsType, VersionInfo: "1", ResponseNonce: "n1"}); err != nil {
			t.Fatalf("stream %d after rotation: send: %v", i, err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatalf("stream %d after rotation: recv: %v", i, err)
		}
	}
	conn, err := tls.Dial("tcp", f.addr, &tls.Config{RootCAs: f.ca.Pool(), ServerName: "xdslab.test", Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(next.Leaf.SerialNumber) != 0 {
		t.Fatalf("new connection got serial %v, want rotated %v", got, next.Leaf.SerialNumber)
	}
}

func TestLoadOrCreateCA(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreateCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if string(a.CertPEM()) != string(b.CertPEM()) {
		t.Fatal("second start created a new root instead of loading the kept one")
	}
	if fi, err := os.Stat(filepath.Join(dir, caKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi, err)
	}
	if err := os.Remove(filepath.Join(dir, caKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateCA(dir, time.Now()); err == nil || !strings.Contains(err.Error(), "exactly one") {
		t.Fatalf("half a CA: %v, want an error naming the missing file", err)
	}
	if _, err := LoadCA([]byte("junk"), nil, "x.pem"); err == nil || !strings.Contains(err.Error(), "x.pem") {
		t.Fatalf("junk CA: %v", err)
	}
}

func TestParseJWKSErrors(t *testing.T) {
	cfg := JWTConfig{Issuer: testIss, Audience: testAud, TrustDomain: testTD}
	for _, tc := range []struct{ in, want string }{
		{"{\n\"keys\": [,]}", "jwks.json:2:"},
		{`{"keys": []}`, "no keys"},
		{`[1]`, "invalid JWKS"},
	} {
		if _, err := ParseJWKS([]byte(tc.in), "jwks.json", cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseJWKS(%q) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestVerifyClaims(t *testing.T) {
	f := newFixture(t, true)
	now := time.Now()
	v := f.auth.jwt
	mk := func(c jwt.Claims) string {
		s, err := jwt.Signed(f.signer).Claims(c).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := jwt.NewNumericDate(now.Add(time.Hour))
	for _, tc := range []struct {
		name string
		c    jwt.Claims
		ok   bool
	}{
		{"good", jwt.Claims{Issuer: testIss, Audience: jwt.Audience{testAud}, Subject: "system:serviceaccount:a:b", Expiry: exp}, true},
		{"wrong issuer", jwt.Claims{Issuer: "x", Audience: jwt.Audience{testAud}, Subject: "system:serviceaccount:a:b", Expiry: exp}, false},
		{"wrong audience", jwt.Claims{Issuer: testIss, Audience: jwt.Audience{"x"}, Subject: "system:serviceaccount:a:b", Expiry: exp}, false},
		{"no expiry", jwt.Claims{Issuer: testIss, Audience: jwt.Audience{testAud}, Subject: "system:serviceaccount:a:b"}, false},
		{"bad subject", jwt.Claims{Issuer: testIss, Audience: jwt.Audience{testAud}, Subject: "alice", Expiry: exp}, false},
		{"not yet valid", jwt.Claims{Issuer: testIss, Audience: jwt.Audience{testAud}, Subject: "system:serviceaccount:a:b", Expiry: exp, NotBefore: jwt.NewNumericDate(now.Add(30 * time.Minute))}, false},
	} {
		_, err := v.Verify(mk(tc.c), now)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err=%v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// FuzzVerify feeds arbitrary strings to the token parser: it must never panic nor accept.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f, false)
	f.Add(fx.token(f, "system:serviceaccount:a:b", time.Now().Add(time.Hour)))
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := fx.auth.jwt.Verify(s, time.Now())
		if err == nil && id.Namespace == "" {
			t.Fatalf("accepted %q with empty namespace", s)
		}
	})
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNewStream opens b.N connections, each with one ADS stream and one request/response
// (run with -benchtime=1000x for 1,000 streams); the figures include the TLS handshake.
func BenchmarkNewStream(b *testing.B) {
	for _, mode := range []string{"plaintext", "mtls"} {
		b.Run(mode, func(b *testing.B) {
			f := newFixture(b, mode == "mtls")
			cert, err := f.ca.IssueWorkload(Identity{TrustDomain: testTD, Namespace: "default", ServiceAccount: "app"}, time.Now(), time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// Plaintext clients carry the identity as a token so both modes pass the same interceptor.
			tok := f.token(b, "system:serviceaccount:default:app", time.Now().Add(time.Hour))
			b.ResetTimer()
			cpu0, t0 := cpuTime(), time.Now()
			for range b.N {
				var cc *grpc.ClientConn
				if mode == "mtls" {
					cc, err = grpc.NewClient(f.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: f.ca.Pool(), ServerName: "xdslab.test", Certificates: []tls.Certificate{cert}})))
				} else {
					cc, err = grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				}
				if err != nil {
					b.Fatal(err)
				}
				sctx := ctx
				if mode != "mtls" {
					sctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
				}
				if _, err := roundTrip(sctx, cc, "default"); err != nil {
					b.Fatal(err)
				}
				_ = cc.Close()
			}
			el, cpu := time.Since(t0), cpuTime()-cpu0
			b.ReportMetric(float64(b.N)/el.Seconds(), "streams/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/stream")
		})
	}
}
