package registry

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

func seConfig(ns, name string, spec *networking.ServiceEntry) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: name, Namespace: ns}, Spec: spec}
}

func weConfig(ns, name string, spec *networking.WorkloadEntry) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindWorkloadEntry, Name: name, Namespace: ns}, Spec: spec}
}

func seKey(ns, name string) istioconfig.Key {
	return istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: name, Namespace: ns}
}

func weKey(ns, name string) istioconfig.Key {
	return istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Name: name, Namespace: ns}
}

func TestConvertServiceEntry(t *testing.T) {
	httpPort := &networking.ServicePort{Number: 80, Name: "http-web", Protocol: "HTTP"}
	tests := []struct {
		name      string
		se        *istioconfig.Config
		workloads []*istioconfig.Config
		want      Converted
		wantErr   []string
	}{
		{
			name: "inline endpoints, two hosts, every endpoint field",
			se: seConfig("ns1", "api", &networking.ServiceEntry{
				Hosts:     []string{"api.example.com", "api2.example.com"},
				Addresses: []string{"240.0.0.1"},
				Ports: []*networking.ServicePort{
					{Number: 80, Name: "http", Protocol: "http"},
					{Number: 9090, Name: "grpc-api", TargetPort: 9091}, // no protocol: UNKNOWN, sniffed (the name does not count)
					{Number: 5432, Name: "tcp-db", Protocol: "TCP"},
				},
				Location:        networking.ServiceEntry_MESH_INTERNAL,
				Resolution:      networking.ServiceEntry_STATIC,
				SubjectAltNames: []string{"spiffe://cluster.local/ns/ns1/sa/extra"},
				Endpoints: []*networking.WorkloadEntry{
					{Address: "10.0.0.2", Ports: map[string]uint32{"http": 8080}, Labels: map[string]string{"app": "api"},
						Locality: "us-east1/us-east1-b", Weight: 3, Network: "net-a", ServiceAccount: "api-sa"},
					{Address: "10.0.0.1", Locality: "eu/z/sz"},
				},
			}),
			want: Converted{
				Services: []*model.Service{
					svcWant("api.example.com", "ns1", seKey("ns1", "api"), []string{"spiffe://cluster.local/ns/ns1/sa/api-sa", "spiffe://cluster.local/ns/ns1/sa/extra"}),
					svcWant("api2.example.com", "ns1", seKey("ns1", "api"), []string{"spiffe://cluster.local/ns/ns1/sa/api-sa", "spiffe://cluster.local/ns/ns1/sa/extra"}),
				},
				Endpoints: map[string][]*model.Endpoint{
					"api.example.com":  apiEndpoints("api.example.com"),
					"api2.example.com": apiEndpoints("api2.example.com"),
				},
			},
		},
		{
			name: "DNS without endpoints: each host is its own endpoint; exportTo kept",
			se: seConfig("ext", "google", &networking.ServiceEntry{
				Hosts: []string{"www.google.com"}, Ports: []*networking.ServicePort{{Number: 443, Name: "https", Protocol: "HTTPS", TargetPort: 8443}},
				Resolution: networking.ServiceEntry_DNS, ExportTo: []string{".", "apps"},
			}),
			want: Converted{
				Services: []*model.Service{{Hostname: "www.google.com", Namespace: "ext", Ports: []model.Port{{Name: "https", Number: 443, Protocol: model.ProtocolHTTPS}},
					Resolution: model.ResolutionDNS, Source: seKey("ext", "google"), MeshExternal: true, ExportTo: []string{".", "apps"}}},
				Endpoints: map[string][]*model.Endpoint{"www.google.com": {{Service: "www.google.com", Address: "www.google.com",
					Ports: map[string]uint32{"https": 8443}, Source: seKey("ext", "google")}}},
			},
		},
		{
			name: "DNS_ROUND_ROBIN with host-name endpoints",
			se: seConfig("ext", "db", &networking.ServiceEntry{
				Hosts: []string{"db.corp"}, Ports: []*networking.ServicePort{{Number: 3306, Name: "mysql"}},
				Resolution: networking.ServiceEntry_DNS_ROUND_ROBIN,
				Endpoints:  []*networking.WorkloadEntry{{Address: "db-1.corp"}},
			}),
			want: Converted{
				Services: []*model.Service{{Hostname: "db.corp", Namespace: "ext", Ports: []model.Port{{Name: "mysql", Number: 3306, Protocol: model.ProtocolUnknown}},
					Resolution: model.ResolutionDNS, DNSRoundRobin: true, Source: seKey("ext", "db"), MeshExternal: true}},
				Endpoints: map[string][]*model.Endpoint{"db.corp": {{Service: "db.corp", Address: "db-1.corp", Labels: map[string]string{model.LabelCluster: model.RegistryClusterID}, Source: seKey("ext", "db")}}},
			},
		},
		{
			name: "traffic-distribution annotation",
			se: func() *istioconfig.Config {
				c := seConfig("ext", "near", &networking.ServiceEntry{
					Hosts: []string{"near.corp"}, Ports: []*networking.ServicePort{{Number: 8000, Name: "custom"}},
				})
				c.Annotations = map[string]string{model.AnnotationTrafficDistribution: "PreferClose"}
				return c
			}(),
			want: Converted{
				Services: []*model.Service{{Hostname: "near.corp", Namespace: "ext", Ports: []model.Port{{Name: "custom", Number: 8000, Protocol: model.ProtocolUnknown}},
					Resolution: model.ResolutionPassthrough, Source: seKey("ext", "near"), MeshExternal: true, TrafficDistribution: model.TrafficDistributionPreferSameZone}},
				Endpoints: map[string][]*model.Endpoint{},
			},
		},
		{
			name: "NONE resolution: passthrough, no endpoints, unknown protocol",
			se: seConfig("ext", "any", &networking.ServiceEntry{
				Hosts: []string{"*.example.org"}, Ports: []*networking.ServicePort{{Number: 8000, Name: "custom"}},
			}),
			want: Converted{
				Services: []*model.Service{{Hostname: "*.example.org", Namespace: "ext", Ports: []model.Port{{Name: "custom", Number: 8000, Protocol: model.ProtocolUnknown}},
					Resolution: model.ResolutionPassthrough, Source: seKey("ext", "any"), MeshExternal: true}},
				Endpoints: map[string][]*model.Endpoint{},
			},
		},
		{
			name: "workloadSelector picks matching WorkloadEntries of its namespace only",
			se: seConfig("ns1", "vm", &networking.ServiceEntry{
				Hosts: []string{"vm.ns1.svc.cluster.local"}, Ports: []*networking.ServicePort{httpPort},
				Location: networking.ServiceEntry_MESH_INTERNAL, Resolution: networking.ServiceEntry_STATIC,
				WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}},
			}),
			workloads: []*istioconfig.Config{
				weConfig("ns1", "vm-1", &networking.WorkloadEntry{Address: "10.1.0.1", Labels: map[string]string{"app": "vm", "v": "1"},
					ServiceAccount: "vm-sa", Ports: map[string]uint32{"http-web": 8080, "other": 1}}),
				weConfig("ns1", "other", &networking.WorkloadEntry{Address: "10.1.0.2", Labels: map[string]string{"app": "db"}}),
				weConfig("ns2", "vm-elsewhere", &networking.WorkloadEntry{Address: "10.1.0.3", Labels: map[string]string{"app": "vm"}}),
				weConfig("ns1", "no-address", &networking.WorkloadEntry{Labels: map[string]string{"app": "vm"}}),
				// Labels only in metadata: Istio matches those when the spec has none.
				func() *istioconfig.Config {
					c := weConfig("ns1", "meta-labels", &networking.WorkloadEntry{Address: "10.1.0.4"})
					c.Labels = map[string]string{"app": "vm"}
					return c
				}(),
				// Labels in both: the metadata's win (istiod merges them so), for the selector
				// and for the endpoint.
				func() *istioconfig.Config {
					c := weConfig("ns1", "both-labels", &networking.WorkloadEntry{Address: "10.1.0.5", Labels: map[string]string{"app": "vm", "tier": "spec"}})
					c.Labels = map[string]string{"tier": "meta"}
					return c
				}(),
				func() *istioconfig.Config {
					c := weConfig("ns1", "meta-overrides", &networking.WorkloadEntry{Address: "10.1.0.6", Labels: map[string]string{"app": "db"}})
					c.Labels = map[string]string{"app": "vm"}
					return c
				}(),
				func() *istioconfig.Config {
					c := weConfig("ns1", "meta-deselects", &networking.WorkloadEntry{Address: "10.1.0.7", Labels: map[string]string{"app": "vm"}})
					c.Labels = map[string]string{"app": "db"}
					return c
				}(),
			},
			want: Converted{
				Services: []*model.Service{{Hostname: "vm.ns1.svc.cluster.local", Namespace: "ns1",
					Ports: []model.Port{{Name: "http-web", Number: 80, Protocol: model.ProtocolHTTP}}, Resolution: model.ResolutionStatic,
					ServiceAccounts: []string{"spiffe://cluster.local/ns/ns1/sa/vm-sa"}, Source: seKey("ns1", "vm"), WorkloadSelector: true}},
				Endpoints: map[string][]*model.Endpoint{"vm.ns1.svc.cluster.local": {
					{Service: "vm.ns1.svc.cluster.local", Address: "10.1.0.1", Ports: map[string]uint32{"http-web": 8080},
						Labels: map[string]string{"app": "vm", "v": "1", model.LabelCluster: model.RegistryClusterID}, ServiceAccount: "spiffe://cluster.local/ns/ns1/sa/vm-sa", Source: weKey("ns1", "vm-1")},
					{Service: "vm.ns1.svc.cluster.local", Address: "10.1.0.4", Labels: map[string]string{"app": "vm", model.LabelCluster: model.RegistryClusterID}, Source: weKey("ns1", "meta-labels")},
					{Service: "vm.ns1.svc.cluster.local", Address: "10.1.0.5", Labels: map[string]string{"app": "vm", "tier": "meta", model.LabelCluster: model.RegistryClusterID}, Source: weKey("ns1", "both-labels")},
					{Service: "vm.ns1.svc.cluster.local", Address: "10.1.0.6", Labels: map[string]string{"app": "vm", model.LabelCluster: model.RegistryClusterID}, Source: weKey("ns1", "meta-overrides")},
				}},
			},
		},
		{
			name: "invalid entry: every problem reported",
			se: seConfig("ns1", "bad", &networking.ServiceEntry{
				Hosts: []string{"", "x", "x"},
				Ports: []*networking.ServicePort{{Number: 0, Name: "a"}, {Number: 80, Name: "http"}, {Number: 80, Name: "dup"}, {Number: 81}},
				Endpoints: []*networking.WorkloadEntry{{Address: ""}, {Address: "10.0.0.1", Locality: "a/b/c/d"},
					{Address: "10.0.0.2", Ports: map[string]uint32{"nope": 1}}},
				WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"a": "b"}},
			}),
			wantErr: []string{"ServiceEntry/ns1/bad", "spec.hosts[0] is empty", `spec.hosts[2] "x" is listed twice`, "spec.ports[0].number is 0", "spec.ports[2].number 80 is listed twice",
				"spec.ports[3].name is empty", "both spec.endpoints and spec.workloadSelector", "spec.endpoints[0].address is empty",
				`locality "a/b/c/d"`, `"nope", which is not a port`},
		},
		{
			name: "a workload's locality label is its locality when it has none; a network label wins over network",
			se: seConfig("ns1", "geo", &networking.ServiceEntry{
				Hosts: []string{"geo.example.com"}, Ports: []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}},
				Resolution: networking.ServiceEntry_STATIC,
				Endpoints: []*networking.WorkloadEntry{
					{Address: "10.2.0.1", Labels: map[string]string{model.LegacyLocalityLabel: "eu.z1", LabelTopologyNetwork: "mine"}, Network: "net-a"},
					{Address: "10.2.0.2", Labels: map[string]string{model.LabelLocality: "us/z2"}, Locality: "ap/z3"},
				},
			}),
			want: Converted{
				Services: []*model.Service{{Hostname: "geo.example.com", Namespace: "ns1", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}},
					Resolution: model.ResolutionStatic, Source: seKey("ns1", "geo"), MeshExternal: true}},
				Endpoints: map[string][]*model.Endpoint{"geo.example.com": {
					{Service: "geo.example.com", Address: "10.2.0.1", Locality: model.Locality{Region: "eu", Zone: "z1"}, Source: seKey("ns1", "geo"),
						Labels: map[string]string{model.LegacyLocalityLabel: "eu.z1", LabelTopologyNetwork: "mine", model.LabelCluster: model.RegistryClusterID,
							model.LabelRegion: "eu", model.LabelZone: "z1"}},
					{Service: "geo.example.com", Address: "10.2.0.2", Locality: model.Locality{Region: "ap", Zone: "z3"}, Source: seKey("ns1", "geo"),
						Labels: map[string]string{model.LabelLocality: "us/z2", model.LabelCluster: model.RegistryClusterID,
							model.LabelRegion: "ap", model.LabelZone: "z3"}},
				}},
			},
		},
		{
			name:    "not a ServiceEntry",
			se:      &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: "x", Namespace: "y"}, Spec: &networking.VirtualService{}},
			wantErr: []string{"want a ServiceEntry"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConvertServiceEntry(tc.se, tc.workloads, ConvertOptions{})
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func svcWant(host, ns string, src istioconfig.Key, sas []string) *model.Service {
	return &model.Service{Hostname: host, Namespace: ns, Addresses: []string{"240.0.0.1"},
		Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "grpc-api", Number: 9090, Protocol: model.ProtocolUnknown},
			{Name: "tcp-db", Number: 5432, Protocol: model.ProtocolTCP}},
		Resolution: model.ResolutionStatic, ServiceAccounts: sas, Source: src}
}

