package main

import (
	"io"
	"strings"
	"testing"
	"time"

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
