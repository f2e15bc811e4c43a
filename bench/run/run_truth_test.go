package run

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
)

// Measurement truth: a control plane whose pushes happen exactly D after the sink's Apply
// returns (go-control-plane's SnapshotCache, set by a timer) must be measured at D, and an
// event it never pushes must be reported as missed.

// allNodes hashes every node to one snapshot.
type allNodes struct{}

func (allNodes) ID(*corev3.Node) string { return "all" }

// serveSnapshotCache serves a go-control-plane snapshot cache (one snapshot for every node) over
// ADS on a loopback port until stop, returning the cache and the server's address.
func serveSnapshotCache(t *testing.T, ctx context.Context) (cache cachev3.SnapshotCache, target string, stop func()) {
	return serveSnapshotCacheWith(t, ctx, nil)
}

// serveSnapshotCacheWith is serveSnapshotCache with the server's callbacks (nil: none).
func serveSnapshotCacheWith(t *testing.T, ctx context.Context, cb serverv3.Callbacks) (cache cachev3.SnapshotCache, target string, stop func()) {
	t.Helper()
	cache = cachev3.NewSnapshotCache(true, allNodes{}, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	srvCtx, stopSrv := context.WithCancel(ctx)
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, serverv3.NewServer(srvCtx, cache, cb))
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	return cache, lis.Addr().String(), func() {
		stopSrv()
		g.Stop()
		<-done
	}
}

// delayedSink keeps the mesh's ServiceEntries and publishes a snapshot of their clusters and
// endpoints exactly delay after each Apply returned; events drop says so are never published.
type delayedSink struct {
	cache cachev3.SnapshotCache
	delay time.Duration
	drop  func(simulator.Event) bool

	ses     map[istioconfig.Key]*networking.ServiceEntry
	version int
	dropped []uint64

	mu      sync.Mutex // guards pub
	pub     int
	pending sync.WaitGroup

	atMu      sync.Mutex
	publishAt map[int]time.Time // snapshot version → when it is published (Apply's instant + delay)
}

func (s *delayedSink) Init(ctx context.Context, initial []istioconfig.Config) error {
	s.ses = map[istioconfig.Key]*networking.ServiceEntry{}
	s.update(initial, nil)
	snap, err := s.snapshot()
	if err != nil {
		return err
	}
	return s.cache.SetSnapshot(ctx, "all", snap)
}