func apiEndpoints(host string) []*model.Endpoint {
	return []*model.Endpoint{
		{Service: host, Address: "10.0.0.1", Ports: map[string]uint32{"grpc-api": 9091}, Locality: model.Locality{Region: "eu", Zone: "z", SubZone: "sz"}, Source: seKey("ns1", "api"),
			Labels: map[string]string{model.LabelCluster: model.RegistryClusterID, model.LabelRegion: "eu", model.LabelZone: "z", model.LabelSubzone: "sz"}},
		{Service: host, Address: "10.0.0.2", Ports: map[string]uint32{"http": 8080, "grpc-api": 9091},
			Labels:   map[string]string{"app": "api", LabelTopologyNetwork: "net-a", model.LabelCluster: model.RegistryClusterID, model.LabelRegion: "us-east1", model.LabelZone: "us-east1-b"},
			Locality: model.Locality{Region: "us-east1", Zone: "us-east1-b"},
			Weight:   3, ServiceAccount: "spiffe://cluster.local/ns/ns1/sa/api-sa", Source: seKey("ns1", "api")},
	}
}

// TestServiceEntryPortProtocol: a ServiceEntry port's protocol is its protocol field alone, as
// istiod reads it; without one (whatever the name) it is UNKNOWN, and the proxy sniffs.
func TestServiceEntryPortProtocol(t *testing.T) {
	tests := []struct {
		declared, name string
		want           model.Protocol
	}{
		{"HTTP", "tcp-x", model.ProtocolHTTP},
		{"GRPC", "web", model.ProtocolGRPC},
		{"GRPC-WEB", "web", model.ProtocolGRPCWeb},
		{"UDP", "dns", model.ProtocolUDP},
		{"TCP", "http", model.ProtocolTCP},
		{"", "http-web", model.ProtocolUnknown},
		{"", "grpc", model.ProtocolUnknown},
		{"bogus", "tcp", model.ProtocolUnknown},
	}
	for _, tc := range tests {
		ports, _ := convertPorts([]*networking.ServicePort{{Number: 80, Name: tc.name, Protocol: tc.declared}}, func(string, ...any) {})
		if len(ports) != 1 || ports[0].Protocol != tc.want {
			t.Errorf("protocol %q, name %q: %v, want %s", tc.declared, tc.name, ports, tc.want)
		}
	}
}

