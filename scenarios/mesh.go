package scenarios

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/istioconfig"
)

// Mesh is an explicit mesh: these services, with these ports and these endpoint counts per
// locality, and these Istio objects verbatim. `xdslab import` writes one from a cluster dump.
// When topology.mesh is set it replaces the synthetic services: topology.services and
// topology.namespaces are set from it, and the synthetic knobs (protocols, portsPerService,
// endpointsPerService, localities, versions, virtualServices, destinationRules) apply only to
// services a service-create churn adds.
type Mesh struct {
	Services []MeshService `yaml:"services" json:"services" doc:"The services, each written as a cluster-local ServiceEntry (NAME.NAMESPACE.svc.cluster.local, MESH_INTERNAL, STATIC) with its endpoints inline, as the simulator writes its synthetic ones."`
	Config   string        `yaml:"config,omitempty" json:"config,omitempty" doc:"Istio objects written verbatim before the run, as YAML documents separated by --- (what kubectl apply takes): VirtualService, DestinationRule, Gateway, Sidecar, ServiceEntry, WorkloadEntry (networking.istio.io), PeerAuthentication, AuthorizationPolicy and RequestAuthentication (security.istio.io). Checked with the control plane's own decoder (strict fields, istiod's validation rules); an error names the scenario file's line."`
}

// MeshService is one service of an explicit mesh.
type MeshService struct {
	Name           string          `yaml:"name" json:"name" doc:"Service name (a DNS label: lower-case letters, digits and '-')."`
	Namespace      string          `yaml:"namespace" json:"namespace" doc:"Namespace (a DNS label)."`
	ServiceAccount string          `yaml:"serviceAccount,omitempty" json:"serviceAccount,omitempty" doc:"Service account of its endpoints." def:"default"`
	Ports          []MeshPort      `yaml:"ports" json:"ports" doc:"Ports, at least one."`
	Endpoints      []MeshEndpoints `yaml:"endpoints,omitempty" json:"endpoints,omitempty" doc:"Endpoint groups: count endpoints each, with a locality and labels; none gives a service without endpoints."`
}

// MeshPort is one port of a MeshService.
type MeshPort struct {
	Number     int    `yaml:"number" json:"number" doc:"Port number (1..65535), unique within the service."`
	Protocol   string `yaml:"protocol" json:"protocol" doc:"Istio protocol: HTTP, HTTP2, HTTPS, GRPC, GRPC-Web, TCP, TLS, Mongo, MySQL, Redis or UDP (any case); auto for a port that names none, whose protocol Istio selects automatically (sniffs), as for a Kubernetes Service port named web or not named."`
	Name       string `yaml:"name,omitempty" json:"name,omitempty" doc:"Port name." def:"PROTOCOL-NUMBER, lower case; port-NUMBER for auto"`
	TargetPort int    `yaml:"targetPort,omitempty" json:"targetPort,omitempty" doc:"Port of the endpoints." def:"number"`
}

// MeshEndpoints is a group of identical endpoints (they differ only in address).
type MeshEndpoints struct {
	Count    int               `yaml:"count" json:"count" doc:"Endpoints in the group."`
	Locality string            `yaml:"locality,omitempty" json:"locality,omitempty" doc:"Istio locality region/zone/subzone (an empty region is written /zone)." def:"\"\" (none)"`
	Labels   map[string]string `yaml:"labels,omitempty" json:"labels,omitempty" doc:"Workload labels of the endpoints (DestinationRule subsets select on them)." def:"{}"`
}

// ProtocolAuto is the MeshPort protocol of a port that names none: Istio selects its protocol
// automatically (sniffs). Its ServiceEntry port has no protocol, its Kubernetes Service port no
// appProtocol and a name that names none.
const ProtocolAuto = "auto"

// meshProtocols are the Istio port protocols a MeshPort may name, as Istio spells them, and
// ProtocolAuto.
var meshProtocols = append(istioconfig.ProtocolNames(), ProtocolAuto)

// DefaultPortName is the name of a port of protocol (as CanonicalProtocol spells it) that has
// none: PROTOCOL-NUMBER in lower case, port-NUMBER for ProtocolAuto (a name Istio reads no
// protocol from).
func DefaultPortName(protocol string, number int) string {
	if protocol == ProtocolAuto {
		return fmt.Sprintf("port-%d", number)
	}
	return fmt.Sprintf("%s-%d", strings.ToLower(protocol), number)
}

// CanonicalProtocol returns Istio's spelling of a port protocol (case-insensitive), or false.
func CanonicalProtocol(p string) (string, bool) {
	for _, c := range meshProtocols {
		if strings.EqualFold(c, p) {
			return c, true
		}
	}
	return "", false
}

// MeshConfigFile names the config of topology.mesh in the errors of Objects.
const MeshConfigFile = "topology.mesh.config"

