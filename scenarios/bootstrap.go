package scenarios

import (
	"strings"
	"time"

	"github.com/xdslab/xdslab/scenarios/units"
)

// Client bootstrap profiles (clients[].bootstrap): what an Envoy's bootstrap and command line
// set for its ADS client. The values are package fakeenvoy's Profile (a test in bench/run holds
// the two to the same values).
const (
	// BootstrapIstio is istio-agent's Envoy: set_node_on_first_message_only, initial_fetch_timeout
	// 0s on the bootstrap CDS and LDS (Istio's envoy_bootstrap.json), --drain-time-s 45s
	// (proxyConfig drainDuration).
	BootstrapIstio = "istio"
	// BootstrapEnvoy is Envoy's own defaults: the node on every request, 15s, 600s.
	BootstrapEnvoy = "envoy"
)

// BootstrapProfiles lists the profiles, the default first.
func BootstrapProfiles() []string { return []string{BootstrapIstio, BootstrapEnvoy} }

// bootstrapFields are the client fields a bootstrap profile sets, by key.
var bootstrapFields = []string{"nodeOnFirstOnly", "initialFetchTimeout", "listenerDrain"}

// UseBootstrap makes profile (BootstrapIstio or BootstrapEnvoy) the group's, with its
// nodeOnFirstOnly, initialFetchTimeout and listenerDrain. A file's group takes the profile it
// names for the fields it does not write; in Go, set those after calling this.
func (c *Client) UseBootstrap(profile string) {
	c.applyBootstrap(profile, func(string) bool { return false })
}

// applyBootstrap makes profile the group's, and sets the fields it governs that written (by
// key) says the file did not write. An unknown profile is left for Validate to report.
func (c *Client) applyBootstrap(profile string, written func(key string) bool) {
	c.Bootstrap = profile
	var node bool
	var ift, drain time.Duration
	switch profile {
	case BootstrapIstio:
		node, ift, drain = true, 0, 45*time.Second
	case BootstrapEnvoy:
		node, ift, drain = false, 15*time.Second, 600*time.Second
	default:
		return
	}
	if !written("nodeOnFirstOnly") {
		c.NodeOnFirstOnly = node
	}
	if !written("initialFetchTimeout") {
		c.InitialFetchTimeout = units.Duration(ift)
	}
	if !written("listenerDrain") {
		c.ListenerDrain = units.Duration(drain)
	}
}

// applyBootstraps gives each group of a file its profile's values for the fields the file does
// not write (each group starts from DefaultClient, which holds BootstrapIstio's).
func (s *Scenario) applyBootstraps() {
	for i := range s.Clients {
		s.applyBootstrapOf(i)
	}
}

// applyBootstrapOf applies group i's profile to the fields its file (if any) and Set do not
// write.
func (s *Scenario) applyBootstrapOf(i int) {
	p := "clients[" + itoa(i) + "]."
	s.Clients[i].applyBootstrap(s.Clients[i].Bootstrap, func(key string) bool {
		if s.setKeys[p+key] {
			return true
		}
		if s.src == nil || s.setKeys[strings.TrimSuffix(p, ".")] { // no file, or Set replaced the group
			return false
		}
		at, ok := s.src.at[p+key]
		return ok && !at.null
	})
}
