package run

import (
	"fmt"
	"maps"
	"net"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/units"
	"github.com/xdslab/xdslab/simulator"
)

// SimConfig maps a resolved scenario onto the simulator: seed, duration, topology and churn.
func SimConfig(s *scenarios.Scenario) simulator.Config {
	t := s.Topology
	cfg := simulator.Config{
		Seed:     s.Seed,
		Duration: s.Duration.D(),
		Topology: simulator.Topology{
			Namespaces:                  t.Namespaces,
			Services:                    t.Services,
			Protocols:                   simulator.Protocols{HTTP: t.Protocols.HTTP, GRPC: t.Protocols.GRPC, TCP: t.Protocols.TCP},
			PortsPerService:             t.PortsPerService,
			EndpointsPerService:         t.EndpointsPerService,
			Localities:                  simulator.Localities{Regions: t.Localities.Regions, ZonesPerRegion: t.Localities.ZonesPerRegion},
			Versions:                    t.Versions,
			ServiceAccountsPerNamespace: t.ServiceAccountsPerNamespace,
			VirtualServices:             t.VirtualServices,
			DestinationRules:            t.DestinationRules,
			SidecarScoping:              t.SidecarScoping,
			SidecarImports:              t.SidecarImports,
			WorkloadEntries:             t.WorkloadEntries,
			Gateways:                    simulator.Gateways{Count: t.Gateways.Count, HostsPerGateway: t.Gateways.HostsPerGateway, TLSPassthrough: t.Gateways.TLSPassthrough},
			AuthorizationPolicies:       simulator.AuthorizationPolicies{PerNamespace: t.AuthorizationPolicies.PerNamespace, Allow: t.AuthorizationPolicies.Allow, Deny: t.AuthorizationPolicies.Deny},
			Mesh:                        simMesh(t.Mesh),
		},
	}
	for _, c := range s.Churn {
		ch := simulator.Churn{
			Kind: simulator.ChurnKind(c.Kind), Target: c.Target, Rate: c.Rate.PerSecond(),
			Every: c.Every.D(), Start: c.Start.D(), Stop: c.Stop.D(), Services: c.Services,
			Window: c.Window.D(), Fraction: c.Fraction, Down: c.Down.D(), File: c.File,
		}
		for _, a := range c.At {
			ch.At = append(ch.At, a.D())
		}
		if c.Delta != nil {
			ch.Delta = *c.Delta
		}
		cfg.Churn = append(cfg.Churn, ch)
	}
	return cfg
}

// simMesh maps a scenario's explicit mesh onto the simulator's (nil when there is none).
func simMesh(m *scenarios.Mesh) *simulator.Mesh {
	if m == nil {
		return nil
	}
	out := &simulator.Mesh{}
	for _, c := range m.Objects() {
		out.Config = append(out.Config, *c)
	}
	for _, s := range m.Services {
		ms := simulator.MeshService{Name: s.Name, Namespace: s.Namespace, ServiceAccount: s.ServiceAccount}
		for _, p := range s.Ports {
			proto := p.Protocol
			if proto == scenarios.ProtocolAuto {
				proto = simulator.ProtocolAuto
			}
			ms.Ports = append(ms.Ports, simulator.MeshPort{Number: uint32(p.Number), TargetPort: uint32(p.TargetPort), Protocol: proto, Name: p.Name})
		}
		for _, g := range s.Endpoints {
			ms.Endpoints = append(ms.Endpoints, simulator.MeshEndpoints{Count: g.Count, Locality: g.Locality, Labels: g.Labels})
		}
		out.Services = append(out.Services, ms)
	}
	return out
}

