package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestControlplaneDebouncePolicyFlags: a bad --debounce-policy or adaptive parameter is a
// usage error (exit 2) that names the flag and the fix, before anything starts.
func TestControlplaneDebouncePolicyFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--debounce-policy", "ewma"}, `debounce policy "ewma": use fixed or adaptive`},
		{[]string{"--adaptive-cost-factor", "2"}, "add --debounce-policy adaptive"},
		{[]string{"--debounce-policy", "adaptive", "--adaptive-max-quiet", "20s"}, "set it to at most 10s"},
		{[]string{"--debounce-policy", "adaptive", "--min-quiet", "200ms", "--adaptive-max-quiet", "100ms"}, "set it to at least 200ms"},
		{[]string{"--debounce-policy", "adaptive", "--adaptive-weight", "1.5"}, "weight is 1.5: it must lie in (0, 1]"},
		// The secure listener's flags without it were ignored: every client served in the clear.
		{[]string{"--jwt-issuer", "https://issuer", "--jwt-audience", "xds"}, "--jwt-issuer, --jwt-audience configure the secure ADS listener, which is off: add --secure-grpc-addr"},
		{[]string{"--ca-dir", "/tmp/ca"}, "--ca-dir configures the secure ADS listener"},
		{[]string{"--workload-cert-ttl", "1h"}, "add --secure-grpc-addr"},
		// Zero was read as the default share, 0.5.
		{[]string{"--config-delete-share", "0"}, "--config-delete-share 0 is outside (0, 1]"},
	} {
		cmd := newControlplaneCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--config-dir", t.TempDir(), "--grpc-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}, tc.args...))
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
			continue
		}
		if ee := (*exitError)(nil); !errors.As(err, &ee) || ee.code != exitUsage {
			t.Errorf("%v: %v is not a usage error (exit %d)", tc.args, err, exitUsage)
		}
	}
}
