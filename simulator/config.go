package simulator

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/istioconfig"
)

// Config is everything the simulator needs. Field names mirror the scenario file's topology and
// churn sections; the scenario runner maps a scenario onto it.
type Config struct {
	// Seed makes every name, value and arrival time reproducible.
	Seed uint64
	// Duration is how long churn runs; events scheduled at or after it are not emitted.
	Duration time.Duration
	Topology Topology
	Churn    []Churn
	// MaxPredicates caps the predicates of one event's expectation (default 64). Events that
	// touch more endpoints than that keep their endpoint-count predicates and an evenly spaced
	// sample of the per-endpoint ones; the predicates left out go to the expectation's Rest
	// (probe.Expectation.Rest), which tells a matcher that a client moved past an earlier
	// event on their subjects.
	MaxPredicates int
}

// Topology describes the synthetic mesh.
type Topology struct {
	// Namespaces ns-0 … ns-(N-1); services are spread over them round-robin.
	Namespaces int
	// Services svc-0 … svc-(N-1), hosts svc-N.ns-M.svc.cluster.local.
	Services int
	// Protocols weighs the protocol of each port.
	Protocols Protocols
	// PortsPerService is drawn per service (at least 1, at most 16).
	PortsPerService dist.Spec
	// EndpointsPerService is drawn per service (at least 0).
	EndpointsPerService dist.Spec
	// Localities: each endpoint gets a uniformly drawn region/zone.
	Localities Localities
	// Versions v1 … vN: each endpoint gets a uniformly drawn version label (DestinationRule
	// subsets are by version).
	Versions int
	// ServiceAccountsPerNamespace sa-0 … sa-(N-1): each service runs as one of them.
	ServiceAccountsPerNamespace int
	// VirtualServices is the fraction of services with a VirtualService (weighted subset split
	// and a timeout on every HTTP/gRPC port). Services with one also get a DestinationRule.
	VirtualServices float64
	// DestinationRules is the fraction of services with a DestinationRule (subsets by version,
	// a simple lb policy, outlier detection).
	DestinationRules float64
	// SidecarScoping adds a Sidecar "default" per namespace whose egress imports the namespace
	// itself and SidecarImports others; events then reach only the importing namespaces, each
	// predicate only the namespaces that import its service (probe.Reach.PredicateNamespaces).
	SidecarScoping bool
	// SidecarImports is how many other namespaces each Sidecar imports (default 2).
	SidecarImports int
	// WorkloadEntries represents endpoints as one WorkloadEntry each, selected by the
	// ServiceEntry's workloadSelector, instead of inline ServiceEntry endpoints.
	WorkloadEntries bool
	// Gateways adds ingress Gateways and the VirtualServices bound to them (gateways.go).
	Gateways Gateways
	// AuthorizationPolicies adds namespace-wide AuthorizationPolicies (authz.go).
	AuthorizationPolicies AuthorizationPolicies
	// Mesh, when set, replaces the synthetic services with these services and adds these Istio
	// objects verbatim (xdslab import). Namespaces and Services are then taken from it; the
	// other synthetic knobs shape only the services a service-create adds.
	Mesh *Mesh
}

// Mesh is an explicit mesh: services with their ports and endpoint counts per locality, and
// Istio objects written as they are.
type Mesh struct {
	Services []MeshService
	// Config are written before the services (Sidecars, Gateways, VirtualServices, ...).
	Config []istioconfig.Config
}

// MeshService is one explicit service; its endpoints get addresses from 10.0.0.0/8 like the
// synthetic ones.
type MeshService struct {
	Name, Namespace, ServiceAccount string
	Ports                           []MeshPort
	Endpoints                       []MeshEndpoints
}

// MeshPort is a service port; Protocol is Istio's (HTTP, GRPC, TCP, TLS, ...) or ProtocolAuto.
type MeshPort struct {
	Number, TargetPort uint32
	Protocol, Name     string
}

// ProtocolAuto is the protocol of a MeshPort that names none: its ServiceEntry port has no
// protocol and its Kubernetes Service port no appProtocol, so that Istio selects the protocol
// (sniffs), as for a Service port named web or not named.
const ProtocolAuto = "auto"

// MeshEndpoints is Count endpoints with one locality and one set of labels.
type MeshEndpoints struct {
	Count    int
	Locality string
	Labels   map[string]string
}

