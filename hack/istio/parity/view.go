package parity

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// View is the semantic projection of a Dump: for each resource ("cluster NAME", "listener
// NAME", "route NAME") the set of lines that describe what it does to traffic.
type View map[string][]string

// Project builds the View of d, applying the normalization rules of this package
// (normalize.go).
func Project(d *Dump) View {
	v := View{}
	for name, c := range d.Clusters {
		v["cluster "+name] = clusterLines(c, d.Endpoints)
	}
	for name, l := range d.Listeners {
		v["listener "+name] = listenerLines(l, d.Router)
	}
	for name, r := range d.Routes {
		v["route "+name] = routeLines(r)
	}
	for k, lines := range v {
		slices.Sort(lines)
		v[k] = slices.Compact(lines)
	}
	return v
}

// text renders a normalized message on one line (prototext with its whitespace collapsed, so
// the library's randomized spacing does not show).
func text(m proto.Message) string {
	b, err := prototext.MarshalOptions{}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<%T: %v>", m, err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// fields renders each set field of m as its own line "PREFIX field: value", so that a diff
// points at the field that differs. Repeated fields get one line per element.
func fields(prefix string, m proto.Message) []string {
	var out []string
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		name := prefix + string(fd.Name())
		switch {
		case fd.IsList():
			l := val.List()
			for i := range l.Len() {
				out = append(out, name+"[]: "+valueText(fd, l.Get(i)))
			}
		case fd.IsMap():
			val.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				out = append(out, fmt.Sprintf("%s[%s]: %s", name, k.String(), valueText(fd.MapValue(), mv)))
				return true
			})
		default:
			out = append(out, name+": "+valueText(fd, val))
		}
		return true
	})
	return out
}

func valueText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "{" + text(v.Message().Interface()) + "}"
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	case protoreflect.StringKind:
		return fmt.Sprintf("%q", v.String())
	}
	return v.String()
}

func clusterLines(c *clusterv3.Cluster, eds map[string]*endpointv3.ClusterLoadAssignment) []string {
	c = proto.Clone(c).(*clusterv3.Cluster)
	cla := c.GetLoadAssignment()
	c.LoadAssignment = nil
	if c.GetType() == clusterv3.Cluster_EDS {
		n := c.GetEdsClusterConfig().GetServiceName()
		if n == "" {
			n = c.GetName()
		}
		cla = eds[n]
	}
	normalize(c)
	out := fields("", c)
	if cla != nil && len(c.GetTransportSocketMatches()) == 0 {
		// Endpoint metadata only picks a transport socket match: without matches it is inert.
		cla = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
		for _, lle := range cla.GetEndpoints() {
			for _, lb := range lle.GetLbEndpoints() {
				if md := lb.GetMetadata(); md != nil {
					delete(md.FilterMetadata, "envoy.transport_socket_match")
				}
			}
		}
	}
	return append(out, endpointLines(cla)...)
}

// endpointLines renders an assignment as one line per endpoint with its locality, priority and
// locality weight, and one line for its policy.
func endpointLines(cla *endpointv3.ClusterLoadAssignment) []string {
	if cla == nil {
		return []string{"endpoints: none"}
	}
	cla = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
	normalize(cla)
	var out []string
	for _, lle := range cla.GetEndpoints() {
		head := fmt.Sprintf("endpoint locality={%s} priority=%d locality_weight=%d", text(lle.GetLocality()), lle.GetPriority(), lle.GetLoadBalancingWeight().GetValue())
		for _, lb := range lle.GetLbEndpoints() {
			out = append(out, head+" "+text(lb))
		}
	}
	if cla.GetPolicy() != nil {
		out = append(out, "endpoint_policy: "+text(cla.GetPolicy()))
	}
	if len(out) == 0 {
		out = append(out, "endpoints: none")
	}
	return out
}

func listenerLines(l *listenerv3.Listener, router bool) []string {
	l = proto.Clone(l).(*listenerv3.Listener)
	if router {
		normalizeServerTLS(l)
	} else {
		normalize(l)
	}
	chains := l.GetFilterChains()
	def := l.GetDefaultFilterChain()
	l.FilterChains, l.DefaultFilterChain = nil, nil
	out := fields("", l)
	for _, fc := range chains {
		out = append(out, chainLines("chain", fc)...)
	}
	if def != nil {
		out = append(out, chainLines("default_chain", def)...)
	}
	return out
}

// chainLines renders a filter chain as lines prefixed by its match, so that two chains with the
// same match are compared field by field.
func chainLines(kind string, fc *listenerv3.FilterChain) []string {
	prefix := kind + " {" + text(fc.GetFilterChainMatch()) + "} "
	fc = proto.Clone(fc).(*listenerv3.FilterChain)
	fc.FilterChainMatch = nil
	var out []string
	for i, f := range fc.GetFilters() {
		out = append(out, fmt.Sprintf("%sfilter[%d] %s: %s", prefix, i, f.GetName(), anyText(f.GetTypedConfig())))
	}
	fc.Filters = nil
	out = append(out, fields(prefix, fc)...)
	if len(out) == 0 {
		out = append(out, prefix+"empty")
	}
	return out
}

