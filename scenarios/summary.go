package scenarios

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xdslab/xdslab/scenarios/units"
)

// YAML returns the resolved scenario as YAML that Load accepts and that resolves to the same
// scenario.
func (s *Scenario) YAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encode scenario %s: %w", s.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode scenario %s: %w", s.Name, err)
	}
	return b.Bytes(), nil
}

func secondsText(v float64) string {
	return time.Duration(v * float64(time.Second)).String()
}

// Summary describes the resolved scenario in a few lines for humans (xdslab validate, the
// header of xdslab run).
func (s *Scenario) Summary() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	title := s.Name
	if s.Source() != "" && s.Source() != "builtin:"+s.Name {
		title += " (" + s.Source() + ")"
	}
	w("scenario %s", title)
	if s.Description != "" {
		w("  %s", strings.TrimSpace(s.Description))
	}
	w("  seed %d, measure %s, connect timeout %s, drain timeout %s", s.Seed, s.Duration,
		s.Phases.Connect.Timeout, s.Phases.Drain.Timeout)
	cp := s.ControlPlane
	throttle := "auto"
	if cp.PushThrottle > 0 {
		throttle = strconv.Itoa(cp.PushThrottle)
	}
	admission := "default"
	if cp.AdmissionRate > 0 {
		admission = cp.AdmissionRate.String()
	}
	flow := "off"
	if cp.FlowControl.Enabled {
		flow = "on (ack timeout " + cp.FlowControl.AckTimeout.String() + ")"
	}
	w("  control plane: debounce minQuiet %s maxDelay %s (EDS debounced: %t), push throttle %s, flow control %s, admission %s",
		cp.Debounce.MinQuiet, cp.Debounce.MaxDelay, cp.Debounce.Endpoints, throttle, flow, admission)
	if d := cp.Debounce; d.Policy == "adaptive" {
		maxQuiet := "1s (capped at maxDelay)"
		if d.Adaptive.MaxQuiet > 0 {
			maxQuiet = d.Adaptive.MaxQuiet.String()
		}
		w("  debounce policy adaptive: quiet window = costFactor %s × push-duration average (weight %s), from minQuiet up to maxQuiet %s; a batch waits at most two windows",
			defaultNum(d.Adaptive.CostFactor, "4"), defaultNum(d.Adaptive.Weight, "0.3"), maxQuiet)
	}
	if sk := s.Sink; sk.Kind == SinkKube {
		cfg := sk.Kubeconfig
		if cfg == "" {
			cfg = "$KUBECONFIG or ~/.kube/config"
		}
		w("  sink: kube (with --target), kubeconfig %s, qps %g, burst %d, pods %t", cfg, sk.QPS, sk.Burst, sk.Pods)
	}
	t := s.Topology
	if m := t.Mesh; m != nil {
		locs := map[string]bool{}
		for _, svc := range m.Services {
			for _, g := range svc.Endpoints {
				locs[g.Locality] = true
			}
		}
		w("  topology: explicit mesh (topology.mesh): %d services in %d namespaces, %d endpoints in %d localities, %d Istio objects",
			t.Services, t.Namespaces, m.Endpoints(), len(locs), len(m.Objects()))
	} else {
		w("  topology: %d services in %d namespaces, ports %s, endpoints %s, protocols http %.2f grpc %.2f tcp %.2f",
			t.Services, t.Namespaces, units.FormatDist(t.PortsPerService, nil), units.FormatDist(t.EndpointsPerService, nil),
			t.Protocols.HTTP, t.Protocols.GRPC, t.Protocols.TCP)
		w("            %d regions × %d zones, %d versions, %d service accounts/ns, VirtualServices %.0f%%, DestinationRules %.0f%%, sidecar scoping %t",
			t.Localities.Regions, t.Localities.ZonesPerRegion, t.Versions, t.ServiceAccountsPerNamespace,
			t.VirtualServices*100, t.DestinationRules*100, t.SidecarScoping)
	}
	if len(s.Churn) == 0 {
		w("  churn: none")
	} else {
		w("  churn:")
	}
	for _, c := range s.Churn {
		w("    - %s", churnLine(c))
	}
	w("  clients: %d in %d group(s)", s.TotalClients(), len(s.Clients))
	for _, c := range s.Clients {
		extra := ""
		if c.Nack.Probability > 0 || c.Nack.EveryN > 0 || c.Nack.Pattern != "" || c.Nack.Realistic {
			var parts []string
			if c.Nack.Probability > 0 {
				parts = append(parts, "p="+strconv.FormatFloat(c.Nack.Probability, 'g', -1, 64))
			}
			if c.Nack.EveryN > 0 {
				parts = append(parts, "every "+strconv.Itoa(c.Nack.EveryN))
			}
			if c.Nack.Pattern != "" {
				parts = append(parts, "pattern "+strconv.Quote(c.Nack.Pattern))
			}
			if c.Nack.Realistic {
				parts = append(parts, "realistic")
			}
			extra += ", nack " + strings.Join(parts, " ")
		}
		if c.NeverAck {
			extra += ", never ACK"
		}
		if c.DisconnectAfter > 0 {
			extra += fmt.Sprintf(", disconnect after %d responses", c.DisconnectAfter)
		}
		if c.Churn.Every > 0 {
			extra += fmt.Sprintf(", reconnect every %s ±%.0f%%", c.Churn.Every, c.Churn.Jitter*100)
		}
		if c.StreamsPerConnection > 1 {
			extra += fmt.Sprintf(", %d streams per connection", c.StreamsPerConnection)
		}
		ramp := "all at once"
		if c.Ramp > 0 {
			ramp = "ramp " + c.Ramp.String()
		}
		w("    - %s: %d × %s %s, %s, ack delay %s%s", c.Name, c.Count, c.XDS, c.Type, ramp,
			units.FormatDist(c.AckDelay.Spec(), secondsText), extra)
	}
	implicit := s.ImplicitThresholds()
	if len(s.Thresholds) == 0 && len(implicit) == 0 {
		w("  thresholds: none")
	} else {
		w("  thresholds:")
		keys := make([]string, 0, len(s.Thresholds))
		for k := range s.Thresholds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			exprs := make([]string, len(s.Thresholds[k]))
			for i, th := range s.Thresholds[k] {
				exprs[i] = th.Source
			}
			w("    - %s: %s", k, strings.Join(exprs, ", "))
		}
		for _, it := range implicit {
			w("    - %s: %s (%s)", it.Key, it.Threshold.Source, it.Description)
		}
	}
	return b.String()
}

