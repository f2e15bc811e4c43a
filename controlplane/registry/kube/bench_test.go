package kube_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// BenchmarkKube measures the kube path against one real kube-apiserver and etcd (the
// integration test's; skipped without them), the sink with no client-side rate limit and 8
// workers:
//
//   - write/initial[-pods]: writing a 200-service topology (5 endpoints each; with Pods, 1000
//     more objects) into cleaned namespaces: objects/s is the sink's sustained write rate.
//   - write/churn: scale events (5 services, ±1 endpoint each: one EndpointSlice write per
//     service) applied back to back: objects/s and ms/event until the API server accepted;
//     write/churn-qps50 the same with the CLI's default client limit (50/s, burst 50), which
//     then bounds the rate.
//   - e2e/dir and e2e/kube: one endpoint event at a time through the whole chain, the dir
//     sink (files, fsnotify, our file source) against the kube sink (API server, watch, our
//     kube registry), the rest alike: accepted-ms is the sink's Apply, delivered-ms from then
//     (t0) to the fake Envoy holding the change, total-ms their sum. kube's total minus dir's
//     is what the API server path adds. e2e/mcp is the same through the simulator's MCP sink
//     and our xds:// config source.
func BenchmarkKube(b *testing.B) {
	if testing.Short() {
		b.Skip("starts etcd and kube-apiserver")
	}
	cl := startCluster(b)
	ctx := context.Background()
	for _, pods := range []bool{false, true} {
		name := "write/initial"
		if pods {
			name += "-pods"
		}
		b.Run(name, func(b *testing.B) {
			kc, ic := kubeClients(b, cl.sim, -1, 0)
			cfg := simulator.DefaultConfig()
			cfg.Topology.Namespaces, cfg.Topology.Services = 2, 200
			cfg.Topology.EndpointsPerService = dist.Spec{Dist: "constant", Value: 5}
			cfg.Topology.VirtualServices, cfg.Topology.DestinationRules, cfg.Topology.SidecarImports = 0, 0, 0
			sim, err := simulator.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			initial := sim.Initial()
			var objects int64
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				sink, err := sinks.NewKube(sinks.KubeOptions{Kube: kc, Istio: ic, Workers: 8, Pods: pods})
				if err != nil {
					b.Fatal(err)
				}
				if err := sink.CleanNamespaces(ctx, "ns-0", "ns-1"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				begin := time.Now()
				if err := sink.Init(ctx, initial); err != nil {
					b.Fatal(err)
				}
				took += time.Since(begin)
				objects += sink.Stats().Objects()
			}
			b.ReportMetric(float64(objects)/took.Seconds(), "objects/s")
			b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
		})
	}
	for _, qps := range []float64{-1, 50} {
		name := "write/churn"
		if qps > 0 {
			name += fmt.Sprintf("-qps%g", qps)
		}
		b.Run(name, func(b *testing.B) {
			kc, ic := kubeClients(b, cl.sim, qps, 0)
			cfg := simulator.DefaultConfig()
			cfg.Duration = 100 * time.Hour
			cfg.Topology.Namespaces, cfg.Topology.Services = 2, 200
			cfg.Topology.EndpointsPerService = dist.Spec{Dist: "constant", Value: 5}
			cfg.Churn = []simulator.Churn{{Kind: simulator.Scale, Every: time.Second, Services: 5, Delta: dist.Spec{Dist: "constant", Value: 1}}}
			sim, err := simulator.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			sink, err := sinks.NewKube(sinks.KubeOptions{Kube: kc, Istio: ic, Workers: 8, Clean: true})
			if err != nil {
				b.Fatal(err)
			}
			if err := sink.Init(ctx, sim.Initial()); err != nil {
				b.Fatal(err)
			}
			writes0 := sink.Stats().Objects()
			var took time.Duration
			for b.Loop() {
				ev, ok, err := sim.Next()
				if err != nil || !ok {
					b.Fatal("the simulation ended", err)
				}
				begin := time.Now()
				if err := sink.Apply(ctx, ev); err != nil {
					b.Fatal(err)
				}
				took += time.Since(begin)
			}
			writes := sink.Stats().Objects() - writes0
			b.ReportMetric(float64(writes)/took.Seconds(), "objects/s")
			b.ReportMetric(float64(writes)/float64(b.N), "objects/op")
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "accepted-ms")
		})
	}
	for _, sink := range []string{"dir", "kube", "mcp"} {
		b.Run("e2e/"+sink, func(b *testing.B) {
			c := newChain(b, chainOptions{sink: sink, cluster: cl, services: 200, endpoints: 5, qps: -1, workers: 8, quiet: true})
			var accepted, delivered, total []time.Duration
			for b.Loop() {
				_, a, d := c.step(b)
				accepted, delivered, total = append(accepted, a), append(delivered, d), append(total, a+d)
			}
			c.rec.check(b)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(quantile(accepted, 0.5)), "accepted-ms")
			b.ReportMetric(ms(quantile(delivered, 0.5)), "delivered-ms")
			b.ReportMetric(ms(quantile(total, 0.5)), "total-ms")
			b.ReportMetric(ms(quantile(total, 0.99)), "total-p99-ms")
		})
	}
}

// quantile is the q-quantile (nearest rank) of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
