package gen

import (
	"slices"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestGatewayPortTranslation: a router listens on the target port of its own service's port
// that a Gateway server names, as istiod resolves it: the oldest service of the router's
// namespace with an endpoint at its address decides, services of other namespaces do not
// count, a service labelled experimental.istio.io/disable-gateway-port-translation is passed
// over, a Kubernetes Service or a ServiceEntry (the networking.istio.io label of the same name
// is not istiod's and counts for nothing), and an HTTPS server's route configuration keeps the
// server's port in its name.
func TestGatewayPortTranslation(t *testing.T) {
	const routerIP = "100.64.0.1" // routerProxy's address
	old, young := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	svc := func(host, ns string, created time.Time, labels map[string]string, fromSE bool, ports ...model.Port) *model.Service {
		s := &model.Service{Hostname: host, Namespace: ns, CreationTime: created, Labels: labels, Ports: ports}
		if fromSE {
			s.Source = istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: host, Namespace: ns}
		}
		return s
	}
	port := func(name string, n uint32, p model.Protocol) model.Port {
		return model.Port{Name: name, Number: n, Protocol: p}
	}
	at := func(s *model.Service, targets map[string]uint32) []*model.Endpoint {
		return []*model.Endpoint{{Service: s.Hostname, Address: routerIP, Ports: targets, Weight: 1, Health: model.Healthy}}
	}
	off := map[string]string{DisableGatewayPortTranslationLabel: "true"}
	front := svc("front.istio-system.svc.cluster.local", "istio-system", young, nil, false, port("http", 80, model.ProtocolHTTP), port("https", 443, model.ProtocolHTTPS))
	older := svc("older.istio-system.svc.cluster.local", "istio-system", old, nil, false, port("http-alt", 80, model.ProtocolHTTP))
	elsewhere := svc("front.other.svc.cluster.local", "other", old, nil, false, port("tcp", 9000, model.ProtocolTCP))
	optedOut := svc("opted.istio-system.svc.cluster.local", "istio-system", old, off, false, port("tcp", 9100, model.ProtocolTCP))
	optedOutSE := svc("opted-se.istio-system.svc.cluster.local", "istio-system", old, off, true, port("tcp", 9200, model.ProtocolTCP))
	notIstiods := svc("legacy.istio-system.svc.cluster.local", "istio-system", old, map[string]string{"networking.istio.io/disable-gateway-port-translation": "true"}, false, port("tcp", 9300, model.ProtocolTCP))
	web := &model.Service{Hostname: "web.apps.svc.cluster.local", Namespace: "apps", Addresses: []string{"10.96.6.1"}, Ports: []model.Port{port("http", 80, model.ProtocolHTTP)}}
	endpoints := map[string][]*model.Endpoint{
		front.Hostname:      at(front, map[string]uint32{"http": 8080, "https": 8443}),
		older.Hostname:      at(older, map[string]uint32{"http-alt": 8081}),
		elsewhere.Hostname:  at(elsewhere, map[string]uint32{"tcp": 9001}),
		optedOut.Hostname:   at(optedOut, map[string]uint32{"tcp": 9101}),
		optedOutSE.Hostname: at(optedOutSE, map[string]uint32{"tcp": 9201}),
		notIstiods.Hostname: at(notIstiods, map[string]uint32{"tcp": 9301}),
	}
	https := server(443, "HTTPS", "*/www.example.com")
	https.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "www-cert"}
	gw := gwConfig("edge", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{
		server(80, "HTTP", "*/www.example.com"), https, server(9000, "TCP", "*"), server(9100, "TCP", "*"), server(9200, "TCP", "*"), server(9300, "TCP", "*"),
	}})
	vs := vsConfig("www", "apps", &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"istio-system/edge"},
		Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: gwDest(web.Hostname, 80, "")}}}},
		Tcp:  []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: gwDest(web.Hostname, 80, "")}}}}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{front, older, elsewhere, optedOut, optedOutSE, notIstiods, web}, Endpoints: endpoints,
		Configs: []*istioconfig.Config{gw, vs}})
	p := routerProxy("istio-system", ingressLabels)
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	// 80: the older service's 8081; 443: 8443; 9000: no service of istio-system; 9100: opted
	// out; 9200: a ServiceEntry opts out too; 9300: the networking.istio.io label does not.
	wantListeners := []string{"0.0.0.0_8081", "0.0.0.0_8443", "0.0.0.0_9000", "0.0.0.0_9100", "0.0.0.0_9200", "0.0.0.0_9301"}
	if got := names(g[ListenerType]); !slices.Equal(got, wantListeners) {
		t.Errorf("listeners %v, want %v", got, wantListeners)
	}
	wantRoutes := []string{"http.8081", "https.443.https-443.edge.istio-system"}
	if got := names(g[RouteType]); !slices.Equal(got, wantRoutes) {
		t.Errorf("route configurations %v, want %v", got, wantRoutes)
	}
	l, _ := find(g[ListenerType], "0.0.0.0_8443")
	for _, d := range []istioconfig.Key{ServiceKey(front), ServiceKey(older)} {
		if !slices.Contains(l.Deps, d) {
			t.Errorf("listener 0.0.0.0_8443 does not depend on %v (deps %v)", d, l.Deps)
		}
	}
}

