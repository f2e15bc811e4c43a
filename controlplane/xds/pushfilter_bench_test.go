package xds

import (
	"fmt"
	"testing"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// BenchmarkPushFilter measures the per-connection cost of deciding an endpoint push on the
// scale-10k shape: 2,000 services in 20 namespaces, a Sidecar per namespace importing itself
// and two others, 10,000 proxies: at addresses that are no endpoint (the fleet's default,
// 100.64.0.0/10), and at endpoints, where each proxy's labels are its workload's, looked up
// per push (model.WithWorkloadLabels): with the same labels on the node, and with other ones.
// Either way the workload's labels carry topology labels the node's lack, so the first push
// copies each proxy and later ones reuse that copy (no allocation).
func BenchmarkPushFilter(b *testing.B) {
	for _, mode := range []string{"no-endpoint", "at-endpoint-same-labels", "at-endpoint-other-labels"} {
		b.Run(mode, func(b *testing.B) { benchPushFilter(b, mode) })
	}
}

func benchPushFilter(b *testing.B, mode string) {
	atEndpoints := mode != "no-endpoint"
	const namespaces, services, proxies = 20, 2000, 10000
	in := model.SnapshotInput{Endpoints: map[string][]*model.Endpoint{}}
	var addrs, addrNS []string // the endpoints' addresses and namespaces
	for i := range services {
		ns := fmt.Sprintf("ns-%d", i%namespaces)
		host := fmt.Sprintf("svc-%d.%s.svc.cluster.local", i, ns)
		in.Services = append(in.Services, &model.Service{Hostname: host, Namespace: ns,
			Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}})
		for e := range proxies / services {
			ip := fmt.Sprintf("10.%d.%d.%d", i/250, i%250, e+1)
			in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, ip))
			addrs, addrNS = append(addrs, ip), append(addrNS, ns)
		}
	}
	for n := range namespaces {
		in.Configs = append(in.Configs, sidecarConfig(fmt.Sprintf("ns-%d", n), "./*",
			fmt.Sprintf("ns-%d/*", (n+1)%namespaces), fmt.Sprintf("ns-%d/*", (n+2)%namespaces)))
	}
	prev := model.NewSnapshot(1, in)
	host := "svc-7.ns-7.svc.cluster.local"
	next := prev.WithEndpoints(2, map[string][]*model.Endpoint{host: {endpoint(host, "10.99.0.1")}})
	req := &model.PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: host, Namespace: "ns-7"}: {}}}
	ps := make([]*model.Proxy, proxies)
	for i := range ps {
		ip, ns := fmt.Sprintf("100.64.%d.%d", i/250, i%250+1), fmt.Sprintf("ns-%d", i%namespaces)
		if atEndpoints {
			ip, ns = addrs[i], addrNS[i]
		}
		p, err := model.ParseProxy(sidecarNode(b, ip, ns, ""))
		if err != nil {
			b.Fatal(err)
		}
		if mode == "at-endpoint-same-labels" {
			p.Labels = map[string]string{"app": "x"} // the endpoints' (endpoint())
		}
		ps[i] = p
	}
	b.ReportAllocs()
	pushed := 0
	for b.Loop() {
		f := newPushFilter(&pushState{snap: prev}, next, req)
		pushed = 0
		for _, p := range ps {
			if need, _ := f.needsPush(p); need {
				pushed++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/proxies, "ns/proxy")
	b.ReportMetric(float64(pushed), "proxies-pushed")
}
