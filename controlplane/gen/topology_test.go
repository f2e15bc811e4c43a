package gen

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// topology is a deterministic mesh for tests and benchmarks: n services over 10 namespaces with
// mixed protocols, VIP and VIP-less services, DNS and passthrough services, endpoints spread over
// localities, a DestinationRule on every third service and a VirtualService on every fourth.
type topology struct {
	services  []*model.Service
	endpoints map[string][]*model.Endpoint
	configs   []*istioconfig.Config
}

func host(i int) string { return fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i, i%10) }

func buildTopology(n, endpointsPerService int) *topology {
	t := &topology{endpoints: map[string][]*model.Endpoint{}}
	protos := []model.Protocol{model.ProtocolHTTP, model.ProtocolGRPC, model.ProtocolTCP, model.ProtocolHTTP2, model.ProtocolHTTP}
	for i := range n {
		ns := fmt.Sprintf("ns-%d", i%10)
		svc := &model.Service{
			Hostname:        host(i),
			Namespace:       ns,
			Labels:          map[string]string{"app": fmt.Sprintf("svc-%d", i)},
			ServiceAccounts: []string{"sa-" + ns},
			Source:          istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: fmt.Sprintf("svc-%d", i), Namespace: ns},
		}
		p := protos[i%len(protos)]
		switch p {
		case model.ProtocolHTTP:
			svc.Ports = []model.Port{{Name: "http", Number: 80, Protocol: p}, {Name: "http-alt", Number: 8080, Protocol: p}}
		case model.ProtocolGRPC:
			svc.Ports = []model.Port{{Name: "grpc", Number: 9090, Protocol: p}}
		case model.ProtocolHTTP2:
			svc.Ports = []model.Port{{Name: "h2", Number: 8443, Protocol: p}}
		case model.ProtocolTCP:
			svc.Ports = []model.Port{{Name: "tcp", Number: uint32(3306 + i%3), Protocol: p}}
		}
		if i%7 != 3 {
			svc.Addresses = []string{fmt.Sprintf("240.240.%d.%d", i/250, i%250+1)}
		}
		switch {
		case i%29 == 5:
			svc.Resolution = model.ResolutionPassthrough
		case i%13 == 4:
			svc.Resolution = model.ResolutionDNS
		}
		t.services = append(t.services, svc)
		if svc.Resolution == model.ResolutionPassthrough {
			continue
		}
		var eps []*model.Endpoint
		for j := range endpointsPerService {
			ep := &model.Endpoint{
				Service:        svc.Hostname,
				Address:        fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+1),
				Labels:         map[string]string{"app": svc.Labels["app"], "version": fmt.Sprintf("v%d", j%2+1)},
				Locality:       model.Locality{Region: fmt.Sprintf("region-%d", j%2), Zone: fmt.Sprintf("zone-%d", j%3)},
				Weight:         uint32(j % 3), // includes 0: the generator must make it 1
				ServiceAccount: "sa-" + ns,
				Health:         model.HealthStatus(j % 5 / 3), // mostly healthy
				Source:         svc.Source,
			}
			if j%4 == 1 {
				ep.Locality.SubZone = "sz-a"
			}
			if svc.Resolution == model.ResolutionDNS && j%2 == 0 {
				ep.Address = fmt.Sprintf("vm-%d-%d.example.com", i, j)
			}
			if i%5 == 0 {
				ep.Ports = map[string]uint32{svc.Ports[0].Name: 18000 + uint32(i%100)}
			}
			eps = append(eps, ep)
		}
		t.endpoints[svc.Hostname] = eps
		if i%3 == 0 {
			t.configs = append(t.configs, destinationRule(i, ns))
		}
		if i%4 == 0 && p.IsHTTP() {
			t.configs = append(t.configs, virtualService(i, ns, svc.Ports[0].Number))
		}
	}
	return t
}

func (t *topology) snapshot(seq uint64) *model.Snapshot {
	return model.NewSnapshot(seq, model.SnapshotInput{Services: t.services, Endpoints: t.endpoints, Configs: t.configs})
}

func destinationRule(i int, ns string) *istioconfig.Config {
	lbs := []networking.LoadBalancerSettings_SimpleLB{
		networking.LoadBalancerSettings_ROUND_ROBIN, networking.LoadBalancerSettings_LEAST_REQUEST,
		networking.LoadBalancerSettings_RANDOM, networking.LoadBalancerSettings_LEAST_CONN,
	}
	dr := &networking.DestinationRule{
		Host: fmt.Sprintf("svc-%d", i), // short name, resolved in ns
		TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: lbs[i%len(lbs)]}},
			ConnectionPool: &networking.ConnectionPoolSettings{
				Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: int32(100 + i), ConnectTimeout: durationpb.New(2 * time.Second)},
				Http: &networking.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: 64, Http2MaxRequests: 1000, MaxRetries: 3, MaxRequestsPerConnection: int32(i%2) * 10, IdleTimeout: durationpb.New(time.Minute)},
			},
			OutlierDetection: &networking.OutlierDetection{
				Consecutive_5XxErrors: wrapperspb.UInt32(5), Interval: durationpb.New(10 * time.Second),
				BaseEjectionTime: durationpb.New(30 * time.Second), MaxEjectionPercent: 50, MinHealthPercent: 20,
			},
		},
		Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}},
			}},
		},
	}
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: fmt.Sprintf("dr-%d", i), Namespace: ns, ResourceVersion: "1"}, Spec: dr}
}

func virtualService(i int, ns string, port uint32) *istioconfig.Config {
	h := fmt.Sprintf("svc-%d", i)
	vs := &networking.VirtualService{
		Hosts: []string{h},
		Http: []*networking.HTTPRoute{
			{
				Name: "canary",
				Match: []*networking.HTTPMatchRequest{
					{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/api"}},
						Headers: map[string]*networking.StringMatch{"x-canary": {MatchType: &networking.StringMatch_Exact{Exact: "true"}}}},
					{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "/v[0-9]+/items/.*"}}, Port: port},
				},
				Route: []*networking.HTTPRouteDestination{
					{Destination: &networking.Destination{Host: h, Subset: "v2"}, Weight: 90},
					{Destination: &networking.Destination{Host: h, Subset: "v1"}, Weight: 10},
				},
				Timeout: durationpb.New(3 * time.Second),
				Retries: &networking.HTTPRetry{Attempts: 3, PerTryTimeout: durationpb.New(time.Second), RetryOn: "5xx,reset"},
			},
			{
				Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: "/healthz"}}}},
				Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: h}}},
			},
			{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: h, Subset: "v1"}}}},
		},
	}
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: fmt.Sprintf("vs-%d", i), Namespace: ns, ResourceVersion: "1"}, Spec: vs}
}

func sidecarProxy(ip, ns string) *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{ip}, ID: "pod-0." + ns, Namespace: ns, DNSDomain: ns + ".svc.cluster.local", Labels: map[string]string{"app": "client"}}
}

func grpcProxy(ns string) *model.Proxy {
	p := sidecarProxy("10.200.0.1", ns)
	p.Generator = model.GeneratorGRPC
	return p
}
