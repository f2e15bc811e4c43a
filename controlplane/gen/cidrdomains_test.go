package gen

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/controlplane/model"
)

// An HTTP port of a ServiceEntry whose address is a CIDR: the virtual host lists the CIDR as
// written (IPv6 bracketed), with and without the port, as istiod's generateVirtualHostDomains
// lists a service's address; a /32 is an IP (a VIP) and a service with an IP lists no CIDR.
func TestRouteDomainsOfCIDRAddresses(t *testing.T) {
	http := []model.Port{{Name: "http", Number: 8193, Protocol: model.ProtocolHTTP}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		{Hostname: "intranet.example", Namespace: "x", Addresses: []string{"10.92.0.0/16"}, Ports: http, Resolution: model.ResolutionPassthrough},
		{Hostname: "lab.example", Namespace: "x", Addresses: []string{"fd00:92::/48"}, Ports: http, Resolution: model.ResolutionPassthrough},
		{Hostname: "one.example", Namespace: "x", Addresses: []string{"10.93.0.7/32"}, Ports: http, Resolution: model.ResolutionPassthrough},
	}})
	p := sidecarProxy("10.9.9.9", "app")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"8193"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %d resources, err %v", len(rs), err)
	}
	if _, err := validateDeep(rs[0].Message); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		got[vh.GetName()] = vh.GetDomains()
	}
	want := map[string][]string{
		"intranet.example:8193": {"intranet.example", "intranet.example:8193", "10.92.0.0/16", "10.92.0.0/16:8193"},
		"lab.example:8193":      {"lab.example", "lab.example:8193", "[fd00:92::/48]", "[fd00:92::/48]:8193"},
		"one.example:8193":      {"one.example", "one.example:8193", "10.93.0.7", "10.93.0.7:8193"},
		AllowAnyVirtualHost:     {"*"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("domains (-want +got)\n%s", diff)
	}
}
