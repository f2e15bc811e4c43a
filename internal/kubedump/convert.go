package kubedump

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/scenarios"
)

// Well-known labels the conversion reads.
const (
	serviceNameLabel = "kubernetes.io/service-name"
	regionLabel      = "topology.kubernetes.io/region"
	zoneLabel        = "topology.kubernetes.io/zone"
	// istioLocalityLabel is Istio's Pod label region.zone.subzone, which wins over the node's.
	istioLocalityLabel = "istio-locality"
)

// perPodLabels differ from pod to pod or rollout to rollout; they are left out of endpoint
// labels so that a service's endpoints group by what DestinationRule subsets select on.
var perPodLabels = []string{"pod-template-hash", "controller-revision-hash",
	"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "batch.kubernetes.io/job-completion-index"}

// Result is a converted dump: the explicit mesh and what the conversion saw around it.
type Result struct {
	Mesh scenarios.Mesh
	// Configs are the Istio objects the lab writes, in dump order (Mesh.Config renders them).
	Configs []*ConfigObject
	// Unmodelled counts the objects of each kind the lab does not model, by kind.
	Unmodelled map[string]int
	// FQDNEndpoints counts the ready endpoints of EndpointSlices with addressType FQDN, left
	// out (the lab's endpoints are addresses); Notes names their Services.
	FQDNEndpoints int
	// Notes list objects of modelled kinds that were left out, and why.
	Notes []string
	// Workloads are the pod counts of the dump's workloads (pods grouped by owner), sorted.
	Workloads []Workload
	// Sidecars and Routers count the pods with an istio-proxy container: gateway pods (label
	// istio: ingressgateway or egressgateway) are routers.
	Sidecars, Routers int
	// SidecarsByNamespace splits Sidecars by the pods' namespaces.
	SidecarsByNamespace map[string]int
	// Nodes counts the Nodes read for their region and zone labels (not written).
	Nodes int
	// Files are the dump's file names, for the scenario's header.
	Files []string
}

// Workload is one owner's pods: a Deployment (through its ReplicaSets), StatefulSet, DaemonSet,
// Job or a bare Pod.
type Workload struct {
	Namespace, Kind, Name string
	Pods                  int
}

// ConfigObject is one Istio object, reduced to what the lab writes: apiVersion, kind, name,
// namespace and spec.
type ConfigObject struct {
	APIVersion, Kind, Namespace, Name string
	Spec                              map[string]any
	// File and Line are where the dump wrote it.
	File string
	Line int
}

// Convert maps a dump onto an explicit mesh. It is strict about what it models (a Service
// without ports is left out with a note; an EndpointSlice of no Service, an Istio object
// istiod would reject, or two objects with one name are errors naming file and line) and
// counts every other kind.
func Convert(d *Dump) (*Result, error) {
	c := &converter{
		res:    &Result{Unmodelled: map[string]int{}},
		nodes:  map[string]map[string]string{},
		pods:   map[string]*corev1.Pod{},
		podsIn: map[string][]*corev1.Pod{},
	}
	c.run(d)
	if err := c.errs.err(); err != nil {
		return nil, err
	}
	return c.res, nil
}

type converter struct {
	res    *Result
	errs   errList
	nodes  map[string]map[string]string // node name → labels
	pods   map[string]*corev1.Pod       // ns/name
	podObj []*Object
	// podsIn lists each namespace's pods, in dump order.
	podsIn map[string][]*corev1.Pod
}

type service struct {
	obj    *Object
	svc    corev1.Service
	slices []*discoveryv1.EndpointSlice
}

// istioKinds are the Istio kinds the lab writes, by kind.
var istioKinds = map[string]istioconfig.Kind{
	"ServiceEntry": istioconfig.KindServiceEntry, "WorkloadEntry": istioconfig.KindWorkloadEntry,
	"VirtualService": istioconfig.KindVirtualService, "DestinationRule": istioconfig.KindDestinationRule,
	"Gateway": istioconfig.KindGateway, "Sidecar": istioconfig.KindSidecar, "PeerAuthentication": istioconfig.KindPeerAuthentication,
	// The control plane generates RBAC and JWT filters from them (docs/security.md), as
	// istiod does.
	"AuthorizationPolicy": istioconfig.KindAuthorizationPolicy, "RequestAuthentication": istioconfig.KindRequestAuthentication,
}

func (c *converter) run(d *Dump) {
	seen := map[string]*Object{}
	c.res.Files = d.Files
	var services []*service
	byName := map[string]*service{}
	var slicesObjs []*Object
	for _, o := range d.Objects {
		group, _, _ := strings.Cut(o.APIVersion, "/")
		if o.APIVersion == "v1" {
			group = "" // core
		} else if !strings.Contains(o.APIVersion, "/") {
			group = "?" + o.APIVersion // not a core kind, whatever it is called
		}
		key := group + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name
		if first, dup := seen[key]; dup {
			c.errs.at(o, o.Line, fmt.Sprintf("keep one of them (the first is at %s:%d)", first.File, first.Line), "given twice")
			continue
		}
		seen[key] = o
		switch {
		case group == "" && o.Kind == "Service":
			s := &service{obj: o}
			if !c.read(o, &s.svc) || !c.namespaced(o) {
				continue
			}
			services = append(services, s)
			byName[o.Namespace+"/"+o.Name] = s
		case group == "discovery.k8s.io" && o.Kind == "EndpointSlice":
			if c.namespaced(o) {
				slicesObjs = append(slicesObjs, o)
			}
		case group == "" && o.Kind == "Pod":
			var p corev1.Pod
			if c.read(o, &p) && c.namespaced(o) {
				c.pods[o.Namespace+"/"+o.Name] = &p
				c.podObj = append(c.podObj, o)
				c.podsIn[o.Namespace] = append(c.podsIn[o.Namespace], &p)
			}
		case group == "" && o.Kind == "Node":
			var n corev1.Node
			if c.read(o, &n) {
				c.nodes[o.Name] = n.Labels
			}
			c.res.Nodes++ // read for localities, not written
		case istioKinds[o.Kind] != "" && istioconfig.Accepts(istioKinds[o.Kind], o.APIVersion):
			if c.namespaced(o) {
				spec, _ := o.Raw["spec"].(map[string]any)
				c.res.Configs = append(c.res.Configs, &ConfigObject{APIVersion: o.APIVersion, Kind: o.Kind,
					Namespace: o.Namespace, Name: o.Name, Spec: spec, File: o.File, Line: o.Line})
			}
		default:
			c.res.Unmodelled[o.Kind]++
		}
	}
	for _, o := range slicesObjs {
		var es discoveryv1.EndpointSlice
		if !c.read(o, &es) {
			continue
		}
		name := es.Labels[serviceNameLabel]
		if name == "" {
			c.errs.at(o, o.lineOf("metadata"), "add the label "+serviceNameLabel+": SERVICE (the EndpointSlice controller sets it), or leave the slice out of the dump",
				"EndpointSlice references no Service")
			continue
		}
		s := byName[o.Namespace+"/"+name]
		if s == nil {
			c.errs.at(o, o.lineOf("metadata", "labels"), "add Service "+o.Namespace+"/"+name+" to the dump (kubectl get svc,endpointslices -A -o yaml), or leave the slice out",
				"EndpointSlice references Service %s/%s, which the dump does not have", o.Namespace, name)
			continue
		}
		s.slices = append(s.slices, &es)
	}
	c.checkConfigs()
	for _, co := range c.res.Configs {
		if co.Kind == "Sidecar" && co.Spec["workloadSelector"] != nil {
			c.res.Notes = append(c.res.Notes, fmt.Sprintf("Sidecar %s/%s selects workloads: the lab holds the namespace's clients to its namespace-wide Sidecar (or the root one), not to this one", co.Namespace, co.Name))
		}
	}
	c.workloads()
	fromPods := len(slicesObjs) == 0 && len(c.pods) > 0
	for _, s := range services {
		if ms, ok := c.service(s, fromPods); ok {
			c.res.Mesh.Services = append(c.res.Mesh.Services, ms)
		}
	}
	if fromPods && len(services) > 0 {
		c.res.Notes = append(c.res.Notes, "the dump has no EndpointSlices: endpoints are the ready Pods each Service's selector matches")
	}
	if len(c.res.Mesh.Services) == 0 && len(c.res.Configs) == 0 && len(c.errs.es) == 0 {
		c.errs.add(strings.Join(c.res.Files, ", "), 0, "", "dump Services and Istio objects: kubectl get svc,endpointslices,pods,serviceentries,workloadentries,virtualservices,destinationrules,gateways,sidecars,peerauthentications,authorizationpolicies -A -o yaml",
			"the dump has no Service and no Istio object the lab models")
	}
}

func (c *converter) read(o *Object, v any) bool {
	if err := decodeInto(o, v); err != nil {
		c.errs.at(o, o.Line, "fix the field's type (kubectl get -o yaml writes it right; was the object edited?)", "cannot read %s: %v", o.Kind, cleanJSONErr(err))
		return false
	}
	return true
}

func (c *converter) namespaced(o *Object) bool {
	if o.Namespace == "" {
		c.errs.at(o, o.lineOf("metadata"), "dump with kubectl get ... -A -o yaml, which writes every object's metadata.namespace", "%s without metadata.namespace", o.Kind)
		return false
	}
	return true
}

func cleanJSONErr(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// checkConfigs runs every Istio object through the control plane's decoder (strict fields,
// istiod's validation rules), reporting a rejected one at its line in the dump.
func (c *converter) checkConfigs() {
	for _, co := range c.res.Configs {
		y, err := co.yaml()
		if err == nil {
			_, err = config.Decoder{}.Decode(co.File, y)
		}
		if err == nil {
			continue
		}
		for _, e := range splitErr(err) {
			// The decoder's line is in the object as rendered, not in the dump: name the
			// object's line, the message names the field.
			msg := e.Error()
			if de, ok := e.(*config.DecodeError); ok {
				msg = de.Msg
			}
			c.errs.add(co.File, co.Line, co.Kind+" "+co.Namespace+"/"+co.Name, "fix the object (istiod rejects it too) or leave it out of the dump", "%s", msg)
		}
	}
}

func splitErr(err error) []error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		return u.Unwrap()
	}
	return []error{err}
}

