package model

import (
	"slices"
	"testing"
	"time"

	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

func scopeSvc(name, ns string, exportTo ...string) *Service {
	return &Service{Hostname: name + "." + ns + ".svc.cluster.local", Namespace: ns, ExportTo: exportTo,
		Ports: []Port{{Name: "http", Number: 80, Protocol: ProtocolHTTP}}}
}

func scopeSidecar(ns, name string, selector map[string]string, created time.Time, hosts ...string) *istioconfig.Config {
	sc := &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: hosts}}}
	if selector != nil {
		sc.WorkloadSelector = &networking.WorkloadSelector{Labels: selector}
	}
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: name, Namespace: ns, CreationTimestamp: created}, Spec: sc}
}

func scopeVS(ns, name string, exportTo []string, hosts ...string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: name, Namespace: ns},
		Spec: &networking.VirtualService{Hosts: hosts, ExportTo: exportTo}}
}

func scopeDR(ns, name, host string, exportTo ...string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: name, Namespace: ns},
		Spec: &networking.DestinationRule{Host: host, ExportTo: exportTo}}
}

func scopeMesh(configs ...*istioconfig.Config) *Snapshot {
	return NewSnapshot(1, SnapshotInput{Services: []*Service{
		scopeSvc("a", "ns-a"), scopeSvc("b", "ns-b"), scopeSvc("c", "ns-c"), scopeSvc("core", RootNamespace),
		scopeSvc("private", "ns-b", "."), scopeSvc("hidden", "ns-b", "~"), scopeSvc("to-a", "ns-b", "ns-a"),
	}, Configs: configs})
}

func proxyIn(ns string, labels map[string]string) *Proxy {
	return &Proxy{Type: SidecarProxy, Namespace: ns, Labels: labels, IPAddresses: []string{"10.9.9.9"}}
}

// The services each proxy sees (Sidecar egress ∩ exportTo) and its scope key.
func TestScopeForSeesServices(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name    string
		configs []*istioconfig.Config
		proxy   *Proxy
		want    []string // short names of the services seen
		key     string
	}{
		{"no Sidecar sees everything exported to it", nil, proxyIn("ns-a", nil),
			[]string{"a", "b", "c", "core", "to-a"}, "ns=ns-a"},
		{"exportTo . shows the service only in its namespace", nil, proxyIn("ns-b", nil),
			[]string{"a", "b", "c", "core", "private"}, "ns=ns-b"},
		{"namespace Sidecar ./* imports its own namespace", []*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "./*")}, proxyIn("ns-a", nil),
			[]string{"a"}, "ns=ns-a|sidecar=ns-a/default"},
		{"ns/* imports another namespace, still subject to exportTo", []*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "./*", "ns-b/*")}, proxyIn("ns-a", nil),
			[]string{"a", "b", "to-a"}, "ns=ns-a|sidecar=ns-a/default"},
		{"ns/host imports one host", []*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "ns-b/b.ns-b.svc.cluster.local")}, proxyIn("ns-a", nil),
			[]string{"b"}, "ns=ns-a|sidecar=ns-a/default"},
		{"*/* imports every namespace", []*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "*/*")}, proxyIn("ns-a", nil),
			[]string{"a", "b", "c", "core", "to-a"}, "ns=ns-a|sidecar=ns-a/default"},
		{"a Sidecar without egress listeners imports every namespace, as */*", []*istioconfig.Config{{
			Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "in-only", Namespace: "ns-a", CreationTimestamp: t0},
			Spec: &networking.Sidecar{Ingress: []*networking.IstioIngressListener{{Port: &networking.SidecarPort{Number: 8080, Protocol: "HTTP", Name: "http"}}}},
		}}, proxyIn("ns-a", nil), []string{"a", "b", "c", "core", "to-a"}, "ns=ns-a|sidecar=ns-a/in-only"},
		{"~/* imports nothing", []*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "~/*")}, proxyIn("ns-a", nil),
			nil, "ns=ns-a|sidecar=ns-a/default"},
		{"root-namespace Sidecar applies where none is, ./ meaning the proxy's namespace",
			[]*istioconfig.Config{scopeSidecar(RootNamespace, "default", nil, t0, "./*", RootNamespace+"/*")}, proxyIn("ns-c", nil),
			[]string{"c", "core"}, "ns=ns-c|sidecar=" + RootNamespace + "/default"},
		{"the namespace's own Sidecar wins over the root one",
			[]*istioconfig.Config{scopeSidecar(RootNamespace, "default", nil, t0, "*/*"), scopeSidecar("ns-c", "mine", nil, t0, "./*")}, proxyIn("ns-c", nil),
			[]string{"c"}, "ns=ns-c|sidecar=ns-c/mine"},
		{"a workload selector that matches wins over the namespace default",
			[]*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "./*"), scopeSidecar("ns-a", "wide", map[string]string{"app": "x"}, t0, "*/*")},
			proxyIn("ns-a", map[string]string{"app": "x", "v": "1"}), []string{"a", "b", "c", "core", "to-a"}, "ns=ns-a|sidecar=ns-a/wide"},
		{"a workload selector that does not match is ignored",
			[]*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "./*"), scopeSidecar("ns-a", "wide", map[string]string{"app": "x"}, t0, "*/*")},
			proxyIn("ns-a", map[string]string{"app": "y"}), []string{"a"}, "ns=ns-a|sidecar=ns-a/default"},
		{"a router uses no Sidecar", []*istioconfig.Config{scopeSidecar("ns-a", "default", nil, t0, "./*")},
			&Proxy{Type: Router, Namespace: "ns-a"}, []string{"a", "b", "c", "core", "to-a"}, "ns=ns-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scopeMesh(tt.configs...)
			sc := s.ScopeFor(tt.proxy)
			var got []string
			for _, svc := range s.Services() {
				if sc.SeesService(svc) {
					got = append(got, svc.Hostname[:len(svc.Hostname)-len("."+svc.Namespace+".svc.cluster.local")])
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("sees %v, want %v", got, tt.want)
			}
			if sc.Key() != tt.key {
				t.Errorf("key %q, want %q", sc.Key(), tt.key)
			}
		})
	}
}

