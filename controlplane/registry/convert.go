package registry

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Istio's topology label that carries an endpoint's network (model.Endpoint has no field for
// it; Istio adds the same label to workload labels).
const LabelTopologyNetwork = "topology.istio.io/network"

// DefaultTrustDomain is the SPIFFE trust domain of service accounts when none is configured.
const DefaultTrustDomain = "cluster.local"

// ConvertOptions configures ConvertServiceEntry.
type ConvertOptions struct {
	// TrustDomain of the SPIFFE ids built from workload service accounts
	// (spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/NAME). Empty means DefaultTrustDomain.
	TrustDomain string
}

// Converted is what one ServiceEntry becomes.
type Converted struct {
	// Services has one Service per host, in the order of spec.hosts.
	Services []*model.Service
	// Endpoints by host. Every host of the entry has the same endpoints.
	Endpoints map[string][]*model.Endpoint
}

// SpiffeID returns the SPIFFE identity Istio gives a service account.
func SpiffeID(trustDomain, namespace, serviceAccount string) string {
	if trustDomain == "" {
		trustDomain = DefaultTrustDomain
	}
	return "spiffe://" + trustDomain + "/ns/" + namespace + "/sa/" + serviceAccount
}

// ConvertServiceEntry converts the ServiceEntry se into Services and Endpoints. workloads are
// WorkloadEntry configs; those in se's namespace whose labels match se's workloadSelector
// become endpoints (the others are ignored, so callers may pass every WorkloadEntry).
//
// An invalid entry (no hosts, a bad or duplicate port, both endpoints and a workloadSelector,
// an endpoint without an address) is rejected as a whole with an error that says what to fix.
func ConvertServiceEntry(se *istioconfig.Config, workloads []*istioconfig.Config, opts ConvertOptions) (Converted, error) {
	spec, ok := se.Spec.(*networking.ServiceEntry)
	if !ok || spec == nil {
		return Converted{}, fmt.Errorf("%s: spec is %T, want a ServiceEntry", se.Key(), se.Spec)
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{se.Key()}, args...)...))
	}
	if len(spec.GetHosts()) == 0 {
		fail("spec.hosts is empty: list at least one host name")
	}
	seenHost := map[string]bool{}
	for i, h := range spec.GetHosts() {
		switch {
		case h == "":
			fail("spec.hosts[%d] is empty: give a host name such as api.example.com", i)
		case seenHost[h]:
			fail("spec.hosts[%d] %q is listed twice: list each host once", i, h)
		}
		seenHost[h] = true
	}
	plist, targets := convertPorts(spec.GetPorts(), fail)
	ports := portSet{ports: plist, targets: targets}
	if len(spec.GetEndpoints()) > 0 && spec.GetWorkloadSelector() != nil {
		fail("both spec.endpoints and spec.workloadSelector are set: use one of them")
	}
	resolution := convertResolution(spec.GetResolution())
	key := se.Key()

	// Endpoints (with their ports resolved) are the same for every host; Service is filled in
	// per host below.
	var eps []*model.Endpoint
	for i, we := range spec.GetEndpoints() {
		if we.GetAddress() == "" {
			fail("spec.endpoints[%d].address is empty: give an IP address or, with resolution DNS, a host name", i)
			continue
		}
		if strings.HasPrefix(we.GetAddress(), model.UnixAddressPrefix) {
			if msg := unixEndpointError(we, spec); msg != "" {
				fail("spec.endpoints[%d]: %s", i, msg)
				continue
			}
		}
		ep, err := convertWorkload(we, we.GetLabels(), se.Namespace, key, ports, true, opts)
		if err != nil {
			fail("spec.endpoints[%d]: %v", i, err)
			continue
		}
		eps = append(eps, ep)
	}
	if sel := spec.GetWorkloadSelector(); sel != nil {
		for _, w := range workloads {
			wspec, ok := w.Spec.(*networking.WorkloadEntry)
			if !ok || w.Kind != istioconfig.KindWorkloadEntry || w.Namespace != se.Namespace {
				continue
			}
			if !model.LabelsMatch(sel.GetLabels(), workloadLabels(w, wspec)) || wspec.GetAddress() == "" {
				continue
			}
			if _, err := netip.ParseAddr(wspec.GetAddress()); err != nil && resolution != model.ResolutionDNS {
				// A host name or unix socket is an endpoint of DNS entries only: istiod's
				// other entries do not select such a WorkloadEntry.
				continue
			}
			// A bad WorkloadEntry must not take the whole ServiceEntry down: skip it.
			if ep, err := convertWorkload(wspec, workloadLabels(w, wspec), w.Namespace, w.Key(), ports, false, opts); err == nil {
				eps = append(eps, ep)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Converted{}, err
	}

	sas := slices.Clone(spec.GetSubjectAltNames())
	for _, ep := range eps {
		if ep.ServiceAccount != "" {
			sas = append(sas, ep.ServiceAccount)
		}
	}
	slices.Sort(sas)
	sas = slices.Compact(sas)
	if len(sas) == 0 {
		sas = nil
	}

	dnsHostEndpoints := len(spec.GetEndpoints()) == 0 && spec.GetWorkloadSelector() == nil && resolution == model.ResolutionDNS
	out := Converted{Endpoints: make(map[string][]*model.Endpoint, len(spec.GetHosts()))}
	for _, host := range spec.GetHosts() {
		svc := &model.Service{
			Hostname:        host,
			Namespace:       se.Namespace,
			Addresses:       cloneOrNil(spec.GetAddresses()),
			Ports:           plist,
			Resolution:      resolution,
			Labels:          maps.Clone(se.Labels),
			ServiceAccounts: sas,
			Source:          key,
			MeshExternal:    spec.GetLocation() == networking.ServiceEntry_MESH_EXTERNAL,
			DNSRoundRobin:   spec.GetResolution() == networking.ServiceEntry_DNS_ROUND_ROBIN,
			// istiod's LabelSelectors, nil only without a labels map: `labels: {}` is a
			// selector (of every WorkloadEntry of the namespace), `workloadSelector: {}` none.
			WorkloadSelector: spec.GetWorkloadSelector().GetLabels() != nil,
			ExportTo:         cloneOrNil(spec.GetExportTo()),
			CreationTime:     se.CreationTimestamp,
			// A ServiceEntry has no such field: istiod reads the annotation only.
			TrafficDistribution: model.ParseTrafficDistribution("", se.Annotations[model.AnnotationTrafficDistribution]),
		}
		out.Services = append(out.Services, svc)
		var hostEps []*model.Endpoint
		switch {
		case dnsHostEndpoints:
			// Istio resolves a DNS entry without endpoints through its own host names: the host
			// is the endpoint.
			hostEps = []*model.Endpoint{{Service: host, Address: host, Ports: targetPorts(nil, ports), Source: key}}
		default:
			hostEps = make([]*model.Endpoint, 0, len(eps))
			for _, ep := range eps {
				c := *ep
				c.Service = host
				hostEps = append(hostEps, &c)
			}
		}
		slices.SortFunc(hostEps, model.CompareEndpoints)
		if len(hostEps) > 0 {
			out.Endpoints[host] = hostEps
		}
	}
	return out, nil
}

// unixEndpointError checks an inline unix domain socket endpoint by istiod's rules: resolution
// STATIC, an absolute socket path (or an @abstract name), no ports, and exactly one service port.
func unixEndpointError(we *networking.WorkloadEntry, spec *networking.ServiceEntry) string {
	addr := we.GetAddress()
	path := strings.TrimPrefix(addr, model.UnixAddressPrefix)
	switch {
	case spec.GetResolution() != networking.ServiceEntry_STATIC:
		return fmt.Sprintf("address %q is a unix domain socket, which only resolution STATIC takes", addr)
	case path == "":
		return fmt.Sprintf("address %q has no socket path: write unix:///path/to/socket", addr)
	case !strings.HasPrefix(path, "@") && (!strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/")):
		return fmt.Sprintf("address %q is not an absolute path to a socket file: write unix:///path/to/socket", addr)
	case len(we.GetPorts()) > 0:
		return "a unix domain socket endpoint has no ports: remove them"
	case len(spec.GetPorts()) != 1:
		return fmt.Sprintf("a ServiceEntry with unix domain socket endpoints needs exactly one port, not %d", len(spec.GetPorts()))
	}
	return ""
}

func cloneOrNil[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// convertPorts converts spec ports; the protocol comes from port.protocol only, as istiod reads
// a ServiceEntry (the name prefix counts for Kubernetes Services, not here): a port without one
// is UNKNOWN, and the proxy sniffs it. It also returns each port's targetPort by port name
// (model.Port has no target port: it lives in Endpoint.Ports).
func convertPorts(in []*networking.ServicePort, fail func(string, ...any)) ([]model.Port, map[string]uint32) {
	out := make([]model.Port, 0, len(in))
	var targets map[string]uint32
	seenNum := map[uint32]bool{}
	seenName := map[string]bool{}
	for i, p := range in {
		switch {
		case p.GetNumber() == 0 || p.GetNumber() > 65535:
			fail("spec.ports[%d].number is %d: use 1-65535", i, p.GetNumber())
			continue
		case p.GetName() == "":
			fail("spec.ports[%d].name is empty: name every port, e.g. http-%d", i, p.GetNumber())
			continue
		case seenNum[p.GetNumber()]:
			fail("spec.ports[%d].number %d is listed twice: list each port number once", i, p.GetNumber())
			continue
		case seenName[p.GetName()]:
			fail("spec.ports[%d].name %q is listed twice: port names must be unique", i, p.GetName())
			continue
		case p.GetTargetPort() > 65535:
			fail("spec.ports[%d].targetPort is %d: use 1-65535", i, p.GetTargetPort())
			continue
		}
		seenNum[p.GetNumber()], seenName[p.GetName()] = true, true
		out = append(out, model.Port{Name: p.GetName(), Number: p.GetNumber(), Protocol: model.ParseProtocol(p.GetProtocol())})
		if p.GetTargetPort() != 0 {
			if targets == nil {
				targets = map[string]uint32{}
			}
			targets[p.GetName()] = p.GetTargetPort()
		}
	}
	return out, targets
}

func convertResolution(r networking.ServiceEntry_Resolution) model.Resolution {
	switch r {
	case networking.ServiceEntry_STATIC:
		return model.ResolutionStatic
	case networking.ServiceEntry_DNS, networking.ServiceEntry_DNS_ROUND_ROBIN:
		return model.ResolutionDNS
	case networking.ServiceEntry_DYNAMIC_DNS:
		return model.ResolutionDynamicDNS
	}
	return model.ResolutionPassthrough // NONE
}

// workloadLabels are a WorkloadEntry's labels as istiod reads them: its spec labels with its
// metadata labels over them. A workloadSelector matches these, and they are the labels of its
// endpoints (and so of a proxy at its address).
func workloadLabels(c *istioconfig.Config, spec *networking.WorkloadEntry) map[string]string {
	if len(c.Labels) == 0 {
		return spec.GetLabels()
	}
	if len(spec.GetLabels()) == 0 {
		return c.Labels
	}
	m := maps.Clone(spec.GetLabels())
	maps.Copy(m, c.Labels)
	return m
}

// convertWorkload builds the endpoint of one workload (an inline endpoint or a WorkloadEntry)
// with labels (its spec's, or a WorkloadEntry's workloadLabels). Service is left empty: the
// caller sets it per host.
// Inline endpoints must only name ports of the entry (Istio's validation); a WorkloadEntry may be
// selected by several entries with different ports, so its other port names are ignored.
func convertWorkload(we *networking.WorkloadEntry, labels map[string]string, namespace string, source istioconfig.Key, ports portSet, inline bool, opts ConvertOptions) (*model.Endpoint, error) {
	loc, err := parseLocality(we.GetLocality())
	if err != nil {
		return nil, err
	}
	if we.GetLocality() == "" {
		// As istiod: the locality label's (topology.istio.io/locality or istio-locality).
		loc, _ = model.LocalityFromLabel(labels)
	}
	for name := range we.GetPorts() {
		if _, ok := ports.byName(name); !ok && inline {
			return nil, fmt.Errorf("ports names %q, which is not a port of the ServiceEntry (%s): use one of the spec.ports names", name, ports.names())
		}
	}
	ep := &model.Endpoint{
		Address: we.GetAddress(),
		Ports:   targetPorts(we.GetPorts(), ports),
		// With the topology labels istiod's registry adds: a selector (a PeerAuthentication
		// over the endpoint, a subset, failoverPriority) reads them.
		Labels:   model.RegistryLabels(labels, loc, "", we.GetNetwork()),
		Locality: loc,
		Weight:   we.GetWeight(),
		Source:   source,
	}
	if sa := we.GetServiceAccount(); sa != "" {
		ep.ServiceAccount = SpiffeID(opts.TrustDomain, namespace, sa)
	}
	return ep, nil
}

// portSet is a ServiceEntry's ports with their target ports.
type portSet struct {
	ports   []model.Port
	targets map[string]uint32
}

func (ps portSet) byName(name string) (model.Port, bool) {
	for _, p := range ps.ports {
		if p.Name == name {
			return p, true
		}
	}
	return model.Port{}, false
}

func (ps portSet) names() string {
	var out []string
	for _, p := range ps.ports {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}

// targetPorts maps each service port name to the workload port: the workload's own port for
// that name, else the service port's targetPort; ports that map to their own number are left
// out (Endpoint.TargetPort falls back to the service port).
func targetPorts(workload map[string]uint32, ps portSet) map[string]uint32 {
	var out map[string]uint32
	for _, p := range ps.ports {
		tp := workload[p.Name]
		if tp == 0 {
			tp = ps.targets[p.Name]
		}
		if tp == 0 || tp == p.Number {
			continue
		}
		if out == nil {
			out = make(map[string]uint32, len(ps.ports))
		}
		out[p.Name] = tp
	}
	return out
}

// parseLocality parses Istio's "region/zone/subzone" (each part optional from the right).
func parseLocality(s string) (model.Locality, error) {
	if s == "" {
		return model.Locality{}, nil
	}
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return model.Locality{}, fmt.Errorf("locality %q has %d parts: write region/zone/subzone", s, len(parts))
	}
	parts = append(parts, "", "")
	return model.Locality{Region: parts[0], Zone: parts[1], SubZone: parts[2]}, nil
}
