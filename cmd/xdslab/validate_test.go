package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestValidateIstioConfig: `xdslab validate` on Istio config lists every rejected object
// with file, line, field and fix and exits 2; warnings and skipped kinds do not fail it.
func TestValidateIstioConfig(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	write := func(rel, body string) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good/mesh.yaml", `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.example.com]
  resolution: DNS
  ports: [{number: 443, name: https, protocol: TLS}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api}
spec:
  hosts: [api.example.com]
  tls:
  - match: [{sniHosts: [api.example.com]}]
    route: [{destination: {host: api.example.com, subset: v9}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
`)
	bad := write("bad/se.yaml", `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: nohosts}
spec:
  ports: [{number: 80, name: http}]
`)
	for _, tc := range []struct {
		name       string
		args       []string
		opts       validateOptions
		code       int
		stderr     []string
		stdoutPart string
	}{
		{name: "good directory", args: []string{filepath.Dir(good)}, code: exitOK,
			stderr: []string{
				`warning: ` + good + `:16: VirtualService default/api: spec.tls[0].route[0].destination.subset: subset "v9" of host api.example.com: no DestinationRule`,
				good + `:18: skipped v1 Service default/web`,
			},
			stdoutPart: "1 file(s), 2 object(s) would load; 0 error(s), 1 warning(s), 1 skipped"},
		{name: "bad file is recognised as Istio config", args: []string{bad}, code: exitUsage,
			stderr:     []string{bad + `:4: ServiceEntry default/nohosts: spec.hosts: is required: add at least one host`},
			stdoutPart: "0 object(s) would load; 1 error(s)"},
		{name: "both", args: []string{dir}, code: exitUsage, stdoutPart: "2 file(s), 2 object(s) would load; 1 error(s)"},
		{name: "--istio on an empty directory", args: []string{t.TempDir()}, opts: validateOptions{istio: true}, code: exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runValidate(context.Background(), &stdout, &stderr, tc.args, tc.opts)
			code := exitOK
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("error without an exit code: %v", err)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d (%v)\nstderr:\n%s", code, tc.code, err, stderr.String())
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if !strings.Contains(stdout.String(), tc.stdoutPart) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tc.stdoutPart)
			}
		})
	}

	// The whole CLI: exit codes as the shell sees them.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got := runCLI(ctx, []string{"validate", bad}); got != exitUsage {
		t.Errorf("xdslab validate %s: exit %d, want %d", bad, got, exitUsage)
	}
	if got := runCLI(ctx, []string{"validate", "--istio", filepath.Dir(good)}); got != exitOK {
		t.Errorf("xdslab validate --istio %s: exit %d, want 0", filepath.Dir(good), got)
	}
	if got := runCLI(ctx, []string{"validate", "../../examples/mesh"}); got != exitOK {
		t.Errorf("the shipped example mesh does not validate: exit %d", got)
	}
}

// TestValidateDebounceFloor: a latency threshold below what the scenario's own debounce
// alone gives is a warning naming the threshold, the floor and the fix; the scenario stays
// valid (exit 0), and the built-ins have none.
func TestValidateDebounceFloor(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := filepath.Join(t.TempDir(), "fast.yaml")
	body := "name: fast\nseed: 7\nduration: 20s\nchurn:\n  - {kind: endpoint-flap, rate: 20/s}\n" +
		"thresholds:\n  xdslab_push_latency_seconds: ['p(99)<50ms', 'p(99)<1h']\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := runValidate(context.Background(), &stdout, &stderr, []string{p}, validateOptions{}); err != nil {
		t.Fatalf("a scenario with an unreachable threshold is still valid: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one warning (p(99)<1h is within reach), got:\n%s", stderr.String())
	}
	for _, want := range []string{p + ": warning: thresholds.xdslab_push_latency_seconds: p(99)<50ms is below what the debounce alone gives",
		"minQuiet 100ms, maxDelay 10s", "p(99) is ", "Fix: a bound above "} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("warning lacks %q:\n%s", want, lines[0])
		}
	}
	stdout.Reset()
	stderr.Reset()
	if err := runValidate(context.Background(), &stdout, &stderr, []string{"eds-churn-1k", "delta-vs-sotw", "quickstart"}, validateOptions{}); err != nil || stderr.Len() != 0 {
		t.Fatalf("built-ins: %v, stderr:\n%s", err, stderr.String())
	}
}

// TestValidateListTakesNoArguments: --list (and --schema) with an argument is a usage error,
// not the list with the argument ignored.
func TestValidateListTakesNoArguments(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"validate", "--list", "quickstart"},
		{"validate", "--schema", "quickstart"},
		{"validate", "--list", "--schema"},
	} {
		if got := runCLI(ctx, args); got != exitUsage {
			t.Errorf("xdslab %s: exit %d, want %d", strings.Join(args, " "), got, exitUsage)
		}
	}
	if got := runCLI(ctx, []string{"validate", "--list"}); got != exitOK {
		t.Errorf("xdslab validate --list: exit %d, want 0", got)
	}
}
