package model

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/procstat"
	"github.com/xdslab/xdslab/istioconfig"
)

const (
	benchServices  = 1000
	benchEndpoints = 10
)

// benchSource is a mesh of benchServices × benchEndpoints, with a second endpoint set per host
// (alt) that an update switches to.
func benchSource() (src *mapSource, alt map[string][]*Endpoint) {
	src = newSource()
	alt = map[string][]*Endpoint{}
	for i := range benchServices {
		h := fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i, i%10)
		src.svcs[h] = &Service{Hostname: h, Namespace: fmt.Sprintf("ns-%d", i%10),
			Ports: []Port{{Name: "http", Number: 80, Protocol: ProtocolHTTP}, {Name: "grpc", Number: 9090, Protocol: ProtocolGRPC}}}
		var eps, alts []*Endpoint
		for j := range benchEndpoints {
			eps = append(eps, &Endpoint{Service: h, Address: fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+1),
				Labels: map[string]string{"app": h}, Locality: Locality{Region: "r", Zone: fmt.Sprintf("z%d", j%3)}, Weight: 1})
			alts = append(alts, &Endpoint{Service: h, Address: fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+101),
				Labels: map[string]string{"app": h}, Locality: Locality{Region: "r", Zone: fmt.Sprintf("z%d", j%3)}, Weight: 1})
		}
		src.eps[h], alt[h] = sortedEndpoints(eps), sortedEndpoints(alts)
	}
	return src, alt
}

// reportMicros reports wall time and process CPU time per op in microseconds; cpu0 is
// procstat.CPU() taken just before the loop.
func reportMicros(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/op")
	if cpu := procstat.CPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkSnapshotBuild builds a snapshot of 1,000 services × 10 endpoints from scratch.
func BenchmarkSnapshotBuild(b *testing.B) {
	src, _ := benchSource()
	b.ReportAllocs()
	runtime.GC() // so that collecting the setup's garbage is not counted as the loop's CPU
	cpu0 := procstat.CPU()
	var seq uint64
	for b.Loop() {
		seq++
		s, _ := BuildSnapshot(nil, seq, nil, src)
		if s.ServiceCount() != benchServices {
			b.Fatal("wrong service count")
		}
	}
	reportMicros(b, cpu0)
}

// BenchmarkSnapshotEndpointUpdate changes one host's endpoints on the 1,000 × 10 snapshot: the
// incremental (WithEndpoints) path.
func BenchmarkSnapshotEndpointUpdate(b *testing.B) {
	src, alt := benchSource()
	prev, _ := BuildSnapshot(nil, 1, nil, src)
	hosts := make([]string, 0, benchServices)
	for _, s := range prev.Services() {
		hosts = append(hosts, s.Hostname)
	}
	for h, eps := range alt {
		src.eps[h] = eps
	}
	reqs := make([]*PushRequest, len(hosts))
	for i, h := range hosts {
		reqs[i] = &PushRequest{ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: KindEndpoint, Name: h, Namespace: "ns"}: {}}}
	}
	b.ReportAllocs()
	runtime.GC() // so that collecting the setup's garbage is not counted as the loop's CPU
	cpu0 := procstat.CPU()
	i := 0
	for b.Loop() {
		s, rep := BuildSnapshot(prev, 2, reqs[i%len(reqs)], src)
		if rep.Full || len(rep.EndpointsChanged) != 1 || s == prev {
			b.Fatalf("report %+v", rep)
		}
		i++
	}
	reportMicros(b, cpu0)
}

// BenchmarkSnapshotServiceUpdate redefines one service on the 1,000 × 10 snapshot: the full
// (Apply) path, which re-sorts the service list but shares every endpoint list.
func BenchmarkSnapshotServiceUpdate(b *testing.B) {
	src, _ := benchSource()
	prev, _ := BuildSnapshot(nil, 1, nil, src)
	h := prev.Services()[benchServices/2].Hostname
	c := *src.svcs[h]
	c.Resolution = ResolutionDNS
	src.svcs[h] = &c
	req := &PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: KindService, Name: h, Namespace: "ns"}: {}}}
	b.ReportAllocs()
	runtime.GC() // so that collecting the setup's garbage is not counted as the loop's CPU
	cpu0 := procstat.CPU()
	for b.Loop() {
		_, rep := BuildSnapshot(prev, 2, req, src)
		if !rep.Full || len(rep.ServicesChanged) != 1 {
			b.Fatalf("report %+v", rep)
		}
	}
	reportMicros(b, cpu0)
}
