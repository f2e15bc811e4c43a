package scenarios

import (
	"fmt"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xdslab/xdslab/internal/catalog"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/scenarios/threshold"
	"github.com/xdslab/xdslab/scenarios/units"
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// The simulator's bounds (simulator.Config.Validate, simulator/config.go, which keeps them as
// literals): a run refuses a scenario past them, so Validate reports them at the field.
const (
	maxNamespaces    = 100_000
	maxServices      = 1_000_000
	maxChurnServices = 100_000
	// maxScheduledEvents is simulator.MaxScheduledEvents: the events all churn may schedule.
	maxScheduledEvents = 5_000_000
	// maxEndpoints is simulator.MaxEndpointAddresses: the simulator gives every endpoint its
	// own address in 10.0.0.0/8 and stops the run when they run out.
	maxEndpoints = 256 * 256 * 254
	// MaxClients bounds the clients of one scenario, all groups together (and of xdslab fleet
	// --clients): every client is a
	// fake Envoy with its own state machine, and a count far past it exhausts memory before
	// the connect phase ends (a group of 1e12 died with "fatal error: out of memory").
	MaxClients = 1_000_000
)

// churnEvents is how many events c schedules over a run of duration d, in expectation: rate ×
// its window, its window / every, or its offsets (a replay's trace is not counted).
func churnEvents(c Churn, d time.Duration) float64 {
	end := d
	if c.Stop > 0 && c.Stop.D() < end {
		end = c.Stop.D()
	}
	window := (end - c.Start.D()).Seconds()
	switch {
	case window <= 0:
		return 0
	case c.Rate > 0:
		return c.Rate.PerSecond() * window
	case c.Every > 0:
		return window / c.Every.D().Seconds()
	}
	return float64(len(c.At))
}

// validator collects errors with the positions recorded when the scenario was loaded.
type validator struct {
	s    *Scenario
	errs Errors
}

func (v *validator) add(path, fix, format string, a ...any) {
	if len(v.errs) >= maxErrors {
		return
	}
	e := &Error{Path: path, Msg: fmt.Sprintf(format, a...), Fix: fix}
	if v.s.src != nil {
		e.File = v.s.src.file
		p := v.s.src.lookup(path)
		e.Line, e.Col = p.line, p.col
	}
	v.errs = append(v.errs, e)
}

func (v *validator) nonNegDur(path string, d units.Duration) {
	if d < 0 {
		v.add(path, "use a duration >= 0, e.g. "+strings.TrimPrefix(d.String(), "-"), "negative duration %s", d)
	}
}

func (v *validator) posDur(path string, d units.Duration) {
	if d <= 0 {
		v.add(path, `use a duration > 0, e.g. "30s"`, "must be > 0, got %s", d)
	}
}

func (v *validator) fraction(path string, f float64) {
	if f < 0 || f > 1 {
		v.add(path, "use a fraction from 0 to 1", "must be within [0, 1], got %g", f)
	}
}

func (v *validator) atLeast(path string, n, lo int) {
	if n < lo {
		v.add(path, fmt.Sprintf("use a whole number >= %d", lo), "must be >= %d, got %d", lo, n)
	}
}

// Validate checks every value and cross-field rule and returns all problems as Errors (nil when
// the scenario is valid). Call Complete first when the scenario was built in Go.
func (s *Scenario) Validate() error {
	return s.validate(false)
}

// validate is Validate, with the checks of a file as written (validateFile) when file is
// set: the loader's, not a scenario varied in Go or by Set.
func (s *Scenario) validate(file bool) error {
	v := &validator{s: s}
	v.scenario()
	if file {
		v.validateFile()
	}
	if len(v.errs) == 0 {
		return nil
	}
	sortErrors(v.errs)
	return v.errs
}

func (v *validator) scenario() {
	s := v.s
	switch {
	case s.Name == "":
		v.add("name", "add a name such as: name: my-scenario", "name is required")
	case len(s.Name) > 63 || !nameRE.MatchString(s.Name):
		v.add("name", "use lower-case letters, digits and '-' (at most 63, not starting or ending with '-'), e.g. "+
			strconv.Quote(suggestName(s.Name)), "invalid name %q", s.Name)
	}
	v.posDur("duration", s.Duration)
	v.controlPlane()
	v.sink()
	v.topology()
	total, one := 0.0, false // one: a churn alone is past the limit (churn says so)
	for i := range s.Churn {
		v.churn(i)
		n := churnEvents(s.Churn[i], s.Duration.D())
		total, one = total+n, one || n > maxScheduledEvents
	}
	v.idleChurn()
	if total > maxScheduledEvents && !one {
		v.add("churn", fmt.Sprintf("lower the rates, raise the everies or shorten duration: at most %d events in all (the simulator's limit)", maxScheduledEvents),
			"the churn schedules about %.3g events over the run", total)
	}
	v.clients()
	v.posDur("phases.connect.timeout", s.Phases.Connect.Timeout)
	v.nonNegDur("phases.drain.timeout", s.Phases.Drain.Timeout)
	v.thresholds()
}

func (v *validator) controlPlane() {
	cp := v.s.ControlPlane
	v.nonNegDur("controlPlane.debounce.minQuiet", cp.Debounce.MinQuiet)
	v.nonNegDur("controlPlane.debounce.maxDelay", cp.Debounce.MaxDelay)
	if cp.Debounce.MaxDelay < cp.Debounce.MinQuiet {
		v.add("controlPlane.debounce.maxDelay", "raise maxDelay to at least minQuiet ("+cp.Debounce.MinQuiet.String()+")",
			"maxDelay %s is shorter than minQuiet %s", cp.Debounce.MaxDelay, cp.Debounce.MinQuiet)
	}
	switch d := cp.Debounce; d.Policy {
	case "", "fixed":
		// The adaptive section is ignored (a tune may sweep it beside policy=fixed); a file
		// that writes it with the fixed policy is rejected (validateFile).
	case "adaptive":
		a := d.Adaptive
		v.nonNegDur("controlPlane.debounce.adaptive.maxQuiet", a.MaxQuiet)
		if a.MaxQuiet > 0 && a.MaxQuiet < d.MinQuiet {
			v.add("controlPlane.debounce.adaptive.maxQuiet", "raise maxQuiet to at least minQuiet ("+d.MinQuiet.String()+")",
				"maxQuiet %s is shorter than minQuiet %s", a.MaxQuiet, d.MinQuiet)
		}
		if a.MaxQuiet > d.MaxDelay {
			v.add("controlPlane.debounce.adaptive.maxQuiet", "lower maxQuiet to at most maxDelay ("+d.MaxDelay.String()+")",
				"maxQuiet %s is longer than maxDelay %s", a.MaxQuiet, d.MaxDelay)
		}
		if a.CostFactor < 0 || math.IsNaN(a.CostFactor) || math.IsInf(a.CostFactor, 0) {
			v.add("controlPlane.debounce.adaptive.costFactor", "use a positive number such as 4 (0 = default)", "costFactor %v", a.CostFactor)
		}
		if a.Weight < 0 || a.Weight > 1 || math.IsNaN(a.Weight) {
			v.add("controlPlane.debounce.adaptive.weight", "use a weight in (0, 1] such as 0.3 (0 = default)", "weight %v", a.Weight)
		}
	default:
		v.add("controlPlane.debounce.policy", "use fixed or adaptive", "unknown debounce policy %q", d.Policy)
	}
	v.atLeast("controlPlane.pushThrottle", cp.PushThrottle, 0)
	v.nonNegDur("controlPlane.flowControl.ackTimeout", cp.FlowControl.AckTimeout)
	if cp.FlowControl.Enabled && cp.FlowControl.AckTimeout == 0 {
		v.add("controlPlane.flowControl.ackTimeout", `set an ackTimeout such as "5s"`, "flow control needs an ackTimeout > 0")
	}
	if cp.AdmissionRate < 0 {
		v.add("controlPlane.admissionRate", "use a rate >= 0 (0 = default), e.g. \"100/s\"", "negative rate %s", cp.AdmissionRate)
	}
}

func (v *validator) sink() {
	sk, def := v.s.Sink, Defaults().Sink
	switch sk.Kind {
	case SinkDir, SinkKube, SinkMCP:
	default:
		v.add("sink.kind", suggest.Fix(sk.Kind, []string{SinkDir, SinkKube, SinkMCP}), "unknown sink kind %q", sk.Kind)
		return
	}
	if sk.Kind != SinkMCP && sk.Listen != def.Listen {
		v.add("sink.listen", "remove it, or set sink.kind: mcp", "listen applies to sink kind mcp only, not %s", sk.Kind)
	}
	if _, _, err := net.SplitHostPort(sk.Listen); sk.Kind == SinkMCP && err != nil {
		v.add("sink.listen", `write host:port, e.g. "127.0.0.1:15020"`, "listen %q is not host:port", sk.Listen)
	}
	if sk.Kind != SinkKube {
		for _, f := range []struct {
			key     string
			differs bool
		}{{"kubeconfig", sk.Kubeconfig != def.Kubeconfig}, {"qps", sk.QPS != def.QPS}, {"burst", sk.Burst != def.Burst}, {"pods", sk.Pods != def.Pods}} {
			// A value at its default is allowed: a printed scenario writes every field.
			if f.differs {
				v.add("sink."+f.key, "remove it, or set sink.kind: kube", "%s applies to sink kind kube only, not %s", f.key, sk.Kind)
			}
		}
		return
	}
	if sk.QPS > math.MaxFloat32 {
		v.add("sink.qps", "use a rate such as 50 (negative: no limit)", "qps %g is out of range", sk.QPS)
	}
	v.atLeast("sink.burst", sk.Burst, 0)
}

func (v *validator) topology() {
	t := v.s.Topology
	if t.Namespaces < 1 || t.Namespaces > maxNamespaces {
		v.add("topology.namespaces", fmt.Sprintf("use 1 to %d (the simulator's limit)", maxNamespaces), "must be within 1..%d, got %d", maxNamespaces, t.Namespaces)
	}
	if t.Services < 0 || t.Services > maxServices {
		v.add("topology.services", fmt.Sprintf("use 0 to %d (the simulator's limit)", maxServices), "must be within 0..%d, got %d", maxServices, t.Services)
	}
	p := t.Protocols
	if p.HTTP < 0 || p.GRPC < 0 || p.TCP < 0 {
		v.add("topology.protocols", "use weights >= 0", "negative protocol weight")
	} else if p.HTTP+p.GRPC+p.TCP == 0 {
		v.add("topology.protocols", "give at least one protocol a weight > 0, e.g. {http: 1}", "the protocol weights are all 0")
	}
	v.countDist("topology.portsPerService", t.PortsPerService, 1)
	v.countDist("topology.endpointsPerService", t.EndpointsPerService, 0)
	if least := leastDraw(t.EndpointsPerService); t.Mesh == nil && float64(t.Services)*least > maxEndpoints {
		v.add("topology.endpointsPerService", fmt.Sprintf("give the %d services at most %d endpoints in all (%d each)", t.Services, maxEndpoints, maxEndpoints/max(t.Services, 1)),
			"at least %.0f endpoints per service make at least %.0f endpoints, past the simulator's %d endpoint addresses (10.0.0.0/8)", least, float64(t.Services)*least, maxEndpoints)
	}
	v.atLeast("topology.localities.regions", t.Localities.Regions, 1)
	v.atLeast("topology.localities.zonesPerRegion", t.Localities.ZonesPerRegion, 1)
	if t.Versions < 1 || t.Versions > 100 {
		v.add("topology.versions", "use 1 to 100", "must be within 1..100, got %d", t.Versions)
	}
	v.atLeast("topology.sidecarImports", t.SidecarImports, 0)
	v.atLeast("topology.serviceAccountsPerNamespace", t.ServiceAccountsPerNamespace, 1)
	v.fraction("topology.virtualServices", t.VirtualServices)
	v.fraction("topology.destinationRules", t.DestinationRules)
	if g := t.Gateways; g.Count < 0 || g.Count > 1000 {
		v.add("topology.gateways.count", "use 0 to 1000", "must be within 0..1000, got %d", g.Count)
	}
	if g := t.Gateways; g.HostsPerGateway < 0 || g.HostsPerGateway > 10000 {
		v.add("topology.gateways.hostsPerGateway", "use 0 to 10000", "must be within 0..10000, got %d", g.HostsPerGateway)
	}
	if g := t.Gateways; g.Count > 0 && g.HostsPerGateway > 0 && p.HTTP+p.GRPC <= 0 && p.HTTP >= 0 && p.GRPC >= 0 {
		v.add("topology.gateways", "give topology.protocols.http or grpc a weight", "gateway hosts route to services with HTTP or gRPC ports, and the topology has neither")
	}
	if a := t.AuthorizationPolicies; a.PerNamespace < 0 || a.PerNamespace > 1000 {
		v.add("topology.authorizationPolicies.perNamespace", "use 0 to 1000", "must be within 0..1000, got %d", a.PerNamespace)
	}
	if a := t.AuthorizationPolicies; a.Allow < 0 || a.Deny < 0 || (a.PerNamespace > 0 && a.Allow+a.Deny <= 0) {
		v.add("topology.authorizationPolicies", "give allow and deny weights >= 0 (both 0: 0.7 and 0.3)", "weights must be >= 0, got allow %g deny %g", a.Allow, a.Deny)
	}
	if t.AuthorizationPolicies.PerNamespace > 0 && v.s.Sink.Kind == SinkKube {
		v.add("topology.authorizationPolicies", "use sink kind dir or mcp (or the in-process control plane), or remove topology.authorizationPolicies",
			"the kube sink cannot write AuthorizationPolicies")
	}
	v.mesh()
}

// distCheck validates a distribution: a known name, only the parameters it reads, and
// parameters that define it.
func (v *validator) distCheck(path string, s dist.Spec) bool {
	if s.Dist != "" && !slices.Contains(dist.Names(), s.Dist) {
		v.add(path+".dist", suggest.Fix(s.Dist, dist.Names()), "unknown distribution %q", s.Dist)
		return false
	}
	reads := units.DistParams(s.Dist)
	name := s.Dist
	if name == "" {
		name = "constant"
	}
	ok := true
	for _, p := range []struct {
		k string
		v float64
	}{{"value", s.Value}, {"min", s.Min}, {"max", s.Max}, {"mean", s.Mean}, {"median", s.Median},
		{"sigma", s.Sigma}, {"alpha", s.Alpha}, {"s", s.S}} {
		if p.v != 0 && !slices.Contains(reads, p.k) {
			v.add(path+"."+p.k, "remove it; dist "+name+" reads "+strings.Join(reads, ", ")+distNeeds(name),
				"%s does not apply to dist %s", p.k, name)
			ok = false
		}
	}
	if !ok {
		return false
	}
	if err := s.Validate(); err != nil {
		v.add(path, "dist "+name+distNeeds(name), "%v", err)
		return false
	}
	return true
}

// distNeeds says what a distribution's parameters must satisfy.
func distNeeds(name string) string {
	switch name {
	case "constant":
		return " (needs value >= 0)"
	case "uniform":
		return " (needs 0 <= min <= max)"
	case "exp":
		return " (needs mean > 0; min and max clamp)"
	case "normal":
		return " (needs sigma >= 0; min and max clamp)"
	case "lognormal":
		return " (needs median > 0, sigma >= 0; min and max clamp)"
	case "pareto":
		return " (needs min > 0, alpha > 0)"
	case "zipf":
		return " (needs s > 1, max >= 1)"
	}
	return ""
}

// countDist validates a distribution of counts whose constant value must be >= lo.
func (v *validator) countDist(path string, s dist.Spec, lo int) {
	if !v.distCheck(path, s) {
		return
	}
	if (s.Dist == "constant" || s.Dist == "") && s.Value < float64(lo) {
		v.add(path, fmt.Sprintf("use a value >= %d", lo), "constant %g is below %d", s.Value, lo)
	}
}

// leastDraw is the least value a count distribution can draw (rounded as counts are): a
// constant's value, else the min that uniform and pareto draw from and the others clamp to
// (when max is set); 0 when nothing bounds it.
func leastDraw(s dist.Spec) float64 {
	switch {
	case (s.Dist == "constant" || s.Dist == "") && s.Max > 0:
		// A max clamps the constant (dist.Sampler), as it clamps every draw but pareto's
		// and uniform's.
		return math.Round(max(min(max(s.Value, s.Min), s.Max), 0))
	case s.Dist == "constant" || s.Dist == "":
		return math.Round(max(s.Value, 0))
	case s.Dist == "uniform" || s.Dist == "pareto" || s.Max > 0:
		return math.Round(max(s.Min, 0))
	}
	return 0
}

func (v *validator) churn(i int) {
	s := v.s
	c := s.Churn[i]
	p := "churn[" + itoa(i) + "]"
	if c.Kind == "" {
		v.add(p+".kind", "add kind: one of "+strings.Join(ChurnKinds(), ", "), "kind is required")
		return
	}
	if takesServices(c.Kind) && (c.Services < 1 || c.Services > maxChurnServices) {
		v.add(p+".services", fmt.Sprintf("use a whole number >= 1 and <= %d (the simulator's limit)", maxChurnServices), "must be >= 1 and <= %d, got %d", maxChurnServices, c.Services)
	}
	if !slices.Contains(ChurnKinds(), c.Kind) {
		v.add(p+".kind", suggest.Fix(c.Kind, ChurnKinds()), "unknown churn kind %q", c.Kind)
		return
	}
	// Timing.
	timings := 0
	if c.Rate != 0 {
		timings++
	}
	if c.Every != 0 {
		timings++
	}
	if len(c.At) > 0 {
		timings++
	}
	if c.Kind == KindReplay {
		if timings > 0 {
			v.add(p, "remove rate/every/at; a replay takes its timing from the trace", "replay has its own timing")
		}
	} else if timings != 1 {
		fix := `give exactly one of rate ("20/s"), every ("30s") or at ([10s, 20s])`
		if timings == 0 {
			v.add(p, fix, "%s has no timing", c.Kind)
		} else {
			v.add(p, fix, "%s has more than one timing", c.Kind)
		}
	}
	if c.Rate < 0 {
		v.add(p+".rate", `use a rate > 0 such as "20/s"`, "negative rate %s", c.Rate)
	}
	if n := churnEvents(c, s.Duration.D()); n > maxScheduledEvents {
		at := p + ".rate"
		if c.Every > 0 {
			at = p + ".every"
		}
		v.add(at, fmt.Sprintf("schedule at most %d events (the simulator's limit): lower the rate, raise every or shorten the churn's window", maxScheduledEvents),
			"schedules about %.3g events over the run", n)
	}
	v.nonNegDur(p+".every", c.Every)
	for j, at := range c.At {
		ap := p + ".at[" + itoa(j) + "]"
		v.nonNegDur(ap, at)
		if at > s.Duration && s.Duration > 0 {
			v.add(ap, "use an offset within duration ("+s.Duration.String()+") or raise duration",
				"offset %s is after the end of the measure phase", at)
		}
	}
	v.nonNegDur(p+".start", c.Start)
	v.nonNegDur(p+".stop", c.Stop)
	if c.Stop != 0 && c.Stop <= c.Start {
		v.add(p+".stop", "make stop later than start ("+c.Start.String()+"), or 0 to run to the end", "stop %s is not after start", c.Stop)
	}
	if c.Start > s.Duration && s.Duration > 0 {
		v.add(p+".start", "start within duration ("+s.Duration.String()+")", "start %s is after the end of the measure phase", c.Start)
	}
	// Kind-specific fields.
	notFor := func(field string, set bool, kind string) {
		if set && c.Kind != kind {
			v.add(p+"."+field, "remove it; "+field+" applies to kind "+kind+" only", "%s does not apply to kind %s", field, c.Kind)
		}
	}
	notFor("delta", c.Delta != nil, KindScale)
	if c.Services != 0 && !takesServices(c.Kind) {
		v.add(p+".services", "remove it; services applies to scale, rolling-deploy, service-create, service-delete, config-change and service-account-change",
			"services does not apply to kind %s", c.Kind)
	}
	if c.Down != 0 && c.Kind != KindEndpointFlap && c.Kind != KindZoneFailure {
		v.add(p+".down", "remove it; down applies to endpoint-flap and zone-failure", "down does not apply to kind %s", c.Kind)
	}
	v.nonNegDur(p+".down", c.Down)
	notFor("window", c.Window != 0, KindRollingDeploy)
	notFor("target", c.Target != "", KindConfigChange)
	notFor("fraction", c.Fraction != 0, KindZoneFailure)
	notFor("file", c.File != "", KindReplay)
	switch c.Kind {
	case KindScale:
		if c.Delta != nil {
			v.countDist(p+".delta", *c.Delta, 1)
		}
	case KindRollingDeploy:
		v.posDur(p+".window", c.Window)
	case KindServiceAccountChange:
		if s.Topology.ServiceAccountsPerNamespace < 2 {
			v.add(p+".kind", "set topology.serviceAccountsPerNamespace >= 2", "service-account-change needs a second service account to change to")
		}
	case KindConfigChange:
		if c.Target == TargetAuthz {
			if s.Topology.AuthorizationPolicies.PerNamespace <= 0 {
				v.add(p+".target", "set topology.authorizationPolicies: {perNamespace: N}", "target authz rewrites AuthorizationPolicies, and the topology has none")
			}
			return
		}
		if s.Topology.Mesh != nil {
			v.add(p+".kind", "remove it: topology.mesh keeps its Istio objects as written (edit topology.mesh.config instead)", "config-change rewrites synthetic VirtualServices and DestinationRules, which topology.mesh does not have")
			return
		}
		switch c.Target {
		case TargetVirtualService:
			if pr := s.Topology.Protocols; pr.HTTP+pr.GRPC <= 0 {
				v.add(p+".target", "give topology.protocols.http or grpc a weight, or target destinationrule", "VirtualServices route HTTP and gRPC, and the topology has neither")
			}
		case TargetDestinationRule:
		case TargetGateway:
			if g := s.Topology.Gateways; g.Count == 0 || g.HostsPerGateway == 0 {
				v.add(p+".target", "set topology.gateways: {count: N, hostsPerGateway: M}", "target gateway re-binds gateway hosts, and the topology has none")
			}
		default:
			v.add(p+".target", suggest.Fix(c.Target, []string{TargetVirtualService, TargetDestinationRule, TargetGateway, TargetAuthz}), "unknown target %q", c.Target)
		}
	case KindZoneFailure:
		if c.Fraction <= 0 || c.Fraction > 1 {
			v.add(p+".fraction", "use a fraction in (0, 1]", "must be within (0, 1], got %g", c.Fraction)
		}
	case KindReplay:
		if c.File == "" {
			v.add(p+".file", "add file: trace.jsonl (an event log written by xdslab sim --events)", "replay needs a file")
		}
	}
}

func (v *validator) clients() {
	s := v.s
	if len(s.Clients) == 0 {
		v.add("clients", "add a group such as: clients: [{name: sidecars, count: 100}]", "at least one client group is required")
		return
	}
	total, over := 0, false
	for _, c := range s.Clients {
		if c.Count > MaxClients {
			over = true // reported at the group
		} else if c.Count > 0 {
			total += c.Count
		}
	}
	if total > MaxClients && !over {
		v.add("clients", fmt.Sprintf("lower the counts: at most %d clients in all groups together (the lab's limit)", MaxClients), "the groups hold %d clients together, more than %d", total, MaxClients)
	}
	seen := map[string]int{}
	for i, c := range s.Clients {
		p := "clients[" + itoa(i) + "]"
		if j, dup := seen[c.Name]; dup {
			v.add(p+".name", fmt.Sprintf("rename one; clients[%d] has the same name", j), "duplicate group name %q", c.Name)
		}
		seen[c.Name] = i
		if len(c.Name) > 63 || !nameRE.MatchString(c.Name) {
			v.add(p+".name", "use lower-case letters, digits and '-', e.g. "+strconv.Quote(suggestName(c.Name)), "invalid group name %q", c.Name)
		}
		v.atLeast(p+".count", c.Count, 1)
		if c.Count > MaxClients {
			v.add(p+".count", fmt.Sprintf("use 1 to %d (the lab's limit, all groups together)", MaxClients), "must be within 1..%d, got %d", MaxClients, c.Count)
		}
		if c.XDS != XDSSotW && c.XDS != XDSDelta && c.XDS != XDSGRPC {
			v.add(p+".xds", suggest.Fix(c.XDS, []string{XDSSotW, XDSDelta, XDSGRPC}), "unknown xds variant %q", c.XDS)
		}
		v.auth(p+".auth", c)
		if len(c.Targets) > 0 && c.XDS != XDSGRPC {
			v.add(p+".targets", "remove targets, or set xds: grpc (only proxyless gRPC clients name their listeners)", "targets given for xds %q", c.XDS)
		}
		for j, tg := range c.Targets {
			if host, port, err := net.SplitHostPort(tg); err != nil || host == "" || port == "" {
				v.add(p+".targets["+itoa(j)+"]", `write host:port, e.g. "svc-0.ns-0.svc.cluster.local:8080"`, "invalid target %q", tg)
			}
		}
		if types := []string{TypeSidecar, TypeRouter, TypeGRPC}; !slices.Contains(types, c.Type) {
			v.add(p+".type", suggest.Fix(c.Type, types), "unknown client type %q", c.Type)
		}
		if c.Ramp < 0 {
			v.add(p+".ramp", `use a rate >= 0 such as "200/s" (0 connects all at once)`, "negative rate %s", c.Ramp)
		}
		v.atLeast(p+".namespaces", c.Namespaces, 0)
		if c.Namespaces > s.Topology.Namespaces && s.Topology.Namespaces > 0 {
			v.add(p+".namespaces", fmt.Sprintf("use at most topology.namespaces (%d), or 0 for all", s.Topology.Namespaces),
				"%d namespaces is more than the topology has", c.Namespaces)
		}
		if len(c.NamespaceCounts) > 0 {
			v.namespaceCounts(p, c, s.Topology)
		}
		v.distCheck(p+".ackDelay", c.AckDelay.Spec())
		v.fraction(p+".nack.probability", c.Nack.Probability)
		v.atLeast(p+".nack.everyN", c.Nack.EveryN, 0)
		if c.Nack.Pattern != "" {
			if _, err := regexp.Compile(c.Nack.Pattern); err != nil {
				v.add(p+".nack.pattern", "write an RE2 regular expression (quote it in YAML), e.g. 'outbound\\|8080\\|.*'", "invalid pattern: %v", err)
			}
		}
		v.atLeast(p+".disconnectAfter", c.DisconnectAfter, 0)
		if !slices.Contains(BootstrapProfiles(), c.Bootstrap) {
			v.add(p+".bootstrap", suggest.Fix(c.Bootstrap, BootstrapProfiles()), "unknown bootstrap profile %q (istio: istio-agent's Envoy; envoy: Envoy's own defaults)", c.Bootstrap)
		}
		v.nonNegDur(p+".initialFetchTimeout", c.InitialFetchTimeout)
		v.nonNegDur(p+".listenerDrain", c.ListenerDrain)
		v.nonNegDur(p+".agent.issueDelay", c.Agent.IssueDelay)
		if c.Node.ClusterID == "" {
			v.add(p+".node.clusterID", "set a cluster id such as Kubernetes", "clusterID is empty")
		}
		if c.Node.IstioVersion == "" {
			v.add(p+".node.istioVersion", `set a version such as "1.28.0"`, "istioVersion is empty")
		}
		for k := range c.Node.Labels {
			if k == "" {
				v.add(p+".node.labels", "give the label a name", "empty label name")
			}
		}
		v.nonNegDur(p+".churn.every", c.Churn.Every)
		v.fraction(p+".churn.jitter", c.Churn.Jitter)
		v.atLeast(p+".streamsPerConnection", c.StreamsPerConnection, 1)
		if c.StreamsPerConnection > 1 && c.Auth.Enabled() {
			v.add(p+".streamsPerConnection", "set streamsPerConnection: 1 (the default), or remove auth",
				"%d streams per connection with auth: an authenticating client dials the secure listener with its own credentials, on a connection of its own", c.StreamsPerConnection)
		}
	}
}

func (v *validator) thresholds() {
	keys := make([]string, 0, len(v.s.Thresholds))
	for k := range v.s.Thresholds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	groups := make([]string, 0, len(v.s.Clients))
	for _, c := range v.s.Clients {
		groups = append(groups, c.Name)
	}
	for _, k := range keys {
		p := "thresholds." + k
		for _, pr := range threshold.Check(k, v.s.Thresholds[k], groups, ChurnKinds(), v.s.churnedKinds()) {
			at := p
			if pr.Index >= 0 {
				at = p + "[" + itoa(pr.Index) + "]"
			}
			v.add(at, pr.Fix, "%s", pr.Msg)
		}
		if typ, ok := threshold.MetricTags(k)["type"]; ok {
			if fix, why := v.s.unservedType(threshold.MetricName(k), typ); why != "" {
				v.add(p, fix, "%s{type:%s} is never measured: %s", threshold.MetricName(k), typ, why)
			}
		}
	}
}

// idleChurn reports churn that can never act on the topology, which the simulator would skip
// at every arrival (a run "passes" with 0 events): churn on services when there are none and
// no service-create (or replay) adds any, endpoint churn when no service ever has an endpoint
// and no scale (or replay) adds one.
func (v *validator) idleChurn() {
	s := v.s
	has := func(kinds ...string) bool {
		return slices.ContainsFunc(s.Churn, func(c Churn) bool { return slices.Contains(kinds, c.Kind) })
	}
	noServices := s.Topology.Services == 0 && !has(KindServiceCreate, KindReplay)
	noEndpoints := !has(KindScale, KindReplay) && (s.Topology.Mesh != nil && s.Topology.Mesh.Endpoints() == 0 ||
		s.Topology.Mesh == nil && alwaysZero(s.Topology.EndpointsPerService))
	for i, c := range s.Churn {
		p := "churn[" + itoa(i) + "]"
		switch c.Kind {
		case KindEndpointFlap, KindScale, KindRollingDeploy, KindServiceDelete, KindServiceAccountChange, KindZoneFailure, KindConfigChange:
		default:
			continue
		}
		if c.Kind == KindConfigChange && c.Target == TargetAuthz {
			continue // the policies are per namespace, with or without services
		}
		switch {
		case noServices:
			what := "topology.services: 0"
			if s.Topology.Mesh != nil {
				what = "topology.mesh has no services"
			}
			v.add(p+".kind", "give the topology services (topology.services >= 1), add a service-create churn, or remove this churn",
				"%s churn can never act: the topology has no services (%s) and no churn creates any, so every arrival would be skipped", c.Kind, what)
		case noEndpoints && (c.Kind == KindEndpointFlap || c.Kind == KindZoneFailure):
			fix := "give the services endpoints (topology.endpointsPerService), add a scale churn, or remove this churn"
			if s.Topology.Mesh != nil {
				fix = "give topology.mesh's services endpoints, add a scale churn, or remove this churn"
			}
			v.add(p+".kind", fix, "%s churn can never act: no service has an endpoint and no churn adds any, so every arrival would be skipped", c.Kind)
		}
	}
}

// alwaysZero reports whether every count drawn from d rounds to 0.
func alwaysZero(d dist.Spec) bool {
	switch d.Dist {
	case "", "constant":
		return d.Value < 0.5
	case "uniform":
		return d.Max < 0.5
	}
	return d.Max > 0 && d.Max < 0.5 && d.Dist != "pareto" && d.Dist != "zipf"
}

// fleetTypes are the xDS types the fake Envoys subscribe to (fakeenvoy/machine).
var fleetTypes = []string{"CDS", "EDS", "LDS", "RDS", "SDS"}

// unservedType says why metric's series of xDS type typ can never be written by a run of the
// scenario (why is "" when it may be, or when the type is not one of the metric's): the fleet
// never subscribes to ECDS, RTDS, SRDS or VHDS, and asks the control plane for secrets (SDS)
// only when its config names secrets served over ADS — a DestinationRule's ISTIO_MUTUAL, a
// PeerAuthentication's inbound mTLS, a Gateway's credentialName — which only topology.mesh.config
// (or a replay, or a Kubernetes cluster the kube sink shares with others) can hold: the
// synthetic topology's TLS comes from the istio-agent.
func (s *Scenario) unservedType(metric, typ string) (fix, why string) {
	cm, ok := catalog.Lookup(metric)
	if !ok {
		return "", ""
	}
	switch cm.Tags["type"] {
	case catalog.FleetType:
		if slices.Contains(catalog.FleetTypes, typ) && !slices.Contains(fleetTypes, typ) {
			return "use one of " + strings.Join(fleetTypes, ", ") + ", or remove the threshold",
				"the fleet's clients subscribe to " + strings.Join(fleetTypes, ", ") + " only, never " + typ
		}
		if typ != "SDS" {
			return "", ""
		}
	case catalog.CPType:
		if typ != "sds" {
			return "", ""
		}
	default:
		return "", ""
	}
	if s.Sink.Kind == SinkKube || slices.ContainsFunc(s.Churn, func(c Churn) bool { return c.Kind == KindReplay }) {
		return "", ""
	}
	for _, c := range s.Topology.Mesh.Objects() {
		switch c.Kind {
		case istioconfig.KindDestinationRule, istioconfig.KindPeerAuthentication, istioconfig.KindGateway:
			return "", ""
		}
	}
	return "add what asks for secrets over ADS to topology.mesh.config (a DestinationRule with tls mode ISTIO_MUTUAL, a PeerAuthentication, a Gateway with a credentialName; docs/security.md), or remove the threshold",
		"no client asks the control plane for secrets: the scenario's config names none served over ADS (the istio-agent serves the workload certificates, with or without clients[].auth)"
}

// suggestName turns s into a valid name.
func suggestName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 63 {
		out = strings.Trim(out[:63], "-")
	}
	if out == "" {
		out = "my-scenario"
	}
	return out
}