// Without Sidecars or restrictive exportTo every proxy shares the whole-mesh key "".
func TestScopeKeyUnscoped(t *testing.T) {
	s := NewSnapshot(1, SnapshotInput{Services: []*Service{scopeSvc("a", "ns-a"), scopeSvc("b", "ns-b", "*")}})
	for _, p := range []*Proxy{proxyIn("ns-a", nil), proxyIn("ns-z", map[string]string{"app": "x"}), nil} {
		if k := s.ScopeFor(p).Key(); k != "" {
			t.Errorf("proxy %+v: key %q, want \"\"", p, k)
		}
	}
	// An endpoint-only successor keeps the answer; a service change recomputes it.
	n := s.WithEndpoints(2, map[string][]*Endpoint{"a.ns-a.svc.cluster.local": {{Service: "a.ns-a.svc.cluster.local", Address: "10.0.0.1"}}})
	if k := n.ScopeFor(proxyIn("ns-a", nil)).Key(); k != "" {
		t.Errorf("after an endpoint change: key %q", k)
	}
	// A delegate VirtualService (no hosts) exported to its root's namespace only restricts
	// which roots may use it, not what any proxy sees.
	d := NewSnapshot(1, SnapshotInput{Services: []*Service{scopeSvc("a", "ns-a")}, Configs: []*istioconfig.Config{scopeVS("ns-b", "delegate", []string{"ns-a"})}})
	for _, ns := range []string{"ns-a", "ns-c"} {
		if k := d.ScopeFor(proxyIn(ns, nil)).Key(); k != "" {
			t.Errorf("with a delegate exported to ns-a, a proxy in %s: key %q, want \"\"", ns, k)
		}
	}
	n = n.Apply(3, SnapshotDelta{Services: map[string]*Service{"p.ns-b.svc.cluster.local": scopeSvc("p", "ns-b", ".")}})
	if k := n.ScopeFor(proxyIn("ns-a", nil)).Key(); k != "ns=ns-a" {
		t.Errorf("after adding an exportTo . service: key %q, want ns=ns-a", k)
	}
}