// yaml renders the object as the lab writes it.
func (co *ConfigObject) yaml() ([]byte, error) {
	return marshalObject(map[string]any{
		"apiVersion": co.APIVersion,
		"kind":       co.Kind,
		"metadata":   map[string]any{"name": co.Name, "namespace": co.Namespace},
		"spec":       co.Spec,
	})
}

// workloads groups the pods by owner.
func (c *converter) workloads() {
	sizes := map[Workload]int{}
	for _, o := range c.podObj {
		p := c.pods[o.Namespace+"/"+o.Name]
		w := Workload{Namespace: o.Namespace, Kind: "Pod", Name: o.Name}
		for _, ref := range p.OwnerReferences {
			if ref.Controller == nil || !*ref.Controller {
				continue
			}
			w.Kind, w.Name = ref.Kind, ref.Name
			if ref.Kind == "ReplicaSet" {
				if h := p.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(ref.Name, "-"+h) {
					w.Kind, w.Name = "Deployment", strings.TrimSuffix(ref.Name, "-"+h)
				}
			}
		}
		sizes[w]++
		if hasProxy(p) {
			if v := p.Labels["istio"]; v == "ingressgateway" || v == "egressgateway" {
				c.res.Routers++
			} else {
				c.res.Sidecars++
				if c.res.SidecarsByNamespace == nil {
					c.res.SidecarsByNamespace = map[string]int{}
				}
				c.res.SidecarsByNamespace[o.Namespace]++
			}
		}
	}
	for w, n := range sizes {
		w.Pods = n
		c.res.Workloads = append(c.res.Workloads, w)
	}
	slices.SortFunc(c.res.Workloads, func(a, b Workload) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
}

func hasProxy(p *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, ct := range cs {
			if ct.Name == "istio-proxy" {
				return true
			}
		}
	}
	return false
}

