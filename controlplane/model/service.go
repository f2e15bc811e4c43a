package model

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdslab/xdslab/istioconfig"
)

// Protocol is an application protocol of a service port, as Istio infers it.
type Protocol string

// Protocols.
const (
	ProtocolHTTP  Protocol = "HTTP"
	ProtocolHTTP2 Protocol = "HTTP2"
	ProtocolGRPC  Protocol = "GRPC"
	// ProtocolGRPCWeb is gRPC-Web: gRPC upstream, with Envoy's grpc_web filter translating
	// browser requests.
	ProtocolGRPCWeb Protocol = "GRPC-WEB"
	// ProtocolUDP is a UDP port: Envoy proxies none, so nothing is generated for it.
	ProtocolUDP Protocol = "UDP"
	ProtocolTCP Protocol = "TCP"
	// ProtocolMongo is a TCP port whose tcp_proxy Envoy's mongo_proxy filter precedes (for
	// its statistics), as istiod builds it; everything else treats it as TCP.
	ProtocolMongo Protocol = "MONGO"
	// ProtocolMySQL is a TCP port (istiod's MySQL filter is off by default) that, as MONGO,
	// shares no listener with a port of another protocol (istiod keeps the first).
	ProtocolMySQL   Protocol = "MYSQL"
	ProtocolTLS     Protocol = "TLS"
	ProtocolHTTPS   Protocol = "HTTPS"
	ProtocolUnknown Protocol = "UNKNOWN"
)

// ParseProtocol maps a protocol name (case-insensitive, Istio's names) to a Protocol.
func ParseProtocol(s string) Protocol {
	switch strings.ToUpper(s) {
	case "HTTP":
		return ProtocolHTTP
	case "HTTP2":
		return ProtocolHTTP2
	case "GRPC":
		return ProtocolGRPC
	case "GRPC-WEB":
		return ProtocolGRPCWeb
	case "UDP":
		return ProtocolUDP
	case "TCP", "REDIS":
		// istiod's Redis filter is off by default: plain TCP.
		return ProtocolTCP
	case "MYSQL":
		return ProtocolMySQL
	case "MONGO":
		return ProtocolMongo
	case "TLS":
		return ProtocolTLS
	case "HTTPS":
		return ProtocolHTTPS
	}
	return ProtocolUnknown
}

// IsHTTP reports whether the protocol is served through an HTTP connection manager.
func (p Protocol) IsHTTP() bool {
	return p == ProtocolHTTP || p == ProtocolHTTP2 || p == ProtocolGRPC || p == ProtocolGRPCWeb
}

// IsHTTP2 reports whether upstream connections must speak HTTP/2.
func (p Protocol) IsHTTP2() bool {
	return p == ProtocolHTTP2 || p == ProtocolGRPC || p == ProtocolGRPCWeb
}

// Port is a service port.
type Port struct {
	Name     string
	Number   uint32
	Protocol Protocol
}

// Resolution says how a service's endpoints are found.
type Resolution int

// Resolutions.
const (
	// ResolutionStatic: endpoints are known to the control plane (EDS).
	ResolutionStatic Resolution = iota
	// ResolutionDNS: the proxy resolves the hostname.
	ResolutionDNS
	// ResolutionPassthrough: traffic goes to the original destination.
	ResolutionPassthrough
	// ResolutionDynamicDNS: a ServiceEntry's DYNAMIC_DNS: the proxy resolves the host the
	// request names (its Host header, or its TLS SNI) through a dynamic forward proxy, for
	// wildcard hosts (DynamicForwardProxy).
	ResolutionDynamicDNS
)

func (r Resolution) String() string {
	switch r {
	case ResolutionStatic:
		return "STATIC"
	case ResolutionDNS:
		return "DNS"
	case ResolutionPassthrough:
		return "PASSTHROUGH"
	case ResolutionDynamicDNS:
		return "DYNAMIC_DNS"
	}
	return fmt.Sprintf("Resolution(%d)", int(r))
}

