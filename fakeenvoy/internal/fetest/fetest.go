package fetest

import (
	"context"
	"net"
	"slices"
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
)

// Envoy resources as a go-control-plane user would build them.

// ADSSource is the ADS config source.
func ADSSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

// EDSCluster is an EDS cluster on ADS.
func EDSCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: ADSSource()},
	}
}

// CLA is the assignment of cluster name: one endpoint addr:port.
func CLA(name, addr string, port uint32) *endpointv3.ClusterLoadAssignment {
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

// MustAny packs m in an Any, failing t when it cannot.
func MustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// HCMFilter is the network filter carrying hcm.
func HCMFilter(t testing.TB, hcm *hcmv3.HttpConnectionManager) *listenerv3.Filter {
	hcm.StatPrefix = "http"
	hcm.HttpFilters = []*hcmv3.HttpFilter{{
		Name:       "envoy.filters.http.router",
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: MustAny(t, &routerv3.Router{})},
	}}
	return &listenerv3.Filter{
		Name:       "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: MustAny(t, hcm)},
	}
}

// RDSListener is a listener on port whose HTTP connection managers take routes (one per
// name) over ADS RDS.
func RDSListener(t testing.TB, name string, port uint32, routes ...string) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
	}
	for _, r := range routes {
		l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{HCMFilter(t, &hcmv3.HttpConnectionManager{
			RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: ADSSource(), RouteConfigName: r}},
		})}})
	}
	return l
}

// Route is route config name sending host to cluster.
func Route(name, host, cluster string) *routev3.RouteConfiguration {
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

// BadTLSCluster is a valid-looking EDS cluster whose transport socket's UpstreamTlsContext
// (inside an Any, where ValidateAll does not look) violates PGV: an SNI over 255 bytes.
func BadTLSCluster(t testing.TB, name string) *clusterv3.Cluster {
	c := EDSCluster(name)
	c.TransportSocket = &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: MustAny(t, &tlsv3.UpstreamTlsContext{Sni: strings.Repeat("s", 300)})},
	}
	return c
}

// BaseResources is a small complete config: clusters c1, c2 with endpoints, listener l1
// with routes r1.
func BaseResources(t testing.TB) map[resource.Type][]types.Resource {
	return map[resource.Type][]types.Resource{
		resource.ClusterType:  {EDSCluster("c1"), EDSCluster("c2")},
		resource.EndpointType: {CLA("c1", "10.1.0.1", 8080), CLA("c2", "10.1.0.2", 8080)},
		resource.ListenerType: {RDSListener(t, "l1", 15001, "r1")},
		resource.RouteType:    {Route("r1", "svc.example", "c1")},
	}
}

// CPServer is a real go-control-plane ADS server on 127.0.0.1:0 that records every request.
type CPServer struct {
	Addr   string                // where it listens
	Cache  cachev3.SnapshotCache // what it serves (see Set)
	reqs   chan proto.Message    // *DiscoveryRequest or *DeltaDiscoveryRequest, cloned
	mu     sync.Mutex
	closed bool
	// streamOf maps each recorded request to its server stream id: requests of different
	// streams reach the callbacks in no guaranteed order.
	streamOf map[proto.Message]int64
	Srv      *grpc.Server
	Close    func() // stops the server
	// wire is every request as it came off the wire, before go-control-plane's server fills
	// in the node of a request that lacks it; streams counts the gRPC streams opened.
	wire    []WireRequest
	streams int
}

// WireRequest is a request as the client sent it: the gRPC stream it came on (numbered from 1
// in the order they opened), its type, and whether it carried a node.
type WireRequest struct {
	Stream  int
	TypeURL string
	Node    bool
}

// Wire returns the requests received so far as they came off the wire.
func (s *CPServer) Wire() []WireRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.wire)
}

// wireStream notes each request received on one stream before the handler sees it.
type wireStream struct {
	grpc.ServerStream
	s  *CPServer
	id int
}