// FleetConfig maps a resolved scenario's client groups onto the fake Envoy fleet dialling
// target. The fleet has one ramp and one connection-churn setting for all groups: the ramp is
// the sum of the groups' ramps (groups ramp side by side; 0 anywhere starts all at once), and
// connection churn is the first group's that sets one. Each group keeps its own streams per
// connection (its clients share connections only among themselves).
func FleetConfig(s *scenarios.Scenario, target string) (fleet.Config, error) {
	cfg := fleet.Config{Target: target, Seed: s.Seed}
	ramp, allRamp := 0.0, true
	for _, c := range s.Clients {
		nack := policy.Nack{Probability: c.Nack.Probability, EveryN: c.Nack.EveryN,
			NamePattern: c.Nack.Pattern, Realistic: c.Nack.Realistic}
		ift := c.InitialFetchTimeout.D()
		if ift == 0 {
			ift = -1 // the scenario's 0 waits forever; the client's negative disables the timeout
		}
		drain := c.ListenerDrain.D()
		if drain == 0 {
			drain = -1 // the scenario's 0 drops at once; the client's 0 takes the default
		}
		ns := c.Namespaces
		if ns == 0 || ns > s.Topology.Namespaces {
			ns = s.Topology.Namespaces
		}
		id := fakeenvoy.IdentityTemplate{Type: scenarios.TypeSidecar, Namespaces: ns,
			ClusterID: c.Node.ClusterID, IstioVersion: c.Node.IstioVersion, Labels: c.Node.Labels,
			IstioMetadata: c.Node.IstioMetadata}
		switch {
		case len(c.NamespaceCounts) > 0:
			for _, name := range slices.Sorted(maps.Keys(c.NamespaceCounts)) {
				id.NamespaceCounts = append(id.NamespaceCounts, fakeenvoy.NamespaceCount{Namespace: name, Count: c.NamespaceCounts[name]})
			}
		case s.Topology.Mesh != nil:
			// An explicit mesh names its namespaces: spread over the first ns of them.
			if names := s.Topology.NamespaceNames(); len(names) > 0 {
				id.NamespaceNames = names[:min(max(ns, 1), len(names))]
			}
		}
		switch c.Type {
		case scenarios.TypeRouter:
			id.Type = scenarios.TypeRouter
			id.Labels = routerLabels(c.Node.Labels)
		case scenarios.TypeGRPC:
			id.Generator = "grpc"
		}
		if c.XDS == scenarios.XDSGRPC {
			id.Generator = "grpc"
		}
		profile := fakeenvoy.Bootstrap(c.Bootstrap).Profile()
		cfg.Groups = append(cfg.Groups, fleet.Group{
			Name: c.Name, Count: c.Count, Identity: id, StreamsPerConn: c.StreamsPerConnection,
			AgentIssueDelay: agentDelay(c.Agent.IssueDelay),
			// The connection to the control plane: istio-agent's under bootstrap istio.
			Window: profile.Window, WindowUpdate: profile.WindowUpdate,
			KeepaliveTime: profile.KeepaliveTime, KeepaliveTimeout: profile.KeepaliveTimeout,
			// Each group reconnects on its own schedule (none: never); the fleet's Churn stays
			// zero.
			Churn: fleet.Churn{Every: c.Churn.Every.D(), Jitter: c.Churn.Jitter},
			Client: fakeenvoy.ClientConfig{
				Delta:               c.XDS == scenarios.XDSDelta,
				GRPC:                c.XDS == scenarios.XDSGRPC,
				GRPCTargets:         c.Targets,
				NodeOnFirstOnly:     c.NodeOnFirstOnly,
				InitialFetchTimeout: ift,
				ListenerDrain:       drain,
				Nack:                nack,
				Ack:                 policy.Ack{Delay: c.AckDelay.Spec(), NeverAck: c.NeverAck, DisconnectAfter: c.DisconnectAfter},
			},
		})
		if c.Ramp <= 0 {
			allRamp = false
		}
		ramp += c.Ramp.PerSecond()
	}
	if allRamp {
		cfg.Ramp = ramp
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("scenario %s: clients: %w", s.Name, err)
	}
	return cfg, nil
}

// agentDelay maps a scenario's issue delay onto the fleet's (where 0 means the default):
// the scenario's 0 serves at once.
func agentDelay(d units.Duration) time.Duration {
	if d.D() == 0 {
		return -1
	}
	return d.D()
}

// ControlPlaneOptions maps a scenario's controlPlane section onto the in-process control
// plane's options (addresses on 127.0.0.1:0; the caller sets Registerer and Logger).
func ControlPlaneOptions(s *scenarios.Scenario) controlplane.Options {
	o := controlplane.DefaultOptions()
	o.GRPCAddr, o.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	o.Debounce = debounce.Options{
		MinQuiet:    s.ControlPlane.Debounce.MinQuiet.D(),
		MaxDelay:    s.ControlPlane.Debounce.MaxDelay.D(),
		DebounceEDS: s.ControlPlane.Debounce.Endpoints,
		Policy:      debounce.PolicyName(s.ControlPlane.Debounce.Policy),
		Adaptive: debounce.AdaptiveOptions{
			MaxQuiet:   s.ControlPlane.Debounce.Adaptive.MaxQuiet.D(),
			CostFactor: s.ControlPlane.Debounce.Adaptive.CostFactor,
			Weight:     s.ControlPlane.Debounce.Adaptive.Weight,
		},
	}
	o.PushThrottle = s.ControlPlane.PushThrottle
	o.FlowControl = s.ControlPlane.FlowControl.Enabled
	if d := s.ControlPlane.FlowControl.AckTimeout.D(); d > 0 {
		o.AckTimeout = d
	}
	o.AdmissionRate = s.ControlPlane.AdmissionRate.PerSecond() // 0: the control plane's default
	o.Cores = runtime.GOMAXPROCS(0)
	return o
}

// phaseTimeout returns d, or def when d is not positive.
func phaseTimeout(d units.Duration, def time.Duration) time.Duration {
	if d.D() > 0 {
		return d.D()
	}
	return def
}

// FillGRPCTargets gives every gRPC group without targets the listener of every service port
// of the initial topology (what a client calling all of them would ask for).
func FillGRPCTargets(cfg *fleet.Config, initial []istioconfig.Config) {
	var all []string
	for i := range cfg.Groups {
		g := &cfg.Groups[i]
		if !g.Client.GRPC || len(g.Client.GRPCTargets) > 0 {
			continue
		}
		if all == nil {
			for _, c := range initial {
				se, ok := c.Spec.(*networking.ServiceEntry)
				if !ok || c.Kind != istioconfig.KindServiceEntry {
					continue
				}
				for _, h := range se.GetHosts() {
					for _, p := range se.GetPorts() {
						all = append(all, net.JoinHostPort(h, strconv.FormatUint(uint64(p.GetNumber()), 10)))
					}
				}
			}
			sort.Strings(all)
		}
		g.Client.GRPCTargets = all
	}
}

// routerLabels gives a router group the label the simulated Gateways select
// (simulator.GatewaySelector) unless the scenario sets an istio label itself.
func routerLabels(labels map[string]string) map[string]string {
	sel := simulator.GatewaySelector()
	out := make(map[string]string, len(labels)+len(sel))
	for k, v := range labels {
		out[k] = v
	}
	for k, v := range sel {
		if _, ok := labels[k]; !ok {
			out[k] = v
		}
	}
	return out
}