// namespaces lists the mesh's namespaces, sorted.
func (m *Mesh) namespaces() []string {
	var out []string
	for _, s := range m.Services {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Gateways describes the simulated ingress: Count Gateways gw-0 … in GatewayNamespace, all
// selecting GatewaySelector (every router client carrying that label gets them all), each with
// an HTTP server on port 80 for hosts *.gw-N.example.com and, with TLSPassthrough, a TLS
// PASSTHROUGH server on 443. Each gateway exposes HostsPerGateway hosts h-J.gw-N.example.com,
// each bound by its own VirtualService (in the backend service's namespace) to one service
// with an HTTP port, drawn at random; with TLSPassthrough the VirtualService also routes SNI
// h-J.gw-N.example.com on 443 to the same service port.
type Gateways struct {
	Count           int
	HostsPerGateway int
	TLSPassthrough  bool
}

// Protocols are relative weights; they need not sum to 1.
type Protocols struct {
	HTTP, GRPC, TCP float64
}

// Localities is the region/zone grid.
type Localities struct {
	Regions, ZonesPerRegion int
}

// ChurnKind names a churn process.
type ChurnKind string

// The churn kinds.
const (
	// EndpointFlap removes one endpoint and re-adds it (same address) after Down.
	EndpointFlap ChurnKind = "endpoint-flap"
	// Scale adds or removes Delta endpoints (direction drawn 50/50) of Services services.
	Scale ChurnKind = "scale"
	// RollingDeploy replaces every endpoint of Services services with new addresses, one at a
	// time, evenly over Window.
	RollingDeploy ChurnKind = "rolling-deploy"
	// ServiceCreate creates Services new services with their endpoints and routing config.
	ServiceCreate ChurnKind = "service-create"
	// ServiceDelete deletes Services services and everything that belongs to them.
	ServiceDelete ChurnKind = "service-delete"
	// ConfigChange changes the VirtualService weights (Target virtualservice) or the
	// DestinationRule lb policy (Target destinationrule) of Services services, creating the
	// object when the service has none; Target gateway rotates the backends of Services (at
	// least 2) gateway hosts bound to distinct services (routers only; their clusters stay);
	// Target authz rewrites the rules of Services AuthorizationPolicies (sidecars of their
	// namespaces only).
	ConfigChange ChurnKind = "config-change"
	// ServiceAccountChange moves Services services to another service account: their endpoints
	// are re-created with new addresses, as a Kubernetes rollout would.
	ServiceAccountChange ChurnKind = "service-account-change"
	// ZoneFailure removes Fraction of one zone's endpoints at once; with Down > 0 they come
	// back after Down.
	ZoneFailure ChurnKind = "zone-failure"
	// Replay re-emits the events of a JSON-lines trace (the sinks.EventLog format) read from File.
	Replay ChurnKind = "replay"
)

var churnKinds = []ChurnKind{EndpointFlap, Scale, RollingDeploy, ServiceCreate, ServiceDelete,
	ConfigChange, ServiceAccountChange, ZoneFailure, Replay}

// Config-change targets.
const (
	TargetVirtualService  = "virtualservice"
	TargetDestinationRule = "destinationrule"
	// TargetGateway rotates the backends of gateway hosts (their gateway VirtualServices).
	TargetGateway = "gateway"
	// TargetAuthz rewrites AuthorizationPolicies (Topology.AuthorizationPolicies).
	TargetAuthz = "authz"
)

// Churn is one open-model arrival process. Exactly one of Rate, Every and At sets the timing
// (Replay takes its timing from the trace and sets none).
type Churn struct {
	Kind ChurnKind
	// Target of a config-change: virtualservice, destinationrule, gateway or authz.
	Target string
	// Rate is a Poisson arrival rate in events per second.
	Rate float64
	// Every is a fixed interval; the first arrival is at Start+Every.
	Every time.Duration
	// At lists absolute offsets from the start of churn.
	At []time.Duration
	// Start and Stop bound the process (Stop 0 means the end of the run).
	Start, Stop time.Duration
	// Services is how many services one event touches (default 1; scale, rolling-deploy,
	// service-create, service-delete, config-change, service-account-change).
	Services int
	// Window is the length of a rolling deploy (default 10s).
	Window time.Duration
	// Delta is the size of a scale step (default constant 1; at least 1).
	Delta dist.Spec
	// Fraction of the zone's endpoints a zone failure removes (default 0.5).
	Fraction float64
	// Down is how long a flapped endpoint stays away (default 1s), or how long a failed zone
	// stays down (default 0: it does not come back).
	Down time.Duration
	// File is the trace a replay reads.
	File string
}

// DefaultConfig returns a small, valid configuration: 10 namespaces, 100 services with about 8
// endpoints each, light endpoint churn for a minute.
func DefaultConfig() Config {
	return Config{
		Seed:     1,
		Duration: time.Minute,
		Topology: DefaultTopology(),
		Churn: []Churn{
			{Kind: EndpointFlap, Rate: 5, Down: time.Second},
		},
		MaxPredicates: 64,
	}
}

// DefaultTopology returns the topology defaults.
func DefaultTopology() Topology {
	return Topology{
		Namespaces:                  10,
		Services:                    100,
		Protocols:                   Protocols{HTTP: 0.6, GRPC: 0.2, TCP: 0.2},
		PortsPerService:             dist.Constant(1),
		EndpointsPerService:         dist.Spec{Dist: "lognormal", Median: 8, Sigma: 0.6},
		Localities:                  Localities{Regions: 2, ZonesPerRegion: 3},
		Versions:                    2,
		ServiceAccountsPerNamespace: 3,
		VirtualServices:             0.2,
		DestinationRules:            0.3,
		SidecarImports:              2,
	}
}

// withDefaults fills zero values that have a documented default.
func (c Config) withDefaults() Config {
	if c.MaxPredicates == 0 {
		c.MaxPredicates = 64
	}
	t := &c.Topology
	if t.Mesh != nil {
		t.Namespaces = max(len(t.Mesh.namespaces()), 1)
		t.Services = len(t.Mesh.Services)
	}
	if t.Protocols == (Protocols{}) {
		t.Protocols = Protocols{HTTP: 1}
	}
	if t.PortsPerService.Dist == "" && t.PortsPerService.Value == 0 {
		t.PortsPerService = dist.Constant(1)
	}
	if t.Localities.Regions == 0 {
		t.Localities.Regions = 1
	}
	if t.Localities.ZonesPerRegion == 0 {
		t.Localities.ZonesPerRegion = 1
	}
	if t.Versions == 0 {
		t.Versions = 1
	}
	if t.ServiceAccountsPerNamespace == 0 {
		t.ServiceAccountsPerNamespace = 1
	}
	if a := &t.AuthorizationPolicies; a.Allow == 0 && a.Deny == 0 {
		a.Allow, a.Deny = 0.7, 0.3
	}
	churn := make([]Churn, len(c.Churn))
	for i, ch := range c.Churn {
		if ch.Services == 0 {
			ch.Services = 1
		}
		if ch.Kind == RollingDeploy && ch.Window == 0 {
			ch.Window = 10 * time.Second
		}
		if ch.Kind == Scale && ch.Delta.Dist == "" && ch.Delta.Value == 0 {
			ch.Delta = dist.Constant(1)
		}
		if ch.Kind == ZoneFailure && ch.Fraction == 0 {
			ch.Fraction = 0.5
		}
		if ch.Kind == EndpointFlap && ch.Down == 0 {
			ch.Down = time.Second
		}
		churn[i] = ch
	}
	c.Churn = churn
	return c
}

// Validate reports every problem with the configuration (after defaults), each naming the field
// and the fix.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Duration <= 0 {
		bad("duration must be > 0, got %v", c.Duration)
	}
	if c.MaxPredicates < 1 {
		bad("maxPredicates must be >= 1, got %d", c.MaxPredicates)
	}
	t := c.Topology
	if t.Namespaces < 1 || t.Namespaces > 100_000 {
		bad("topology.namespaces must be in 1..100000, got %d", t.Namespaces)
	}
	if t.Services < 0 || t.Services > 1_000_000 {
		bad("topology.services must be in 0..1000000, got %d", t.Services)
	}
	p := t.Protocols
	if p.HTTP < 0 || p.GRPC < 0 || p.TCP < 0 || p.HTTP+p.GRPC+p.TCP <= 0 {
		bad("topology.protocols: weights must be >= 0 with a positive sum, got http %g grpc %g tcp %g", p.HTTP, p.GRPC, p.TCP)
	}
	if err := t.PortsPerService.Validate(); err != nil {
		bad("topology.portsPerService: %w", err)
	}
	if err := t.EndpointsPerService.Validate(); err != nil {
		bad("topology.endpointsPerService: %w", err)
	}
	if t.Localities.Regions < 1 || t.Localities.ZonesPerRegion < 1 {
		bad("topology.localities: regions and zonesPerRegion must be >= 1, got %d and %d", t.Localities.Regions, t.Localities.ZonesPerRegion)
	}
	if t.Versions < 1 || t.Versions > 100 {
		bad("topology.versions must be in 1..100, got %d", t.Versions)
	}
	if t.ServiceAccountsPerNamespace < 1 {
		bad("topology.serviceAccountsPerNamespace must be >= 1, got %d", t.ServiceAccountsPerNamespace)
	}
	if t.VirtualServices < 0 || t.VirtualServices > 1 {
		bad("topology.virtualServices is a fraction in [0,1], got %g", t.VirtualServices)
	}
	if t.DestinationRules < 0 || t.DestinationRules > 1 {
		bad("topology.destinationRules is a fraction in [0,1], got %g", t.DestinationRules)
	}
	if t.SidecarImports < 0 {
		bad("topology.sidecarImports must be >= 0, got %d", t.SidecarImports)
	}
	if g := t.Gateways; g.Count < 0 || g.Count > 1000 || g.HostsPerGateway < 0 || g.HostsPerGateway > 10_000 {
		bad("topology.gateways: count must be in 0..1000 and hostsPerGateway in 0..10000, got %d and %d", g.Count, g.HostsPerGateway)
	}
	if t.Gateways.Count > 0 && t.Gateways.HostsPerGateway > 0 && t.Protocols.HTTP+t.Protocols.GRPC <= 0 {
		bad("topology.gateways: gateway hosts route to services with HTTP or gRPC ports: give topology.protocols.http or grpc a weight")
	}
	if a := t.AuthorizationPolicies; a.PerNamespace < 0 || a.PerNamespace > 1000 || a.Allow < 0 || a.Deny < 0 || a.Allow+a.Deny <= 0 {
		bad("topology.authorizationPolicies: perNamespace must be in 0..1000 and allow, deny weights >= 0 with a positive sum, got %d, %g, %g", a.PerNamespace, a.Allow, a.Deny)
	}
	if t.Mesh != nil {
		errs = append(errs, t.Mesh.validate(t)...)
	}
	for i, ch := range c.Churn {
		if err := ch.validate(t); err != nil {
			bad("churn[%d] (%s): %w", i, ch.Kind, err)
		}
	}
	if n := c.expectedEvents(); n > MaxScheduledEvents {
		bad("churn schedules about %.3g events over the run (rate × duration, or duration / every); at most %d: lower a rate, raise an every or shorten the duration", n, MaxScheduledEvents)
	}
	return errors.Join(errs...)
}