func TestSpiffeID(t *testing.T) {
	if got := SpiffeID("", "ns", "sa"); got != "spiffe://cluster.local/ns/ns/sa/sa" {
		t.Error(got)
	}
	if got := SpiffeID("td.example", "ns", "sa"); got != "spiffe://td.example/ns/ns/sa/sa" {
		t.Error(got)
	}
}

// TestConvertDynamicDNS: a DYNAMIC_DNS entry becomes a service of resolution DYNAMIC_DNS per
// wildcard host, without addresses or endpoints (istiod's dynamic forward proxy resolves the
// request's host; gen builds its cluster and filters).
func TestConvertDynamicDNS(t *testing.T) {
	se := seConfig("x", "dyn", &networking.ServiceEntry{
		Hosts: []string{"*.dyn.example.com", "*.dyn.example.org"}, Resolution: networking.ServiceEntry_DYNAMIC_DNS,
		Location: networking.ServiceEntry_MESH_EXTERNAL,
		Ports:    []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}, {Number: 443, Name: "tls", Protocol: "TLS"}},
	})
	got, err := ConvertServiceEntry(se, nil, ConvertOptions{})
	if err != nil || len(got.Services) != 2 {
		t.Fatalf("got %d services, error %v; want 2", len(got.Services), err)
	}
	for _, svc := range got.Services {
		if svc.Resolution != model.ResolutionDynamicDNS || !svc.DynamicForwardProxy() || len(svc.Addresses) != 0 || len(svc.Ports) != 2 || !svc.MeshExternal {
			t.Errorf("%s: resolution %v, dynamic forward proxy %v, addresses %v, %d ports, external %v", svc.Hostname, svc.Resolution, svc.DynamicForwardProxy(), svc.Addresses, len(svc.Ports), svc.MeshExternal)
		}
		if eps := got.Endpoints[svc.Hostname]; len(eps) != 0 {
			t.Errorf("%s: %d endpoints, want none", svc.Hostname, len(eps))
		}
	}
}

