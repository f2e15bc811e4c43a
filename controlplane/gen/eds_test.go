package gen

import (
	"fmt"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

const shop = "shop.store.svc.cluster.local"

func edsMesh(eps ...*model.Endpoint) *model.Snapshot {
	svc := &model.Service{Hostname: shop, Namespace: "store", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "grpc", Number: 90, Protocol: model.ProtocolGRPC}}}
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "shop", Namespace: "store"}, Spec: &networking.DestinationRule{
		Host: "shop",
		Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "blue", Labels: map[string]string{"version": "v2", "color": "blue"}},
		},
	}}
	return model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}, Endpoints: map[string][]*model.Endpoint{shop: eps}, Configs: []*istioconfig.Config{dr}})
}

func shopEP(addr string, labels map[string]string, loc model.Locality, w uint32, h model.HealthStatus) *model.Endpoint {
	return &model.Endpoint{Service: shop, Address: addr, Labels: labels, Locality: loc, Weight: w, Health: h, Ports: map[string]uint32{"grpc": 9090}}
}

// summarize renders an assignment as "locality(weight): addr:port/weight/health ...".
func summarize(c *endpointv3.ClusterLoadAssignment) []string {
	var out []string
	for _, l := range c.GetEndpoints() {
		s := fmt.Sprintf("%s/%s/%s(%d):", l.GetLocality().GetRegion(), l.GetLocality().GetZone(), l.GetLocality().GetSubZone(), l.GetLoadBalancingWeight().GetValue())
		for _, e := range l.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			s += fmt.Sprintf(" %s:%d/%d/%s", sa.GetAddress(), sa.GetPortValue(), e.GetLoadBalancingWeight().GetValue(), e.GetHealthStatus())
		}
		out = append(out, s)
	}
	return out
}

