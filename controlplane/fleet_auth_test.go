package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/security"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/istioconfig"
)

const (
	labIssuer   = "https://issuer.lab.test"
	labAudience = "xdslab"
)

// secureLab is a control plane with the secure listener (mTLS, and JWT against a JWKS file),
// a config directory holding the echo service, and the root it created.
type secureLab struct {
	dir    string
	srv    *controlplane.Server
	ca     *security.CA
	signer jose.Signer
}

// newSecureLab starts the lab; ttl > 0 shortens both the server and the workload certificate
// lifetimes (each is re-issued at half of it).
func newSecureLab(t *testing.T, ttl time.Duration) *secureLab {
	t.Helper()
	l := &secureLab{dir: t.TempDir()}
	caDir := t.TempDir()
	writeEchoEntry(t, l.dir, 7070)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "lab", Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o644); err != nil {
		t.Fatal(err)
	}
	if l.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "lab"}}, nil); err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.ConfigDir = l.dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	opts.Secure.Addr, opts.Secure.CADir = "127.0.0.1:0", caDir
	opts.Secure.JWKSFile, opts.Secure.JWTIssuer, opts.Secure.JWTAudience = jwksFile, labIssuer, labAudience
	if ttl > 0 {
		opts.Secure.CertTTL, opts.Secure.WorkloadCertTTL = ttl, ttl
	}
	l.srv = controlplanetest.NewServer(t, opts)
	if l.ca, err = security.LoadOrCreateCA(caDir, time.Now()); err != nil {
		t.Fatal(err)
	}
	return l
}

// auth returns per-client credentials: "mtls" (a workload certificate per namespace), "jwt"
// (a token per namespace), or "wrong-ns" (certificates of another namespace).
func (l *secureLab) auth(mode string) *fleet.ClientAuth {
	a := &fleet.ClientAuth{Roots: l.ca.Pool(), ServerName: "localhost"}
	switch mode {
	case "mtls", "wrong-ns":
		a.Certificate = func(ns, sa string) (tls.Certificate, error) {
			if mode == "wrong-ns" {
				ns = "elsewhere"
			}
			return l.ca.IssueWorkload(security.Identity{TrustDomain: "cluster.local", Namespace: ns, ServiceAccount: sa}, time.Now(), time.Hour)
		}
	case "jwt":
		a.Token = func(ns, sa string) (string, error) {
			now := time.Now()
			return jwt.Signed(l.signer).Claims(jwt.Claims{Issuer: labIssuer, Audience: jwt.Audience{labAudience},
				Subject: "system:serviceaccount:" + ns + ":" + sa, Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now)}).Serialize()
		}
	}
	return a
}

// writeMTLS asks for ISTIO_MUTUAL to echo and mesh-wide STRICT mTLS, with AuthorizationPolicies
// and a RequestAuthentication (RBAC and jwt_authn filters the realistic fleet must accept).
func (l *secureLab) writeMTLS(t *testing.T) {
	t.Helper()
	mtls := `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: echo, namespace: default}
spec:
  host: echo.default.svc.cluster.local
  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: istio-system}
spec: {mtls: {mode: STRICT}}
---
# RBAC on every sidecar's inbound chains: AUDIT, DENY and ALLOW, HTTP and network filters.
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-debug, namespace: istio-system}
spec:
  action: DENY
  rules:
  - to: [{operation: {paths: [/debug*], ports: ["8080"]}}]
    when: [{key: "request.headers[x-debug]", values: ["*"]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: audit, namespace: istio-system}
spec:
  action: AUDIT
  rules: [{to: [{operation: {methods: [POST]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-mesh, namespace: default}
spec:
  rules:
  - from: [{source: {principals: [cluster.local/ns/*], notIpBlocks: [10.0.0.0/8]}}, {source: {namespaces: [default]}}]
    to: [{operation: {hosts: ["*.cluster.local"], notPaths: [/admin]}}]
    when: [{key: "request.auth.claims[groups]", values: [mesh]}]
---
# jwt_authn before RBAC: inline keys, keys Envoy fetches (remote_jwks), and OpenID discovery
# (fail-closed inline key).
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: istio-system}
spec:
  jwtRules:
  - issuer: https://mesh.example.com
    audiences: [mesh]
    jwks: '{"keys":[{"kty":"RSA","e":"AQAB","n":"13XyPgifN-Ol4E0xnK8ldLNo6kVhbppspPLbdQpOO4fcnEgdFJ6smkKkfs8wBM9D6JYJwSKBMR054lanhtGiu28HhRA6ShoZTXhG82zSdSBmPIX48W0CwgARy990a0Adp0sbAi5V_IpCa8Zex3rVAHPWLqBgeuVY74qGhBvrsaimsom9VEXMgGFkRvoc8hdyBOJTV6S4F11KiXnSQyuTo_AcXoTUkF3BJZu9AGguDhVcl0WR-240uk2A1qpV_nPp5WNRzOjOomeo2Awf4g9hlwrMgzyZ6pj6T4HVy4Y6y-jgTcI5hCYOilogpjJgAAWvRh5qycU5fiC--TrJwES2-Q"}]}'
    fromHeaders: [{name: x-jwt, prefix: "Bearer "}]
    outputClaimToHeaders: [{header: x-sub, claim: sub}]
  - issuer: https://remote.example.com
    jwksUri: https://keys.example.com/jwks
  - issuer: https://discovered.example.com
`
	if err := os.WriteFile(filepath.Join(l.dir, "mtls.yaml"), []byte(mtls), 0o644); err != nil {
		t.Fatal(err)
	}
	waitSnap(t, l.srv, "the PeerAuthentication, AuthorizationPolicies and RequestAuthentication", func(s *model.Snapshot) bool {
		return len(s.Configs(istioconfig.KindPeerAuthentication)) == 1 && len(s.Configs(istioconfig.KindAuthorizationPolicy)) == 3 &&
			len(s.Configs(istioconfig.KindRequestAuthentication)) == 1
	})
}

