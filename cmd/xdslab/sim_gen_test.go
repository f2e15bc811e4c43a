package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// genView is what our generators produce for one sidecar from a set of config objects.
type genView map[string]map[string]proto.Message

func (v genView) Resource(typeURL, name string) proto.Message { return v[typeURL][name] }

func generate(t *testing.T, objs map[istioconfig.Key]istioconfig.Config, seq uint64) genView {
	t.Helper()
	var cfgs, ses, wes []*istioconfig.Config
	for _, c := range objs {
		c := c
		cfgs = append(cfgs, &c)
		switch c.Kind {
		case istioconfig.KindServiceEntry:
			ses = append(ses, &c)
		case istioconfig.KindWorkloadEntry:
			wes = append(wes, &c)
		}
	}
	in := model.SnapshotInput{Configs: cfgs, Endpoints: map[string][]*model.Endpoint{}}
	for _, se := range ses {
		conv, err := registry.ConvertServiceEntry(se, wes, registry.ConvertOptions{})
		require.NoError(t, err)
		in.Services = append(in.Services, conv.Services...)
		for h, eps := range conv.Endpoints {
			in.Endpoints[h] = append(in.Endpoints[h], eps...)
		}
	}
	snap := model.NewSnapshot(seq, in)
	proxy := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.255.0.1"}, ID: "client-0.ns-0", Namespace: "ns-0", DNSDomain: "ns-0.svc.cluster.local"}
	v := genView{}
	for _, typeURL := range []string{gen.ClusterType, gen.EndpointType, gen.RouteType} {
		res, err := gen.ForType(typeURL, proxy).Generate(proxy, snap, nil) // every resource

		require.NoError(t, err)
		v[typeURL] = map[string]proto.Message{}
		for _, r := range res {
			v[typeURL][r.Name] = r.Message
		}
	}
	return v
}

// Each churn kind's expectation is observable in what our generators produce from the objects
// the event leaves: it did not hold before the event and holds after.
func TestSimExpectationsAgainstGenerators(t *testing.T) {
	defer goleak.VerifyNone(t)
	sc, err := scenarios.LoadBytes("gen.yaml", []byte(`name: gen
seed: 6
duration: 10s
topology: {services: 12, namespaces: 2, versions: 2, virtualServices: 0.5, destinationRules: 0.5, protocols: {http: 2, grpc: 1, tcp: 1}}
churn:
  - {kind: endpoint-flap, rate: 2/s}
  - {kind: scale, every: 2s}
  - {kind: rolling-deploy, every: 4s, window: 2s}
  - {kind: service-create, every: 3s}
  - {kind: service-delete, every: 4s}
  - {kind: config-change, target: virtualservice, every: 2s}
  - {kind: config-change, target: destinationrule, every: 2s}
  - {kind: service-account-change, every: 3s}
  - {kind: zone-failure, at: [5s], down: 2s}
`))
	require.NoError(t, err)
	for _, wes := range []bool{false, true} {
		cfg := run.SimConfig(sc)
		cfg.Topology.WorkloadEntries = wes
		sim, err := simulator.New(cfg)
		require.NoError(t, err)
		objs := map[istioconfig.Key]istioconfig.Config{}
		for _, c := range sim.Initial() {
			objs[c.Key()] = c
		}
		seq := uint64(1)
		before := generate(t, objs, seq)
		kinds := map[simulator.ChurnKind]int{}
		ops := map[probe.Op]int{}
		r, err := simulator.NewRunner(sim, simulator.RunnerOptions{Clock: simulator.NewVirtualClock(time.Unix(0, 0)),
			Sink: simulator.SinkFuncs{ApplyFunc: func(_ context.Context, ev simulator.Event) error {
				for _, k := range ev.Deletes {
					delete(objs, k)
				}
				for _, c := range ev.Upserts {
					objs[c.Key()] = c
				}
				return nil
			}},
			OnApplied: func(ev simulator.Event) {
				seq++
				after := generate(t, objs, seq)
				require.False(t, ev.Expectation.Holds(before), "event %d (%s %s) held before it", ev.ID, ev.Kind, ev.Phase)
				for _, p := range ev.Expectation.All {
					require.True(t, p.Holds(after), "event %d (%s %s): %s does not hold in the generated resources", ev.ID, ev.Kind, ev.Phase, p)
				}
				kinds[ev.Kind]++
				for _, p := range ev.Expectation.All {
					ops[p.Op]++
				}
				before = after
			}})
		require.NoError(t, err)
		_, err = r.Run(context.Background())
		require.NoError(t, err)
		require.Len(t, kinds, 8, "%v", kinds)
		// Every predicate op the simulator uses was checked.
		for _, op := range []probe.Op{probe.EndpointPresent, probe.EndpointAbsent, probe.EndpointCount, probe.ClusterPresent, probe.ClusterAbsent, probe.ClusterLbPolicy, probe.RouteTo} {
			require.Positive(t, ops[op], "%s never checked: %v", op, ops)
		}
	}
}