// MaxScheduledEvents bounds the events a configuration's churn schedules: a rate of 1e9/s for
// 3 s made the runner spin through billions of events, deaf to its context, and no fleet
// could measure them. Ten hours at 100 events/s fit.
const MaxScheduledEvents = 5_000_000

// expectedEvents is how many events the churn schedules, in expectation: rate × window for
// Poisson arrivals, window / every for periodic ones, the offsets for at (a replay's trace is
// read, not counted).
func (c Config) expectedEvents() float64 {
	total := 0.0
	for _, ch := range c.Churn {
		end := c.Duration
		if ch.Stop > 0 && ch.Stop < end {
			end = ch.Stop
		}
		window := (end - ch.Start).Seconds()
		if window <= 0 {
			continue
		}
		switch {
		case ch.Rate > 0:
			total += ch.Rate * window
		case ch.Every > 0:
			total += window / ch.Every.Seconds()
		default:
			total += float64(len(ch.At))
		}
	}
	return total
}

func (ch Churn) validate(t Topology) error {
	known := false
	for _, k := range churnKinds {
		known = known || k == ch.Kind
	}
	if !known {
		return fmt.Errorf("unknown kind %q: use one of %v", ch.Kind, churnKinds)
	}
	timings := 0
	if ch.Rate != 0 {
		timings++
	}
	if ch.Every != 0 {
		timings++
	}
	if len(ch.At) > 0 {
		timings++
	}
	if ch.Kind == Replay {
		if timings != 0 {
			return errors.New("replay takes its timing from the trace: remove rate/every/at")
		}
		if ch.File == "" {
			return errors.New("replay needs file: the JSON-lines trace to re-emit")
		}
	} else if timings != 1 {
		return errors.New("set exactly one of rate (events/s), every (interval) or at (offsets)")
	}
	if ch.Rate < 0 {
		return fmt.Errorf("rate must be > 0 events/s, got %g", ch.Rate)
	}
	if ch.Every < 0 {
		return fmt.Errorf("every must be > 0, got %v", ch.Every)
	}
	for _, a := range ch.At {
		if a < 0 {
			return fmt.Errorf("at offsets must be >= 0, got %v", a)
		}
	}
	if ch.Start < 0 || ch.Stop < 0 || (ch.Stop != 0 && ch.Stop <= ch.Start) {
		return fmt.Errorf("need 0 <= start < stop (stop 0 = end of run), got start %v stop %v", ch.Start, ch.Stop)
	}
	if ch.Services < 1 || ch.Services > 100_000 {
		return fmt.Errorf("services must be in 1..100000, got %d", ch.Services)
	}
	if ch.Down < 0 {
		return fmt.Errorf("down must be >= 0, got %v", ch.Down)
	}
	switch ch.Kind {
	case ConfigChange:
		if t.Mesh != nil && ch.Target != TargetAuthz {
			return errors.New("topology.mesh keeps its Istio objects as written: remove config-change (target authz, which rewrites the simulated AuthorizationPolicies, is allowed)")
		}
		if ch.Target != TargetVirtualService && ch.Target != TargetDestinationRule && ch.Target != TargetGateway && ch.Target != TargetAuthz {
			return fmt.Errorf("target must be %q, %q, %q or %q, got %q", TargetVirtualService, TargetDestinationRule, TargetGateway, TargetAuthz, ch.Target)
		}
		if ch.Target == TargetAuthz && t.AuthorizationPolicies.PerNamespace == 0 {
			return errors.New("target authz needs AuthorizationPolicies: set topology.authorizationPolicies.perNamespace")
		}
		if ch.Target == TargetGateway && (t.Gateways.Count == 0 || t.Gateways.HostsPerGateway == 0) {
			return errors.New("target gateway needs gateway hosts: set topology.gateways.count and hostsPerGateway")
		}
		if ch.Target == TargetVirtualService && t.Protocols.HTTP+t.Protocols.GRPC <= 0 {
			return errors.New("target virtualservice needs HTTP or gRPC ports: give topology.protocols.http or grpc a weight")
		}
	case RollingDeploy:
		if ch.Window <= 0 {
			return fmt.Errorf("window must be > 0, got %v", ch.Window)
		}
	case Scale:
		if err := ch.Delta.Validate(); err != nil {
			return fmt.Errorf("delta: %w", err)
		}
	case ZoneFailure:
		if ch.Fraction <= 0 || ch.Fraction > 1 {
			return fmt.Errorf("fraction must be in (0,1], got %g", ch.Fraction)
		}
	case ServiceAccountChange:
		if t.ServiceAccountsPerNamespace < 2 {
			return errors.New("needs topology.serviceAccountsPerNamespace >= 2 (an account to change to)")
		}
	}
	if ch.Target != "" && ch.Kind != ConfigChange {
		return errors.New("target applies only to config-change")
	}
	if ch.File != "" && ch.Kind != Replay {
		return errors.New("file applies only to replay")
	}
	return nil
}