func TestScopeSeesConfigs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := scopeMesh(scopeSidecar("ns-a", "default", nil, t0, "./*", "ns-b/b.ns-b.svc.cluster.local"))
	sc := s.ScopeFor(proxyIn("ns-a", nil))
	vsTests := []struct {
		vs   *istioconfig.Config
		want bool
	}{
		{scopeVS("ns-a", "own", nil, "a"), true},
		{scopeVS("ns-b", "imported-host", nil, "b"), true},
		{scopeVS("ns-b", "other-host", nil, "x.ns-b.svc.cluster.local"), false},
		{scopeVS("ns-c", "other-ns", nil, "b.ns-b.svc.cluster.local"), false},
		{scopeVS("ns-a", "not-exported", []string{"ns-z"}, "a"), false},
		{scopeVS("ns-a", "wildcard-own-ns", nil, "*.example.com"), true},
		{scopeVS("ns-b", "wildcard", nil, "*.example.com"), false},
	}
	for _, tt := range vsTests {
		if got := sc.SeesVirtualService(tt.vs); got != tt.want {
			t.Errorf("VirtualService %s: sees %v, want %v", tt.vs.Key(), got, tt.want)
		}
	}
	wide := s.ScopeFor(proxyIn("ns-z", nil))
	if !wide.SeesVirtualService(scopeVS("ns-a", "wildcard", nil, "*.example.com")) {
		t.Error("an unscoped proxy does not see an exported wildcard VirtualService")
	}
	drTests := []struct {
		dr   *istioconfig.Config
		want bool
	}{
		{scopeDR("ns-b", "everywhere", "b"), true},
		{scopeDR("ns-b", "own-ns", "b", "."), false},
		{scopeDR("ns-b", "to-a", "b", "ns-a"), true},
	}
	for _, tt := range drTests {
		if got := sc.ExportsDestinationRule(tt.dr); got != tt.want {
			t.Errorf("DestinationRule %s: exported %v, want %v", tt.dr.Key(), got, tt.want)
		}
	}
}

