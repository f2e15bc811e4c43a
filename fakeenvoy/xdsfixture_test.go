package fakeenvoy

import (
	"context"
	"net"
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
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslab/xdslab/fakeenvoy/validate"
	"github.com/xdslab/xdslab/probe"
)

// Envoy resources as a go-control-plane user would build them.

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

func edsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
	}
}

func cla(name, addr string, port uint32) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
						Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
					}}},
				}},
			}},
		}},
	}
}

func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func hcmFilter(t testing.TB, hcm *hcmv3.HttpConnectionManager) *listenerv3.Filter {
	hcm.StatPrefix = "http"
	hcm.HttpFilters = []*hcmv3.HttpFilter{{
		Name:       "envoy.filters.http.router",
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})},
	}}
	return &listenerv3.Filter{
		Name:       "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)},
	}
}

func rdsListener(t testing.TB, name string, port uint32, routes ...string) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
	}
	for _, r := range routes {
		l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{hcmFilter(t, &hcmv3.HttpConnectionManager{
			RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: adsSource(), RouteConfigName: r}},
		})}})
	}
	return l
}

func route(name, host, cluster string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    host,
			Domains: []string{host},
			Routes: []*routev3.Route{{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
			}},
		}},
	}
}

// badTLSCluster is a valid-looking EDS cluster whose transport socket's UpstreamTlsContext
// (inside an Any, where ValidateAll does not look) violates PGV: an SNI over 255 bytes.
func badTLSCluster(t testing.TB, name string) *clusterv3.Cluster {
	c := edsCluster(name)
	c.TransportSocket = &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{Sni: strings.Repeat("s", 300)})},
	}
	return c
}

// snapshotResources is a small complete config: clusters c1, c2 with endpoints, listener l1
// with routes r1.
func baseResources(t testing.TB) map[resource.Type][]types.Resource {
	return map[resource.Type][]types.Resource{
		resource.ClusterType:  {edsCluster("c1"), edsCluster("c2")},
		resource.EndpointType: {cla("c1", "10.1.0.1", 8080), cla("c2", "10.1.0.2", 8080)},
		resource.ListenerType: {rdsListener(t, "l1", 15001, "r1")},
		resource.RouteType:    {route("r1", "svc.example", "c1")},
	}
}

// cpServer is a real go-control-plane ADS server on 127.0.0.1:0 that records every request.
type cpServer struct {
	addr   string
	cache  cachev3.SnapshotCache
	reqs   chan proto.Message // *DiscoveryRequest or *DeltaDiscoveryRequest, cloned
	mu     sync.Mutex
	closed bool
	// streamOf maps each recorded request to its server stream id: requests of different
	// streams reach the callbacks in no guaranteed order.
	streamOf map[proto.Message]int64
	srv      *grpc.Server
	close    func()
}

func newCPServer(t *testing.T) *cpServer {
	t.Helper()
	s := newCPServerB(t)
	t.Cleanup(s.close)
	return s
}

// newCPServerB starts a server the caller stops with close.
func newCPServerB(t testing.TB) *cpServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &cpServer{addr: lis.Addr().String(), cache: cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil), reqs: make(chan proto.Message, 4096)}
	ctx, cancel := context.WithCancel(context.Background())
	cb := serverv3.CallbackFuncs{
		StreamRequestFunc: func(id int64, r *discoveryv3.DiscoveryRequest) error {
			s.record(id, proto.Clone(r))
			return nil
		},
		StreamDeltaRequestFunc: func(id int64, r *discoveryv3.DeltaDiscoveryRequest) error {
			s.record(id, proto.Clone(r))
			return nil
		},
	}
	xds := serverv3.NewServer(ctx, s.cache, cb)
	s.srv = grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s.srv, xds)
	go func() { _ = s.srv.Serve(lis) }()
	s.close = func() {
		s.srv.Stop()
		cancel()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	}
	return s
}

// record keeps a request; when the buffer is full (a resend loop) it drops it.
func (s *cpServer) record(stream int64, m proto.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.reqs <- m:
		if s.streamOf == nil {
			s.streamOf = make(map[proto.Message]int64)
		}
		s.streamOf[m] = stream
	default:
	}
}

func (s *cpServer) set(t *testing.T, node, version string, res map[resource.Type][]types.Resource) {
	t.Helper()
	snap, err := cachev3.NewSnapshot(version, res)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cache.SetSnapshot(context.Background(), node, snap); err != nil {
		t.Fatal(err)
	}
}

