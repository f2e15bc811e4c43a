package model

import (
	"testing"

	"github.com/xdslab/xdslab/istioconfig"
)

func TestParseTrafficDistribution(t *testing.T) {
	for _, tc := range []struct {
		field, annotation string
		want              TrafficDistribution
	}{
		{"", "", TrafficDistributionAny},
		{"PreferClose", "", TrafficDistributionPreferSameZone},
		{"PreferSameZone", "", TrafficDistributionPreferSameZone},
		{"PreferSameNode", "", TrafficDistributionPreferSameNode},
		// The field's values are case-sensitive; an unknown one leaves the annotation to decide.
		{"preferclose", "", TrafficDistributionAny},
		{"Other", "PreferSameNode", TrafficDistributionPreferSameNode},
		{"PreferClose", "PreferSameNode", TrafficDistributionPreferSameZone},
		// The annotation's are not.
		{"", "preferclose", TrafficDistributionPreferSameZone},
		{"", "PREFERSAMEZONE", TrafficDistributionPreferSameZone},
		{"", "prefersamenode", TrafficDistributionPreferSameNode},
		{"", "Any", TrafficDistributionAny},
	} {
		if got := ParseTrafficDistribution(tc.field, tc.annotation); got != tc.want {
			t.Errorf("ParseTrafficDistribution(%q, %q) = %d, want %d", tc.field, tc.annotation, got, tc.want)
		}
	}
}

func TestServiceEqualTrafficDistribution(t *testing.T) {
	a := &Service{Hostname: "a.ns.svc.cluster.local"}
	b := &Service{Hostname: "a.ns.svc.cluster.local", TrafficDistribution: TrafficDistributionPreferSameZone}
	if a.Equal(b) {
		t.Error("services that differ in TrafficDistribution are Equal: a change would not be pushed")
	}
}

func TestParseProtocolMongo(t *testing.T) {
	for in, want := range map[string]Protocol{"MONGO": ProtocolMongo, "mongo": ProtocolMongo, "MySQL": ProtocolMySQL, "Redis": ProtocolTCP} {
		if got := ParseProtocol(in); got != want {
			t.Errorf("ParseProtocol(%q) = %s, want %s", in, got, want)
		}
	}
	if ProtocolMongo.IsHTTP() {
		t.Error("MONGO is served through an HTTP connection manager")
	}
}

func TestEndpointServesPort(t *testing.T) {
	http, grpc := Port{Name: "http", Number: 80}, Port{Name: "grpc", Number: 90}
	se := &Endpoint{Ports: map[string]uint32{"grpc": 9090}}
	slice := &Endpoint{Ports: map[string]uint32{"grpc": 9090}, OnlyListedPorts: true}
	for _, tc := range []struct {
		ep   *Endpoint
		p    Port
		want uint32
		ok   bool
	}{
		{se, grpc, 9090, true},
		{se, http, 80, true},
		{slice, grpc, 9090, true},
		{slice, http, 0, false},
	} {
		if got, ok := tc.ep.ServesPort(tc.p); got != tc.want || ok != tc.ok {
			t.Errorf("%+v.ServesPort(%s) = %d, %v; want %d, %v", tc.ep, tc.p.Name, got, ok, tc.want, tc.ok)
		}
	}
	if se.Equal(&Endpoint{Ports: se.Ports, OnlyListedPorts: true}) {
		t.Error("endpoints that differ in OnlyListedPorts are Equal: a change would not be pushed")
	}
}

func TestHeadless(t *testing.T) {
	kube := istioconfig.Key{Kind: KindService, Name: "h", Namespace: "ns"}
	tcp := []Port{{Name: "db", Number: 5432, Protocol: ProtocolTCP}}
	http := []Port{{Name: "http", Number: 80, Protocol: ProtocolHTTP}}
	for _, tc := range []struct {
		name                string
		svc                 *Service
		headless, listeners bool
	}{
		{"nil", nil, false, false},
		{"kube headless, a TCP port", &Service{Resolution: ResolutionPassthrough, Source: kube, Ports: append(http, tcp...)}, true, true},
		{"kube headless, HTTP only", &Service{Resolution: ResolutionPassthrough, Source: kube, Ports: http}, true, false},
		{"kube with a ClusterIP", &Service{Addresses: []string{"10.96.0.1"}, Source: kube, Ports: tcp}, false, false},
		// A NONE entry's endpoints (a workloadSelector's picks) have listeners of their own.
		{"ServiceEntry NONE without addresses", &Service{Resolution: ResolutionPassthrough, Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry}, Ports: tcp}, false, true},
		{"ServiceEntry NONE with a selector", &Service{Resolution: ResolutionPassthrough, WorkloadSelector: true, Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry}, Ports: tcp}, false, true},
		{"ServiceEntry NONE with an address", &Service{Resolution: ResolutionPassthrough, Addresses: []string{"240.0.0.1"}, Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry}, Ports: tcp}, false, false},
	} {
		if got := tc.svc.Headless(); got != tc.headless {
			t.Errorf("%s: Headless = %v", tc.name, got)
		}
		if got := tc.svc.EndpointsInListeners(); got != tc.listeners {
			t.Errorf("%s: EndpointsInListeners = %v", tc.name, got)
		}
	}
}