// TestGatewayPortTranslationTargets: the services whose ports translate a router's server
// ports are its service targets as istiod's registries find them. A ServiceEntry counts when
// it is of the node's NAMESPACE, or of any namespace when the node sends none (its config
// namespace, from its DNS domain, plays no part); a Kubernetes Service when it is of the
// config namespace; and an endpoint that does not serve the port (its slice does not list it)
// is passed over for the next service.
func TestGatewayPortTranslationTargets(t *testing.T) {
	const routerIP = "100.64.0.1" // routerProxy's address
	old, young := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	entry := func(host, ns string, created time.Time, num uint32) *model.Service {
		return &model.Service{Hostname: host, Namespace: ns, CreationTime: created, Resolution: model.ResolutionStatic,
			Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: host, Namespace: ns},
			Ports:  []model.Port{{Name: "http-pier", Number: num, Protocol: model.ProtocolHTTP}}}
	}
	kubeSvc := func(host, ns string, created time.Time, num uint32) *model.Service {
		return &model.Service{Hostname: host, Namespace: ns, CreationTime: created,
			Source: istioconfig.Key{Kind: model.KindService, Name: host, Namespace: ns},
			Ports:  []model.Port{{Name: "http-pier", Number: num, Protocol: model.ProtocolHTTP}}}
	}
	seAt := func(s *model.Service, target uint32) *model.Endpoint {
		return &model.Endpoint{Service: s.Hostname, Address: routerIP, Ports: map[string]uint32{"http-pier": target}, Weight: 1, Health: model.Healthy,
			Source: istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Name: "pier-gw", Namespace: s.Namespace}}
	}
	sliceAt := func(s *model.Service, ports map[string]uint32) *model.Endpoint {
		return &model.Endpoint{Service: s.Hostname, Address: routerIP, Ports: ports, OnlyListedPorts: true, Weight: 1, Health: model.Healthy,
			Source: istioconfig.Key{Kind: "EndpointSlice", Name: "slice", Namespace: s.Namespace}}
	}
	// Port 7100: a ServiceEntry of namespace dock only.
	dockSE := entry("pier.dock.example", "dock", old, 7100)
	// Port 7200: a Kubernetes Service of namespace dock only.
	dockKube := kubeSvc("pier.dock.svc.cluster.local", "dock", old, 7200)
	// Port 7300: an older Kubernetes Service of the gateway's namespace whose slice does not
	// list the port, then a younger one that serves it.
	mute := kubeSvc("mute.istio-system.svc.cluster.local", "istio-system", old, 7300)
	loud := kubeSvc("loud.istio-system.svc.cluster.local", "istio-system", young, 7300)
	services := []*model.Service{dockSE, dockKube, mute, loud}
	endpoints := map[string][]*model.Endpoint{
		dockSE.Hostname:   {seAt(dockSE, 7101)},
		dockKube.Hostname: {sliceAt(dockKube, map[string]uint32{"http-pier": 7201})},
		mute.Hostname:     {sliceAt(mute, map[string]uint32{"other": 9999})},
		loud.Hostname:     {sliceAt(loud, map[string]uint32{"http-pier": 7302})},
	}
	gw := gwConfig("pier", "istio-system", &networking.Gateway{Selector: ingressLabels, Servers: []*networking.Server{
		server(7100, "HTTP", "*/pier.example"), server(7200, "HTTP", "*/pier.example"), server(7300, "HTTP", "*/pier.example"),
	}})
	s := model.NewSnapshot(1, model.SnapshotInput{Services: services, Endpoints: endpoints, Configs: []*istioconfig.Config{gw}})

	for _, tc := range []struct {
		name string
		// nodeNS is the node's NAMESPACE; the config namespace is istio-system (its DNS domain).
		nodeNS string
		want   string // RouterPortKey
	}{
		{"node NAMESPACE istio-system: dock's entry is not the router's", "istio-system", "7300>7302"},
		{"no node NAMESPACE: an entry of any namespace is the router's", "", "7100>7101,7300>7302"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := routerProxy("istio-system", ingressLabels)
			p.NodeNamespace, p.Resolved = tc.nodeNS, true
			if got := RouterPortKey(p, s); got != tc.want {
				t.Errorf("RouterPortKey = %q, want %q", got, tc.want)
			}
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			want := []string{"0.0.0.0_7100", "0.0.0.0_7200", "0.0.0.0_7302"}
			if tc.nodeNS == "" {
				want = []string{"0.0.0.0_7101", "0.0.0.0_7200", "0.0.0.0_7302"}
			}
			if got := names(g[ListenerType]); !slices.Equal(got, want) {
				t.Errorf("listeners %v, want %v", got, want)
			}
		})
	}
}
