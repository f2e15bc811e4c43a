package gen

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
)

type keyed struct {
	key   string
	bytes []byte
}

// keyedResources generates every resource of every type the way a client asks for them and
// returns, per type and name, the cache key and the marshalled bytes.
func keyedResources(t *testing.T, p *model.Proxy, s *model.Snapshot) map[string]map[string]keyed {
	t.Helper()
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]keyed{}
	for typeURL, rs := range g {
		out[typeURL] = map[string]keyed{}
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Name
		}
		keys := CacheKeys(typeURL, p, s, names)
		for i, r := range rs {
			if k, ok := CacheKey(typeURL, p, s, r.Name); k != keys[i] || ok != (k != "") {
				t.Fatalf("CacheKey(%s) = %q, %v; CacheKeys gave %q", r.Name, k, ok, keys[i])
			}
			b, err := Marshal(r.Message)
			if err != nil {
				t.Fatal(err)
			}
			out[typeURL][r.Name] = keyed{keys[i], b}
		}
	}
	return out
}

// compareKeys checks that equal keys mean equal bytes and returns, per type, how many
// resources share a key and how many changed key.
func compareKeys(t *testing.T, a, b map[string]map[string]keyed) (same, changed map[string]int) {
	t.Helper()
	same, changed = map[string]int{}, map[string]int{}
	for typeURL, ra := range a {
		for name, ka := range ra {
			kb, ok := b[typeURL][name]
			if !ok || ka.key == "" || kb.key == "" {
				continue
			}
			if ka.key != kb.key {
				changed[typeURL]++
				continue
			}
			same[typeURL]++
			if !bytes.Equal(ka.bytes, kb.bytes) {
				t.Errorf("%s %s: same key %q, different bytes", typeURL, name, ka.key)
			}
		}
	}
	return same, changed
}

func TestCacheKeysAcrossProxies(t *testing.T) {
	s := buildTopology(120, 4).snapshot(1)
	// Two sidecars in different namespaces share every outbound cluster and assignment, and no
	// route configuration (short names differ).
	a := keyedResources(t, sidecarProxy("10.0.0.1", "ns-0"), s)
	b := keyedResources(t, sidecarProxy("10.0.0.2", "ns-3"), s)
	same, changed := compareKeys(t, a, b)
	if same[EndpointType] != len(a[EndpointType]) || same[ClusterType] == 0 || changed[ClusterType] != 0 {
		t.Errorf("sidecars: same %v changed %v (EDS total %d)", same, changed, len(a[EndpointType]))
	}
	if same[RouteType] != 0 || changed[RouteType] != len(a[RouteType]) {
		t.Errorf("routes of sidecars in different namespaces must not share keys: same %v changed %v", same, changed)
	}
	// Same namespace, other IP: routes shared too.
	c := keyedResources(t, sidecarProxy("10.0.0.3", "ns-0"), s)
	if same, _ := compareKeys(t, a, c); same[RouteType] != len(a[RouteType]) {
		t.Errorf("same-namespace sidecars should share route keys: %v", same)
	}
	// gRPC clients share with each other, and never reuse a sidecar's CDS key.
	g1 := keyedResources(t, grpcProxy("ns-1"), s)
	g2 := keyedResources(t, grpcProxy("ns-1"), s)
	if same, changed := compareKeys(t, g1, g2); len(changed) != 0 || same[ListenerType] != len(g1[ListenerType]) {
		t.Errorf("grpc: same %v changed %v", same, changed)
	}
	for name, k := range g1[ClusterType] {
		if a[ClusterType][name].key == k.key {
			t.Errorf("%s: grpc and sidecar share CDS key %q", name, k.key)
		}
	}
}