func (w *wireStream) RecvMsg(m any) error {
	if err := w.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	r := WireRequest{Stream: w.id}
	switch v := m.(type) {
	case *discoveryv3.DiscoveryRequest:
		r.TypeURL, r.Node = v.GetTypeUrl(), v.GetNode() != nil
	case *discoveryv3.DeltaDiscoveryRequest:
		r.TypeURL, r.Node = v.GetTypeUrl(), v.GetNode() != nil
	}
	w.s.mu.Lock()
	w.s.wire = append(w.s.wire, r)
	w.s.mu.Unlock()
	return nil
}

// NewCPServer starts a server stopped when the test ends.
func NewCPServer(t *testing.T) *CPServer {
	t.Helper()
	s := NewCPServerB(t)
	t.Cleanup(s.Close)
	return s
}

// NewCPServerB starts a server the caller stops with Close.
func NewCPServerB(t testing.TB) *CPServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &CPServer{Addr: lis.Addr().String(), Cache: cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil), reqs: make(chan proto.Message, 4096)}
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
	xds := serverv3.NewServer(ctx, s.Cache, cb)
	s.Srv = grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		s.mu.Lock()
		s.streams++
		id := s.streams
		s.mu.Unlock()
		return h(srv, &wireStream{ServerStream: ss, s: s, id: id})
	}))
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s.Srv, xds)
	go func() { _ = s.Srv.Serve(lis) }()
	s.Close = func() {
		s.Srv.Stop()
		cancel()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	}
	return s
}

// record keeps a request; when the buffer is full (a resend loop) it drops it.
func (s *CPServer) record(stream int64, m proto.Message) {
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

// Set gives node the snapshot of res at version.
func (s *CPServer) Set(t *testing.T, node, version string, res map[resource.Type][]types.Resource) {
	t.Helper()
	snap, err := cachev3.NewSnapshot(version, res)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cache.SetSnapshot(context.Background(), node, snap); err != nil {
		t.Fatal(err)
	}
}

// Connector dials s; the connection is closed when the test ends.
func (s *CPServer) Connector(t *testing.T) func(context.Context) (grpc.ClientConnInterface, error) {
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
		cc, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		mu.Lock()
		conns = append(conns, cc)
		mu.Unlock()
		return cc, nil
	}
}

// WaitLimit bounds how long Next waits for a request.
const WaitLimit = 20 * time.Second

// Next is the next request the server received (either protocol).
func (s *CPServer) Next(t *testing.T) proto.Message {
	t.Helper()
	select {
	case r := <-s.reqs:
		return r
	case <-time.After(WaitLimit):
		t.Fatalf("no request from the client within %s", WaitLimit)
		return nil
	}
}

// Stream is the server stream id request m arrived on.
func (s *CPServer) Stream(m proto.Message) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streamOf[m]
}

// NextSotw is Next, which must be a SotW request.
func (s *CPServer) NextSotw(t *testing.T) *discoveryv3.DiscoveryRequest {
	t.Helper()
	r, ok := s.Next(t).(*discoveryv3.DiscoveryRequest)
	if !ok {
		t.Fatalf("got a Delta request, want SotW")
	}
	return r
}

// NextDelta is Next, which must be a Delta request.
func (s *CPServer) NextDelta(t *testing.T) *discoveryv3.DeltaDiscoveryRequest {
	t.Helper()
	r, ok := s.Next(t).(*discoveryv3.DeltaDiscoveryRequest)
	if !ok {
		t.Fatalf("got a SotW request, want Delta")
	}
	return r
}

// BadInlineRouteListener is a listener whose HCM (inside an Any) carries an inline route
// config with a virtual host without domains: PGV rejects it, ValidateAll on the Listener
// does not see it.
func BadInlineRouteListener(t testing.TB, name string) *listenerv3.Listener {
	l := RDSListener(t, name, 15002)
	l.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{HCMFilter(t, &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name:         "inline",
			VirtualHosts: []*routev3.VirtualHost{{Name: "vh"}},
		}},
	})}}}
	return l
}