func (m *Mesh) validate(t Topology) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if t.SidecarScoping || t.Gateways.Count > 0 || t.WorkloadEntries {
		bad("topology.mesh brings its own Sidecars, Gateways and endpoints: turn off sidecarScoping, gateways and workloadEntries")
	}
	seen := map[string]bool{}
	total := 0
	for i, s := range m.Services {
		if s.Name == "" || s.Namespace == "" {
			bad("topology.mesh.services[%d]: name and namespace are required", i)
		}
		if seen[s.Namespace+"/"+s.Name] {
			bad("topology.mesh.services[%d]: service %s/%s given twice", i, s.Namespace, s.Name)
		}
		seen[s.Namespace+"/"+s.Name] = true
		if len(s.Ports) == 0 || len(s.Ports) > 64 {
			bad("topology.mesh.services[%d]: give 1 to 64 ports, got %d", i, len(s.Ports))
		}
		for _, p := range s.Ports {
			if p.Number == 0 || p.Number > 65535 || p.Protocol == "" {
				bad("topology.mesh.services[%d]: port %d: number 1..65535 and a protocol are required", i, p.Number)
			}
		}
		for _, g := range s.Endpoints {
			if g.Count < 0 {
				bad("topology.mesh.services[%d]: endpoint count %d must be >= 0", i, g.Count)
			}
			total += max(g.Count, 0)
		}
	}
	if total > maxAddresses {
		bad("topology.mesh: %d endpoints exceed the %d addresses of 10.0.0.0/8", total, maxAddresses)
	}
	return errs
}