func startFleet(t *testing.T, ctx context.Context, target string, groups ...fleet.Group) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(fleet.Config{Target: target, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f
}

func waitFull(t *testing.T, f *fleet.Fleet, n int) {
	t.Helper()
	eventually(t, "every client's first full config", func() bool { return f.Observer().Stats().FullConfig >= uint64(n) })
}

// TestFleetIstioMutual: with DestinationRule ISTIO_MUTUAL and a STRICT PeerAuthentication, the
// generated clusters and listeners reference the SDS secrets; fake Envoys that check resources
// as Envoy does request default and ROOTCA over ADS, warm on them and reach a full config
// without a NACK, over SotW and Delta. The plaintext listener's clients have no identity for
// xdslab's SDS to serve: their config names the istio-agent's secrets instead, as istiod's does
// for every proxy, and they reach a full config too, with no SDS request over ADS.
func TestFleetIstioMutual(t *testing.T) {
	l := newSecureLab(t, 0)
	l.writeMTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	const n = 4
	g := fleet.Group{Name: "mesh", Count: n, Identity: fakeenvoy.IdentityTemplate{Namespaces: 2, IPBase: "127.0.0.1"},
		Auth: l.auth("mtls"), Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}
	dg := g
	dg.Name, dg.Client.Delta = "mesh-delta", true
	f := startFleet(t, ctx, l.srv.SecureGRPCAddr(), g, dg)
	waitFull(t, f, 2*n)
	st := f.Observer().Stats()
	if st.Types["SDS"].Responses < 2*n || st.Total.Nacks != 0 {
		t.Fatalf("SDS responses %d (want >= %d), NACKs %d: %+v", st.Types["SDS"].Responses, 2*n, st.Total.Nacks, st.Types)
	}
	// Plaintext clients: the same rules, their secrets from the agent (xdslab's SDS would
	// answer them with nothing, and a config naming it would keep them warming for ever).
	pg := g
	pg.Name, pg.Auth, pg.Count = "plain", nil, 2
	pf := startFleet(t, ctx, l.srv.GRPCAddr(), pg)
	waitFull(t, pf, 2)
	if ps := pf.Observer().Stats(); ps.Types["SDS"].Responses != 0 || ps.Total.Nacks != 0 {
		t.Fatalf("plaintext clients: %d SDS responses over ADS (want none: the agent serves them), %d NACKs", ps.Types["SDS"].Responses, ps.Total.Nacks)
	}
}

// TestFleetPerClientAuth: groups spread over two namespaces authenticate every client as its
// own namespace, by workload certificate or by JWT, and all reach a full config; a group
// presenting another namespace's certificates is refused (PermissionDenied, counted).
func TestFleetPerClientAuth(t *testing.T) {
	l := newSecureLab(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	id := fakeenvoy.IdentityTemplate{Namespaces: 2}
	f := startFleet(t, ctx, l.srv.SecureGRPCAddr(),
		fleet.Group{Name: "mtls", Count: 4, Identity: id, Auth: l.auth("mtls")},
		fleet.Group{Name: "jwt", Count: 4, Identity: id, Auth: l.auth("jwt")})
	waitFull(t, f, 8)
	bad := startFleet(t, ctx, l.srv.SecureGRPCAddr(), fleet.Group{Name: "bad", Count: 2, Identity: id, Auth: l.auth("wrong-ns")})
	eventually(t, "the wrong-namespace clients refused", func() bool {
		return strings.Contains(scrape(t, l.srv), `xdslab_cp_xds_auth_failures_total{code="PermissionDenied"}`)
	})
	if st := bad.Observer().Stats(); st.FullConfig != 0 {
		t.Fatalf("wrong-namespace clients got %d full configs", st.FullConfig)
	}
}

// TestFleetCertRotation: with a 1s server and workload certificate lifetime, certificates are
// re-issued every half second under a connected mTLS fleet whose config references SDS: the
// rotated workload certificates are pushed on the open streams, and no stream is lost (no
// reconnect, no disconnect, no NACK).
func TestFleetCertRotation(t *testing.T) {
	l := newSecureLab(t, time.Second)
	l.writeMTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	const n = 4
	f := startFleet(t, ctx, l.srv.SecureGRPCAddr(), fleet.Group{Name: "mesh", Count: n,
		Identity: fakeenvoy.IdentityTemplate{Namespaces: 2, IPBase: "127.0.0.1"}, Auth: l.auth("mtls"),
		Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}})
	waitFull(t, f, n)
	// A handshake may fail before the first stream on a loaded machine (a 1s certificate can
	// expire while the handshake waits for a core; the client retries): what the test holds
	// is that rotation under open streams loses none, so failures are counted from here.
	before := f.Observer().Stats().ConnectFailuresTotal()
	if before > 0 {
		t.Logf("%d connect failures before every client held its first config", before)
	}
	// Two secrets per client at first, then at least two rotations of default each.
	eventually(t, "rotated certificates pushed", func() bool { return f.Observer().Stats().Types["SDS"].Changed >= 4*n })
	st := f.Observer().Stats()
	if st.Connects != n || st.Disconnects != 0 || st.ConnectFailuresTotal() != before || st.Total.Nacks != 0 {
		t.Fatalf("connects %d (want %d), disconnects %d, connect failures %v (%d before the fleet was full), NACKs %d",
			st.Connects, n, st.Disconnects, st.ConnectFailures, before, st.Total.Nacks)
	}
}