// ProxyNeedsPush: which changes reach which proxies.
func TestChangeSetAffects(t *testing.T) {
	t0 := time.Unix(1000, 0)
	scA := scopeSidecar("ns-a", "default", nil, t0, "./*")
	base := []*istioconfig.Config{scA, scopeDR("ns-b", "dr-b", "b"), scopeVS("ns-b", "vs-b", nil, "b")}
	prev := scopeMesh(base...)
	key := func(k istioconfig.Kind, ns, name string) istioconfig.Key {
		return istioconfig.Key{Kind: k, Namespace: ns, Name: name}
	}
	withConfigs := func(cs ...*istioconfig.Config) *Snapshot {
		d := SnapshotDelta{Configs: map[istioconfig.Key]*istioconfig.Config{}}
		for _, c := range cs {
			d.Configs[c.Key()] = c
		}
		return prev.Apply(2, d)
	}
	withEndpoint := func(host, addr string) *Snapshot {
		return prev.WithEndpoints(2, map[string][]*Endpoint{host: {{Service: host, Address: addr}}})
	}
	bHost := "b.ns-b.svc.cluster.local"
	aProxy, bProxy := proxyIn("ns-a", nil), proxyIn("ns-b", nil)
	// A root VirtualService of b delegating to ns-c/routes, and that delegate (no hosts),
	// exported only to the root's namespace: a proxy of ns-d sees the root, not the delegate.
	delegating := scopeVS("ns-b", "vs-b", nil, "b")
	delegating.Spec.(*networking.VirtualService).Http = []*networking.HTTPRoute{{Delegate: &networking.Delegate{Name: "routes", Namespace: "ns-c"}}}
	delegate := scopeVS("ns-c", "routes", []string{"ns-b"})
	delegate.Spec.(*networking.VirtualService).Http = []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: bHost}}}}}
	tests := []struct {
		name  string
		next  *Snapshot
		req   *PushRequest
		proxy *Proxy
		want  bool
	}{
		{"a full push of everything reaches all", prev, &PushRequest{Full: true}, aProxy, true},
		{"endpoints of an unimported service skip the scoped proxy", withEndpoint(bHost, "10.1.1.1"),
			&PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{key(KindEndpoint, "ns-b", bHost): {}}}, aProxy, false},
		{"... and reach the unscoped one", withEndpoint(bHost, "10.1.1.1"),
			&PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{key(KindEndpoint, "ns-b", bHost): {}}}, bProxy, true},
		{"endpoints of an imported service reach the scoped proxy", withEndpoint("a.ns-a.svc.cluster.local", "10.1.1.1"),
			&PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{key(KindEndpoint, "ns-a", "a.ns-a.svc.cluster.local"): {}}}, aProxy, true},
		{"an endpoint at the proxy's own address reaches it whatever its scope", withEndpoint(bHost, "10.9.9.9"),
			&PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{key(KindEndpoint, "ns-b", bHost): {}}}, aProxy, true},
		{"a removed service the proxy saw reaches it", prev.Apply(2, SnapshotDelta{Services: map[string]*Service{"a.ns-a.svc.cluster.local": nil}}),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(KindService, "ns-a", "a.ns-a.svc.cluster.local"): {}}}, aProxy, true},
		{"a DestinationRule of an unimported host skips", withConfigs(scopeDR("ns-b", "dr-b", "b", "*")),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(istioconfig.KindDestinationRule, "ns-b", "dr-b"): {}}}, aProxy, false},
		{"... and reaches a proxy that sees the host", withConfigs(scopeDR("ns-b", "dr-b", "b", "*")),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(istioconfig.KindDestinationRule, "ns-b", "dr-b"): {}}}, bProxy, true},
		{"a DestinationRule no longer exported still reaches the proxy that had it", withConfigs(scopeDR("ns-b", "dr-b", "b", ".")),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(istioconfig.KindDestinationRule, "ns-b", "dr-b"): {}}}, proxyIn("ns-c", nil), true},
		{"a VirtualService outside the egress hosts skips", withConfigs(scopeVS("ns-b", "vs-b", nil, "b", "b2")),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(istioconfig.KindVirtualService, "ns-b", "vs-b"): {}}}, aProxy, false},
		{"a delegate's change reaches the proxies that see its root", withConfigs(delegating, delegate),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{delegate.Key(): {}}}, proxyIn("ns-d", nil), true},
		{"... not those that do not", withConfigs(delegating, delegate),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{delegate.Key(): {}}}, aProxy, false},
		{"the applied Sidecar's change reaches its proxies", withConfigs(scopeSidecar("ns-a", "default", nil, t0, "./*", "ns-b/*")),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{scA.Key(): {}}}, aProxy, true},
		{"... not the proxies of other namespaces", withConfigs(scopeSidecar("ns-a", "default", nil, t0, "./*", "ns-b/*")),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{scA.Key(): {}}}, bProxy, false},
		{"a new Sidecar selecting the proxy changes its view", withConfigs(scopeSidecar("ns-b", "new", nil, t0, "./*")),
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(istioconfig.KindSidecar, "ns-b", "new"): {}}}, bProxy, true},
		{"a Gateway change skips sidecars", prev,
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(istioconfig.KindGateway, "ns-a", "gw"): {}}}, aProxy, false},
		{"... and reaches routers", prev,
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key(istioconfig.KindGateway, "ns-a", "gw"): {}}}, &Proxy{Type: Router, Namespace: "ns-a"}, true},
		{"an unknown kind reaches everyone", prev,
			&PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key("EnvoyFilter", "ns-b", "f"): {}}}, aProxy, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := NewChangeSet(prev, tt.next, tt.req)
			got := ch.Affects(prev.ScopeFor(tt.proxy), tt.next.ScopeFor(tt.proxy))
			for _, ip := range tt.proxy.IPAddresses {
				got = got || ch.TouchesIP(ip)
			}
			if got != tt.want {
				t.Errorf("needs push = %v, want %v", got, tt.want)
			}
		})
	}
	if ch := NewChangeSet(nil, prev, &PushRequest{}); !ch.Everything {
		t.Error("the first snapshot does not reach everyone")
	}
}

// Scopes are shared per namespace unless a Sidecar there selects workloads by labels.
func TestScopeForMemo(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := scopeMesh(scopeSidecar("ns-a", "default", nil, t0, "./*"), scopeSidecar("ns-a", "wide", map[string]string{"app": "x"}, t0, "*/*"),
		scopeSidecar("ns-b", "default", nil, t0, "./*"))
	x, y := s.ScopeFor(proxyIn("ns-a", map[string]string{"app": "x"})), s.ScopeFor(proxyIn("ns-a", map[string]string{"app": "y"}))
	if x.Key() == y.Key() {
		t.Errorf("ns-a proxies with different labels share the scope %q", x.Key())
	}
	if again := s.ScopeFor(proxyIn("ns-a", map[string]string{"app": "x"})); again.Key() != x.Key() {
		t.Errorf("the same proxy got %q, then %q", x.Key(), again.Key())
	}
	b1, b2 := s.ScopeFor(proxyIn("ns-b", map[string]string{"app": "x"})), s.ScopeFor(proxyIn("ns-b", nil))
	if b1 != b2 {
		t.Error("ns-b proxies (no selector there) do not share one scope")
	}
	if r := s.ScopeFor(&Proxy{Type: Router, Namespace: "ns-b"}); r == b1 || r.Sidecar != nil {
		t.Errorf("a router shares the sidecars' scope or has a Sidecar: %+v", r)
	}
}

