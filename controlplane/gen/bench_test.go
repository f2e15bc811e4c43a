package gen

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/procstat"
)

// reportCPU reports the process CPU time per iteration since cpu0, as "cpu-µs/op": wall time
// is unreliable on the shared 2-core machine, CPU time much less so.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((procstat.CPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// reportPerProxy reports a full-config benchmark's figures per proxy generated: wall time since
// start, CPU since cpu0, and the bytes and resources of one proxy's config.
func reportPerProxy(b *testing.B, start time.Time, cpu0 time.Duration, bytes, resources int) {
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/proxy")
	reportCPU(b, cpu0)
	b.ReportMetric(float64(bytes), "bytes/proxy")
	b.ReportMetric(float64(resources), "resources/proxy")
}

// benchSnapshot is 1,000 services with 10 endpoints each, DRs and VSs as in buildTopology.
func benchSnapshot(b *testing.B) *model.Snapshot {
	b.Helper()
	return buildTopology(1000, 10).snapshot(1)
}

// BenchmarkSidecarFullConfig generates (and, in /marshal, encodes) the full config a sidecar
// receives for 1,000 services: CDS, EDS for every EDS cluster, LDS, RDS for every route name.
func BenchmarkSidecarFullConfig(b *testing.B) {
	s := benchSnapshot(b)
	p := sidecarProxy("10.0.0.1", "ns-0")
	for _, mode := range []string{"generate", "marshal-vt", "marshal-proto"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			var bytes, resources int
			start, cpu := time.Now(), procstat.CPU()
			for b.Loop() {
				g, err := generateAll(b, p, s)
				if err != nil {
					b.Fatal(err)
				}
				bytes, resources = 0, 0
				for _, rs := range g {
					for _, r := range rs {
						resources++
						switch mode {
						case "generate":
							bytes += Size(r.Message)
						case "marshal-vt":
							buf, err := Marshal(r.Message)
							if err != nil {
								b.Fatal(err)
							}
							bytes += len(buf)
						case "marshal-proto":
							buf, err := proto.MarshalOptions{Deterministic: true}.Marshal(r.Message)
							if err != nil {
								b.Fatal(err)
							}
							bytes += len(buf)
						}
					}
				}
			}
			reportPerProxy(b, start, cpu, bytes, resources)
		})
	}
}

// BenchmarkSidecarByType splits the sidecar full config by type.
func BenchmarkSidecarByType(b *testing.B) {
	s := benchSnapshot(b)
	p := sidecarProxy("10.0.0.1", "ns-0")
	g, err := generateAll(b, p, s)
	if err != nil {
		b.Fatal(err)
	}
	names := map[string][]string{
		ClusterType: nil, ListenerType: nil,
		EndpointType: edsNames(g[ClusterType]), RouteType: routeNames(g[ListenerType]),
	}
	for _, typeURL := range Types() {
		b.Run(typeShort[typeURL], func(b *testing.B) {
			b.ReportAllocs()
			gen := ForType(typeURL, p)
			var size int
			cpu := procstat.CPU()
			for b.Loop() {
				rs, err := gen.Generate(p, s, names[typeURL])
				if err != nil {
					b.Fatal(err)
				}
				size = 0
				for _, r := range rs {
					size += Size(r.Message)
				}
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(size), "bytes")
		})
	}
}

// BenchmarkGRPCClient is what one proxyless gRPC client dialing one service costs: LDS, RDS,
// CDS and EDS for that name.
func BenchmarkGRPCClient(b *testing.B) {
	s := benchSnapshot(b)
	p := grpcProxy("ns-1")
	name := HostPortName(host(1), 9090)
	b.ReportAllocs()
	cpu := procstat.CPU()
	for b.Loop() {
		for _, req := range []struct {
			typeURL string
			names   []string
		}{{ListenerType, []string{name}}, {RouteType, []string{name}}, {ClusterType, []string{"outbound|9090||" + host(1)}}, {EndpointType, []string{"outbound|9090||" + host(1)}}} {
			rs, err := ForType(req.typeURL, p).Generate(p, s, req.names)
			if err != nil || len(rs) != 1 {
				b.Fatalf("%s: %d resources, %v", req.typeURL, len(rs), err)
			}
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkEDSOne regenerates one ClusterLoadAssignment (an endpoint-only push) and encodes it,
// for a default and a subset cluster.
func BenchmarkEDSOne(b *testing.B) {
	s := benchSnapshot(b)
	for _, name := range []string{"outbound|80||" + host(0), "outbound|80|v1|" + host(0)} {
		b.Run(name[:len("outbound|80|v1")], func(b *testing.B) {
			b.ReportAllocs()
			g := ForType(EndpointType, nil)
			var size int
			cpu := procstat.CPU()
			for b.Loop() {
				rs, err := g.Generate(nil, s, []string{name})
				if err != nil || len(rs) != 1 {
					b.Fatal(err)
				}
				buf, err := Marshal(rs[0].Message)
				if err != nil {
					b.Fatal(err)
				}
				size = len(buf)
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