func churnLine(c Churn) string {
	var timing string
	switch {
	case c.Rate > 0:
		timing = c.Rate.String()
	case c.Every > 0:
		timing = "every " + c.Every.String()
	case len(c.At) > 0:
		at := make([]string, len(c.At))
		for i, a := range c.At {
			at[i] = a.String()
		}
		timing = "at " + strings.Join(at, ", ")
	case c.Kind == KindReplay:
		timing = "from " + c.File
	}
	var extra []string
	switch c.Kind {
	case KindScale:
		if c.Delta != nil {
			extra = append(extra, "delta "+units.FormatDist(*c.Delta, nil))
		}
	case KindRollingDeploy:
		extra = append(extra, fmt.Sprintf("%d services over %s", c.Services, c.Window))
	case KindConfigChange:
		extra = append(extra, "target "+c.Target)
	case KindZoneFailure:
		extra = append(extra, fmt.Sprintf("%.0f%% of a zone", c.Fraction*100))
	}
	if c.Start > 0 {
		extra = append(extra, "from "+c.Start.String())
	}
	if c.Stop > 0 {
		extra = append(extra, "until "+c.Stop.String())
	}
	line := c.Kind + " " + timing
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	return line
}

// defaultNum formats v, or def when v is zero (the default applies).
func defaultNum(v float64, def string) string {
	if v == 0 {
		return def
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
