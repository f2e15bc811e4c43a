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