// Service is a service known to the mesh. Services are immutable once published in a Snapshot.
type Service struct {
	// Hostname is the fully qualified name, e.g. svc-3.ns-1.svc.cluster.local.
	Hostname  string
	Namespace string
	// Addresses are the service's virtual IPs, if any.
	Addresses  []string
	Ports      []Port
	Resolution Resolution
	Labels     map[string]string
	// ServiceAccounts that run the service's workloads, sorted. A change forces a full push.
	ServiceAccounts []string
	// Source is the config that defined the service (a ServiceEntry), when there is one.
	Source istioconfig.Key
	// MeshExternal marks services outside the mesh.
	MeshExternal bool
	// DNSRoundRobin marks a ResolutionDNS service whose ServiceEntry says DNS_ROUND_ROBIN: the
	// proxy connects to one address its resolver returns for its one endpoint (Envoy's
	// LOGICAL_DNS) instead of balancing over all of them (STRICT_DNS).
	DNSRoundRobin bool
	// WorkloadSelector marks a ServiceEntry whose workloadSelector has a labels map, empty or
	// not (istiod's LabelSelectors are nil only without one): its endpoints are the
	// WorkloadEntries it picks (an empty map picks every one of its namespace), and with
	// resolution NONE and no address istiod builds no 0.0.0.0 listener for it when it picks
	// none (WildcardWithoutEndpoints). `workloadSelector: {}` picks them all too, but is no
	// WorkloadSelector here: it keeps the listener, as in istiod.
	WorkloadSelector bool
	// ExportTo is the namespaces the service is visible from (a ServiceEntry's exportTo:
	// "*", ".", "~" or namespace names); empty exports it everywhere (see ExportedTo).
	ExportTo []string
	// CreationTime is when the object that defines the service was created (a ServiceEntry's
	// or a Kubernetes Service's creationTimestamp): where istiod lets the first of several
	// services take something (a port's 0.0.0.0 listener), the oldest wins (CompareServices).
	CreationTime time.Time
	// TrafficDistribution is the service's preference for close endpoints; istiod then
	// balances its clusters by locality without a DestinationRule asking (gen/locality.go).
	TrafficDistribution TrafficDistribution
}

// public reports whether the service is exported to every namespace (an empty exportTo or
// "*"), as istiod indexes it: such services come after those exported by name.
func (s *Service) public() bool {
	return len(s.ExportTo) == 0 || slices.Contains(s.ExportTo, "*")
}

// registryName is the name istiod orders services of one creation time by: a Kubernetes
// Service's name, else (a ServiceEntry's) the host name.
func (s *Service) registryName() string {
	if s.Source.Kind == KindService {
		return s.Source.Name
	}
	return s.Hostname
}

// TrafficDistribution is a service's preference for endpoints close to the client, as istiod
// reads Kubernetes' spec.trafficDistribution or Istio's networking.istio.io/traffic-distribution
// annotation.
type TrafficDistribution int

// Traffic distributions.
const (
	// TrafficDistributionAny: no preference.
	TrafficDistributionAny TrafficDistribution = iota
	// TrafficDistributionPreferSameZone (PreferSameZone, or its older name PreferClose): the
	// same zone first, then the same region, then anywhere.
	TrafficDistributionPreferSameZone
	// TrafficDistributionPreferSameNode: the same node first, then subzone, zone, region.
	TrafficDistributionPreferSameNode
)

// AnnotationTrafficDistribution is Istio's annotation for a service's traffic distribution
// (a Service's or a ServiceEntry's; Kubernetes' spec.trafficDistribution comes first).
const AnnotationTrafficDistribution = "networking.istio.io/traffic-distribution"

// ParseTrafficDistribution returns the traffic distribution istiod takes from a Kubernetes
// Service's spec.trafficDistribution (field; "" when unset) and its annotation (annotation; ""
// when absent): a field value it knows wins; else the annotation, whose value is matched
// without regard to case and means no preference when unknown.
func ParseTrafficDistribution(field, annotation string) TrafficDistribution {
	switch field {
	case "PreferSameZone", "PreferClose":
		return TrafficDistributionPreferSameZone
	case "PreferSameNode":
		return TrafficDistributionPreferSameNode
	}
	switch strings.ToLower(annotation) {
	case "prefersamezone", "preferclose":
		return TrafficDistributionPreferSameZone
	case "prefersamenode":
		return TrafficDistributionPreferSameNode
	}
	return TrafficDistributionAny
}

