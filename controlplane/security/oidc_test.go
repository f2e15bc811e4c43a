package security

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// oidcIssuer is a loopback OIDC issuer whose signing key can be rotated.
type oidcIssuer struct {
	srv *httptest.Server
	mu  sync.Mutex
	key *ecdsa.PrivateKey
	kid string
	// claimIssuer is the issuer its discovery document states (normally the server's URL).
	claimIssuer string
}

func newOIDCIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	o := &oidcIssuer{}
	o.rotate(t, "k1")
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		o.mu.Lock()
		iss := o.claimIssuer
		o.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": o.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		o.mu.Lock()
		defer o.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &o.key.PublicKey, KeyID: o.kid, Algorithm: "ES256", Use: "sig"}}})
	})
	o.srv = httptest.NewServer(mux)
	o.claimIssuer = o.srv.URL
	t.Cleanup(o.srv.Close)
	return o
}

func (o *oidcIssuer) rotate(t *testing.T, kid string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	o.key, o.kid = k, kid
	o.mu.Unlock()
}

func (o *oidcIssuer) token(t *testing.T, sub string) string {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: o.key, KeyID: o.kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(jwt.Claims{Issuer: o.srv.URL, Audience: jwt.Audience{testAud}, Subject: sub,
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestOIDCVerifier: the verifier discovers the issuer's keys; after the issuer rotates its key a
// new token fails until Refresh fetches the new key, and then passes; a discovery document that
// names another issuer, and issuer URLs that cannot be discovered, are refused.
func TestOIDCVerifier(t *testing.T) {
	iss := newOIDCIssuer(t)
	ctx := context.Background()
	o := OIDC{Issuer: iss.srv.URL, Client: iss.srv.Client()}
	v, err := o.NewVerifier(ctx, JWTConfig{Issuer: iss.srv.URL, Audience: testAud, TrustDomain: testTD})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := v.Verify(iss.token(t, "system:serviceaccount:ns:sa"), time.Now()); err != nil || id.Namespace != "ns" {
		t.Fatalf("discovered key: %+v, %v", id, err)
	}
	iss.rotate(t, "k2")
	rotated := iss.token(t, "system:serviceaccount:ns:sa")
	if _, err := v.Verify(rotated, time.Now()); err == nil {
		t.Fatal("a token signed with the rotated key verified before the refresh")
	}
	if err := o.Refresh(ctx, v); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(rotated, time.Now()); err != nil {
		t.Fatalf("after the refresh: %v", err)
	}
	iss.mu.Lock()
	iss.claimIssuer = "https://elsewhere.test"
	iss.mu.Unlock()
	if err := o.Refresh(ctx, v); err == nil || !strings.Contains(err.Error(), "is not") {
		t.Fatalf("issuer mismatch: %v", err)
	}
	if _, err := v.Verify(rotated, time.Now()); err != nil {
		t.Fatalf("a failed refresh dropped the keys: %v", err)
	}
	for _, bad := range []string{"http://issuer.example.com", "ftp://127.0.0.1", "https://", "https://a.test/?x=1"} {
		if err := CheckIssuerURL(bad); err == nil {
			t.Errorf("CheckIssuerURL(%q) accepted", bad)
		}
	}
}

// FuzzParseJWKS: arbitrary JWKS documents never panic the parser, and an accepted set holds only
// public keys.
func FuzzParseJWKS(f *testing.F) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	pub, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "a", Algorithm: "ES256"}}})
	priv, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: k, KeyID: "a", Algorithm: "ES256"}}})
	f.Add(pub)
	f.Add(priv)
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[`))
	cfg := JWTConfig{Issuer: testIss, Audience: testAud, TrustDomain: testTD}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseJWKS(b, "fuzz.json", cfg)
		if err != nil {
			return
		}
		for _, key := range v.keys.Load().Keys {
			if !key.IsPublic() {
				t.Fatalf("accepted a private key: %s", b)
			}
		}
	})
}