// anyText renders an Any's content (already normalized) instead of its bytes.
func anyText(a *anypb.Any) string {
	if a == nil {
		return "nil"
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return a.GetTypeUrl() + " <" + err.Error() + ">"
	}
	return "{" + text(m) + "}"
}

func routeLines(r *routev3.RouteConfiguration) []string { return routeLinesWith(r, false) }

// routeLinesWith renders r; with keepPorts the virtual hosts' domains are kept as written
// (sorted), not folded as normalize folds them for Envoy's ignore_port_in_host_matching.
func routeLinesWith(r *routev3.RouteConfiguration, keepPorts bool) []string {
	r = proto.Clone(r).(*routev3.RouteConfiguration)
	var domains [][]string
	for _, vh := range r.GetVirtualHosts() {
		domains = append(domains, slices.Sorted(slices.Values(vh.GetDomains())))
	}
	normalize(r)
	if keepPorts {
		for i, vh := range r.GetVirtualHosts() {
			vh.Domains = domains[i]
		}
	}
	vhs := r.GetVirtualHosts()
	r.VirtualHosts = nil
	out := fields("", r)
	for _, vh := range vhs {
		// A virtual host is known by its domains (its name is cosmetic, normalised away), so a
		// route that moves to another virtual host shows as a difference.
		prefix := "vhost " + strings.Join(vh.GetDomains(), ",") + " "
		routes := vh.GetRoutes()
		vh.Routes = nil
		out = append(out, fields(prefix, vh)...)
		for i, rt := range routes {
			out = append(out, fmt.Sprintf("%sroute[%d]: %s", prefix, i, text(rt)))
		}
	}
	return out
}

// Delta is one difference between two views: a line of Resource that only one side has (Line
// empty: the whole resource).
type Delta struct {
	Resource string
	// Only is "istio" or "xdslab".
	Only string
	Line string
}

func (d Delta) String() string {
	if d.Line == "" {
		return d.Resource + ": only " + d.Only + " generates it"
	}
	return d.Resource + ": only " + d.Only + ": " + d.Line
}

// Diff lists every difference between the views of Istio (want) and xdslab (got), sorted by
// resource, Istio's lines first.
func Diff(want, got View) []Delta {
	var out []Delta
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		w, okW := want[k]
		g, okG := got[k]
		switch {
		case !okG:
			out = append(out, Delta{Resource: k, Only: "istio"})
		case !okW:
			out = append(out, Delta{Resource: k, Only: "xdslab"})
		default:
			for _, l := range w {
				if !slices.Contains(g, l) {
					out = append(out, Delta{Resource: k, Only: "istio", Line: l})
				}
			}
			for _, l := range g {
				if !slices.Contains(w, l) {
					out = append(out, Delta{Resource: k, Only: "xdslab", Line: l})
				}
			}
		}
	}
	return out
}

// Format renders deltas as a readable diff, one block per resource ("- istio" / "+ xdslab").
func Format(ds []Delta) string {
	var b strings.Builder
	last := ""
	for _, d := range ds {
		if d.Line == "" {
			fmt.Fprintf(&b, "%s: only %s generates it\n", d.Resource, d.Only)
			last = ""
			continue
		}
		if d.Resource != last {
			fmt.Fprintf(&b, "%s:\n", d.Resource)
			last = d.Resource
		}
		sign := "-"
		if d.Only == "xdslab" {
			sign = "+"
		}
		fmt.Fprintf(&b, "  %s %s: %s\n", sign, d.Only, d.Line)
	}
	return b.String()
}

var clusterRef = regexp.MustCompile(`cluster:"([^"]+)"|clusters:\{name:"([^"]+)"`)

// DropUnreferencedClusters removes the clusters no listener or route of v names. A gateway
// is compared this way: istiod sends a gateway every cluster of the mesh (unless
// PILOT_FILTER_GATEWAY_CLUSTER_CONFIG), xdslab only those its routes use; a cluster nothing
// routes to carries no traffic.
func (v View) DropUnreferencedClusters() {
	used := map[string]bool{}
	for k, lines := range v {
		if strings.HasPrefix(k, "cluster ") {
			continue
		}
		for _, l := range lines {
			for _, m := range clusterRef.FindAllStringSubmatch(l, -1) {
				used[m[1]+m[2]] = true
			}
		}
	}
	for k := range v {
		if name, ok := strings.CutPrefix(k, "cluster "); ok && !used[name] {
			delete(v, k)
		}
	}
}