// connector dials s; the connection is closed when the test ends.
func (s *cpServer) connector(t *testing.T) Connector {
	var mu sync.Mutex
	var conns []*grpc.ClientConn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return func(ctx context.Context) (grpc.ClientConnInterface, error) {
		cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		mu.Lock()
		conns = append(conns, cc)
		mu.Unlock()
		return cc, nil
	}
}

const waitLimit = 20 * time.Second

func (s *cpServer) next(t *testing.T) proto.Message {
	t.Helper()
	select {
	case r := <-s.reqs:
		return r
	case <-time.After(waitLimit):
		t.Fatalf("no request from the client within %s", waitLimit)
		return nil
	}
}

// stream is the server stream id request m arrived on.
func (s *cpServer) stream(m proto.Message) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streamOf[m]
}

func (s *cpServer) nextSotw(t *testing.T) *discoveryv3.DiscoveryRequest {
	t.Helper()
	r, ok := s.next(t).(*discoveryv3.DiscoveryRequest)
	if !ok {
		t.Fatalf("got a Delta request, want SotW")
	}
	return r
}

func (s *cpServer) nextDelta(t *testing.T) *discoveryv3.DeltaDiscoveryRequest {
	t.Helper()
	r, ok := s.next(t).(*discoveryv3.DeltaDiscoveryRequest)
	if !ok {
		t.Fatalf("got a SotW request, want Delta")
	}
	return r
}

// hookLog records hook calls in order, as short strings, plus the response infos.
type hookLog struct {
	probe.NopHooks
	events chan string
	infos  chan probe.ResponseInfo
	// onApplied runs inside Applied, on the client goroutine; set it before Run.
	onApplied func(c probe.ClientInfo, r probe.ResponseInfo, v probe.View)
}

func newHookLog() *hookLog {
	return &hookLog{events: make(chan string, 4096), infos: make(chan probe.ResponseInfo, 4096)}
}

func (h *hookLog) add(s string) {
	select {
	case h.events <- s:
	default:
	}
}

func (h *hookLog) Connected(c probe.ClientInfo, _ time.Time, attempt int) { h.add("connected") }
func (h *hookLog) Disconnected(c probe.ClientInfo, _ time.Time, err error) {
	if err == ErrPolicyDisconnect {
		h.add("disconnected policy")
		return
	}
	h.add("disconnected")
}
func (h *hookLog) ConnectFailed(probe.ClientInfo, time.Time, error) { h.add("connect-failed") }
func (h *hookLog) Response(c probe.ClientInfo, r probe.ResponseInfo) {
	select {
	case h.infos <- r:
	default:
	}
}
func (h *hookLog) Applied(c probe.ClientInfo, r probe.ResponseInfo, v probe.View) {
	if h.onApplied != nil {
		h.onApplied(c, r, v)
	}
}
func (h *hookLog) WarmingTimeout(c probe.ClientInfo, typeURL string, _ time.Time) {
	h.add("warming-timeout " + validate.ShortType(typeURL))
}
func (h *hookLog) FirstFullConfig(probe.ClientInfo, time.Time) { h.add("first-full") }

func (h *hookLog) nextInfo(t *testing.T) probe.ResponseInfo {
	t.Helper()
	select {
	case r := <-h.infos:
		return r
	case <-time.After(waitLimit):
		t.Fatalf("no response observed within %s", waitLimit)
		return probe.ResponseInfo{}
	}
}

// waitEvent reads hook events until want arrives.
func (h *hookLog) waitEvent(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case e := <-h.events:
			if e == want {
				return
			}
		case <-timeout:
			t.Fatalf("hook event %q not seen within %s", want, waitLimit)
		}
	}
}

// runClient starts c against connect and stops it (waiting for Run) when the test ends.
func runClient(t *testing.T, c *Client, connect Connector) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, connect) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v, want nil on cancel", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// badInlineRouteListener is a listener whose HCM (inside an Any) carries an inline route
// config with a virtual host without domains: PGV rejects it, ValidateAll on the Listener
// does not see it.
func badInlineRouteListener(t testing.TB, name string) *listenerv3.Listener {
	l := rdsListener(t, name, 15002)
	l.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{hcmFilter(t, &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name:         "inline",
			VirtualHosts: []*routev3.VirtualHost{{Name: "vh"}},
		}},
	})}}}
	return l
}