func (s *delayedSink) Apply(_ context.Context, ev simulator.Event) error {
	if s.drop(ev) {
		s.dropped = append(s.dropped, ev.ID)
		return nil
	}
	s.update(ev.Upserts, ev.Deletes)
	snap, err := s.snapshot()
	if err != nil {
		return err
	}
	version := s.version
	at := time.Now().Add(s.delay) // Apply returns right after this: t0 follows it
	// Not under mu, which the publisher of the last version holds while go-control-plane
	// answers every watch: Apply must return at once, or t0 comes late.
	s.atMu.Lock()
	if s.publishAt == nil {
		s.publishAt = map[int]time.Time{}
	}
	s.publishAt[version] = at
	s.atMu.Unlock()
	s.pending.Add(1)
	go func() {
		defer s.pending.Done()
		// The injected delay must be known to the µs: a timer alone fires up to a few ms late
		// on a loaded machine, so sleep to just before the deadline and spin the rest.
		if d := time.Until(at) - 10*time.Millisecond; d > 0 {
			time.Sleep(d)
		}
		for time.Now().Before(at) {
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if version > s.pub {
			s.pub = version
			_ = s.cache.SetSnapshot(context.Background(), "all", snap)
		}
	}()
	return nil
}

func (s *delayedSink) Close() error {
	s.pending.Wait()
	return nil
}

func (s *delayedSink) update(upserts []istioconfig.Config, deletes []istioconfig.Key) {
	for _, k := range deletes {
		delete(s.ses, k)
	}
	for _, c := range upserts {
		if se, ok := c.Spec.(*networking.ServiceEntry); ok {
			s.ses[c.Key()] = se
		}
	}
}

// snapshot builds the next snapshot: per ServiceEntry host and port an EDS cluster named as
// our generators (and the simulator's expectations) name it, and its endpoints.
func (s *delayedSink) snapshot() (*cachev3.Snapshot, error) {
	s.version++
	var clusters, endpoints, listeners, routes []types.Resource
	for _, se := range s.ses {
		for _, host := range se.GetHosts() {
			for _, p := range se.GetPorts() {
				name := fmt.Sprintf("outbound|%d||%s", p.GetNumber(), host)
				clusters = append(clusters, &clusterv3.Cluster{
					Name:                 name,
					ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
					EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{
						ResourceApiVersion:    corev3.ApiVersion_V3,
						ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
					}},
				})
				var lbs []*endpointv3.LbEndpoint
				for _, e := range se.GetEndpoints() {
					lbs = append(lbs, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
						Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
							Address: e.GetAddress(), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: p.GetNumber()}}}},
					}}})
				}
				// A locality with a weight: grpc-go rejects assignments without one.
				endpoints = append(endpoints, &endpointv3.ClusterLoadAssignment{ClusterName: name,
					Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbs,
						Locality:            &corev3.Locality{Region: "r", Zone: "z"},
						LoadBalancingWeight: wrapperspb.UInt32(1)}}})
				// The proxyless gRPC chain: API listener and route config "host:port".
				hp := net.JoinHostPort(host, strconv.FormatUint(uint64(p.GetNumber()), 10))
				listeners = append(listeners, apiListener(hp))
				routes = append(routes, &routev3.RouteConfiguration{Name: hp, VirtualHosts: []*routev3.VirtualHost{{
					Name: hp, Domains: []string{hp},
					Routes: []*routev3.Route{{
						Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
						Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: name}}},
					}},
				}}})
			}
		}
	}
	// Versions per type: the cluster set never changes under scale events, so its version does
	// not either and only endpoints are re-sent (go-control-plane v0.14 resends every type whose
	// version changed; one shared version would make each push a CDS+EDS pair whose CDS the
	// client must process before it reads the EDS response).
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		names = append(names, c.(*clusterv3.Cluster).GetName())
	}
	sort.Strings(names)
	snap := &cachev3.Snapshot{}
	setVersion := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(names, ","))))
	snap.Resources[types.Cluster] = cachev3.NewResources(setVersion, clusters)
	snap.Resources[types.Endpoint] = cachev3.NewResources(fmt.Sprint(s.version), endpoints)
	snap.Resources[types.Listener] = cachev3.NewResources(setVersion, listeners)
	snap.Resources[types.Route] = cachev3.NewResources(setVersion, routes)
	return snap, nil
}

// apiListener is a proxyless gRPC API listener whose routes come over ADS under its name.
func apiListener(name string) *listenerv3.Listener {
	router, _ := anypb.New(&routerv3.Router{})
	hcm, _ := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "grpc",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: name,
			ConfigSource: &corev3.ConfigSource{ResourceApiVersion: corev3.ApiVersion_V3,
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}
}

const truthScenario = `
name: truth
seed: 11
duration: 2600ms
topology:
  namespaces: 1
  services: 6
  endpointsPerService: {dist: constant, value: 3}
  virtualServices: 0
  destinationRules: 0
churn:
  - {kind: scale, at: [200ms, 400ms, 600ms, 800ms, 1s, 1200ms, 1400ms, 1600ms, 1800ms, 2s, 2300ms], delta: {dist: constant, value: 1}}
clients:
  - {name: sidecars, count: 3, ramp: 0, xds: %s}
phases:
  connect: {timeout: 30s}
  drain: {timeout: 700ms}
`

// TestRunMeasurementTruth runs once per client flavour: Envoy SotW, Envoy Delta and proxyless
// gRPC clients must all measure the injected delay.
func TestRunMeasurementTruth(t *testing.T) {
	for _, xds := range []string{"sotw", "delta", "grpc"} {
		t.Run(xds, func(t *testing.T) {
			// The p99 of ~30 observations is their maximum: one late scheduler wakeup of the
			// transport on an idle VM (seen: 3-8 ms, on either side) puts it over 2 ms, and a
			// slow stretch of the shared machine has moved a whole run's median by 4 ms. A
			// systematic error (a stamp after decoding, a false or late match) would fail every
			// attempt; the counts, the misses and "nothing seen before it is published" must
			// hold in each. So the latency bounds (min, p50, p99 within 2 ms of D) get five
			// attempts.
			const attempts = 5
			var dev, tol float64
			for i := 1; i <= attempts; i++ {
				dev, tol = testMeasurementTruth(t, xds)
				if dev <= tol {
					return
				}
				t.Logf("attempt %d: min, p50 or p99 is D + %.3fms", i, 1e3*dev)
			}
			require.LessOrEqual(t, dev, tol, "min, p50 and p99 push latency are D within 2ms (in one of %d runs)", attempts)
		})
	}
}

