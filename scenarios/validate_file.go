package scenarios

import (
	"maps"
	"slices"

	"github.com/xdslab/xdslab/scenarios/threshold"
)

// churnedKinds returns the kinds of the events the scenario's churn produces: its churn kinds,
// or with a replay every kind a trace may hold (any but replay). A threshold tagged with
// another kind would never be measured.
func (s *Scenario) churnedKinds() []string {
	out := []string{}
	for _, c := range s.Churn {
		if c.Kind == KindReplay {
			return slices.DeleteFunc(ChurnKinds(), func(k string) bool { return k == KindReplay })
		}
		if !slices.Contains(out, c.Kind) {
			out = append(out, c.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// writtenZeros records, before Complete fills the kind-specific churn defaults, the churn
// fields written as 0 that Complete would replace by their default: a 0 written there is
// rejected (validateFile), not silently replaced.
func (s *Scenario) writtenZeros() map[string]bool {
	out := map[string]bool{}
	for i, c := range s.Churn {
		p := "churn[" + itoa(i) + "]."
		for _, f := range []struct {
			field string
			zero  bool
		}{
			{"services", takesServices(c.Kind) && c.Services == 0},
			{"fraction", c.Kind == KindZoneFailure && c.Fraction == 0},
			{"window", c.Kind == KindRollingDeploy && c.Window == 0},
			{"down", c.Kind == KindEndpointFlap && c.Down == 0},
		} {
			if at, ok := s.src.at[p+f.field]; f.zero && ok && !at.null {
				out[p+f.field] = true
			}
		}
	}
	return out
}

// validateFile checks what only a file as written can get wrong: a value written that the
// run would replace by its default, fields written that have no effect given another field,
// and client settings that contradict each other. A scenario varied in Go or by Set (a tune
// sweeping the policy beside the adaptive parameters, a test turning every group into gRPC
// clients) is not held to them.
func (v *validator) validateFile() {
	s := v.s
	if len(s.Churn) == 0 {
		// A latency threshold of a scenario without churn would fail with no data after every
		// client connected: no event is ever timed.
		for _, k := range slices.Sorted(maps.Keys(s.Thresholds)) {
			reported := slices.ContainsFunc(v.errs, func(e *Error) bool { return e.Path == "thresholds."+k || under(e.Path, "thresholds."+k) })
			if threshold.PerEvent(k) && !reported {
				v.add("thresholds."+k, "add churn, e.g. churn: [{kind: endpoint-flap, rate: 2/s}], or remove the threshold",
					"%s is never measured: the scenario has no churn, so no event is timed and the threshold would fail with no data", k)
			}
		}
	}
	if s.src != nil {
		for i, c := range s.Churn {
			p := "churn[" + itoa(i) + "]."
			zero := func(f string) bool { return s.src.zero[p+f] }
			if zero("services") {
				v.add(p+"services", "use a whole number >= 1, or leave it out for 1", "services: 0 would touch no service (it is not the default 1)")
			}
			if zero("fraction") {
				v.add(p+"fraction", "use a fraction in (0, 1], or leave it out for 0.5", "fraction: 0 would remove no endpoint (it is not the default 0.5)")
			}
			if zero("window") {
				v.add(p+"window", `use a duration > 0 such as "10s", or leave it out for 10s`, "window: 0 is not a rollout window (it is not the default 10s)")
			}
			if zero("down") && c.Kind == KindEndpointFlap {
				v.add(p+"down", `use a duration > 0 such as "1s", or leave it out for 1s`, "down: 0 would flap nothing away (it is not the default 1s)")
			}
		}
	}
	def := Defaults()
	cp := s.ControlPlane
	if d := cp.Debounce; d.Policy == "" || d.Policy == "fixed" {
		a := d.Adaptive
		for _, f := range []struct {
			key string
			set bool
		}{{"maxQuiet", a.MaxQuiet != 0}, {"costFactor", a.CostFactor != 0}, {"weight", a.Weight != 0}} {
			if f.set {
				v.add("controlPlane.debounce.adaptive."+f.key, "add controlPlane.debounce.policy: adaptive, or remove controlPlane.debounce.adaptive",
					"adaptive.%s configures the adaptive debounce policy, and the policy is fixed", f.key)
			}
		}
	}
	if fc := cp.FlowControl; !fc.Enabled && fc.AckTimeout != def.ControlPlane.FlowControl.AckTimeout {
		v.add("controlPlane.flowControl.ackTimeout", "add controlPlane.flowControl.enabled: true, or remove ackTimeout",
			"ackTimeout %s has no effect: flow control is off", fc.AckTimeout)
	}
	t := s.Topology
	if g := t.Gateways; g.Count == 0 {
		if g.HostsPerGateway != 0 {
			v.add("topology.gateways.hostsPerGateway", "set topology.gateways.count >= 1, or remove hostsPerGateway",
				"hostsPerGateway %d has no effect: there are no gateways (count 0)", g.HostsPerGateway)
		}
		if g.TLSPassthrough {
			v.add("topology.gateways.tlsPassthrough", "set topology.gateways.count >= 1, or remove tlsPassthrough",
				"tlsPassthrough has no effect: there are no gateways (count 0)")
		}
	}
	if a := t.AuthorizationPolicies; a.PerNamespace == 0 && (a.Allow != 0 || a.Deny != 0) {
		v.add("topology.authorizationPolicies", "set topology.authorizationPolicies.perNamespace >= 1, or remove allow and deny",
			"allow and deny weigh AuthorizationPolicies, and perNamespace is 0 (none)")
	}
	if !t.SidecarScoping && t.SidecarImports != def.Topology.SidecarImports {
		v.add("topology.sidecarImports", "add topology.sidecarScoping: true, or remove sidecarImports",
			"sidecarImports %d has no effect without sidecarScoping", t.SidecarImports)
	}
	dc := DefaultClient()
	for i, c := range s.Clients {
		p := "clients[" + itoa(i) + "]"
		// The group's bootstrap profile gives listenerDrain its value unless the file writes
		// one: that value (written out or not) is no error, any other is.
		var profile Client
		profile.UseBootstrap(c.Bootstrap)
		if c.XDS == XDSGRPC && c.ListenerDrain != profile.ListenerDrain {
			v.add(p+".listenerDrain", "remove listenerDrain, or use xds: sotw or delta (Envoy clients drain)",
				"listenerDrain %s has no effect: proxyless gRPC clients (xds grpc) do not drain listeners", c.ListenerDrain)
		}
		if c.Churn.Every == 0 && c.Churn.Jitter != dc.Churn.Jitter {
			v.add(p+".churn.jitter", `add churn.every (e.g. "60s"), or remove jitter`,
				"jitter %g has no effect: the clients do not reconnect (churn.every 0)", c.Churn.Jitter)
		}
		switch {
		case c.XDS == XDSGRPC && c.Type == TypeRouter:
			v.add(p+".xds", "use xds: sotw or delta for routers (gateway Envoys), or type: grpc (or sidecar) for proxyless gRPC clients",
				"xds grpc (a proxyless gRPC client, node GENERATOR=grpc) contradicts type router (a gateway Envoy): the group would measure nothing")
		case c.Type == TypeGRPC && (c.XDS == XDSSotW || c.XDS == XDSDelta):
			v.add(p+".type", "add xds: grpc (the proxyless gRPC client), or use type: sidecar for an Envoy speaking "+c.XDS,
				"type grpc (a proxyless gRPC node, GENERATOR=grpc) contradicts xds %s (an Envoy client)", c.XDS)
		}
	}
}