// Objects decodes the mesh's config with the control plane's decoder. It returns the objects
// of the documents that decode; Validate reports the others, with their lines.
func (m *Mesh) Objects() []*istioconfig.Config {
	if m == nil || strings.TrimSpace(m.Config) == "" {
		return nil
	}
	res, _ := config.Decoder{}.DecodeAll(MeshConfigFile, []byte(m.Config))
	return res.Configs
}

// NamespaceNames lists the topology's namespaces: topology.mesh's, or ns-0 … ns-(N-1).
func (t Topology) NamespaceNames() []string {
	if t.Mesh != nil {
		return t.Mesh.Namespaces()
	}
	out := make([]string, t.Namespaces)
	for i := range out {
		out[i] = fmt.Sprintf("ns-%d", i)
	}
	return out
}

// Namespaces lists the namespaces of the mesh's services, sorted.
func (m *Mesh) Namespaces() []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, s := range m.Services {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Endpoints is the number of endpoints of the mesh's services.
func (m *Mesh) Endpoints() int {
	n := 0
	if m == nil {
		return 0
	}
	for _, s := range m.Services {
		for _, g := range s.Endpoints {
			n += g.Count
		}
	}
	return n
}

// complete fills the mesh's defaults and sets the topology's counts from it.
func (t *Topology) completeMesh() {
	m := t.Mesh
	if m == nil {
		return
	}
	if len(m.Services) == 0 {
		m.Services = nil // "services: []" and none are one mesh (a round trip prints the former)
	}
	t.Services = len(m.Services)
	t.Namespaces = max(len(m.Namespaces()), 1)
	for i := range m.Services {
		s := &m.Services[i]
		if s.ServiceAccount == "" {
			s.ServiceAccount = "default"
		}
		for j := range s.Ports {
			p := &s.Ports[j]
			if c, ok := CanonicalProtocol(p.Protocol); ok {
				p.Protocol = c
			}
			if p.Name == "" && p.Protocol != "" {
				p.Name = DefaultPortName(p.Protocol, p.Number)
			}
			if p.TargetPort == 0 {
				p.TargetPort = p.Number
			}
		}
		for j := range s.Endpoints {
			if len(s.Endpoints[j].Labels) == 0 {
				s.Endpoints[j].Labels = nil
			}
		}
	}
}

var (
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
	portNameRE     = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$`)
)

const maxMeshEndpoints = 1_000_000

func (v *validator) mesh() {
	t := v.s.Topology
	m := t.Mesh
	if m == nil {
		return
	}
	const p = "topology.mesh"
	if t.SidecarScoping {
		v.add("topology.sidecarScoping", "remove it: write the mesh's Sidecars in topology.mesh.config", "sidecarScoping synthesizes Sidecars, and topology.mesh brings its own")
	}
	if t.Gateways.Count > 0 {
		v.add("topology.gateways", "remove it: write the mesh's Gateways in topology.mesh.config", "gateways are synthetic, and topology.mesh brings its own")
	}
	if t.WorkloadEntries {
		v.add("topology.workloadEntries", "remove it: the services of topology.mesh carry their endpoints inline", "workloadEntries does not apply to topology.mesh")
	}
	seen := map[string]int{}
	total := 0
	for i, s := range m.Services {
		sp := fmt.Sprintf("%s.services[%d]", p, i)
		if !dnsLabelRE.MatchString(s.Name) || len(s.Name) > 63 {
			v.add(sp+".name", "use a DNS label: lower-case letters, digits and '-', at most 63", "invalid service name %q", s.Name)
		}
		if !dnsLabelRE.MatchString(s.Namespace) || len(s.Namespace) > 63 {
			v.add(sp+".namespace", "use a DNS label: lower-case letters, digits and '-', at most 63", "invalid namespace %q", s.Namespace)
		}
		key := s.Namespace + "/" + s.Name
		if j, dup := seen[key]; dup {
			v.add(sp+".name", fmt.Sprintf("remove one of them (the first is services[%d])", j), "service %s given twice", key)
		}
		seen[key] = i
		if !dnsSubdomainRE.MatchString(s.ServiceAccount) || len(s.ServiceAccount) > 253 {
			v.add(sp+".serviceAccount", "use a DNS name: lower-case letters, digits and '-'", "invalid service account %q", s.ServiceAccount)
		}
		if len(s.Ports) == 0 {
			v.add(sp+".ports", "add a port: ports: [{number: 8080, protocol: HTTP}]", "a service needs at least one port")
		}
		if len(s.Ports) > 64 {
			v.add(sp+".ports", "keep at most 64 ports", "%d ports", len(s.Ports))
		}
		numbers := map[int]bool{}
		names := map[string]bool{}
		for j, pt := range s.Ports {
			pp := fmt.Sprintf("%s.ports[%d]", sp, j)
			if pt.Number < 1 || pt.Number > 65535 {
				v.add(pp+".number", "use 1..65535", "invalid port number %d", pt.Number)
			} else if numbers[pt.Number] {
				v.add(pp+".number", "give each port its own number", "port %d given twice", pt.Number)
			}
			numbers[pt.Number] = true
			if _, ok := CanonicalProtocol(pt.Protocol); !ok {
				v.add(pp+".protocol", suggest.Fix(pt.Protocol, meshProtocols), "unknown protocol %q", pt.Protocol)
			}
			if !portNameRE.MatchString(pt.Name) || len(pt.Name) > 63 {
				v.add(pp+".name", "use letters, digits, '-', '_' and '.'", "invalid port name %q", pt.Name)
			} else if names[pt.Name] {
				v.add(pp+".name", "give each port its own name", "port name %q given twice", pt.Name)
			}
			names[pt.Name] = true
			if pt.Protocol == ProtocolAuto && pt.Number >= 1 && pt.Number <= 65535 {
				// A Kubernetes sink writes such a port without appProtocol: Istio reads its name
				// (and takes a few well-known ports as TCP).
				if named := istioconfig.KubePortProtocol(int32(pt.Number), pt.Name, nil, false); named != "" {
					v.add(pp+".protocol", fmt.Sprintf("write protocol %s, or name the port port-%d", named, pt.Number),
						"auto, but Istio takes port %d named %q as %s", pt.Number, pt.Name, named)
				}
			}
			if pt.TargetPort < 1 || pt.TargetPort > 65535 {
				v.add(pp+".targetPort", "use 1..65535", "invalid target port %d", pt.TargetPort)
			}
		}
		for j, g := range s.Endpoints {
			gp := fmt.Sprintf("%s.endpoints[%d]", sp, j)
			v.atLeast(gp+".count", g.Count, 0)
			total += max(g.Count, 0)
			if strings.Count(g.Locality, "/") > 2 || strings.ContainsAny(g.Locality, " \t") {
				v.add(gp+".locality", "write region/zone/subzone (an empty region: /zone)", "invalid locality %q", g.Locality)
			}
			for k, val := range g.Labels {
				if k == "" || len(k) > 317 || len(val) > 63 {
					v.add(gp+".labels", "use Kubernetes label keys and values", "invalid label %q: %q", k, val)
				}
			}
		}
	}
	if total > maxMeshEndpoints {
		v.add(p+".services", fmt.Sprintf("keep at most %d endpoints", maxMeshEndpoints), "the mesh has %d endpoints", total)
	}
	v.meshConfig()
}

// meshConfig checks topology.mesh.config with the control plane's decoder, naming the lines of
// the scenario file.
func (v *validator) meshConfig() {
	m := v.s.Topology.Mesh
	if strings.TrimSpace(m.Config) == "" {
		return
	}
	const path = "topology.mesh.config"
	res, err := config.Decoder{}.DecodeAll(MeshConfigFile, []byte(m.Config))
	// A block scalar's content starts on the line after its indicator.
	base := 0
	if v.s.src != nil {
		if at, ok := v.s.src.at[path]; ok {
			base = at.line
			if !at.block {
				base-- // a plain or quoted scalar starts on the key's line
			}
		}
	}
	var des []*config.DecodeError
	if err != nil {
		var each interface{ Unwrap() []error }
		errs := []error{err}
		if errors.As(err, &each) {
			errs = each.Unwrap()
		}
		for _, e := range errs {
			var de *config.DecodeError
			if errors.As(e, &de) {
				des = append(des, de)
			} else {
				v.add(path, "fix the config", "%v", e)
			}
		}
	}
	for _, de := range des {
		msg := de.Msg
		if de.Object != "" {
			msg = de.Object + ": " + msg
		}
		v.addAt(path, base+de.Line, "", "%s", msg)
	}
	if v.s.Sink.Kind == SinkKube {
		for _, c := range res.Configs {
			if istioconfig.IsSecurity(c.Kind) {
				v.addAt(path, base+1, "use sink kind dir or mcp (or the in-process control plane), or leave the "+string(c.Kind)+" out",
					"%s %s/%s: the kube sink cannot write it", c.Kind, c.Namespace, c.Name)
			}
		}
	}
	for _, sk := range res.Skipped {
		what := strings.TrimSpace(sk.APIVersion + " " + sk.Kind + " " + sk.Name)
		v.addAt(path, base+sk.Line, "keep only the kinds listed in docs/scenarios.md (topology.mesh); xdslab import lists the others it leaves out",
			"%s: not a kind the lab writes", what)
	}
}

// addAt is add with an explicit line (col 0).
func (v *validator) addAt(path string, line int, fix, format string, a ...any) {
	if len(v.errs) >= maxErrors {
		return
	}
	e := &Error{Path: path, Msg: fmt.Sprintf(format, a...), Fix: fix}
	if v.s.src != nil {
		e.File = v.s.src.file
		e.Line = line
	}
	v.errs = append(v.errs, e)
}