// Each port comes from the egress listener that holds it, the rest from the catch-all one
// (istiod's GetEgressListenerForRDS); the scope itself pools every listener (clusters).
func TestScopeEgress(t *testing.T) {
	alpha, beta := scopeSvc("alpha", "ns-a"), scopeSvc("beta", "ns-a")
	alpha.Ports = append(alpha.Ports, Port{Name: "http-b", Number: 81, Protocol: ProtocolHTTP})
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "ns-a"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"ns-a/alpha.ns-a.svc.cluster.local"}},
			{Hosts: []string{"./*", "ns-b/*"}},
		}}}
	vs := scopeVS("ns-b", "beta", nil, "beta.ns-a.svc.cluster.local")
	s := NewSnapshot(1, SnapshotInput{Services: []*Service{alpha, beta}, Configs: []*istioconfig.Config{sidecar, vs}})
	sc := s.ScopeFor(proxyIn("ns-a", nil))
	if !sc.HoldsPort(80) || sc.HoldsPort(81) || sc.HoldsPort(0) {
		t.Errorf("HoldsPort(80, 81, 0) = %v, %v, %v; want true, false, false", sc.HoldsPort(80), sc.HoldsPort(81), sc.HoldsPort(0))
	}
	if p, ok := sc.EgressProtocol(80); p != ProtocolHTTP || !ok {
		t.Errorf("EgressProtocol(80) = %q, %v; want HTTP, true", p, ok)
	}
	if _, ok := sc.EgressProtocol(81); ok {
		t.Error("EgressProtocol(81): no egress listener holds 81")
	}
	checks := []struct {
		name string
		got  bool
		want bool
	}{
		{"the scope pools listeners: beta on 80", sc.SeesPort(beta, 80), true},
		{"port 80's listener imports alpha there", sc.Egress(80).SeesPort(alpha, 80), true},
		{"port 80's listener does not import beta", sc.Egress(80).SeesPort(beta, 80), false},
		{"port 80's listener does not see the catch-all's VirtualService", sc.Egress(80).SeesVirtualService(vs), false},
		{"port 81 comes from the catch-all", sc.Egress(81).SeesPort(alpha, 81), true},
		{"the catch-all sees its VirtualService", sc.CatchAll().SeesVirtualService(vs), true},
		{"the catch-all imports beta on 80", sc.CatchAll().SeesPort(beta, 80), true},
		{"a listener's scope is its own Egress", sc.Egress(80).Egress(81) == sc.Egress(80), true},
		{"the scope keeps its key", sc.Egress(80).Key() == sc.Key(), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	// Without a catch-all listener, a port no listener holds imports nothing.
	only := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "ns-a"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"./*"}}}}}
	sc = NewSnapshot(1, SnapshotInput{Services: []*Service{alpha, beta}, Configs: []*istioconfig.Config{only}}).ScopeFor(proxyIn("ns-a", nil))
	if sc.Egress(81).SeesPort(alpha, 81) || sc.CatchAll().SeesService(alpha) || sc.CatchAll() == nil {
		t.Error("with no catch-all listener, port 81 should import nothing (and CatchAll be a scope that sees nothing)")
	}
	// Without a Sidecar, every port comes from the scope itself.
	sc = NewSnapshot(1, SnapshotInput{Services: []*Service{alpha, beta}}).ScopeFor(proxyIn("ns-a", nil))
	if sc.Egress(80) != sc || sc.CatchAll() != sc || sc.HoldsPort(80) {
		t.Error("without a Sidecar Egress and CatchAll should be the scope and no port held")
	}
}

