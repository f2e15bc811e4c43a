package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestDashboardsCommandBadInput: bad flags are usage errors (exit 2); --scrape-interval 0s
// was written as the default 5s without a word.
func TestDashboardsCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--out", filepath.Join(dir, "ok")}, exitOK},
		{[]string{"--out", filepath.Join(dir, "ok2"), "--scrape-interval", "15s"}, exitOK},
		{[]string{}, exitUsage},
		{[]string{"--out", filepath.Join(dir, "a"), "--scrape-interval", "0s"}, exitUsage},
		{[]string{"--out", filepath.Join(dir, "b"), "--scrape-interval", "1500ms"}, exitUsage},
		{[]string{"--out", filepath.Join(dir, "c"), "--controlplane-target", "nohost"}, exitUsage},
		{[]string{"--out", filepath.Join(dir, "d"), "--prometheus-url", "ftp://x"}, exitUsage},
		{[]string{"--out", "/dev/null/x"}, exitUsage},
	} {
		args := append([]string{"dashboards"}, tc.args...)
		if got := runCLI(context.Background(), args); got != tc.want {
			t.Errorf("xdslab %s: exit %d, want %d", strings.Join(args, " "), got, tc.want)
		}
	}
}
