package gen

import (
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestHeadless checks what istiod makes of a headless Kubernetes Service: a listener per
// endpoint (IP_PORT) for each port not served through HTTP — only for the endpoints that serve
// the port, not for the proxy's own address, none without endpoints — sniffed on a port
// without a protocol (its route configuration HOST:PORT); and, for its HTTP ports, its names
// with "*." on the port's route configuration.
func TestHeadless(t *testing.T) {
	const (
		hl    = "hl.app.svc.cluster.local"
		empty = "empty.app.svc.cluster.local"
	)
	kube := func(host string, ports ...model.Port) *model.Service {
		name, _, _ := strings.Cut(host, ".")
		return &model.Service{Hostname: host, Namespace: "app", Resolution: model.ResolutionPassthrough, Ports: ports,
			Source: istioconfig.Key{Kind: model.KindService, Name: name, Namespace: "app"}}
	}
	all := map[string]uint32{"http": 8080, "tcp-db": 5432, "db": 7000, "tls": 7443}
	ep := func(addr string, ports map[string]uint32) *model.Endpoint {
		return &model.Endpoint{Service: hl, Address: addr, Ports: ports, OnlyListedPorts: true, Weight: 1}
	}
	s := model.NewSnapshot(1, model.SnapshotInput{
		Services: []*model.Service{
			kube(hl, model.Port{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, model.Port{Name: "tcp-db", Number: 5432, Protocol: model.ProtocolTCP},
				model.Port{Name: "db", Number: 7000, Protocol: model.ProtocolUnknown}, model.Port{Name: "tls", Number: 7443, Protocol: model.ProtocolTLS}),
			kube(empty, model.Port{Name: "tcp", Number: 6000, Protocol: model.ProtocolTCP}),
		},
		Endpoints: map[string][]*model.Endpoint{hl: {
			ep("10.1.1.1", all),
			ep("10.1.1.2", map[string]uint32{"tcp-db": 5432, "db": 7000}),
			ep("10.250.0.9", all), // the proxy itself
		}},
	})
	p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.250.0.9"}, Namespace: "app", ID: "client.app"}
	rs, err := ForType(ListenerType, p).Generate(p, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]Resource{}
	for _, r := range rs {
		names = append(names, r.Name)
		byName[r.Name] = r
		if _, err := validateDeep(r.Message); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
	want := []string{"0.0.0.0_80", "10.1.1.1_5432", "10.1.1.1_7000", "10.1.1.1_7443", "10.1.1.2_5432", "10.1.1.2_7000", VirtualInboundListener, VirtualOutboundListener}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("listeners (-want +got)\n%s", diff)
	}
	if r := byName["10.1.1.2_5432"]; !slices.Contains(r.Deps, EndpointKey(s.Service(hl))) {
		t.Errorf("an endpoint's listener does not depend on the endpoints: %v", r.Deps)
	}
	if l, _ := byName["10.1.1.1_7000"].Message.(*listenerv3.Listener); l == nil || len(l.GetFilterChains()) == 0 ||
		!strings.Contains(l.GetFilterChains()[0].String(), HostPortName(hl, 7000)) {
		t.Errorf("10.1.1.1_7000 is not sniffed through route configuration %s: %v", HostPortName(hl, 7000), l)
	}

	routes, err := ForType(RouteType, p).Generate(p, s, []string{"80", HostPortName(hl, 7000)})
	if err != nil || len(routes) != 2 {
		t.Fatalf("routes: %d, %v", len(routes), err)
	}
	var domains []string
	for _, vh := range routes[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		if vh.GetName() == HostPortName(hl, 80) {
			domains = vh.GetDomains()
		}
	}
	wantDomains := []string{"hl.app.svc.cluster.local", "hl.app.svc.cluster.local:80", "hl", "hl:80", "hl.app", "hl.app:80", "hl.app.svc", "hl.app.svc:80",
		"*.hl.app.svc.cluster.local", "*.hl.app.svc.cluster.local:80", "*.hl", "*.hl:80", "*.hl.app", "*.hl.app:80", "*.hl.app.svc", "*.hl.app.svc:80"}
	if diff := cmp.Diff(wantDomains, domains); diff != "" {
		t.Errorf("route 80 domains of %s (-want +got)\n%s", hl, diff)
	}
	if rc := routes[1].Message.(*routev3.RouteConfiguration); rc.GetName() != HostPortName(hl, 7000) || len(rc.GetVirtualHosts()) != 1 {
		t.Errorf("sniffed route configuration: %v", rc)
	}
}

// TestNoneEntryListenersPerEndpoint checks what istiod makes of a ServiceEntry of resolution
// NONE without addresses: with a workloadSelector it is built as a headless Service (a
// listener per picked workload for each port not served through HTTP, none when the selector
// picks nothing, the 0.0.0.0 listener for an HTTP port); without one it keeps the port's
// 0.0.0.0 listener. Its names get no "*." domains (istiod adds those for Kubernetes only).
func TestNoneEntryListenersPerEndpoint(t *testing.T) {
	tcp := model.Port{Name: "tcp", Number: 7100, Protocol: model.ProtocolTCP}
	sniffed := model.Port{Name: "any", Number: 7101, Protocol: model.ProtocolUnknown}
	web := model.Port{Name: "http", Number: 7102, Protocol: model.ProtocolHTTP}
	entry := func(selector bool, ports ...model.Port) *model.Service {
		return &model.Service{Hostname: "vat.example.org", Namespace: "brew", Resolution: model.ResolutionPassthrough, Ports: ports,
			WorkloadSelector: selector, Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: "vat", Namespace: "brew"}}
	}
	ep := func(addr string) *model.Endpoint {
		return &model.Endpoint{Service: "vat.example.org", Address: addr, Weight: 1}
	}
	for _, tc := range []struct {
		name string
		svc  *model.Service
		eps  []*model.Endpoint
		want []string
	}{
		{"selector picks two", entry(true, tcp, sniffed, web), []*model.Endpoint{ep("10.7.0.1"), ep("10.7.0.2"), ep("10.250.0.9")},
			[]string{"0.0.0.0_7102", "10.7.0.1_7100", "10.7.0.1_7101", "10.7.0.2_7100", "10.7.0.2_7101"}},
		{"selector picks none", entry(true, tcp), nil, nil},
		{"selector picks only the proxy", entry(true, tcp), []*model.Endpoint{ep("10.250.0.9")}, nil},
		{"no selector", entry(false, tcp), nil, []string{"0.0.0.0_7100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := model.SnapshotInput{Services: []*model.Service{tc.svc}}
			if tc.eps != nil {
				in.Endpoints = map[string][]*model.Endpoint{"vat.example.org": tc.eps}
			}
			s := model.NewSnapshot(1, in)
			p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.250.0.9"}, Namespace: "brew", ID: "client.brew"}
			rs, err := ForType(ListenerType, p).Generate(p, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range rs {
				if _, err := validateDeep(r.Message); err != nil {
					t.Errorf("%s: %v", r.Name, err)
				}
				if r.Name == VirtualInboundListener || r.Name == VirtualOutboundListener {
					continue
				}
				names = append(names, r.Name)
				if r.Name != "0.0.0.0_7102" && r.Name != "0.0.0.0_7100" && !slices.Contains(r.Deps, EndpointKey(tc.svc)) {
					t.Errorf("%s does not depend on the endpoints: %v", r.Name, r.Deps)
				}
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("listeners (-want +got)\n%s", diff)
			}
		})
	}
	if !entry(true, tcp).EndpointsInListeners() || entry(true, web).EndpointsInListeners() {
		t.Error("EndpointsInListeners: want true for a selecting NONE entry's TCP port, false for an HTTP port only")
	}
	rs, err := ForType(RouteType, &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.250.0.9"}, Namespace: "brew", ID: "client.brew"}).Generate(
		&model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.250.0.9"}, Namespace: "brew", ID: "client.brew"},
		model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{entry(true, web)}, Endpoints: map[string][]*model.Endpoint{"vat.example.org": {ep("10.7.0.1")}}}),
		[]string{"7102"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("routes: %d, %v", len(rs), err)
	}
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			if strings.HasPrefix(d, "*.") {
				t.Errorf("virtual host %s has domain %s: istiod adds \"*.\" domains for Kubernetes Services only", vh.GetName(), d)
			}
		}
	}
}
