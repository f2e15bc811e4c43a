package kubedump

import (
	"fmt"
	"strings"
	"testing"
)

// bigDump writes a dump of n services with eps ready endpoints each over three zones, in one
// EndpointSlice per service: the shape of a large cluster without its pods.
func bigDump(n, eps int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range n {
		ns, name := fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("svc-%d", i)
		fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Service\n  metadata: {name: %s, namespace: %s}\n  spec:\n    selector: {app: %s}\n    ports:\n    - {name: http, port: 8080, targetPort: 8080, protocol: TCP}\n    - {name: grpc, port: 9090, protocol: TCP}\n", name, ns, name)
		fmt.Fprintf(&b, "- apiVersion: discovery.k8s.io/v1\n  kind: EndpointSlice\n  metadata: {name: %s-x, namespace: %s, labels: {kubernetes.io/service-name: %s}}\n  addressType: IPv4\n  ports: [{name: http, port: 8080}, {name: grpc, port: 9090}]\n  endpoints:\n", name, ns, name)
		for j := range eps {
			fmt.Fprintf(&b, "  - {addresses: [10.%d.%d.%d], conditions: {ready: true}, zone: zone-%d}\n", i/250, i%250, j, j%3)
		}
	}
	return []byte(b.String())
}

// BenchmarkImport measures parse, convert and scenario writing of a 1,000-service dump (10
// endpoints each), with and without anonymization.
func BenchmarkImport(b *testing.B) {
	const services = 1000
	data := bigDump(services, 10)
	for _, anon := range []bool{false, true} {
		b.Run(fmt.Sprintf("anonymize=%t", anon), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := Parse([]File{{Name: "big.yaml", Data: data}})
				if err != nil {
					b.Fatal(err)
				}
				r, err := Convert(d)
				if err != nil {
					b.Fatal(err)
				}
				if anon {
					if err := NewAnonymizer("").Result(r); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := r.Scenario(""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(services)*float64(b.N)/b.Elapsed().Seconds(), "services/s")
			b.ReportMetric(float64(len(data))/1e6, "dumpMB")
		})
	}
}
