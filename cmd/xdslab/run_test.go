package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
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
		{"dead target", []string{"run", ok, "--target", "127.0.0.1:1", "--sink-dir", filepath.Join(dir, "mesh")}, exitUsage, false},
		{"unwritable out", []string{"run", ok, "--out", "/dev/null/sub"}, exitUsage, false},
		{"bad progress", []string{"run", ok, "--progress", "loud"}, exitUsage, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append(tc.args, "--progress", "off")
			if tc.name == "bad progress" {
				args = tc.args
			}
			if got := runCLI(ctx, args); got != tc.want {
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

// A scenario whose sink is kube is refused with exit 2, before any client connects, when it
// cannot work: no --target (the in-process control plane reads no cluster), an unreadable
// kubeconfig, an API server that does not answer, or flags that contradict the sink.
func TestRunKubeSinkBadInput(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A loopback port nothing listens on: the API server in this kubeconfig refuses at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	write("down.kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://`+down+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	kube := write("kube.yaml", strings.Replace(tinyScenario, "seed: 5", "seed: 5\nsink: {kind: kube, kubeconfig: down.kubeconfig}", 1))
	missing := write("missing.yaml", strings.Replace(tinyScenario, "seed: 5", "seed: 5\nsink: {kind: kube, kubeconfig: no-such.kubeconfig}", 1))
	plain := write("plain.yaml", tinyScenario)
	target := []string{"--target", "127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"kube sink without target", []string{"run", kube}},
		{"--sink kube without target", []string{"run", plain, "--sink", "kube"}},
		{"unreadable kubeconfig", append([]string{"run", missing}, target...)},
		{"unreadable --kubeconfig", append([]string{"run", kube, "--kubeconfig", filepath.Join(dir, "nope")}, target...)},
		{"api server down", append([]string{"run", kube}, target...)},
		{"kube sink and --sink-dir", append([]string{"run", plain, "--sink", "kube", "--sink-dir", dir}, target...)},
		{"kube flags with the dir sink", append([]string{"run", plain, "--kube-qps", "5", "--sink-dir", dir}, target...)},
		{"unknown --sink", append([]string{"run", plain, "--sink", "etcd"}, target...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if got := runCLI(ctx, append(tc.args, "--progress", "off")); got != exitUsage {
				t.Fatalf("xdslab %s: exit %d, want %d", strings.Join(tc.args, " "), got, exitUsage)
			}
		})
	}
}

// The flags lay over the scenario's sink key, and each refusal says what to do.
func TestResolveSink(t *testing.T) {
	load := func(src string) *scenarios.Scenario {
		s, err := scenarios.LoadBytes("s.yaml", []byte("name: s\n"+src))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	kubeSc := load("sink: {kind: kube, kubeconfig: /k/config, qps: 7, burst: 9}\n")
	dirSc := load("")
	podsSc := load("sink: {kind: kube, pods: true}\n")
	for _, tc := range []struct {
		name  string
		sc    *scenarios.Scenario
		f     runFlags
		set   []string // flags given
		want  runSink
		error string // substring; "" for success
	}{
		{"scenario kube", kubeSc, runFlags{target: "h:1"}, nil,
			runSink{kind: "kube", kube: kubeFlags{kubeconfig: "/k/config", qps: 7, burst: 9}}, ""},
		{"flags override kube settings", kubeSc, runFlags{target: "h:1", kube: kubeFlags{kubeconfig: "/other", qps: -1, burst: 0}},
			[]string{"kubeconfig", "kube-qps", "kube-burst"}, runSink{kind: "kube", kube: kubeFlags{kubeconfig: "/other", qps: -1, burst: 0}}, ""},
		{"one flag overrides one setting", kubeSc, runFlags{target: "h:1", kube: kubeFlags{qps: 1}}, []string{"kube-qps"},
			runSink{kind: "kube", kube: kubeFlags{kubeconfig: "/k/config", qps: 1, burst: 9}}, ""},
		{"--sink-dir picks dir over the scenario", kubeSc, runFlags{target: "h:1", sinkDir: "/mesh"}, []string{"sink-dir"},
			runSink{kind: "dir", kube: kubeFlags{kubeconfig: "/k/config", qps: 7, burst: 9}}, ""},
		{"--sink dir over the scenario", kubeSc, runFlags{target: "h:1", sink: "dir", sinkDir: "/mesh"}, []string{"sink", "sink-dir"},
			runSink{kind: "dir", kube: kubeFlags{kubeconfig: "/k/config", qps: 7, burst: 9}}, ""},
		{"--sink kube over a dir scenario", dirSc, runFlags{target: "h:1", sink: "kube"}, []string{"sink"},
			runSink{kind: "kube", kube: kubeFlags{qps: 50, burst: 100}}, ""},
		{"default dir", dirSc, runFlags{}, nil, runSink{kind: "dir", kube: kubeFlags{qps: 50, burst: 100}}, ""},
		{"scenario pods", podsSc, runFlags{target: "h:1"}, nil,
			runSink{kind: "kube", kube: kubeFlags{qps: 50, burst: 100, pods: true}}, ""},
		{"--kube-pods=false over the scenario", podsSc, runFlags{target: "h:1"}, []string{"kube-pods"},
			runSink{kind: "kube", kube: kubeFlags{qps: 50, burst: 100}}, ""},
		{"--kube-pods over a kube scenario", kubeSc, runFlags{target: "h:1", kube: kubeFlags{pods: true}}, []string{"kube-pods"},
			runSink{kind: "kube", kube: kubeFlags{kubeconfig: "/k/config", qps: 7, burst: 9, pods: true}}, ""},
		{"--kube-pods on dir", dirSc, runFlags{target: "h:1", sinkDir: "/mesh"}, []string{"sink-dir", "kube-pods"}, runSink{}, "add --sink kube"},
		{"kube in-process", kubeSc, runFlags{}, nil, runSink{}, "s.yaml: sink.kind is kube, but the in-process control plane does not read a Kubernetes API server: add --target"},
		{"--sink kube in-process", dirSc, runFlags{sink: "kube"}, []string{"sink"}, runSink{}, "--sink is kube"},
		{"kube and sink dir", dirSc, runFlags{target: "h:1", sink: "kube", sinkDir: "/mesh"}, []string{"sink", "sink-dir"}, runSink{}, "drop --sink-dir"},
		{"kube flag on dir", dirSc, runFlags{target: "h:1", sinkDir: "/mesh"}, []string{"sink-dir", "kube-burst"}, runSink{}, "add --sink kube"},
		{"unknown sink", dirSc, runFlags{sink: "etcd"}, []string{"sink"}, runSink{}, `--sink "etcd": use dir, kube or mcp`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveSink(tc.sc, tc.f, func(name string) bool { return slices.Contains(tc.set, name) })
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("err = %v, want one containing %q", err, tc.error)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("resolveSink = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestFDAdvice(t *testing.T) {
	tests := []struct {
		clients, conns int
		inProcess      bool
		limit          uint64
		want           string // substring; "" for no advice
	}{
		{1000, 1000, true, 20000, ""},
		{9800, 9800, false, 20000, ""},                                        // the fleet alone fits
		{9900, 9900, true, 20000, "9900 clients need about 20056 open files"}, // both ends in one process do not
		{10000, 10000, true, 20000, "ulimit -n 32768"},
		{10000, 10000, true, 0, ""}, // unknown limit: no advice
		{50000, 50000, false, 20000, "for the fleet,"},
		{50000, 500, true, 20000, ""}, // 100 streams per connection: 500 connections
		{50000, 12000, true, 20000, "50000 clients on 12000 connections need about 24256 open files"},
	}
	for _, tt := range tests {
		got := fdAdvice(tt.clients, tt.conns, tt.inProcess, tt.limit)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("fdAdvice(%d, %d, %v, %d) = %q, want %q", tt.clients, tt.conns, tt.inProcess, tt.limit, got, tt.want)
		}
	}
}
