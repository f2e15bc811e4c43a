package run

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/scenarios"
)

// TestFleetConfigStreamsPerConnection: each scenario group's streamsPerConnection reaches its
// fleet group, so a group shares connections among its own clients only, in the whole fleet
// and in each shard of a distributed run (RunShard builds its fleet the same way).
func TestFleetConfigStreamsPerConnection(t *testing.T) {
	sc := loadScenario(t, `
name: spc
clients:
  - {name: mux, count: 250, streamsPerConnection: 100}
  - {name: solo, count: 7}
`)
	tests := []struct {
		name    string
		segment fleet.Segment
		clients int
		conns   int
	}{
		{"whole fleet", fleet.Segment{}, 257, 3 + 7},
		{"shard 0 of 2", fleet.Segment{Index: 0, Count: 2}, 125 + 4, 2 + 4}, // mux 0,2,..,248; solo 250,252,254,256
		{"shard 1 of 2", fleet.Segment{Index: 1, Count: 2}, 125 + 3, 2 + 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := FleetConfig(sc, "127.0.0.1:1")
			require.NoError(t, err)
			require.Equal(t, 100, cfg.Groups[0].StreamsPerConn)
			require.Equal(t, 1, cfg.Groups[1].StreamsPerConn)
			cfg.Segment = tc.segment
			f, err := fleet.New(cfg)
			require.NoError(t, err)
			defer f.Stop()
			require.Equal(t, tc.clients, f.Size())
			require.Equal(t, tc.conns, f.Connections())
		})
	}
	require.Equal(t, 3+7, sc.Connections())
}

// TestFleetConfigChurnPerGroup: each scenario group's churn reaches its own fleet group, and
// only it: the fleet-wide churn stays zero, so a group without churn never reconnects.
func TestFleetConfigChurnPerGroup(t *testing.T) {
	sc := loadScenario(t, `
name: churn
clients:
  - {name: steady, count: 2}
  - {name: restarts, count: 2, churn: {every: 2s, jitter: 0.5}}
  - {name: slow, count: 2, churn: {every: 30s}}
`)
	cfg, err := FleetConfig(sc, "127.0.0.1:1")
	require.NoError(t, err)
	require.Equal(t, fleet.Churn{}, cfg.Churn, "no fleet-wide churn")
	require.Zero(t, cfg.Groups[0].Churn.Every, "no churn: never reconnects")
	require.Equal(t, fleet.Churn{Every: 2 * time.Second, Jitter: 0.5}, cfg.Groups[1].Churn)
	require.Equal(t, 30*time.Second, cfg.Groups[2].Churn.Every)
}

// TestSimConfigMesh: an explicit mesh (xdslab import's example) reaches the simulator whole:
// services with their ports and endpoint groups, and the Istio objects decoded.
func TestSimConfigMesh(t *testing.T) {
	sc, err := scenarios.Load("../../examples/import/imported.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := SimConfig(sc).Topology.Mesh
	if m == nil || len(m.Services) != 11 || len(m.Config) != 11 { // its AuthorizationPolicy and RequestAuthentication among them
		t.Fatalf("mesh: %+v", m)
	}
	eps := 0
	for _, s := range m.Services {
		for _, g := range s.Endpoints {
			eps += g.Count
		}
	}
	fe := m.Services[4]
	if eps != 23 || fe.Name != "frontend" || fe.Ports[0].Number != 80 || fe.Ports[0].TargetPort != 8080 || fe.Ports[0].Protocol != "HTTP" {
		t.Errorf("%d endpoints, frontend %+v", eps, fe)
	}
	if SimConfig(scenariosQuickstart(t)).Topology.Mesh != nil {
		t.Error("a synthetic scenario got a mesh")
	}
}

func scenariosQuickstart(t *testing.T) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Builtin("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFleetConfigBootstrap: a group's bootstrap profile reaches its clients as package
// fakeenvoy's profile of the same name says (the two packages hold the values each), and a
// field written beside it wins.
func TestFleetConfigBootstrap(t *testing.T) {
	sc := loadScenario(t, `
name: boot
clients:
  - {name: istio, count: 1}
  - {name: envoy, count: 1, bootstrap: envoy}
  - {name: mixed, count: 1, bootstrap: envoy, nodeOnFirstOnly: true, listenerDrain: 0s}
`)
	cfg, err := FleetConfig(sc, "127.0.0.1:1")
	require.NoError(t, err)
	want := func(b fakeenvoy.Bootstrap) fakeenvoy.ClientConfig {
		var c fakeenvoy.ClientConfig
		b.Profile().Apply(&c)
		return c
	}
	mixed := want(fakeenvoy.BootstrapEnvoy)
	mixed.NodeOnFirstOnly, mixed.ListenerDrain = true, -1
	for i, w := range []fakeenvoy.ClientConfig{want(fakeenvoy.BootstrapIstio), want(fakeenvoy.BootstrapEnvoy), mixed} {
		got := cfg.Groups[i].Client
		require.Equal(t, w.NodeOnFirstOnly, got.NodeOnFirstOnly, "group %s nodeOnFirstOnly", cfg.Groups[i].Name)
		require.Equal(t, w.InitialFetchTimeout, got.InitialFetchTimeout, "group %s initialFetchTimeout", cfg.Groups[i].Name)
		require.Equal(t, w.ListenerDrain, got.ListenerDrain, "group %s listenerDrain", cfg.Groups[i].Name)
	}
	// The connection: istio-agent's windows under bootstrap istio, Envoy's under envoy.
	for i, w := range []uint32{fakeenvoy.AgentWindow, fakeenvoy.EnvoyWindow, fakeenvoy.EnvoyWindow} {
		require.Equal(t, w, cfg.Groups[i].Window, "group %s window", cfg.Groups[i].Name)
	}
	require.Equal(t, uint32(fakeenvoy.AgentWindowUpdate), cfg.Groups[0].WindowUpdate)
	require.Equal(t, fakeenvoy.AgentKeepaliveTime, cfg.Groups[0].KeepaliveTime)
	require.Equal(t, fakeenvoy.AgentKeepaliveTimeout, cfg.Groups[0].KeepaliveTimeout)
	require.Zero(t, cfg.Groups[1].KeepaliveTime, "Envoy's ADS connection has no keepalive")
	require.Equal(t, string(fakeenvoy.DefaultBootstrap), scenarios.DefaultClient().Bootstrap)
	require.Equal(t, scenarios.BootstrapProfiles()[0], string(fakeenvoy.DefaultBootstrap))
}
