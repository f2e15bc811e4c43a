package validate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Finding is a problem between objects that each pass validation: istiod admits them (its
// webhook sees one object at a time) and `istioctl analyze` reports it. The control plane
// applies such objects unchanged; `xdslab validate` prints the findings.
type Finding struct {
	// Object is "Kind namespace/name" of the object with the reference, Source its file.
	Object, Source string
	// Line is the line of Path in Source, 0 when unknown (config.CheckPaths fills it).
	Line int
	// Path is the field (spec.http[0].route[1].destination.subset).
	Path string
	Msg  string
}

func (f Finding) String() string {
	s := ""
	switch {
	case f.Source != "" && f.Line > 0:
		s = f.Source + ":" + strconv.Itoa(f.Line) + ": "
	case f.Source != "":
		s = f.Source + ": "
	}
	return s + f.Object + ": " + f.Path + ": " + f.Msg
}

// ParsePath reads a path as Path.String writes it (spec.http[0].delegate); ok is false for
// text it cannot have written.
func ParsePath(s string) (p Path, ok bool) {
	for _, part := range strings.Split(s, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key == "" {
			return nil, false
		}
		p = append(p, key)
		for rest != "" {
			n, after, found := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !found || err != nil {
				return nil, false
			}
			p = append(p, i)
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil, false
			}
		}
	}
	return p, true
}

// Analyze checks references between cfgs, as istioctl analyze's
// destinationrule/virtualservice analyzers do (IST0101, ReferencedResourceNotFound): every
// subset a VirtualService routes to must be defined by a DestinationRule for that host, and
// every Gateway it binds to must exist (analyzeGatewayRefs); and Gateways that can select one
// router must not ask for one port with two kinds of listener (analyzeGatewayPorts). Hosts
// are compared after expanding short names to name.namespace.svc.cluster.local, each in its
// object's namespace. Findings are sorted by object and path.
func Analyze(cfgs []*istioconfig.Config) []Finding {
	subsets := map[string]map[string]bool{} // host → subset names
	for _, c := range cfgs {
		dr, ok := c.Spec.(*networking.DestinationRule)
		if !ok || c.Kind != istioconfig.KindDestinationRule {
			continue
		}
		h := fqdn(dr.GetHost(), c.Namespace)
		if subsets[h] == nil {
			subsets[h] = map[string]bool{}
		}
		for _, s := range dr.GetSubsets() {
			subsets[h][s.GetName()] = true
		}
	}
	var out []Finding
	for _, c := range cfgs {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok || c.Kind != istioconfig.KindVirtualService {
			continue
		}
		obj := fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Name)
		check := func(at Path, d *networking.Destination) {
			if d.GetSubset() == "" {
				return
			}
			h := fqdn(d.GetHost(), c.Namespace)
			if subsets[h][d.GetSubset()] {
				return
			}
			msg := fmt.Sprintf("subset %q of host %s is not defined by any DestinationRule: traffic to it fails (HTTP 503); add the subset to the host's DestinationRule or route to a defined one", d.GetSubset(), d.GetHost())
			if subsets[h] == nil {
				msg = fmt.Sprintf("subset %q of host %s: no DestinationRule defines subsets for this host: traffic to it fails (HTTP 503); add a DestinationRule with the subset", d.GetSubset(), d.GetHost())
			}
			out = append(out, Finding{Object: obj, Source: c.Source, Path: at.With("subset").String(), Msg: msg})
		}
		at := Path{"spec"}
		for i, r := range vs.GetHttp() {
			for j, rd := range r.GetRoute() {
				check(at.With("http", i, "route", j, "destination"), rd.GetDestination())
			}
			if r.GetMirror() != nil {
				check(at.With("http", i, "mirror"), r.GetMirror())
			}
		}
		for i, r := range vs.GetTls() {
			for j, rd := range r.GetRoute() {
				check(at.With("tls", i, "route", j, "destination"), rd.GetDestination())
			}
		}
		for i, r := range vs.GetTcp() {
			for j, rd := range r.GetRoute() {
				check(at.With("tcp", i, "route", j, "destination"), rd.GetDestination())
			}
		}
	}
	out = append(out, analyzeDelegates(cfgs)...)
	out = append(out, analyzeGatewayRefs(cfgs)...)
	out = append(out, analyzeGatewayPorts(cfgs)...)
	slices.SortStableFunc(out, func(a, b Finding) int { return strings.Compare(a.Object, b.Object) })
	return out
}

// fqdn expands a short host name the way istiod does (a name without dots is a Kubernetes
// service in the object's namespace).
func fqdn(host, namespace string) string {
	if host == "" || strings.Contains(host, ".") || strings.HasPrefix(host, "*") {
		return host
	}
	return host + "." + namespace + ".svc.cluster.local"
}

// analyzeDelegates reports what istiod's VirtualService merge drops, which it only logs
// (model.MergeDelegates): a root route whose delegate does not exist, has hosts or is not
// exported to the root's namespace, a delegate route whose matches are not within the root
// route's, and a delegate (a VirtualService without hosts) that no root names, which routes
// nothing.
func analyzeDelegates(cfgs []*istioconfig.Config) []Finding {
	var vss []*istioconfig.Config
	for _, c := range cfgs {
		if _, ok := c.Spec.(*networking.VirtualService); ok && c.Kind == istioconfig.KindVirtualService {
			vss = append(vss, c)
		}
	}
	_, issues := model.MergeDelegates(vss)
	var out []Finding
	named := map[istioconfig.Key]bool{}
	for _, c := range vss {
		for _, r := range c.Spec.(*networking.VirtualService).GetHttp() {
			if ref := r.GetDelegate(); ref != nil && len(c.Spec.(*networking.VirtualService).GetHosts()) > 0 {
				named[model.DelegateKey(ref, c.Namespace)] = true
			}
		}
	}
	for _, is := range issues {
		what := "this route is dropped"
		if is.DelegateRoute >= 0 {
			what = "that route is left out of this one"
		}
		out = append(out, Finding{Object: fmt.Sprintf("%s %s/%s", is.Root.Kind, is.Root.Namespace, is.Root.Name), Source: is.Root.Source,
			Path: Path{"spec"}.With("http", is.Route, "delegate").String(), Msg: is.Msg + ": " + what})
	}
	for _, c := range vss {
		if len(c.Spec.(*networking.VirtualService).GetHosts()) == 0 && !named[c.Key()] {
			out = append(out, Finding{Object: fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Name), Source: c.Source, Path: "spec.hosts",
				Msg: "is empty, so this is a delegate VirtualService, and no VirtualService with hosts delegates to it: it routes nothing; add hosts, or delegate to it from a root's http route"})
		}
	}
	return out
}
