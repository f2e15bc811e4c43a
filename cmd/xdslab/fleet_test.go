package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/security"
	"github.com/xdslab/xdslab/internal/summary"
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

// silentADS admits ADS streams and never answers.
type silentADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
}

func (silentADS) StreamAggregatedResources(s discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	for {
		if _, err := s.Recv(); err != nil {
			return nil
		}
	}
}

// TestFleetExitsWithoutFullConfig: 'xdslab fleet' fails (exit 99, with the check in its
// summary) when some client never got a full config: connected to a control plane that never
// answers, or never connected at all; it passes against one that configures every client.
func TestFleetExitsWithoutFullConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mesh := t.TempDir()
	if err := os.WriteFile(filepath.Join(mesh, "svc.yaml"), []byte(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: svc, namespace: default}
spec:
  hosts: [svc.default.svc.cluster.local]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.1}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := controlplane.DefaultOptions()
	opts.GRPCAddr, opts.MetricsAddr, opts.ConfigDir = "127.0.0.1:0", "127.0.0.1:0", mesh
	cp, err := controlplane.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, silentADS{})
	served := make(chan struct{})
	go func() { _ = g.Serve(lis); close(served) }()
	defer func() {
		g.Stop()
		<-served
	}()

	for _, tc := range []struct {
		name, target string
		duration     string // long enough for three clients to be configured on a loaded machine
		code         int
		incomplete   float64
	}{
		{"configured", cp.GRPCAddr(), "5s", exitOK, 0},
		{"never answered", lis.Addr().String(), "1s", exitThreshold, 3},
		{"never connected", freeAddr(t), "1s", exitThreshold, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "fleet.json")
			code := runCLI(ctx, []string{"fleet", "--target", tc.target, "--clients", "3", "--ramp", "0", "--duration", tc.duration,
				"--progress", "off", "--summary", file})
			if code != tc.code {
				t.Fatalf("exit %d, want %d", code, tc.code)
			}
			s, err := summary.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := s.Results.Find(collect.MetricConnectIncomplete, map[string]string{"group": "fleet"})
			if !ok || m.Values["value"] != tc.incomplete {
				t.Errorf("%s{group=fleet} = %v (found %v), want %g", collect.MetricConnectIncomplete, m.Values, ok, tc.incomplete)
			}
			if len(s.Results.Thresholds) != 1 || s.Results.Thresholds[0].Passed != (tc.code == exitOK) || s.Results.Passed != (tc.code == exitOK) {
				t.Errorf("thresholds %+v passed %v, want one verdict matching exit %d", s.Results.Thresholds, s.Results.Passed, tc.code)
			}
		})
	}
}

// TestFleetConfigDurations: negative drain and issue delays are usage errors naming the flag;
// 0 means at once (the client's "none", not its default).
func TestFleetConfigDurations(t *testing.T) {
	base := fleetFlags{Target: "127.0.0.1:15012", Clients: 1, Nack: "never", Progress: "off", ChurnJitter: 0.2, ListenerDrain: 45 * time.Second}
	for _, tc := range []struct {
		name string
		set  func(*fleetFlags)
		err  string
	}{
		{"negative drain", func(f *fleetFlags) { f.ListenerDrain = -time.Second }, "--listener-drain -1s must be >= 0"},
		{"negative issue delay", func(f *fleetFlags) { f.AgentIssueDelay = -time.Second }, "--agent-issue-delay -1s must be >= 0"},
		{"no drain", func(f *fleetFlags) { f.ListenerDrain = 0 }, ""},
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
			if d := cfg.Groups[0].Client.ListenerDrain; d >= 0 {
				t.Errorf("--listener-drain 0 gave the client %s, want a negative value (none)", d)
			}
		})
	}
}

// TestFleetBootstrapFlags: --bootstrap (istio by default) sets --node-first-only,
// --initial-fetch-timeout and --listener-drain unless they are given; an unknown profile is a
// usage error naming the flag.
func TestFleetBootstrapFlags(t *testing.T) {
	base := fleetFlags{Target: "127.0.0.1:15012", Clients: 1, Nack: "never", Progress: "off", ChurnJitter: 0.2}
	type trio struct {
		node       bool
		ift, drain time.Duration
	}
	for _, tc := range []struct {
		name      string
		bootstrap string
		given     map[string]bool
		set       func(*fleetFlags)
		want      trio
	}{
		{"default", "", nil, nil, trio{true, -1, 45 * time.Second}},
		{"istio", "istio", nil, nil, trio{true, -1, 45 * time.Second}},
		{"envoy", "envoy", nil, nil, trio{false, 15 * time.Second, 600 * time.Second}},
		{"envoy, node first given", "envoy", map[string]bool{"node-first-only": true},
			func(f *fleetFlags) { f.NodeOnFirstOnly = true }, trio{true, 15 * time.Second, 600 * time.Second}},
		{"istio, node on every request given", "istio", map[string]bool{"node-first-only": true},
			func(f *fleetFlags) { f.NodeOnFirstOnly = false }, trio{false, -1, 45 * time.Second}},
		{"istio, drain 0 and a timeout given", "istio", map[string]bool{"listener-drain": true, "initial-fetch-timeout": true},
			func(f *fleetFlags) { f.ListenerDrain, f.InitialFetchTimeout = 0, 3*time.Second }, trio{true, 3 * time.Second, -1}},
		{"envoy, timeout 0 given", "envoy", map[string]bool{"initial-fetch-timeout": true},
			func(f *fleetFlags) { f.InitialFetchTimeout = 0 }, trio{false, -1, 600 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base
			f.Bootstrap = tc.bootstrap
			f.changed = func(name string) bool { return tc.given[name] }
			if tc.set != nil {
				tc.set(&f)
			}
			f, err := f.withBootstrap()
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := fleetConfig(f, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c := cfg.Groups[0].Client
			if got := (trio{c.NodeOnFirstOnly, c.InitialFetchTimeout, c.ListenerDrain}); got != tc.want {
				t.Errorf("client %+v, want %+v", got, tc.want)
			}
		})
	}
	f := base
	f.Bootstrap = "istiod"
	if _, err := f.withBootstrap(); err == nil || !strings.Contains(err.Error(), "--bootstrap") || !strings.Contains(err.Error(), "istio or envoy") {
		t.Errorf("--bootstrap istiod: err %v, want a usage error naming --bootstrap and the profiles", err)
	}
}

// TestFleetConfigClients: --clients past the lab's limit is refused before any client starts
// (1e11 took the machine's memory in seconds), as a scenario's count is.
func TestFleetConfigClients(t *testing.T) {
	for _, tc := range []struct {
		clients int
		want    string // "" accepted
	}{
		{1, ""},
		{1_000_000, ""},
		{0, "--clients 0 must be at least 1"},
		{1_000_001, "--clients 1000001 is more than 1000000, the lab's limit"},
		{99_999_999_999, "--clients 99999999999 is more than 1000000"},
	} {
		f := fleetFlags{Target: "127.0.0.1:1", Clients: tc.clients, Nack: "never", Progress: "off"}
		_, err := fleetConfig(f, io.Discard)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--clients %d: %v, want %q", tc.clients, err, tc.want)
		}
	}
}
