package registry

import (
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
)

// FuzzConvertServiceEntry feeds arbitrary hosts, ports, addresses and localities through the
// conversion: it must never panic, and an accepted entry must give one service per host whose
// endpoints all name that host and only ports of the entry.
func FuzzConvertServiceEntry(f *testing.F) {
	f.Add("a.example.com,b.example.com", "http-web", "", uint32(80), uint32(8080), "10.0.0.1", "us/east/1a", "sa", int32(1))
	f.Add("db", "tcp", "MYSQL", uint32(3306), uint32(0), "db-1.corp", "", "", int32(2))
	f.Add("", "", "bogus", uint32(0), uint32(70000), "", "a/b/c/d", "x", int32(0))
	f.Fuzz(func(t *testing.T, hosts, portName, protocol string, number, target uint32, addr, locality, sa string, resolution int32) {
		spec := &networking.ServiceEntry{
			Hosts:      strings.Split(hosts, ","),
			Ports:      []*networking.ServicePort{{Number: number, Name: portName, Protocol: protocol, TargetPort: target}},
			Resolution: networking.ServiceEntry_Resolution(resolution),
			Endpoints: []*networking.WorkloadEntry{{Address: addr, Locality: locality, ServiceAccount: sa,
				Ports: map[string]uint32{portName: target}}},
		}
		conv, err := ConvertServiceEntry(seConfig("ns", "fuzz", spec), nil, ConvertOptions{})
		if err != nil {
			if len(conv.Services) != 0 {
				t.Fatal("services returned with an error")
			}
			return
		}
		if len(conv.Services) != len(spec.Hosts) {
			t.Fatalf("%d services for %d hosts", len(conv.Services), len(spec.Hosts))
		}
		for _, svc := range conv.Services {
			for _, ep := range conv.Endpoints[svc.Hostname] {
				if ep.Service != svc.Hostname {
					t.Fatalf("endpoint of %s names %s", svc.Hostname, ep.Service)
				}
				for name := range ep.Ports {
					if _, ok := svc.PortByName(name); !ok {
						t.Fatalf("endpoint port %q is not a service port", name)
					}
				}
			}
			switch svc.Resolution {
			case model.ResolutionStatic, model.ResolutionDNS, model.ResolutionPassthrough, model.ResolutionDynamicDNS:
			default:
				t.Fatalf("resolution %v", svc.Resolution)
			}
		}
	})
}
