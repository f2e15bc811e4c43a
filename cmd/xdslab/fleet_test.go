package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xdslab/xdslab/controlplane/security"
)

// TestFleetConfigAuth: --auth builds per-client credentials, and bad combinations are usage
// errors naming the flag.
func TestFleetConfigAuth(t *testing.T) {
	caDir := t.TempDir()
	if _, err := security.LoadOrCreateCA(caDir, time.Now()); err != nil {
		t.Fatal(err)
	}
	base := fleetFlags{Target: "127.0.0.1:15012", Clients: 2, Nack: "never", Progress: "off", ChurnJitter: 0.2}
	for _, tc := range []struct {
		name string
		set  func(*fleetFlags)
		err  string
	}{
		{"mtls", func(f *fleetFlags) { f.Auth, f.CADir = "mtls", caDir }, ""},
		{"unknown mode", func(f *fleetFlags) { f.Auth = "tls" }, `--auth "tls": use mtls or jwt`},
		{"jwt without key", func(f *fleetFlags) { f.Auth, f.CADir = "jwt", caDir }, "--auth jwt needs --jwt-key"},
		{"mtls without ca dir", func(f *fleetFlags) { f.Auth = "mtls" }, "caDir is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base
			tc.set(&f)
			cfg, err := fleetConfig(f, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a := cfg.Groups[0].Auth; a == nil || a.Certificate == nil || a.Token != nil {
				t.Fatalf("auth %+v, want mtls credentials", a)
			}
		})
	}
}

func TestFleetLabels(t *testing.T) {
	tests := []struct {
		proxyType string
		labels    map[string]string
		want      map[string]string
	}{
		{"sidecar", nil, nil},
		{"sidecar", map[string]string{"app": "a"}, map[string]string{"app": "a"}},
		{"router", nil, map[string]string{"istio": "ingressgateway"}},
		{"router", map[string]string{"app": "gw"}, map[string]string{"app": "gw", "istio": "ingressgateway"}},
		{"router", map[string]string{"istio": "egressgateway"}, map[string]string{"istio": "egressgateway"}},
	}
	for _, tt := range tests {
		f := fleetFlags{Target: "127.0.0.1:1", Clients: 1, Nack: "never", Progress: "off", ProxyType: tt.proxyType, Labels: tt.labels}
		cfg, err := fleetConfig(f, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, cfg.Groups[0].Identity.Labels); diff != "" {
			t.Errorf("%s %v: labels (-want +got):\n%s", tt.proxyType, tt.labels, diff)
		}
	}
}
