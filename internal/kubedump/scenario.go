package kubedump

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/xdslab/xdslab/scenarios"
)

// Placeholder churn rates: a dump is one moment of a cluster and says nothing about how often it
// changes, so the scenario gets modest rates marked for the user to replace.
const (
	placeholderRolloutEvery = time.Minute
	placeholderScaleRate    = "6/m"
	placeholderFlapRate     = "1/s"
	// rolloutSecondsPerPod spreads a rollout over its pods (Kubernetes replaces pods as the new
	// ones become ready; a few seconds each is typical).
	rolloutSecondsPerPod = 5
	// DefaultName is the scenario's name when none is given.
	DefaultName = "imported"
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// out* are the scenario as written: only the keys an import sets, in the order a reader wants.
type outScenario struct {
	Name        string      `yaml:"name"`
	Description string      `yaml:"description"`
	Duration    string      `yaml:"duration"`
	Topology    outTopology `yaml:"topology"`
	Churn       []outChurn  `yaml:"churn"`
	Clients     []outClient `yaml:"clients"`
}

type outTopology struct {
	Mesh outMesh `yaml:"mesh"`
}

type outMesh struct {
	Services []scenarios.MeshService `yaml:"services"`
	Config   string                  `yaml:"config,omitempty"`
}

type outChurn struct {
	Kind     string      `yaml:"kind"`
	Rate     string      `yaml:"rate,omitempty"`
	Every    string      `yaml:"every,omitempty"`
	Services int         `yaml:"services,omitempty"`
	Window   string      `yaml:"window,omitempty"`
	Delta    *outUniform `yaml:"delta,omitempty"`
}

type outUniform struct {
	Dist string `yaml:"dist"`
	Min  int    `yaml:"min"`
	Max  int    `yaml:"max"`
}

type outClient struct {
	Name            string         `yaml:"name"`
	Count           int            `yaml:"count"`
	Type            string         `yaml:"type,omitempty"`
	NamespaceCounts map[string]int `yaml:"namespaceCounts,omitempty"`
	Auth            *outAuth       `yaml:"auth,omitempty"`
}

type outAuth struct {
	MTLS bool `yaml:"mtls"`
}

// Scenario writes the result as a scenario file named name ("" gives DefaultName): the mesh,
// churn whose sizes follow the dump's workloads and whose rates are placeholders, and a fleet
// of one sidecar per pod with an istio-proxy container (and one router per gateway pod).
// Comments say where each part came from and what was left out.
func (r *Result) Scenario(name string) ([]byte, error) {
	if name == "" {
		name = DefaultName
	}
	if len(name) > 63 || !nameRE.MatchString(name) {
		return nil, fmt.Errorf("scenario name %q: use lower-case letters, digits and '-', at most 63 characters", name)
	}
	cfg, err := RenderConfig(r.Configs)
	if err != nil {
		return nil, err
	}
	s := outScenario{
		Name:        name,
		Description: fmt.Sprintf("Imported cluster dump: %d services, %d endpoints in %d namespaces, %d Istio objects", len(r.Mesh.Services), r.Mesh.Endpoints(), len(r.Mesh.Namespaces()), len(r.Configs)),
		Duration:    "60s",
		Topology:    outTopology{Mesh: outMesh{Services: r.Mesh.Services, Config: cfg}},
	}
	sizes := r.sizes()
	var churnNote string
	if r.Mesh.Endpoints() > 0 {
		median, largest := 1, 1
		if len(sizes) > 0 {
			median, largest = sizes[len(sizes)/2], sizes[len(sizes)-1]
		}
		window := time.Duration(max(2, median)*rolloutSecondsPerPod) * time.Second
		step := max(1, int(math.Ceil(float64(largest)/4)))
		s.Churn = []outChurn{
			{Kind: scenarios.KindRollingDeploy, Every: placeholderRolloutEvery.String(), Services: 1, Window: window.String()},
			{Kind: scenarios.KindScale, Rate: placeholderScaleRate, Services: 1, Delta: &outUniform{Dist: "uniform", Min: 1, Max: step}},
			{Kind: scenarios.KindEndpointFlap, Rate: placeholderFlapRate},
		}
		churnNote = fmt.Sprintf("Churn sized from the dump: %d workloads (pods grouped by owner), median %d pods, largest %d.\n"+
			"rolling-deploy: window %s = %ds per pod of the median workload; scale: 1 to %d endpoints a step\n"+
			"(a quarter of the largest workload, Kubernetes' default maxSurge).\n"+
			"PLACEHOLDER rates (every, rate): a dump is one moment and has no history; replace them\n"+
			"with your cluster's (rollouts per hour, HPA steps, pod restarts).",
			len(sizes), median, largest, window, rolloutSecondsPerPod, step)
	} else {
		churnNote = "No churn: the dump has no endpoints to change; add processes (docs/scenarios.md, churn)."
	}
	sidecars := r.Sidecars
	clientNote := fmt.Sprintf("One fake sidecar per pod with an istio-proxy container in the dump (%d)", r.Sidecars)
	if sidecars == 0 {
		sidecars = 10
		clientNote = "The dump has no pod with an istio-proxy container: 10 sidecars; set the count"
	}
	sc := outClient{Name: "sidecars", Count: sidecars}
	if r.Sidecars > 0 {
		var moved int
		sc.NamespaceCounts, moved = r.namespaceCounts()
		clientNote += ",\nin their pods' namespaces (namespaceCounts)"
		if moved > 0 {
			clientNote += fmt.Sprintf("; %d in namespaces without services are placed in %s", moved, r.Mesh.Namespaces()[0])
		}
	}
	clientNote += "."
	s.Clients = []outClient{sc}
	if r.Routers > 0 {
		s.Clients = append(s.Clients, outClient{Name: "gateways", Count: r.Routers, Type: scenarios.TypeRouter})
		clientNote += fmt.Sprintf("\nOne router per gateway pod (label istio: ingressgateway or egressgateway): %d.", r.Routers)
	}
	if why := r.mtlsReason(); why != "" {
		for i := range s.Clients {
			s.Clients[i].Auth = &outAuth{MTLS: true}
		}
		clientNote += "\nauth mtls: " + why + ", whose secrets the control plane serves over ADS\nto authenticated clients only (docs/security.md)."
	}

	var doc yaml.Node
	if err := doc.Encode(s); err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	head := []string{
		"Written by xdslab import from " + strings.Join(r.Files, ", ") + ".",
		s.Description + ".",
	}
	if len(r.Unmodelled) > 0 {
		head = append(head, "Not modelled (counted, left out): "+r.UnmodelledText()+".")
	}
	if r.FQDNEndpoints > 0 {
		head = append(head, "Not modelled (counted, left out): "+r.fqdnText()+".")
	}
	if r.Nodes > 0 {
		head = append(head, fmt.Sprintf("Localities from the endpoints' zones and %d Nodes' region labels.", r.Nodes))
	}
	for _, n := range r.Notes {
		head = append(head, "Left out or approximated: "+n+".")
	}
	doc.HeadComment = strings.Join(head, "\n")
	style(&doc, "", churnNote, clientNote)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	return b.Bytes(), nil
}

// style lays the scenario out for reading: ports, endpoint groups, churn processes and client
// groups on one line each, the config as a literal block, comments above churn and clients.
func style(n *yaml.Node, key, churnNote, clientNote string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "ports", "endpoints", "churn", "clients":
				for _, it := range v.Content {
					it.Style = yaml.FlowStyle
				}
			case "config":
				v.Style = yaml.LiteralStyle
			}
			switch {
			case key == "" && k.Value == "churn":
				k.HeadComment = churnNote
			case key == "" && k.Value == "clients":
				k.HeadComment = clientNote
			case k.Value == "config":
				k.HeadComment = "Istio objects from the dump, as the lab writes them (name, namespace, spec)."
			}
			style(v, k.Value, churnNote, clientNote)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			style(c, key, churnNote, clientNote)
		}
	}
}

