package run

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/controlplane/security"
)

// authScenario has a plaintext, an mtls and a jwt group; the in-process control plane serves
// the secure listener for the two that authenticate.
const authScenario = `
name: auth
seed: 3
duration: 2s
topology:
  namespaces: 2
  services: 4
  endpointsPerService: {dist: constant, value: 2}
churn:
  - {kind: endpoint-flap, rate: 2/s, down: 300ms}
clients:
  - {name: plain, count: 2}
  - {name: mtls, count: 4, auth: {mtls: true}}
  - {name: jwt, count: 4, auth: {jwt: true, jwtKey: KEY, issuer: https://lab.test, audience: xdslab}}
phases:
  connect: {timeout: 30s}
  drain: {timeout: 5s}
thresholds:
  xdslab_events_missed_total: ['count==0']
`

// TestRunAuth: every group of an in-process run with mtls and jwt groups reaches its full
// config (the secure listener authenticated and authorized each client as its namespace).
func TestRunAuth(t *testing.T) {
	sc := loadScenario(t, strings.ReplaceAll(authScenario, "KEY", writeTestKey(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Run(ctx, sc, Options{Out: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, 0.0, find(t, s, collect.MetricConnectIncomplete, nil).Values["value"], "every client of the three groups reaches its first full config")
	require.Equal(t, 10.0, find(t, s, "xdslab_fleet_full_config_clients", nil).Values["value"])
}

// TestApplyAuthNeedsCADir: against an external control plane an auth group must name the
// CA directory.
func TestApplyAuthNeedsCADir(t *testing.T) {
	sc := loadScenario(t, strings.ReplaceAll(authScenario, "KEY", "/nonexistent"))
	cfg, err := FleetConfig(sc, "127.0.0.1:1")
	require.NoError(t, err)
	require.ErrorContains(t, applyAuth(&cfg, sc, "", ""), "caDir is required")
}

// TestApplyAuth: only the groups with auth get credentials and the secure target; an mtls
// group's certificates carry the client's namespace.
func TestApplyAuth(t *testing.T) {
	caDir := t.TempDir()
	_, err := security.LoadOrCreateCA(caDir, time.Now())
	require.NoError(t, err)
	sc := loadScenario(t, strings.ReplaceAll(authScenario, "KEY", writeTestKey(t)))
	cfg, err := FleetConfig(sc, "127.0.0.1:1")
	require.NoError(t, err)
	require.NoError(t, applyAuth(&cfg, sc, "127.0.0.1:2", caDir))
	require.Nil(t, cfg.Groups[0].Auth)
	require.Empty(t, cfg.Groups[0].Target)
	for _, g := range cfg.Groups[1:] {
		require.NotNil(t, g.Auth, g.Name)
		require.Equal(t, "127.0.0.1:2", g.Target)
	}
	require.Nil(t, cfg.Groups[1].Auth.Token)
	cert, err := cfg.Groups[1].Auth.Certificate("ns-1", "default")
	require.NoError(t, err)
	require.Equal(t, "spiffe://cluster.local/ns/ns-1/sa/default", cert.Leaf.URIs[0].String())
	require.Nil(t, cfg.Groups[2].Auth.Certificate)
	tok, err := cfg.Groups[2].Auth.Token("ns-0", "default")
	require.NoError(t, err)
	require.Len(t, strings.Split(tok, "."), 3)
}

func writeTestKey(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "jwt.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return keyFile
}