func TestCacheKeysAcrossSnapshots(t *testing.T) {
	top := buildTopology(60, 4)
	s1 := top.snapshot(1)
	p := sidecarProxy("10.0.0.1", "ns-0")
	k1 := keyedResources(t, p, s1)

	// An endpoint change of one host changes only that host's assignments.
	eps := append([]*model.Endpoint(nil), top.endpoints[host(1)]...)
	moved := *eps[0]
	moved.Address = "10.99.0.1"
	eps[0] = &moved
	s2 := s1.WithEndpoints(2, map[string][]*model.Endpoint{host(1): eps})
	k2 := keyedResources(t, p, s2)
	same, changed := compareKeys(t, k1, k2)
	for name, k := range k1[EndpointType] {
		if strings.Contains(name, "|"+host(1)) != (k.key != k2[EndpointType][name].key) {
			t.Errorf("EDS %s: key changed = %v", name, k.key != k2[EndpointType][name].key)
		}
	}
	if changed[ClusterType] != 0 || changed[RouteType] != 0 || same[EndpointType] == 0 {
		t.Errorf("endpoint change: same %v changed %v", same, changed)
	}

	// A DestinationRule update (new ResourceVersion) changes the host's clusters and its subset
	// assignments, not its default assignment.
	configs := append([]*model.Config(nil), top.configs...)
	for i, c := range configs {
		if c.Kind == model.KindDestinationRule && c.Name == "dr-0" {
			nc := *c
			nc.ResourceVersion = "2"
			dr := c.Spec.(*networking.DestinationRule)
			nc.Spec = &networking.DestinationRule{Host: dr.Host, Subsets: dr.Subsets[:1]}
			configs[i] = &nc
		}
	}
	s3 := model.NewSnapshot(3, model.SnapshotInput{Services: top.services, Endpoints: top.endpoints, Configs: configs})
	k3 := keyedResources(t, p, s3)
	compareKeys(t, k1, k3) // equal keys still mean equal bytes
	def := "outbound|80||" + host(0)
	if k1[ClusterType][def].key == k3[ClusterType][def].key {
		t.Errorf("CDS %s: key unchanged after its DestinationRule changed", def)
	}
	if _, ok := k3[ClusterType]["outbound|80|v2|"+host(0)]; ok {
		t.Errorf("removed subset v2 still generated")
	}
	sub := "outbound|80|v1|" + host(0)
	ka, _ := CacheKey(EndpointType, p, s1, sub)
	kb, _ := CacheKey(EndpointType, p, s1.WithEndpoints(4, nil), sub)
	if ka != kb {
		t.Errorf("EDS key changed without a change: %q vs %q", ka, kb)
	}

	// A config without ResourceVersion falls back to the snapshot-wide config generation.
	c := *configs[0]
	c.ResourceVersion = ""
	configs[0] = &c
	s5 := model.NewSnapshot(5, model.SnapshotInput{Services: top.services, Endpoints: top.endpoints, Configs: configs})
	s6 := model.NewSnapshot(6, model.SnapshotInput{Services: top.services, Endpoints: top.endpoints, Configs: configs})
	name := "outbound|80||" + host(0)
	if c.Name != "dr-0" {
		t.Fatalf("topology changed: first config is %s", c.Name)
	}
	k5, _ := CacheKey(ClusterType, p, s5, name)
	k6, _ := CacheKey(ClusterType, p, s6, name)
	if k5 == k6 || !strings.Contains(k5, "@c5") {
		t.Errorf("keys %q and %q: want the ConfigGen fallback", k5, k6)
	}
}

func TestCacheKeyNotCacheable(t *testing.T) {
	s := edsMesh(shopEP("10.0.0.1", nil, model.Locality{}, 1, model.Healthy))
	p := sidecarProxy("10.0.0.1", "store")
	for _, tc := range []struct{ typeURL, name string }{
		{ClusterType, "inbound|80||"},
		{ListenerType, VirtualInboundListener},
		{ListenerType, "0.0.0.0_80"},
		{"type.googleapis.com/unknown", "x"},
	} {
		if k, ok := CacheKey(tc.typeURL, p, s, tc.name); ok {
			t.Errorf("%s %s: cacheable with key %q", tc.typeURL, tc.name, k)
		}
	}
}

