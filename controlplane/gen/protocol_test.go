package gen

import (
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdslab/xdslab/controlplane/model"
)

// TestGRPCWebAndUDPPorts: a GRPC-WEB port's HTTP connection managers (outbound and inbound)
// carry the grpc_web filter before the others, as istiod's; a UDP port gets no outbound
// cluster, listener or route (istiod builds nothing for it), though an endpoint keeps its
// inbound chain (istiod's inbound treats it as TCP).
func TestGRPCWebAndUDPPorts(t *testing.T) {
	const host = "web.app.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "app", Addresses: []string{"10.96.0.10"}, Ports: []model.Port{
		{Name: "http", Number: 80, Protocol: model.ProtocolHTTP},
		{Name: "grpc-web", Number: 8082, Protocol: model.ProtocolGRPCWeb},
		{Name: "dns", Number: 53, Protocol: model.ProtocolUDP},
	}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: map[string][]*model.Endpoint{
		host: {{Service: host, Address: "10.1.0.5", Weight: 1, Health: model.Healthy}},
	}})
	p := sidecarProxy("10.1.0.5", "app")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	outbound := func(name string) []string {
		t.Helper()
		r, ok := find(g[ListenerType], name)
		if !ok {
			t.Fatalf("no listener %s", name)
		}
		names, _ := hcmFilters(t, r.Message.(*listenerv3.Listener).GetFilterChains()[0])
		return names
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"outbound GRPC-WEB", outbound("0.0.0.0_8082"), []string{grpcWebFilterName, faultFilterName, corsFilterName, routerFilterName}},
		{"outbound HTTP", outbound("0.0.0.0_80"), []string{faultFilterName, corsFilterName, routerFilterName}},
		{"inbound GRPC-WEB", func() []string {
			names, _ := hcmFilters(t, inboundChainFor(t, g, 8082, "raw_buffer"))
			return names
		}(), []string{grpcWebFilterName, faultFilterName, corsFilterName, routerFilterName}},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: HTTP filters %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	for typeURL, rs := range g {
		for _, r := range rs {
			if strings.HasPrefix(r.Name, "outbound|53|") || strings.HasSuffix(r.Name, "_53") || strings.HasSuffix(r.Name, ":53") {
				t.Errorf("%s %s generated for a UDP port", typeURL, r.Name)
			}
		}
	}
	inboundChainFor(t, g, 53, "raw_buffer") // fails the test when missing
}

// TestInboundRetryByProtocol: the inbound route of an HTTP or HTTP2 port retries a request
// reset before it reached the workload (reset-before-request, twice), as istiod's; a GRPC or
// GRPC-WEB port's does not (a stream does not replay well). HTTP2 is not gRPC.
func TestInboundRetryByProtocol(t *testing.T) {
	const host = "api.app.svc.cluster.local"
	svc := &model.Service{Hostname: host, Namespace: "app", Addresses: []string{"10.96.0.11"}, Ports: []model.Port{
		{Name: "http", Number: 80, Protocol: model.ProtocolHTTP},
		{Name: "h2", Number: 81, Protocol: model.ProtocolHTTP2},
		{Name: "grpc", Number: 82, Protocol: model.ProtocolGRPC},
		{Name: "grpc-web", Number: 83, Protocol: model.ProtocolGRPCWeb},
	}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: map[string][]*model.Endpoint{
		host: {{Service: host, Address: "10.1.0.6", Weight: 1, Health: model.Healthy}},
	}})
	p := sidecarProxy("10.1.0.6", "app")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	for port, want := range map[uint32]bool{80: true, 81: true, 82: false, 83: false} {
		_, h := hcmFilters(t, inboundChainFor(t, g, port, "raw_buffer"))
		rp := h.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetRetryPolicy()
		if got := rp.GetRetryOn() == "reset-before-request" && rp.GetNumRetries().GetValue() == 2; got != want {
			t.Errorf("inbound port %d: retry policy %v, want reset-before-request: %v", port, rp, want)
		}
	}
}
