package simulator_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
)

func gatewayTopology() simulator.Topology {
	t := simtest.SmallTopology()
	t.Gateways = simulator.Gateways{Count: 2, HostsPerGateway: 3, TLSPassthrough: true}
	// One port per service: an endpoint event of a backend then concerns only the cluster the
	// routers hold, and reaches routers and sidecars (with several ports it reaches sidecars).
	t.PortsPerService = dist.Constant(1)
	return t
}

// TestGatewayObjects: the initial mesh carries the Gateways and one bound VirtualService per
// host, each valid by istiod's rules, routing to a service port that exists.
func TestGatewayObjects(t *testing.T) {
	sim, err := simulator.New(simulator.Config{Seed: 3, Duration: time.Second, Topology: gatewayTopology()})
	require.NoError(t, err)
	var gws, vss int
	services := map[string]*networking.ServiceEntry{}
	for _, c := range sim.Initial() {
		if se, ok := c.Spec.(*networking.ServiceEntry); ok {
			services[se.Hosts[0]] = se
		}
	}
	for _, c := range sim.Initial() {
		cc := c
		_, err := validate.Spec(&cc)
		require.NoError(t, err, "%s", c.Key())
		switch spec := c.Spec.(type) {
		case *networking.Gateway:
			gws++
			require.Equal(t, simulator.GatewayNamespace, c.Namespace)
			require.Equal(t, simulator.GatewaySelector(), spec.Selector)
			require.Len(t, spec.Servers, 2, "HTTP and TLS passthrough")
		case *networking.VirtualService:
			if len(spec.Gateways) == 0 {
				continue
			}
			vss++
			require.Equal(t, c.Labels[simulator.GatewayLabel], strings.TrimPrefix(spec.Gateways[0], simulator.GatewayNamespace+"/"))
			d := spec.Http[0].Route[0].Destination
			se := services[d.Host]
			require.NotNil(t, se, "%s routes to unknown %s", c.Key(), d.Host)
			require.True(t, slices.ContainsFunc(se.Ports, func(p *networking.ServicePort) bool {
				return p.Number == d.Port.Number && p.Protocol != "TCP"
			}), "%s routes to %s port %d, not an HTTP port", c.Key(), d.Host, d.Port.Number)
			require.Equal(t, spec.Hosts, spec.Tls[0].Match[0].SniHosts)
			require.Equal(t, c.Namespace, strings.Split(d.Host, ".")[1], "the VS lives in its backend's namespace")
		}
	}
	require.Equal(t, 2, gws)
	require.Equal(t, 6, vss)
}

// TestGatewayChurn: re-binding gateway hosts reaches routers only, and the expectations hold
// exactly after each event; events on services no gateway host routes to reach sidecars only;
// service-delete never deletes a gateway backend.
func TestGatewayChurn(t *testing.T) {
	churn := []simulator.Churn{
		{Kind: simulator.ConfigChange, Target: simulator.TargetGateway, Every: time.Second, Services: 2},
		{Kind: simulator.ServiceDelete, Every: 3 * time.Second},
		{Kind: simulator.EndpointFlap, Rate: 4, Down: 2 * time.Second},
		{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, Rate: 1},
	}
	sim, err := simulator.New(simulator.Config{Seed: 11, Duration: 20 * time.Second, Topology: gatewayTopology(), Churn: churn})
	require.NoError(t, err)
	clusters0 := sim.GatewayClusters()
	events := simtest.Drain(t, sim)
	require.Equal(t, clusters0, sim.GatewayClusters(),
		"the clusters routers hold changed: an in-flight endpoint event on a dropped one could never reach them")
	st := checkEvents(t, sim.Initial(), events, false)
	simtest.RequireSameObjects(t, sim.Current(), st)
	reach := map[string]int{}
	for _, ev := range events {
		if ev.Skip != "" {
			continue
		}
		pt := ev.Expectation.Reach.ProxyType
		reach[string(ev.Kind)+"/"+pt]++
		if ev.Kind == simulator.ConfigChange && slices.ContainsFunc(ev.Expectation.All, func(p probe.Predicate) bool { return p.Resource == "http.80" }) {
			require.Equal(t, probe.ProxyRouter, pt, "event %d", ev.ID)
		}
		if ev.Kind == simulator.ServiceDelete {
			require.Equal(t, probe.ProxySidecar, pt, "event %d", ev.ID)
		}
	}
	require.Positive(t, reach["config-change/router"], "no gateway re-binding events: %v", reach)
	require.Positive(t, reach["endpoint-flap/sidecar"], "%v", reach)
	require.Positive(t, reach["endpoint-flap/"], "no endpoint event on a gateway backend (reaching both): %v", reach)
	// Every gateway VS still routes to a live service.
	hosts := map[string]bool{}
	for _, c := range sim.Current() {
		if c.Kind == istioconfig.KindServiceEntry {
			hosts[c.Spec.(*networking.ServiceEntry).Hosts[0]] = true
		}
	}
	for _, c := range sim.Current() {
		if vs, ok := c.Spec.(*networking.VirtualService); ok && len(vs.Gateways) > 0 {
			require.True(t, hosts[vs.Http[0].Route[0].Destination.Host], "%s routes to a deleted service", c.Key())
		}
	}
}

func TestGatewayConfigValidate(t *testing.T) {
	cfg := simulator.Config{Seed: 1, Duration: time.Second, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{{Kind: simulator.ConfigChange, Target: simulator.TargetGateway, Rate: 1}}}
	require.ErrorContains(t, cfg.Validate(), "target gateway needs gateway hosts")
	cfg.Topology.Gateways = simulator.Gateways{Count: -1}
	require.ErrorContains(t, cfg.Validate(), "topology.gateways: count must be in 0..1000")
	cfg.Topology = gatewayTopology()
	cfg.Topology.Protocols = simulator.Protocols{TCP: 1}
	require.ErrorContains(t, cfg.Validate(), "gateway hosts route to services with HTTP or gRPC ports")
}