// Port returns the port with the given number.
func (s *Service) Port(number uint32) (Port, bool) {
	for _, p := range s.Ports {
		if p.Number == number {
			return p, true
		}
	}
	return Port{}, false
}

// PortByName returns the port with the given name.
func (s *Service) PortByName(name string) (Port, bool) {
	for _, p := range s.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return Port{}, false
}

// EndpointsInCluster reports whether the service's endpoints are part of its cluster (CDS
// content) rather than its EDS assignment: a DNS-resolution service's STRICT_DNS/LOGICAL_DNS
// cluster inlines them, so a change to them is a full push, as in Istio. False for nil.
func (s *Service) EndpointsInCluster() bool { return s != nil && s.Resolution == ResolutionDNS }

// DynamicForwardProxy reports whether istiod serves s through a dynamic forward proxy: a
// wildcard host (*.example.com) of resolution DYNAMIC_DNS, whose HTTP, HTTP2, GRPC and TLS
// ports get a dynamic forward proxy cluster and filter instead of endpoints. False for nil.
func (s *Service) DynamicForwardProxy() bool {
	return s != nil && s.Resolution == ResolutionDynamicDNS && strings.HasPrefix(s.Hostname, "*")
}

// Headless reports whether s is a headless Kubernetes Service (clusterIP None: no address,
// passthrough): istiod gives each of its endpoints a listener of its own for the ports not
// served through HTTP, and its names wildcard domains. False for nil.
func (s *Service) Headless() bool {
	return s != nil && s.Source.Kind == KindService && s.Resolution == ResolutionPassthrough && len(s.Addresses) == 0
}

// ListenersPerEndpoint reports whether istiod builds, for each port of s not served through
// HTTP, a listener per endpoint ("IP_PORT") instead of the port's 0.0.0.0 listener: a
// passthrough service without an address (a headless Kubernetes Service, a ServiceEntry of
// resolution NONE without addresses), but for WildcardWithoutEndpoints. False for nil.
func (s *Service) ListenersPerEndpoint() bool {
	return s != nil && s.Resolution == ResolutionPassthrough && len(s.Addresses) == 0
}

// WildcardWithoutEndpoints reports whether a service with ListenersPerEndpoint keeps the port's
// 0.0.0.0 listener when the port has no endpoint at all, as istiod does for a ServiceEntry
// without a workloadSelector labels map (such a NONE entry has no endpoints: istiod's validation
// rejects inline ones); a Kubernetes Service or an entry whose selector picks nothing gets no
// listener for the port then. False for nil.
func (s *Service) WildcardWithoutEndpoints() bool {
	return s != nil && s.Source.Kind != KindService && !s.WorkloadSelector
}

// EndpointsInListeners reports whether the service's endpoints are part of its listeners (LDS
// content): a port not served through HTTP of a service with a listener per endpoint
// (ListenersPerEndpoint). As in istiod, a change to them is a full push. False for nil.
func (s *Service) EndpointsInListeners() bool {
	if !s.ListenersPerEndpoint() {
		return false
	}
	return slices.ContainsFunc(s.Ports, func(p Port) bool { return !p.Protocol.IsHTTP() })
}

// Equal reports whether two services are the same in every field a generator reads.
func (s *Service) Equal(o *Service) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Hostname == o.Hostname && s.Namespace == o.Namespace &&
		slices.Equal(s.Addresses, o.Addresses) && slices.Equal(s.Ports, o.Ports) &&
		s.Resolution == o.Resolution && mapsEqual(s.Labels, o.Labels) &&
		slices.Equal(s.ServiceAccounts, o.ServiceAccounts) && s.Source == o.Source &&
		s.MeshExternal == o.MeshExternal && s.DNSRoundRobin == o.DNSRoundRobin && s.WorkloadSelector == o.WorkloadSelector &&
		slices.Equal(s.ExportTo, o.ExportTo) &&
		s.CreationTime.Equal(o.CreationTime) && s.TrafficDistribution == o.TrafficDistribution
}