// epKey is what groups a service's endpoints.
type epKey struct {
	loc    string
	labels string // JSON of the labels
}

func (c *converter) service(s *service, fromPods bool) (scenarios.MeshService, bool) {
	o, spec := s.obj, s.svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		c.res.Notes = append(c.res.Notes, fmt.Sprintf("%s: type ExternalName (a DNS alias, no endpoints) is not modelled", o))
		return scenarios.MeshService{}, false
	}
	ms := scenarios.MeshService{Name: o.Name, Namespace: o.Namespace}
	if !dnsLabel(o.Name) || !dnsLabel(o.Namespace) {
		c.errs.at(o, o.lineOf("metadata"), "Kubernetes names Services and namespaces with DNS labels (lower-case letters, digits, '-', at most 63); was the object edited?",
			"invalid name")
		return ms, false
	}
	numbers := map[int32]string{}
	for i, p := range spec.Ports {
		if p.Protocol == corev1.ProtocolSCTP {
			c.res.Notes = append(c.res.Notes, fmt.Sprintf("%s: port %d is SCTP, which Istio does not proxy; left out", o, p.Port))
			continue
		}
		if p.Port < 1 || p.Port > 65535 {
			c.errs.at(o, o.lineOf("spec", "ports"), "give each port a number 1..65535", "ports[%d]: invalid port %d", i, p.Port)
			continue
		}
		if prev, dup := numbers[p.Port]; dup {
			c.res.Notes = append(c.res.Notes, fmt.Sprintf("%s: port %d/%s has the number of port %d/%s; the lab keys ports by number, the second is left out", o, p.Port, p.Protocol, p.Port, prev))
			continue
		}
		numbers[p.Port] = string(p.Protocol)
		mp := scenarios.MeshPort{Number: int(p.Port), Protocol: istioProtocol(p), Name: p.Name, TargetPort: c.targetPort(s, p)}
		if mp.Name == "" || mp.Protocol == scenarios.ProtocolAuto && istioconfig.KubePortProtocol(p.Port, mp.Name, nil, false) != "" {
			// No name, or an auto port (an appProtocol Istio does not know) whose name would
			// say a protocol once the lab writes it without the appProtocol.
			mp.Name = scenarios.DefaultPortName(mp.Protocol, int(p.Port))
		}
		if !portName(mp.Name) {
			c.errs.at(o, o.lineOf("spec", "ports"), "name ports with letters, digits and '-' (at most 63), as Kubernetes does", "ports[%d]: invalid port name %q", i, mp.Name)
			continue
		}
		if mp.TargetPort < 1 || mp.TargetPort > 65535 {
			c.errs.at(o, o.lineOf("spec", "ports"), "give targetPort a number 1..65535 or a container port's name", "ports[%d]: invalid targetPort %d", i, mp.TargetPort)
			continue
		}
		ms.Ports = append(ms.Ports, mp)
	}
	if len(ms.Ports) == 0 {
		c.res.Notes = append(c.res.Notes, fmt.Sprintf("%s: no ports Istio proxies (a Service without ports has no clusters); left out", o))
		return scenarios.MeshService{}, false
	}
	groups := map[epKey]int{}
	accounts := map[string]int{}
	add := func(pod *corev1.Pod, zone, node string) {
		labels := map[string]string{}
		if pod != nil {
			for k, v := range pod.Labels {
				if !slices.Contains(perPodLabels, k) {
					labels[k] = v
				}
			}
			accounts[cmp.Or(pod.Spec.ServiceAccountName, "default")]++
			if node == "" {
				node = pod.Spec.NodeName
			}
		} else {
			maps.Copy(labels, spec.Selector)
		}
		for k, v := range labels {
			if k == "" || len(k) > 317 || len(v) > 63 {
				c.errs.at(o, o.Line, "Kubernetes label values have at most 63 characters; was a Pod edited?", "an endpoint's Pod has the invalid label %q: %q", k, v)
				return
			}
		}
		loc := c.locality(pod, zone, node)
		if strings.Count(loc, "/") > 2 || strings.ContainsAny(loc, " \t\n") {
			c.errs.at(o, o.Line, "zones and regions are single words (topology.kubernetes.io/zone, istio-locality region.zone.subzone)", "an endpoint's locality %q is not region/zone/subzone", loc)
			return
		}
		js, _ := json.Marshal(labels)
		groups[epKey{loc: loc, labels: string(js)}]++
	}
	if fromPods {
		for _, pod := range c.selected(o.Namespace, spec.Selector) {
			add(pod, "", "")
		}
	} else {
		seen := map[string]bool{}
		family := addressFamily(s.slices)
		fqdn := 0
		for _, es := range s.slices {
			if es.AddressType == discoveryv1.AddressTypeFQDN {
				for _, ep := range es.Endpoints {
					if (ep.Conditions.Ready == nil || *ep.Conditions.Ready) && len(ep.Addresses) > 0 {
						fqdn++
					}
				}
				continue
			}
			if es.AddressType != family {
				continue
			}
			for _, ep := range es.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 || seen[ep.Addresses[0]] {
					continue
				}
				seen[ep.Addresses[0]] = true
				var pod *corev1.Pod
				if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
					pod = c.pods[cmp.Or(ref.Namespace, o.Namespace)+"/"+ref.Name]
				}
				add(pod, deref(ep.Zone), deref(ep.NodeName))
			}
		}
		if fqdn > 0 {
			c.res.FQDNEndpoints += fqdn
			c.res.Notes = append(c.res.Notes, fmt.Sprintf("%s: %d ready endpoint(s) of EndpointSlices with addressType FQDN (DNS names, not addresses) are not modelled: the lab's services have address endpoints", o, fqdn))
		}
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b epKey) int {
		return cmp.Or(cmp.Compare(a.loc, b.loc), cmp.Compare(a.labels, b.labels))
	})
	for _, k := range keys {
		var labels map[string]string
		_ = json.Unmarshal([]byte(k.labels), &labels)
		if len(labels) == 0 {
			labels = nil
		}
		ms.Endpoints = append(ms.Endpoints, scenarios.MeshEndpoints{Count: groups[k], Locality: k.loc, Labels: labels})
	}
	// The service account most of its endpoints run as (the lab gives a service one).
	best := "default"
	for _, a := range slices.Sorted(maps.Keys(accounts)) {
		if accounts[a] > accounts[best] {
			best = a
		}
	}
	if !dnsSubdomain(best) {
		c.errs.at(o, o.Line, "Kubernetes names service accounts with DNS names; was a Pod edited?", "its endpoints' service account %q is not a DNS name", best)
	}
	if len(accounts) > 1 {
		c.res.Notes = append(c.res.Notes, fmt.Sprintf("%s: endpoints run as %d service accounts; the lab gives the service one, %s", o, len(accounts), best))
	}
	ms.ServiceAccount = best
	return ms, true
}

