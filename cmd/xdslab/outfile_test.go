package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSummaryFileCheckedFirst: a summary file that cannot be written fails a fleet, a shard,
// a publishing simulator and a merge before they run (exit 2, at once), instead of after a
// run whose measurements are then lost; a missing directory is created.
func TestSummaryFileCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	scenario := writeScenario(t, distScenario)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"fleet into /dev/null", []string{"fleet", "--target", "127.0.0.1:1", "--clients", "1", "--duration", "1h", "--progress", "off", "--summary", "/dev/null/fleet.json"}},
		{"fleet into a directory", []string{"fleet", "--target", "127.0.0.1:1", "--clients", "1", "--duration", "1h", "--progress", "off", "--summary", dir}},
		{"shard into /dev/null", []string{"fleet", "--scenario", scenario, "--target", "127.0.0.1:1", "--segment", "0/2", "--progress", "off", "--summary", "/dev/null/shard.json"}},
		{"sim into /dev/null", []string{"sim", scenario, "--sink-dir", filepath.Join(dir, "mesh"), "--publish", "127.0.0.1:0", "--summary", "/dev/null/sim.json"}},
		{"merge into /dev/null", []string{"merge", "--dir", dir, "--wait", "1", "--timeout", "1h", "--out", "/dev/null/merged.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			began := time.Now()
			if got := runCLI(ctx, tc.args); got != exitUsage {
				t.Errorf("xdslab %s: exit %d, want %d", strings.Join(tc.args, " "), got, exitUsage)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("xdslab %s: failed after %v, want at once", strings.Join(tc.args, " "), took)
			}
		})
	}
	file := filepath.Join(dir, "new", "fleet.json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got := runCLI(ctx, []string{"fleet", "--target", "127.0.0.1:1", "--clients", "1", "--duration", "100ms", "--progress", "off", "--summary", file}); got != exitThreshold {
		t.Errorf("fleet into a new directory: exit %d, want %d (no client configured)", got, exitThreshold)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("fleet into a new directory: %v", err)
	}
}

// TestTuneOutUnwritable: tune refuses an --out it cannot write before the estimate or any run
// (it printed the whole table, then failed on "mkdir /dev/null: not a directory").
func TestTuneOutUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"tune", "../../bench/tune/testdata/tiny.yaml", "--param", "minQuiet=50ms,100ms", "--estimate-only", "--out", filepath.Join(file, "tune")})
	root.SetOut(&stdout)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(context.Background())
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "tune: --out "+filepath.Join(file, "tune")) {
		t.Fatalf("tune --out under a file: %v, want a usage error naming --out", err)
	}
	if stdout.Len() > 0 {
		t.Errorf("tune printed before refusing --out:\n%s", stdout.String())
	}
}