// Services are ordered as istiod iterates them: exported by name before public, then by
// creation time, name (a ServiceEntry's host, a Kubernetes Service's name) and namespace; an
// egress listener of exact hosts by creation time alone.
func TestCompareServices(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mk := func(host, ns string, created time.Time, exportTo ...string) *Service {
		return &Service{Hostname: host, Namespace: ns, CreationTime: created, ExportTo: exportTo}
	}
	older, newer := mk("z.example", "n", t0), mk("a.example", "n", t0.Add(time.Second))
	private := mk("b.example", "n", t0.Add(time.Hour), ".")
	kube := mk("a.zz.svc.cluster.local", "zz", t0)
	kube.Source = istioconfig.Key{Kind: KindService, Name: "a", Namespace: "zz"}
	var none *Scope
	exact := &Scope{exact: true}
	tests := []struct {
		name string
		sc   *Scope
		a, b *Service
		want int
	}{
		{"older first, whatever the name", none, older, newer, -1},
		{"exported by name before public", none, private, older, -1},
		{"exact hosts: creation time alone", exact, older, private, -1},
		{"same time: by name (a Kubernetes Service's own name)", none, kube, older, -1},
		{"same time and name: by namespace", none, mk("h", "a", t0), mk("h", "b", t0), -1},
		{"equal", none, older, older, 0},
	}
	for _, tt := range tests {
		if got := tt.sc.CompareServices(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
		if got := tt.sc.CompareServices(tt.b, tt.a); got != -tt.want {
			t.Errorf("%s (swapped): got %d, want %d", tt.name, got, -tt.want)
		}
	}
}

// The destinations of the VirtualServices an egress listener selects are imported too (their
// clusters), on the ports they name (every port for a destination without one), or the
// listener's port; a destination hidden from the namespace is not. They get no listener.
func TestScopeVirtualServiceDestinations(t *testing.T) {
	far := &Service{Hostname: "far.ns-c.svc.cluster.local", Namespace: "ns-c", Ports: []Port{
		{Name: "http", Number: 80, Protocol: ProtocolHTTP}, {Name: "http-b", Number: 81, Protocol: ProtocolHTTP}}}
	all := &Service{Hostname: "all.ns-c.svc.cluster.local", Namespace: "ns-c", Ports: far.Ports}
	hidden := &Service{Hostname: "hidden.ns-c.svc.cluster.local", Namespace: "ns-c", Ports: far.Ports, ExportTo: []string{"."}}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "a", Namespace: "ns-a"},
		Spec: &networking.VirtualService{Hosts: []string{"a"}, Http: []*networking.HTTPRoute{
			{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "far.ns-c.svc.cluster.local", Port: &networking.PortSelector{Number: 81}}}}},
			{Mirror: &networking.Destination{Host: "all.ns-c.svc.cluster.local"}, Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "hidden.ns-c.svc.cluster.local"}}}},
		}}}
	sidecar := func(egress ...*networking.IstioEgressListener) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "ns-a"},
			Spec: &networking.Sidecar{Egress: egress}}
	}
	catchAll := &networking.IstioEgressListener{Hosts: []string{"./*"}}
	ported := &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"./*"}}
	svcs := []*Service{scopeSvc("a", "ns-a"), far, all, hidden}

	sc := NewSnapshot(1, SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{vs, sidecar(catchAll)}}).ScopeFor(proxyIn("ns-a", nil))
	for _, c := range []struct {
		name      string
		got, want bool
	}{
		{"the destination's port", sc.SeesPort(far, 81), true},
		{"not its other port", sc.SeesPort(far, 80), false},
		{"a mirror without a port: every port", sc.SeesPort(all, 80) && sc.SeesPort(all, 81), true},
		{"a destination not exported to the namespace", sc.SeesService(hidden), false},
		{"no listener for it", sc.CatchAll().SeesService(far), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	// An egress listener with a port imports that port of its VirtualServices' destinations.
	sc = NewSnapshot(1, SnapshotInput{Services: svcs, Configs: []*istioconfig.Config{vs, sidecar(ported)}}).ScopeFor(proxyIn("ns-a", nil))
	if !sc.SeesPort(far, 80) || sc.SeesPort(far, 81) || !sc.SeesPort(all, 80) || sc.SeesPort(all, 81) {
		t.Errorf("with an egress port 80: far 80/81 %v/%v, all 80/81 %v/%v; want true/false, true/false",
			sc.SeesPort(far, 80), sc.SeesPort(far, 81), sc.SeesPort(all, 80), sc.SeesPort(all, 81))
	}
}
