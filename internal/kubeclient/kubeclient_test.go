package kubeclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

func TestConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		opts      Options
		qps       float32
		burst     int
		wantError string
	}{
		{"rate and burst", Options{Kubeconfig: file, QPS: 50, Burst: 80}, 50, 80, ""},
		{"burst from qps", Options{Kubeconfig: file, QPS: 12.5}, 12.5, 13, ""},
		{"no limit", Options{Kubeconfig: file, QPS: -1}, -1, 0, ""},
		{"client-go default", Options{Kubeconfig: file}, 0, 0, ""},
		{"no file", Options{QPS: 5}, 0, 0, "--kubeconfig"},
		{"missing file", Options{Kubeconfig: file + ".gone"}, 0, 0, "readable kubeconfig"},
		{"negative burst", Options{Kubeconfig: file, Burst: -1}, 0, 0, "burst -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config(tc.opts)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "t" || cfg.QPS != tc.qps || cfg.Burst != tc.burst {
				t.Errorf("config host %s token %q qps %v burst %d; want qps %v burst %d", cfg.Host, cfg.BearerToken, cfg.QPS, cfg.Burst, tc.qps, tc.burst)
			}
		})
	}
}