// testMeasurementTruth runs the scenario once with xds clients, checks everything but the
// latency bounds, and returns the largest distance of min, p50 and p99 from D, and the
// tolerance.
func testMeasurementTruth(t *testing.T, xds string) (float64, float64) {
	const delay = 50 * time.Millisecond
	sc := loadScenario(t, fmt.Sprintf(truthScenario, xds))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cache, target, stopSrv := serveSnapshotCache(t, ctx)
	defer stopSrv()

	// The last arrival is never published: no client can observe it.
	sink := &delayedSink{cache: cache, delay: delay, drop: func(ev simulator.Event) bool { return ev.Scheduled >= 2300*time.Millisecond }}
	s, err := Run(ctx, sc, Options{Target: target, Sink: sink})
	require.NoError(t, err)
	require.Len(t, sink.dropped, 1, "the last event reached the sink and was dropped")

	events := find(t, s, collect.MetricSimEvents, nil).Values["count"]
	require.GreaterOrEqual(t, events, 4.0)
	require.Equal(t, 1.0, find(t, s, collect.MetricEventsMissed, nil).Values["count"], "the unpublished event is missed")
	require.Equal(t, 1.0, find(t, s, collect.MetricEventsMissed, map[string]string{"kind": "scale"}).Values["count"])
	require.Equal(t, 3.0, find(t, s, "xdslab_probe_missed_total", nil).Values["count"], "by each of the 3 clients")

	push := find(t, s, "xdslab_push_latency_seconds", nil)
	h, err := push.Histogram.Decode()
	require.NoError(t, err)
	// Every published event is seen by every client (nothing else changes those resources).
	require.Equal(t, int64(3*(events-1)), h.TotalCount())
	d := delay.Seconds()
	tol := (2 * time.Millisecond).Seconds()
	t.Logf("push latency: min %.3fms p50 %.3fms p99 %.3fms max %.3fms (D = %v)",
		1e3*push.Values["min"], 1e3*push.Values["p(50)"], 1e3*push.Values["p(99)"], 1e3*push.Values["max"], delay)
	// t0 is stamped just after the sink's Apply returns, while the sink's clock for D started
	// inside Apply: the runner goroutine descheduled in between stamps t0 late and the minimum
	// comes out below D (seen without -race: 0.1-0.8ms on a quiet machine, 2.2ms at load 6,
	// 2.3ms under -race). That is the 2ms bound's business, retried with p50 and p99 (dev
	// includes the minimum). A client seeing a change before it is published is off by about
	// D, so this check needs no tight bound to catch one.
	const slack = 10e-3
	require.GreaterOrEqual(t, push.Values["min"], d-slack, "no client sees a change before it is published")
	if raceEnabled {
		// The race detector multiplies the cost of the transport (gRPC framing, protobuf, the
		// SnapshotCache's marshalling) that sits between the push and the receive: the 2ms bound
		// is checked without -race (go test -run TestRunMeasurementTruth ./bench).
		tol = (250 * time.Millisecond).Seconds()
		t.Logf("race detector on: tolerance widened to %v", time.Duration(tol*float64(time.Second)))
	}
	require.Equal(t, 0.0, find(t, s, "xdslab_fleet_nacks_total", nil).Values["count"], "nothing is rejected")
	// Convergence has one definition: per kind, and overall as their merge; the unpublished
	// event is in it (censored), not dropped.
	conv, err := find(t, s, "xdslab_convergence_seconds", nil).Histogram.Decode()
	require.NoError(t, err)
	convScale, err := find(t, s, "xdslab_convergence_seconds", map[string]string{"kind": "scale"}).Histogram.Decode()
	require.NoError(t, err)
	require.Equal(t, int64(events), conv.TotalCount(), "every event, the missed one included")
	require.Equal(t, conv.TotalCount(), convScale.TotalCount())

	// Without the target's metrics, the control plane's figures are reported as not available.
	require.Contains(t, s.Metadata.Labels["note.debounce"], collect.NotAvailable)
	require.Contains(t, s.Metadata.Labels["note.cache"], collect.NotAvailable)
	_, ok := s.Results.Find(collect.MetricPushCycles, nil)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(s.Metadata.Labels["target"], "external"))
	dev := max(math.Abs(push.Values["p(99)"]-d), math.Abs(push.Values["p(50)"]-d), math.Abs(push.Values["min"]-d))
	return dev, tol
}