// ShortNames returns the names a client in namespace ns may use for the service: the hostname,
// and for cluster-local names "name", "name.ns", "name.ns.svc" (only "name" within ns).
func (s *Service) ShortNames(ns string) []string {
	out := []string{s.Hostname}
	const suffix = ".svc.cluster.local"
	if !strings.HasSuffix(s.Hostname, suffix) {
		return out
	}
	parts := strings.SplitN(strings.TrimSuffix(s.Hostname, suffix), ".", 2)
	if len(parts) != 2 {
		return out
	}
	name, sns := parts[0], parts[1]
	if sns == ns {
		out = append(out, name)
	}
	return append(out, name+"."+sns, name+"."+sns+".svc")
}

// HealthStatus is an endpoint's health.
type HealthStatus int

// Health statuses.
const (
	Healthy HealthStatus = iota
	Unhealthy
	Draining
)

// Locality is where an endpoint runs.
type Locality struct {
	Region, Zone, SubZone string
}

func (l Locality) String() string {
	return strings.TrimRight(l.Region+"/"+l.Zone+"/"+l.SubZone, "/")
}

// Endpoint is one workload instance of a service.
type Endpoint struct {
	// Service is the hostname of the service this endpoint belongs to.
	Service string
	// Address is an IP, a host name (resolution DNS) or a unix domain socket
	// (UnixAddressPrefix and a path or @abstract name; resolution STATIC, no port).
	Address string
	// Ports maps a service port name to the workload's target port. A service port with no
	// entry uses the service port number, unless OnlyListedPorts.
	Ports map[string]uint32
	// OnlyListedPorts says that Ports lists every service port the endpoint serves, as a
	// Kubernetes EndpointSlice does: the endpoint is in no assignment of a port it does not
	// list (istiod builds its endpoints per address and slice port).
	OnlyListedPorts bool
	Labels          map[string]string
	Locality        Locality
	Weight          uint32
	ServiceAccount  string
	Health          HealthStatus
	// Source is the config that defined the endpoint (a ServiceEntry or WorkloadEntry).
	Source istioconfig.Key
}

// UnixAddressPrefix starts an endpoint address that is a unix domain socket.
const UnixAddressPrefix = "unix://"

// TargetPort returns the workload port for the service port p.
func (e *Endpoint) TargetPort(p Port) uint32 {
	if tp, ok := e.Ports[p.Name]; ok && tp != 0 {
		return tp
	}
	return p.Number
}

// ServesPort returns the workload port for the service port p, and whether the endpoint
// serves p at all (with OnlyListedPorts, only the ports it lists).
func (e *Endpoint) ServesPort(p Port) (uint32, bool) {
	if _, ok := e.Ports[p.Name]; !ok && e.OnlyListedPorts {
		return 0, false
	}
	return e.TargetPort(p), true
}

// Equal reports whether two endpoints are the same in every field a generator reads.
func (e *Endpoint) Equal(o *Endpoint) bool {
	if e == nil || o == nil {
		return e == o
	}
	return e.Service == o.Service && e.Address == o.Address && mapsEqual(e.Ports, o.Ports) && e.OnlyListedPorts == o.OnlyListedPorts &&
		mapsEqual(e.Labels, o.Labels) && e.Locality == o.Locality && e.Weight == o.Weight &&
		e.ServiceAccount == o.ServiceAccount && e.Health == o.Health && e.Source == o.Source
}

// CompareEndpoints orders endpoints by address then by source, for deterministic output. The
// source is only formatted on an address tie (sorting is on the snapshot build path).
func CompareEndpoints(a, b *Endpoint) int {
	if c := strings.Compare(a.Address, b.Address); c != 0 {
		return c
	}
	if a.Source == b.Source {
		return 0
	}
	return strings.Compare(a.Source.String(), b.Source.String())
}

// LabelsMatch reports whether labels contains every key/value of selector.
func LabelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