func TestIndexScanMatchesMaps(t *testing.T) {
	top := buildTopology(200, 2)
	// Add a wildcard DR and VS and a DR that loses to the service-namespace one.
	top.configs = append(top.configs,
		&model.Config{Meta: model.Meta{Kind: model.KindDestinationRule, Name: "wild", Namespace: "ns-2"}, Spec: &networking.DestinationRule{Host: "*.ns-2.svc.cluster.local"}},
		&model.Config{Meta: model.Meta{Kind: model.KindDestinationRule, Name: "other", Namespace: "ns-9"}, Spec: &networking.DestinationRule{Host: host(0)}},
		&model.Config{Meta: model.Meta{Kind: model.KindVirtualService, Name: "wild", Namespace: "ns-3"}, Spec: &networking.VirtualService{Hosts: []string{"*.ns-3.svc.cluster.local"}}},
		&model.Config{Meta: model.Meta{Kind: model.KindDestinationRule, Name: "broken", Namespace: "ns-1"}, Spec: &networking.VirtualService{}},
	)
	s := top.snapshot(1)
	built := newIndex(s)
	built.build()
	for _, svc := range s.Services() {
		scan := newIndex(s)
		if got, want := scan.destinationRule(svc.Hostname), built.destinationRule(svc.Hostname); got != want {
			t.Errorf("%s: scan DR %v, map DR %v", svc.Hostname, got, want)
		}
		if got, want := scan.virtualServices(svc.Hostname), built.virtualServices(svc.Hostname); !slices.Equal(got, want) {
			t.Errorf("%s: scan VS %v, map VS %v", svc.Hostname, got, want)
		}
	}
	if dr := built.destinationRule(host(0)); dr == nil || dr.Name != "dr-0" {
		t.Errorf("DR for %s: %v, want dr-0 from the service's namespace", host(0), dr)
	}
	if dr := built.destinationRule(host(2)); dr == nil || dr.Name != "wild" {
		t.Errorf("DR for %s: %v, want the wildcard one", host(2), dr)
	}
}

func TestKeyScope(t *testing.T) {
	s := buildTopology(60, 3).snapshot(1)
	a, b := sidecarProxy("10.0.0.1", "ns-0"), sidecarProxy("10.0.0.7", "ns-0")
	c := sidecarProxy("10.0.0.1", "ns-4")
	g := grpcProxy("ns-0")
	for _, typeURL := range Types() {
		ga, err := generateAll(t, a, s)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range ga[typeURL] {
			names = append(names, r.Name)
		}
		if KeyScope(typeURL, a) != KeyScope(typeURL, b) {
			t.Errorf("%s: same-namespace sidecars have different scopes", typeURL)
		}
		if !slices.Equal(CacheKeys(typeURL, a, s, names), CacheKeys(typeURL, b, s, names)) {
			t.Errorf("%s: equal scopes, different keys", typeURL)
		}
		if typeURL == RouteType && KeyScope(typeURL, a) == KeyScope(typeURL, c) {
			t.Errorf("routes: sidecars in different namespaces share a scope")
		}
		if typeURL != EndpointType && KeyScope(typeURL, a) == KeyScope(typeURL, g) {
			t.Errorf("%s: sidecar and grpc share a scope", typeURL)
		}
	}
}

func TestNilInputs(t *testing.T) {
	s := routeMesh()
	for _, typeURL := range Types() {
		if _, err := ForType(typeURL, nil).Generate(nil, nil, nil); err == nil {
			t.Errorf("%s: nil snapshot accepted", typeURL)
		}
		rs, err := ForType(typeURL, nil).Generate(nil, s, nil)
		if err != nil || len(rs) == 0 {
			t.Errorf("%s with a nil proxy: %d resources, %v", typeURL, len(rs), err)
		}
	}
}

func TestNamesMatchWildcardGenerate(t *testing.T) {
	top := buildTopology(150, 3)
	top.configs = append(top.configs, &model.Config{Meta: model.Meta{Kind: model.KindDestinationRule, Name: "dup", Namespace: "ns-1"},
		Spec: &networking.DestinationRule{Host: host(1), Subsets: []*networking.Subset{{Name: "a"}, {Name: "a"}, {Name: "b|c"}}}})
	s := top.snapshot(1)
	for _, p := range []*model.Proxy{sidecarProxy("10.0.0.1", "ns-0"), grpcProxy("ns-2")} {
		for _, typeURL := range Types() {
			rs, _ := ForType(typeURL, p).Generate(p, s, nil)
			var want []string
			for _, r := range rs {
				want = append(want, r.Name)
			}
			if got := Names(typeURL, p, s); !slices.Equal(got, want) {
				t.Errorf("%s %s: Names has %d names, Generate %d", p.Generator, typeURL, len(got), len(want))
			}
		}
	}
}