// sortErrors orders errors by position (unpositioned last), stable.
func sortErrors(es Errors) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if (a.Line == 0) != (b.Line == 0) {
			return a.Line != 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// auth checks a group's credentials: one kind, what it needs, and an Envoy-like client.
func (v *validator) auth(p string, c Client) {
	a := c.Auth
	switch {
	case a.MTLS && a.JWT:
		v.add(p, "keep mtls: true or jwt: true, not both", "choose one credential")
	case !a.Enabled():
		if a.CADir != "" || a.JWTKey != "" || a.Issuer != "" || a.Audience != "" || a.ServerName != "" {
			v.add(p, "add mtls: true or jwt: true, or remove auth", "auth settings without a credential")
		}
		return
	}
	if c.XDS == XDSGRPC {
		v.add(p, "remove auth from the xds: grpc group", "proxyless gRPC clients do not authenticate in the lab")
	}
	if a.JWT {
		for _, f := range []struct{ key, val string }{{"jwtKey", a.JWTKey}, {"issuer", a.Issuer}, {"audience", a.Audience}} {
			if f.val == "" {
				v.add(p+"."+f.key, "set it (see docs/security.md)", "jwt needs %s", f.key)
			}
		}
	} else if a.JWTKey != "" || a.Issuer != "" || a.Audience != "" {
		v.add(p, "remove jwtKey, issuer and audience, or use jwt: true", "jwt settings given for mtls")
	}
}

// namespaceCounts checks a client group's placement by namespace: every name a namespace of the
// topology, every count at least 1, their sum the group's count, and no namespaces spread too.
func (v *validator) namespaceCounts(p string, c Client, t Topology) {
	known := t.NamespaceNames()
	sum := 0
	for _, name := range slices.Sorted(maps.Keys(c.NamespaceCounts)) {
		n := c.NamespaceCounts[name]
		sum += n
		if !slices.Contains(known, name) {
			v.add(p+".namespaceCounts", suggest.Fix(name, known), "namespace %q is not one of the topology's", name)
		}
		if n < 1 {
			v.add(p+".namespaceCounts", "give each namespace at least 1 client, or leave it out", "namespace %q: count %d", name, n)
		}
	}
	if sum != c.Count {
		v.add(p+".namespaceCounts", fmt.Sprintf("make the counts add up to count (%d), or change count to %d", c.Count, sum), "the counts add up to %d, count is %d", sum, c.Count)
	}
	if c.Namespaces > 0 {
		v.add(p+".namespaces", "remove namespaces: namespaceCounts places the clients", "both namespaces and namespaceCounts given")
	}
}
