package fakeenvoy

import (
	"fmt"
	"time"
)

// Bootstrap is a bootstrap profile: what an Envoy's bootstrap and command line set for its ADS
// client, as one whole. A fleet pretending to be Istio sidecars takes Istio's; one pretending
// to be plain Envoys, Envoy's. ClientConfig itself holds explicit values (its zero values are
// Envoy's): the fleet's front ends (scenarios' clients[].bootstrap, xdslab fleet --bootstrap)
// fill the fields they were not given from a profile.
type Bootstrap string

const (
	// BootstrapIstio is what istio-agent gives Envoy: its bootstrap template
	// (tools/packaging/common/envoy_bootstrap.json) sets ads_config
	// set_node_on_first_message_only: true and initial_fetch_timeout: 0s on cds_config and
	// lds_config, and the agent starts Envoy with --drain-time-s set to proxyConfig's
	// drainDuration, 45s by default (pkg/envoy/proxy.go, pkg/config/mesh/mesh.go); the
	// connection to the control plane is the agent's (1 MiB windows, a 30s keepalive: see
	// Profile).
	BootstrapIstio Bootstrap = "istio"
	// BootstrapEnvoy is Envoy's own defaults: the node on every request, a 15s
	// initial_fetch_timeout (ConfigSource's default), --drain-time-s 600 and Envoy's own
	// connection to the control plane (256 MiB windows).
	BootstrapEnvoy Bootstrap = "envoy"
)

// DefaultBootstrap is the fleet's profile when none is given: Istio's, since istiod is the
// first target and the fleet otherwise behaves as istio-agent's Envoy (the agent's drain time,
// its SDS secrets and issue delay).
const DefaultBootstrap = BootstrapIstio

// Profile is what a bootstrap profile sets, in Envoy's terms: an InitialFetchTimeout of 0
// waits forever, a ListenerDrain of 0 drops a removed listener at once.
type Profile struct {
	// NodeOnFirstOnly is ads_config.set_node_on_first_message_only.
	NodeOnFirstOnly bool
	// InitialFetchTimeout is the initial_fetch_timeout of the bootstrap's cds_config and
	// lds_config (not of the config sources the control plane sends: those that give none
	// take Envoy's 15s whatever the profile).
	InitialFetchTimeout time.Duration
	// ListenerDrain is --drain-time-s.
	ListenerDrain time.Duration
	// Window and WindowUpdate are the HTTP/2 flow control of the connection that reaches the
	// control plane: its stream and connection receive windows, and how many received bytes
	// each WINDOW_UPDATE gives back. Envoy's own: 256 MiB windows, half given back at a time.
	// Behind istio-agent, Envoy talks to the agent's xDS proxy and the agent's gRPC client talks
	// to istiod (pilot/pkg/grpc ClientOptions): 1 MiB windows, with grpc-go's quarter.
	Window, WindowUpdate uint32
	// KeepaliveTime and KeepaliveTimeout are that connection's keepalive: a PING once nothing
	// was read for KeepaliveTime, the connection given up when nothing is read within
	// KeepaliveTimeout of it. Envoy's ADS connection has none; istio-agent's gRPC client pings
	// after 30s and waits 10s (pkg/keepalive's defaults).
	KeepaliveTime, KeepaliveTimeout time.Duration
}

// The HTTP/2 windows of each profile's connection to the control plane (see Profile).
const (
	EnvoyWindow       = 256 << 20
	EnvoyWindowUpdate = EnvoyWindow / 2
	AgentWindow       = 1 << 20
	AgentWindowUpdate = AgentWindow / 4
)

// istio-agent's keepalive on its connection to istiod (see Profile).
const (
	AgentKeepaliveTime    = 30 * time.Second
	AgentKeepaliveTimeout = 10 * time.Second
)

// EnvoyListenerDrain is Envoy's own --drain-time-s default.
const EnvoyListenerDrain = 600 * time.Second

// ParseBootstrap reads a profile name; empty is DefaultBootstrap.
func ParseBootstrap(s string) (Bootstrap, error) {
	switch Bootstrap(s) {
	case "":
		return DefaultBootstrap, nil
	case BootstrapIstio, BootstrapEnvoy:
		return Bootstrap(s), nil
	}
	return "", fmt.Errorf("unknown bootstrap profile %q: want %s or %s", s, BootstrapIstio, BootstrapEnvoy)
}

// Profile returns what b sets (DefaultBootstrap's for an empty b).
func (b Bootstrap) Profile() Profile {
	if b == BootstrapEnvoy {
		return Profile{InitialFetchTimeout: DefaultInitialFetchTimeout, ListenerDrain: EnvoyListenerDrain,
			Window: EnvoyWindow, WindowUpdate: EnvoyWindowUpdate}
	}
	return Profile{NodeOnFirstOnly: true, InitialFetchTimeout: 0, ListenerDrain: DefaultListenerDrain,
		Window: AgentWindow, WindowUpdate: AgentWindowUpdate, KeepaliveTime: AgentKeepaliveTime, KeepaliveTimeout: AgentKeepaliveTimeout}
}

// Apply sets c's NodeOnFirstOnly, InitialFetchTimeout and ListenerDrain to the profile's, in
// ClientConfig's terms (a negative duration for none). The windows are the connection's, not
// the client's: a fleet sets them per group (fleet.Group).
func (p Profile) Apply(c *ClientConfig) {
	c.NodeOnFirstOnly = p.NodeOnFirstOnly
	c.InitialFetchTimeout = noneIfZero(p.InitialFetchTimeout)
	c.ListenerDrain = noneIfZero(p.ListenerDrain)
}

func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
