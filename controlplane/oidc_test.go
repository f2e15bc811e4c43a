package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/security"
)

type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}
func (tokenCreds) RequireTransportSecurity() bool { return true }

// TestSecureOIDC: with --jwt-issuer and no JWKS file the control plane discovers the issuer's
// keys at start; a token the issuer signed opens a stream (and gets its identity's secrets),
// one signed by another key is refused Unauthenticated.
func TestSecureOIDC(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var issuer string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	issuer = hs.URL

	caDir := t.TempDir()
	opts := controlplanetest.Options(t)
	opts.ConfigDir = t.TempDir()
	writeEchoEntry(t, opts.ConfigDir, 7070)
	opts.Secure.Addr, opts.Secure.CADir = "127.0.0.1:0", caDir
	opts.Secure.JWTIssuer, opts.Secure.JWTAudience = issuer, "xdslab"
	srv := controlplanetest.NewServer(t, opts)
	ca, err := security.LoadOrCreateCA(caDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k *ecdsa.PrivateKey) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k, KeyID: "k"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(jwt.Claims{Issuer: issuer, Audience: jwt.Audience{"xdslab"}, Subject: "system:serviceaccount:default:app",
			Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tok  string
		want codes.Code
	}{{"issuer's key", sign(key), codes.OK}, {"another key", sign(other), codes.Unauthenticated}} {
		cc, err := grpc.NewClient(srv.SecureGRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS13})),
			grpc.WithPerRPCCredentials(tokenCreds(tc.tok)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
		if err == nil {
			err = st.Send(&discovery.DiscoveryRequest{Node: sdsNode("default"), TypeUrl: gen.SecretType, ResourceNames: []string{gen.SecretDefault}})
		}
		var resp *discovery.DiscoveryResponse
		if err == nil || errors.Is(err, io.EOF) { // a refused stream's Send may see EOF; Recv has the status
			resp, err = st.Recv()
		}
		cancel()
		_ = cc.Close()
		if status.Code(err) != tc.want {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == codes.OK {
			checkWorkloadSecret(t, decodeSecrets(t, resp)[gen.SecretDefault], ca, "spiffe://cluster.local/ns/default/sa/app")
		}
	}
}