// TestConvertCreationTime: every service of an entry keeps its creationTimestamp, which orders
// services as istiod orders them (model.Scope.CompareServices).
func TestConvertCreationTime(t *testing.T) {
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	se := seConfig("x", "two", &networking.ServiceEntry{
		Hosts: []string{"a.example.com", "b.example.com"}, Resolution: networking.ServiceEntry_NONE,
		Location: networking.ServiceEntry_MESH_EXTERNAL,
		Ports:    []*networking.ServicePort{{Number: 9051, Name: "tcp", Protocol: "TCP"}},
	})
	se.CreationTimestamp = created
	got, err := ConvertServiceEntry(se, nil, ConvertOptions{})
	if err != nil || len(got.Services) != 2 {
		t.Fatalf("got %d services, error %v; want 2", len(got.Services), err)
	}
	for _, svc := range got.Services {
		if !svc.CreationTime.Equal(created) {
			t.Errorf("%s: CreationTime %v, want %v", svc.Hostname, svc.CreationTime, created)
		}
	}
}

// TestConvertUnixSocketEndpoints: an inline unix domain socket endpoint is kept (the EDS
// generator sends it as a pipe) under istiod's rules: resolution STATIC, a socket path, no
// ports, one service port; otherwise the entry is rejected. A WorkloadEntry whose address is a
// socket or a host name is selected by DNS entries only, as istiod selects it.
func TestConvertUnixSocketEndpoints(t *testing.T) {
	one := []*networking.ServicePort{{Number: 8001, Name: "http", Protocol: "HTTP"}}
	two := append(slices.Clone(one), &networking.ServicePort{Number: 8002, Name: "b", Protocol: "HTTP"})
	for _, tc := range []struct {
		name string
		res  networking.ServiceEntry_Resolution
		ep   *networking.WorkloadEntry
		port []*networking.ServicePort
		err  string
	}{
		{"static", networking.ServiceEntry_STATIC, &networking.WorkloadEntry{Address: "unix:///var/run/example/socket"}, one, ""},
		{"abstract", networking.ServiceEntry_STATIC, &networking.WorkloadEntry{Address: "unix://@sock"}, one, ""},
		{"dns", networking.ServiceEntry_DNS, &networking.WorkloadEntry{Address: "unix:///var/run/s"}, one, "only resolution STATIC"},
		{"relative", networking.ServiceEntry_STATIC, &networking.WorkloadEntry{Address: "unix://s"}, one, "not an absolute path"},
		{"directory", networking.ServiceEntry_STATIC, &networking.WorkloadEntry{Address: "unix:///var/run/"}, one, "not an absolute path"},
		{"ports", networking.ServiceEntry_STATIC, &networking.WorkloadEntry{Address: "unix:///var/run/s", Ports: map[string]uint32{"http": 80}}, one, "has no ports"},
		{"two service ports", networking.ServiceEntry_STATIC, &networking.WorkloadEntry{Address: "unix:///var/run/s"}, two, "exactly one port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := seConfig("x", "uds", &networking.ServiceEntry{Hosts: []string{"uds.local"}, Resolution: tc.res, Ports: tc.port,
				Endpoints: []*networking.WorkloadEntry{tc.ep}})
			got, err := ConvertServiceEntry(se, nil, ConvertOptions{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if eps := got.Endpoints["uds.local"]; len(eps) != 1 || eps[0].Address != tc.ep.Address || len(eps[0].Ports) != 0 {
				t.Errorf("endpoints %+v, want %s alone", eps, tc.ep.Address)
			}
		})
	}
	wes := []*istioconfig.Config{
		weConfig("x", "uds", &networking.WorkloadEntry{Address: "unix:///var/run/we", Labels: map[string]string{"app": "w"}}),
		weConfig("x", "named", &networking.WorkloadEntry{Address: "w.example.com", Labels: map[string]string{"app": "w"}}),
		weConfig("x", "ip", &networking.WorkloadEntry{Address: "10.0.0.1", Labels: map[string]string{"app": "w"}}),
	}
	for res, want := range map[networking.ServiceEntry_Resolution][]string{
		networking.ServiceEntry_STATIC: {"10.0.0.1"},
		networking.ServiceEntry_DNS:    {"10.0.0.1", "unix:///var/run/we", "w.example.com"},
	} {
		se := seConfig("x", "sel", &networking.ServiceEntry{Hosts: []string{"sel.local"}, Resolution: res, Ports: one,
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "w"}}})
		got, err := ConvertServiceEntry(se, wes, ConvertOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var addrs []string
		for _, ep := range got.Endpoints["sel.local"] {
			addrs = append(addrs, ep.Address)
		}
		if !slices.Equal(addrs, want) {
			t.Errorf("%v selects %q, want %q", res, addrs, want)
		}
	}
}

// TestConvertWorkloadSelectorFlag checks Service.WorkloadSelector: set by a workloadSelector
// with labels, as istiod's LabelSelectors; an empty selector is as none (a NONE entry with it
// keeps its 0.0.0.0 listener when it selects nothing).
func TestConvertWorkloadSelectorFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  *networking.WorkloadSelector
		want bool
	}{
		{"none", nil, false},
		{"empty", &networking.WorkloadSelector{}, false},
		{"labels", &networking.WorkloadSelector{Labels: map[string]string{"app": "cask"}}, true},
	} {
		conv, err := ConvertServiceEntry(seConfig("cellar", "cask", &networking.ServiceEntry{Hosts: []string{"cask.example.org"},
			Ports: []*networking.ServicePort{{Number: 7461, Name: "tcp", Protocol: "TCP"}}, Resolution: networking.ServiceEntry_NONE, WorkloadSelector: tc.sel}), nil, ConvertOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := conv.Services[0].WorkloadSelector; got != tc.want {
			t.Errorf("%s: WorkloadSelector = %v, want %v", tc.name, got, tc.want)
		}
	}
}
