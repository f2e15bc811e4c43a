package run

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/simulator"
)

// truthFleetScenario is truthScenario with a fleet: 500 Envoy SotW sidecars, one connection
// each, that every push reaches at once.
const truthFleetScenario = `
name: truth-fleet
seed: 11
duration: 6s
topology:
  namespaces: 1
  services: 6
  endpointsPerService: {dist: constant, value: 3}
  virtualServices: 0
  destinationRules: 0
churn:
  - {kind: scale, at: [500ms, 1s, 1500ms, 2s, 2500ms, 3s, 3500ms, 4s, 4500ms, 5s, 5500ms], delta: {dist: constant, value: 1}}
clients:
  - {name: sidecars, count: %d, ramp: 0, xds: sotw}
phases:
  connect: {timeout: 60s}
  drain: {timeout: 700ms}
`

// truthFleetClients is how many clients TestRunMeasurementTruthFleet runs.
const truthFleetClients = 500

// TestRunMeasurementTruthFleet is TestRunMeasurementTruth at 500 clients. A push then takes
// the server a while to hand to every stream, and that time is the control plane's, so the
// truth is not D for every client: the server stamps each EDS response right before it hands
// it to gRPC (go-control-plane's OnStreamResponse), and the truth of that client's latency is
// D plus how long after the publication that was. The harness's push latency quantiles (p50,
// p99) must be those of the truth within 2 ms: what the fleet adds on top of the server (the
// transport, and the receive backlog of 500 fake Envoys on two cores) is in the difference.
// Too heavy for the race detector; make test runs it without.
func TestRunMeasurementTruthFleet(t *testing.T) {
	if raceEnabled {
		t.Skip("500 clients under the race detector measure the detector: make test runs this without -race")
	}
	if testing.Short() {
		t.Skip("500 clients: not under -short")
	}
	// As in TestRunMeasurementTruth: one late wakeup of the machine can move a quantile of a
	// run; a systematic error moves it in every attempt.
	const attempts = 3
	var dev, tol float64
	for i := 1; i <= attempts; i++ {
		dev, tol = testMeasurementTruthFleet(t, truthFleetClients)
		if !math.IsInf(dev, 1) && dev <= tol {
			return
		}
		t.Logf("attempt %d: p50 or p99 is the truth's + %.3fms", i, 1e3*dev)
	}
	require.LessOrEqual(t, dev, tol, "p50 and p99 push latency are the server-side truth's within 2ms (in one of %d runs)", attempts)
}

// sendStamps records, per server stream, when the server handed each EDS response to gRPC and
// its snapshot version.
type sendStamps struct {
	mu sync.Mutex
	at map[int64][]sent
}

type sent struct {
	version int
	at      time.Time
}

func (s *sendStamps) callbacks() serverv3.Callbacks {
	return serverv3.CallbackFuncs{
		StreamResponseFunc: func(_ context.Context, stream int64, _ *discoverygrpc.DiscoveryRequest, r *discoverygrpc.DiscoveryResponse) {
			now := time.Now()
			if r.GetTypeUrl() != resource.EndpointType {
				return
			}
			v, err := strconv.Atoi(r.GetVersionInfo())
			if err != nil {
				return
			}
			s.mu.Lock()
			s.at[stream] = append(s.at[stream], sent{version: v, at: now})
			s.mu.Unlock()
		},
	}
}

// truth returns the latency each stream's client can at best measure for each published
// version: D plus how long after the publication the server sent it that version or a later
// one (a client still busy with the last push gets the next one, which holds both changes).
func (s *sendStamps) truth(published map[int]time.Time, delay time.Duration) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []float64
	for _, sends := range s.at {
		for v, at := range published {
			for _, x := range sends {
				if x.version >= v {
					out = append(out, (delay + x.at.Sub(at)).Seconds())
					break
				}
			}
		}
	}
	return out
}

// testMeasurementTruthFleet runs the scenario once with n clients, checks the counts, and
// returns the largest distance of the measured p50 and p99 from the truth's, and the tolerance.
func testMeasurementTruthFleet(t *testing.T, n int) (float64, float64) {
	const delay = 50 * time.Millisecond
	sc := loadScenario(t, fmt.Sprintf(truthFleetScenario, n))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	stamps := &sendStamps{at: map[int64][]sent{}}
	cache, target, stopSrv := serveSnapshotCacheWith(t, ctx, stamps.callbacks())
	defer stopSrv()
	sink := &delayedSink{cache: cache, delay: delay, drop: func(ev simulator.Event) bool { return ev.Scheduled >= 5500*time.Millisecond }}
	s, err := Run(ctx, sc, Options{Target: target, Sink: sink})
	require.NoError(t, err)
	require.Len(t, sink.dropped, 1, "the last event reached the sink and was dropped")

	events := find(t, s, collect.MetricSimEvents, nil).Values["count"]
	require.GreaterOrEqual(t, events, 4.0)
	require.Equal(t, 1.0, find(t, s, collect.MetricEventsMissed, nil).Values["count"], "the unpublished event is missed")
	require.Equal(t, float64(n), find(t, s, "xdslab_probe_missed_total", nil).Values["count"], "by each client")
	require.Equal(t, 0.0, find(t, s, "xdslab_fleet_nacks_total", nil).Values["count"], "nothing is rejected")

	sink.atMu.Lock()
	truth := stamps.truth(sink.publishAt, delay)
	sink.atMu.Unlock()
	push := find(t, s, "xdslab_push_latency_seconds", nil)
	h, err := push.Histogram.Decode()
	require.NoError(t, err)
	t.Logf("events %v, push latencies %d, server sends of published versions %d", events, h.TotalCount(), len(truth))
	// A client still busy with one push gets the next in the same response; when both change
	// the same service the first is superseded and has no latency, so the two populations
	// differ: such a run cannot be judged (the events are 500 ms apart to make it rare).
	if sup := find(t, s, "xdslab_probe_superseded_total", nil).Values["count"]; sup > 0 {
		t.Logf("%v observations superseded: the server coalesced pushes; not judged", sup)
		return math.Inf(1), 0
	}
	require.Equal(t, int64(n*int(events-1)), h.TotalCount(), "every published event is seen by every client")
	require.Len(t, truth, n*int(events-1), "the server sent every published version (or a later one) to every client")
	slices.Sort(truth)
	q := func(p float64) float64 { return truth[min(len(truth)-1, int(math.Ceil(p*float64(len(truth))))-1)] }
	t.Logf("push latency: p50 %.3fms p99 %.3fms max %.3fms; server-side truth: p50 %.3fms p99 %.3fms max %.3fms (D = %v)",
		1e3*push.Values["p(50)"], 1e3*push.Values["p(99)"], 1e3*push.Values["max"], 1e3*q(0.5), 1e3*q(0.99), 1e3*truth[len(truth)-1], delay)
	require.GreaterOrEqual(t, push.Values["min"], delay.Seconds()-0.1e-3, "no client sees a change before it is published")
	dev := max(math.Abs(push.Values["p(99)"]-q(0.99)), math.Abs(push.Values["p(50)"]-q(0.5)))
	return dev, (2 * time.Millisecond).Seconds()
}