func TestEndpoints(t *testing.T) {
	east := model.Locality{Region: "us-east", Zone: "a"}
	eastB := model.Locality{Region: "us-east", Zone: "b", SubZone: "rack1"}
	west := model.Locality{Region: "us-west", Zone: "a"}
	v1 := map[string]string{"version": "v1"}
	v2blue := map[string]string{"version": "v2", "color": "blue"}
	v2red := map[string]string{"version": "v2", "color": "red"}
	s := edsMesh(
		shopEP("10.0.0.3", v1, west, 5, model.Healthy),
		shopEP("10.0.0.1", v1, east, 0, model.Healthy),
		shopEP("10.0.0.2", v2blue, east, 2, model.Draining),
		shopEP("10.0.0.4", v2red, eastB, 1, model.Unhealthy),
		shopEP("10.0.0.1", v1, east, 7, model.Healthy), // duplicate address: dropped
	)
	tests := []struct {
		cluster string
		want    []string
	}{
		{"outbound|80||" + shop, []string{
			"us-east/a/(3): 10.0.0.1:80/1/HEALTHY 10.0.0.2:80/2/DRAINING",
			"us-east/b/rack1(1): 10.0.0.4:80/1/UNHEALTHY",
			"us-west/a/(5): 10.0.0.3:80/5/HEALTHY",
		}},
		{"outbound|90||" + shop, []string{ // target port 9090 from the endpoint's port map
			"us-east/a/(3): 10.0.0.1:9090/1/HEALTHY 10.0.0.2:9090/2/DRAINING",
			"us-east/b/rack1(1): 10.0.0.4:9090/1/UNHEALTHY",
			"us-west/a/(5): 10.0.0.3:9090/5/HEALTHY",
		}},
		{"outbound|80|v1|" + shop, []string{"us-east/a/(1): 10.0.0.1:80/1/HEALTHY", "us-west/a/(5): 10.0.0.3:80/5/HEALTHY"}},
		{"outbound|80|blue|" + shop, []string{"us-east/a/(2): 10.0.0.2:80/2/DRAINING"}},
		{"outbound|80|nosuch|" + shop, nil},
		{"outbound|81||" + shop, nil},
		{"outbound|80||unknown.svc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.cluster, func(t *testing.T) {
			rs, err := ForType(EndpointType, nil).Generate(nil, s, []string{tt.cluster})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].Name != tt.cluster {
				t.Fatalf("got %d resources", len(rs))
			}
			if _, err := validateDeep(rs[0].Message); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summarize(rs[0].Message.(*endpointv3.ClusterLoadAssignment))); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestEndpointsErrorsKeepTheRest(t *testing.T) {
	s := edsMesh(
		shopEP("10.0.0.1", nil, model.Locality{}, 1, model.Healthy),
		shopEP("not-an-ip.example", nil, model.Locality{}, 1, model.Healthy),
	)
	rs, err := ForType(EndpointType, nil).Generate(nil, s, []string{"bogus", "outbound|80||" + shop, "outbound|80||" + shop})
	if err == nil || !strings.Contains(err.Error(), `cluster name "bogus"`) || !strings.Contains(err.Error(), `"not-an-ip.example"`) {
		t.Fatalf("err = %v, want errors naming the bad cluster name and the bad address", err)
	}
	if len(rs) != 1 {
		t.Fatalf("want the good assignment only (deduplicated), got %d", len(rs))
	}
	if got := summarize(rs[0].Message.(*endpointv3.ClusterLoadAssignment)); len(got) != 1 || got[0] != "//(1): 10.0.0.1:80/1/HEALTHY" {
		t.Errorf("got %v", got)
	}
	want := []istioconfig.Key{
		{Kind: model.KindEndpoint, Name: shop, Namespace: "store"},
		{Kind: model.KindService, Name: shop, Namespace: "store"},
	}
	if diff := cmp.Diff(want, rs[0].Deps); diff != "" {
		t.Errorf("deps (-want +got)\n%s", diff)
	}
}

func TestEndpointsWildcard(t *testing.T) {
	s := edsMesh(shopEP("10.0.0.1", map[string]string{"version": "v1"}, model.Locality{}, 1, model.Healthy))
	rs, err := ForType(EndpointType, nil).Generate(nil, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	want := []string{"outbound|80|blue|" + shop, "outbound|80|v1|" + shop, "outbound|80||" + shop, "outbound|90|blue|" + shop, "outbound|90|v1|" + shop, "outbound|90||" + shop}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// Every LocalityLbEndpoints carries a Locality message, even for endpoints without a locality:
// grpc-go NACKs the whole assignment otherwise ("EDS response contains a locality without ID").
// Inline assignments of DNS and inbound clusters follow the same rule.
func TestEveryLocalityLbEndpointsHasALocality(t *testing.T) {
	s := edsMesh(
		shopEP("10.0.0.1", nil, model.Locality{}, 1, model.Healthy),
		shopEP("10.0.0.2", nil, model.Locality{Region: "r"}, 1, model.Healthy),
	)
	rs, err := ForType(EndpointType, nil).Generate(nil, s, []string{"outbound|80||" + shop})
	if err != nil {
		t.Fatal(err)
	}
	cla := rs[0].Message.(*endpointv3.ClusterLoadAssignment)
	if len(cla.GetEndpoints()) != 2 {
		t.Fatalf("want 2 localities, got %d", len(cla.GetEndpoints()))
	}
	for i, l := range cla.GetEndpoints() {
		if l.GetLocality() == nil {
			t.Errorf("EDS locality group %d has no Locality message", i)
		}
	}
	if got := cla.GetEndpoints()[0].GetLocality(); got.GetRegion() != "" || got.GetZone() != "" {
		t.Errorf("first group should be the empty locality, got %v", got)
	}

	dnsSvc := &model.Service{Hostname: "ext.example.com", Namespace: "store", Resolution: model.ResolutionDNS,
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	noEPs := &model.Service{Hostname: "api.example.com", Namespace: "store", Resolution: model.ResolutionDNS,
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}}
	snap := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{dnsSvc, noEPs},
		Endpoints: map[string][]*model.Endpoint{dnsSvc.Hostname: {{Service: dnsSvc.Hostname, Address: "a.example.com", Weight: 1}}}})
	cds, err := ForType(ClusterType, nil).Generate(nil, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range cds {
		for i, l := range r.Message.(*clusterv3.Cluster).GetLoadAssignment().GetEndpoints() {
			checked++
			if l.GetLocality() == nil {
				t.Errorf("cluster %s: inline locality group %d has no Locality message", r.Name, i)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no inline load assignment was generated: the test checks nothing")
	}
}

// TestEndpointsOnlyListedPorts: an endpoint that lists the ports it serves (a Kubernetes
// EndpointSlice's) is in no assignment of another port, as istiod builds its endpoints per
// address and slice port; one that does not (a ServiceEntry's) serves every port, unlisted ones
// on the service port number.
func TestEndpointsOnlyListedPorts(t *testing.T) {
	listed := func(addr string, ports map[string]uint32) *model.Endpoint {
		return &model.Endpoint{Service: shop, Address: addr, Weight: 1, Ports: ports, OnlyListedPorts: true}
	}
	s := edsMesh(
		listed("10.0.0.1", map[string]uint32{"http": 8080, "grpc": 9191}),
		listed("10.0.0.2", map[string]uint32{"grpc": 9191}),
		listed("10.0.0.3", nil),
		&model.Endpoint{Service: shop, Address: "10.0.0.4", Weight: 1, Ports: map[string]uint32{"grpc": 9191}},
	)
	for cluster, want := range map[string][]string{
		"outbound|80||" + shop: {"//(2): 10.0.0.1:8080/1/HEALTHY 10.0.0.4:80/1/HEALTHY"},
		"outbound|90||" + shop: {"//(3): 10.0.0.1:9191/1/HEALTHY 10.0.0.2:9191/1/HEALTHY 10.0.0.4:9191/1/HEALTHY"},
	} {
		rs, err := ForType(EndpointType, nil).Generate(nil, s, []string{cluster})
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %d resources, %v", cluster, len(rs), err)
		}
		if diff := cmp.Diff(want, summarize(rs[0].Message.(*endpointv3.ClusterLoadAssignment))); diff != "" {
			t.Errorf("%s (-want +got)\n%s", cluster, diff)
		}
	}
}

// TestEndpointsUnixSocket: a STATIC entry's unix domain socket endpoints (a path, an @abstract
// name) are pipe addresses without a port, as istiod sends them; one with a service account
// keeps the tlsMode metadata. Found by hack/istio/parity (testdata/mesh/unixsocket.yaml: xdslab
// sent no endpoint).
func TestEndpointsUnixSocket(t *testing.T) {
	host := "example.unix.local"
	svc := &model.Service{Hostname: host, Namespace: "testns", Resolution: model.ResolutionStatic, MeshExternal: true,
		Ports: []model.Port{{Name: "http", Number: 8001, Protocol: model.ProtocolHTTP}}}
	src := istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: "uds", Namespace: "testns"}
	// A DNS entry that selects a WorkloadEntry on a socket: its inline endpoint is the pipe too.
	dnsHost := "dns.unix.local"
	dns := &model.Service{Hostname: dnsHost, Namespace: "testns", Resolution: model.ResolutionDNS,
		Ports: []model.Port{{Name: "http", Number: 8004, Protocol: model.ProtocolHTTP}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc, dns}, Endpoints: map[string][]*model.Endpoint{host: {
		{Service: host, Address: "unix:///var/run/example/socket", Source: src},
		{Service: host, Address: "unix://@abstract", ServiceAccount: "spiffe://cluster.local/ns/testns/sa/sock", Source: src},
	}, dnsHost: {{Service: dnsHost, Address: "unix:///var/run/we", Source: istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Name: "we", Namespace: "testns"}}}}})
	p := sidecarProxy("10.1.0.9", "app")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var cla *endpointv3.ClusterLoadAssignment
	for _, r := range g[EndpointType] {
		if r.Name == "outbound|8001||"+host {
			cla = r.Message.(*endpointv3.ClusterLoadAssignment)
		}
	}
	if len(cla.GetEndpoints()) != 1 {
		t.Fatalf("assignment %v, want one locality", cla)
	}
	var got []string
	for _, lbe := range cla.GetEndpoints()[0].GetLbEndpoints() {
		a := lbe.GetEndpoint().GetAddress()
		if a.GetSocketAddress() != nil {
			t.Errorf("endpoint %v: a socket address, want a pipe", a)
		}
		got = append(got, fmt.Sprintf("%s %v", a.GetPipe().GetPath(), lbe.GetMetadata() != nil))
	}
	if diff := cmp.Diff([]string{"/var/run/example/socket false", "@abstract true"}, got); diff != "" {
		t.Errorf("pipe endpoints (-want +got):\n%s", diff)
	}
	for _, r := range g[ClusterType] {
		if r.Name != "outbound|8004||"+dnsHost {
			continue
		}
		a := r.Message.(*clusterv3.Cluster).GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress()
		if a.GetPipe().GetPath() != "/var/run/we" {
			t.Errorf("DNS cluster endpoint %v, want the pipe /var/run/we", a)
		}
		return
	}
	t.Errorf("no cluster outbound|8004||%s", dnsHost)
}
