package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/internal/summary"
)

// tinyScenario runs in about a second: three services, three clients, light churn.
const tinyScenario = `
name: tiny
seed: 5
duration: 1s
topology:
  namespaces: 1
  services: 3
  endpointsPerService: {dist: constant, value: 2}
churn:
  - {kind: endpoint-flap, rate: 5/s, down: 300ms}
clients:
  - {name: sidecars, count: 3, ramp: 0}
phases:
  connect: {timeout: 30s}
  drain: {timeout: 5s}
thresholds:
  xdslab_events_missed_total: ['count==0']
`

func TestRunCommandExitCodes(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.yaml", tinyScenario)
	failing := write("fail.yaml", strings.Replace(tinyScenario, "['count==0']", "['count==0']\n  xdslab_sim_events_total: ['count<0']", 1))
	bad := write("bad.yaml", strings.Replace(tinyScenario, "seed: 5", "seed: 5\nduratoin: 3s", 1))
	for _, tc := range []struct {
		name string
		args []string
		want int
		out  bool // outputs written
	}{
		{"passes", []string{"run", ok, "--out", filepath.Join(dir, "ok")}, exitOK, true},
		{"threshold fails", []string{"run", failing, "--out", filepath.Join(dir, "fail")}, exitThreshold, true},
		{"bad scenario", []string{"run", bad, "--out", filepath.Join(dir, "bad")}, exitUsage, false},
		{"unknown built-in", []string{"run", "no-such-scenario"}, exitUsage, false},
		{"target without sink dir", []string{"run", ok, "--target", "127.0.0.1:1"}, exitUsage, false},
		{"bad progress", []string{"run", ok, "--progress", "loud"}, exitUsage, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append(tc.args, "--progress", "off")
			if tc.name == "bad progress" {
				args = tc.args
			}
			if got := run(ctx, args); got != tc.want {
				t.Fatalf("xdslab %s: exit %d, want %d", strings.Join(tc.args, " "), got, tc.want)
			}
			if !tc.out {
				return
			}
			out := tc.args[3]
			s, err := summary.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if s.Results.Passed != (tc.want == exitOK) {
				t.Errorf("summary passed = %v", s.Results.Passed)
			}
			junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(junit), "<failure"); got != (tc.want == exitThreshold) {
				t.Errorf("junit.xml has a failure: %v\n%s", got, junit)
			}
			if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
				t.Error(err)
			}
		})
	}
}