var (
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
	portNameRE     = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$`)
)

func dnsLabel(s string) bool     { return len(s) <= 63 && dnsLabelRE.MatchString(s) }
func dnsSubdomain(s string) bool { return len(s) <= 253 && dnsSubdomainRE.MatchString(s) }
func portName(s string) bool     { return len(s) <= 63 && portNameRE.MatchString(s) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// addressFamily is the family of endpoints a service is counted in: IPv4 when it has any
// (a dual-stack service lists each endpoint twice), else IPv6.
func addressFamily(ss []*discoveryv1.EndpointSlice) discoveryv1.AddressType {
	for _, es := range ss {
		if es.AddressType == discoveryv1.AddressTypeIPv4 {
			return discoveryv1.AddressTypeIPv4
		}
	}
	return discoveryv1.AddressTypeIPv6
}

// selected returns the ready pods of ns whose labels match selector, by name.
func (c *converter) selected(ns string, selector map[string]string) []*corev1.Pod {
	if len(selector) == 0 {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range c.podsIn[ns] {
		if p.Status.PodIP == "" || !podReady(p) {
			continue
		}
		match := true
		for k, v := range selector {
			match = match && p.Labels[k] == v
		}
		if match {
			out = append(out, p)
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return p.Status.Phase == corev1.PodRunning
}

// locality is Istio's locality of an endpoint: the pod's istio-locality label, else the
// node's region and the endpoint's (or node's) zone; an unknown region is left empty.
func (c *converter) locality(pod *corev1.Pod, zone, node string) string {
	if pod != nil {
		if l := pod.Labels[istioLocalityLabel]; l != "" {
			return strings.ReplaceAll(l, ".", "/")
		}
	}
	nl := c.nodes[node]
	region := nl[regionLabel]
	if zone == "" {
		zone = nl[zoneLabel]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + "/" + zone
}

// targetPort resolves a service port's target: a number, or a name looked up in the
// EndpointSlices (which carry the resolved number under the service port's name) or in the
// selected pods' container ports.
func (c *converter) targetPort(s *service, p corev1.ServicePort) int {
	tp := p.TargetPort
	if tp.IntVal != 0 {
		return int(tp.IntVal)
	}
	if tp.StrVal == "" {
		return int(p.Port)
	}
	for _, es := range s.slices {
		for _, ep := range es.Ports {
			if ep.Name != nil && *ep.Name == p.Name && ep.Port != nil {
				return int(*ep.Port)
			}
		}
	}
	for _, pod := range c.selected(s.obj.Namespace, s.svc.Spec.Selector) {
		for _, ct := range pod.Spec.Containers {
			for _, cp := range ct.Ports {
				if cp.Name == tp.StrVal {
					return int(cp.ContainerPort)
				}
			}
		}
	}
	return int(p.Port)
}

// istioProtocol is the protocol Istio gives a service port (istioconfig.KubePortProtocol), as
// a mesh port spells it: scenarios.ProtocolAuto where Istio selects it (sniffs).
func istioProtocol(p corev1.ServicePort) string {
	if pr := istioconfig.KubePortProtocol(p.Port, p.Name, p.AppProtocol, p.Protocol == corev1.ProtocolUDP); pr != "" {
		return pr
	}
	return scenarios.ProtocolAuto
}

// RenderConfig renders the Istio objects as YAML documents, in dump order.
func RenderConfig(objs []*ConfigObject) (string, error) {
	var b strings.Builder
	for i, co := range objs {
		y, err := co.yaml()
		if err != nil {
			return "", fmt.Errorf("%s %s/%s: %w", co.Kind, co.Namespace, co.Name, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.String(), nil
}

// Summary is one line per fact for the console: counts, what was left out and why.
func (r *Result) Summary() []string {
	out := []string{fmt.Sprintf("%d services, %d endpoints in %d namespaces, %d Istio objects, %d workloads (%d sidecars, %d gateway pods)",
		len(r.Mesh.Services), r.Mesh.Endpoints(), len(r.Mesh.Namespaces()), len(r.Configs), len(r.Workloads), r.Sidecars, r.Routers)}
	if len(r.Unmodelled) > 0 {
		out = append(out, "not modelled (counted, left out): "+r.UnmodelledText())
	}
	if r.FQDNEndpoints > 0 {
		out = append(out, "not modelled (counted, left out): "+r.fqdnText())
	}
	if r.Nodes > 0 {
		out = append(out, fmt.Sprintf("%d Nodes read for their region and zone labels", r.Nodes))
	}
	out = append(out, r.Notes...)
	return out
}

// fqdnText counts the endpoints of FQDN EndpointSlices left out.
func (r *Result) fqdnText() string {
	return fmt.Sprintf("%d ready endpoint(s) of EndpointSlices with addressType FQDN (DNS names, not addresses)", r.FQDNEndpoints)
}

// UnmodelledText lists the unmodelled kinds with their counts: "ConfigMap ×2, EnvoyFilter ×1".
func (r *Result) UnmodelledText() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Unmodelled)) {
		parts = append(parts, k+" ×"+strconv.Itoa(r.Unmodelled[k]))
	}
	return strings.Join(parts, ", ")
}

// sizes returns the workloads' pod counts, sorted.
func (r *Result) sizes() []int {
	var out []int
	for _, w := range r.Workloads {
		out = append(out, w.Pods)
	}
	sort.Ints(out)
	return out
}