// marshalObject renders an object as YAML (keys sorted, as kubectl does).
func marshalObject(v any) ([]byte, error) { return sigsyaml.Marshal(v) }

// mtlsReason says why the fleet must authenticate with mTLS: a PeerAuthentication (inbound mTLS)
// or a DestinationRule with ISTIO_MUTUAL; "" when nothing asks for it.
func (r *Result) mtlsReason() string {
	for _, c := range r.Configs {
		switch {
		case c.Kind == "PeerAuthentication":
			return "the dump has PeerAuthentication " + c.Namespace + "/" + c.Name
		case c.Kind == "DestinationRule" && mentions(c.Spec, "ISTIO_MUTUAL"):
			return "DestinationRule " + c.Namespace + "/" + c.Name + " asks for ISTIO_MUTUAL"
		}
	}
	return ""
}

// mentions reports whether a spec holds the string value s anywhere.
func mentions(v any, s string) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if mentions(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if mentions(e, s) {
				return true
			}
		}
	case string:
		return x == s
	}
	return false
}

// namespaceCounts places the sidecars in their pods' namespaces. A namespace the mesh has no
// service in is not one of the scenario's: its sidecars go to the mesh's first namespace, and
// moved says how many did.
func (r *Result) namespaceCounts() (counts map[string]int, moved int) {
	names := r.Mesh.Namespaces()
	if len(names) == 0 {
		return nil, 0
	}
	counts = map[string]int{}
	for ns, n := range r.SidecarsByNamespace {
		if slices.Contains(names, ns) {
			counts[ns] += n
		} else {
			counts[names[0]] += n
			moved += n
		}
	}
	return counts, moved
}
