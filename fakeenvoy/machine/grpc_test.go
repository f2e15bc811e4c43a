package machine

import (
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// apiListener is a proxyless gRPC listener "host:port" fetching route config of the same name.
func apiListener(t testing.TB, name string) *listenerv3.Listener {
	hcm := &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: fetest.ADSSource(), RouteConfigName: name}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: fetest.MustAny(t, &routerv3.Router{})}}},
	}
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: fetest.MustAny(t, hcm)}}
}

// grpcCLA is an assignment as grpc-go needs it: one weighted locality.
func grpcCLA(name, addr string) *endpointv3.ClusterLoadAssignment {
	c := fetest.CLA(name, addr, 80)
	c.Endpoints[0].Locality = &corev3.Locality{Region: "r", Zone: "z"}
	c.Endpoints[0].LoadBalancingWeight = wrapperspb.UInt32(1)
	return c
}

// TestGRPCClientRequests: a gRPC client asks for its targets' API listeners, then by name for
// the routes, the clusters they send to and their assignments — grpc-go's order.
func TestGRPCClientRequests(t *testing.T) {
	const tgt = "svc.ns.svc.cluster.local:80"
	const cl = "outbound|80||svc.ns.svc.cluster.local"
	m := newTestMachine(t, Config{GRPC: true, GRPCTargets: []string{tgt}})
	wantReqs(t, "start", m.Start(t0).Sotw, "LDS(,,["+tgt+"])")
	wantReqs(t, "LDS", m.OnSotw(sotwResp(t, L, "1", "a", apiListener(t, tgt)), t0).Sotw,
		"RDS(,,["+tgt+"])", "LDS(1,a,["+tgt+"])")
	wantReqs(t, "RDS", m.OnSotw(sotwResp(t, R, "1", "b", fetest.Route(tgt, "svc", cl)), t0).Sotw,
		"CDS(,,["+cl+"])", "RDS(1,b,["+tgt+"])")
	wantReqs(t, "CDS", m.OnSotw(sotwResp(t, C, "1", "c", fetest.EDSCluster(cl)), t0).Sotw,
		"EDS(,,["+cl+"])", "CDS(1,c,["+cl+"])")
	s := m.OnSotw(sotwResp(t, E, "1", "d", grpcCLA(cl, "10.0.0.1")), t0)
	wantReqs(t, "EDS", s.Sotw, "EDS(1,d,["+cl+"])")
	if !s.FirstFull || s.Info.Nacked {
		t.Errorf("EDS: first full %v, nacked %v (%s)", s.FirstFull, s.Info.Nacked, s.Info.Error)
	}
	if m.Effective(C, cl) == nil {
		t.Errorf("a gRPC client does not warm: the cluster is in effect once accepted")
	}
}

// TestGRPCClientRejects: what grpc-go's xDS client rejects is NACKed by a gRPC client, while an
// Envoy client (even realistic) accepts it — the fleet catches the class of fault a real gRPC
// client hits. Each case names the grpc-go rule it mirrors.
func TestGRPCClientRejects(t *testing.T) {
	const cl = "c1"
	noLocality := fetest.CLA(cl, "10.0.0.1", 80) // LocalityLbEndpoints without locality
	zeroEndpointWeight := grpcCLA(cl, "10.0.0.1")
	zeroEndpointWeight.Endpoints[0].LbEndpoints[0].LoadBalancingWeight = wrapperspb.UInt32(0)
	dupAddr := grpcCLA(cl, "10.0.0.1")
	dupAddr.Endpoints[0].LbEndpoints = append(dupAddr.Endpoints[0].LbEndpoints, dupAddr.Endpoints[0].LbEndpoints[0])
	gapPriority := grpcCLA(cl, "10.0.0.1")
	gapPriority.Endpoints[0].Priority = 1
	dupLocality := grpcCLA(cl, "10.0.0.1")
	dupLocality.Endpoints = append(dupLocality.Endpoints, proto.CloneOf(dupLocality.Endpoints[0]))
	dupLocality.Endpoints[1].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().Address = "10.0.0.2"
	staticCluster := fetest.EDSCluster(cl)
	staticCluster.ClusterDiscoveryType = nil // STATIC
	cases := []struct {
		name    string
		typeURL string
		msg     proto.Message
		want    string // in the NACK's error_detail
	}{
		{"EDS locality without ID (parseEDSRespProto)", E, noLocality, "locality without ID"},
		{"EDS endpoint weight 0 (parseEndpoints)", E, zeroEndpointWeight, "zero weight"},
		{"EDS duplicate address (parseEndpoints)", E, dupAddr, "duplicate endpoint"},
		{"EDS priorities with a gap (parseEDSRespProto)", E, gapPriority, "priority 0 missing"},
		{"EDS duplicate locality (parseEDSRespProto)", E, dupLocality, "duplicate locality"},
		{"CDS static cluster (validateClusterAndConstructClusterUpdate)", C, staticCluster, "unsupported cluster type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestMachine(t, Config{GRPC: true, GRPCTargets: []string{"x:1"}})
			g.Start(t0)
			g.types[tEDS] = typeState{subscribed: true, names: []string{cl}}
			g.types[tCDS] = typeState{subscribed: true, names: []string{cl}}
			s := g.OnSotw(sotwResp(t, tc.typeURL, "1", "n", tc.msg), t0)
			if !s.Info.Nacked || !strings.Contains(s.Info.Error, tc.want) || s.Sotw[len(s.Sotw)-1].ErrorDetail == nil {
				t.Errorf("gRPC client: nacked %v, error %q, want %q", s.Info.Nacked, s.Info.Error, tc.want)
			}
			if g.Resource(tc.typeURL, cl) != nil {
				t.Errorf("the rejected resource was applied")
			}
		})
	}
	// The fault of the protocol review: an EDS assignment without locality passes Envoy's
	// validation and fails grpc-go's.
	e := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	if s := e.OnSotw(sotwResp(t, E, "2", "n", noLocality, fetest.CLA("c2", "10.0.0.2", 80)), t0); s.Info.Nacked {
		t.Errorf("an Envoy client NACKs an assignment without locality: %s", s.Info.Error)
	}
}

// TestGRPCClientIgnoresUnweightedLocality: grpc-go uses no endpoint of a locality without a
// weight; the probes see the assignment as the client uses it.
func TestGRPCClientIgnoresUnweightedLocality(t *testing.T) {
	g := newTestMachine(t, Config{GRPC: true, GRPCTargets: []string{"x:1"}})
	g.Start(t0)
	g.types[tEDS] = typeState{subscribed: true, names: []string{"c1"}}
	c := grpcCLA("c1", "10.0.0.1")
	c.Endpoints[0].LoadBalancingWeight = nil
	if s := g.OnSotw(sotwResp(t, E, "1", "n", c), t0); s.Info.Nacked {
		t.Fatalf("NACKed: %s", s.Info.Error)
	}
	p := probe.Predicate{Op: probe.EndpointPresent, Resource: "c1", Address: "10.0.0.1", Port: 80}
	if p.Holds(g) {
		t.Errorf("an endpoint of an unweighted locality counts as present")
	}
}

// TestGRPCClientDeletionReconnectAndRestart: grpc-go takes a CDS or LDS resource that a SotW
// response lacks as deleted only when it held it (xdsclient's authority: a resource with no
// cached copy may be missing because the response answers an earlier request; its watch
// expiry says it does not exist). Its cache outlives a stream, so the first response after a
// reconnect that lacks a held cluster deletes it, reported as touched (the matcher sees the
// deletion there); a new process holds nothing, so its first response lacking the cluster it
// asks for touches nothing and is Fresh.
func TestGRPCClientDeletionReconnectAndRestart(t *testing.T) {
	const tgt = "svc.ns.svc.cluster.local:80"
	const cl = "outbound|80||svc.ns.svc.cluster.local"
	toCDS := func(m *Machine) {
		m.Start(t0)
		m.OnSotw(sotwResp(t, L, "1", "a", apiListener(t, tgt)), t0)
		m.OnSotw(sotwResp(t, R, "1", "b", fetest.Route(tgt, "svc", cl)), t0)
	}
	m := newTestMachine(t, Config{GRPC: true, GRPCTargets: []string{tgt}})
	toCDS(m)
	m.OnSotw(sotwResp(t, C, "1", "c", fetest.EDSCluster(cl)), t0)
	m.OnSotw(sotwResp(t, E, "1", "d", grpcCLA(cl, "10.0.0.1")), t0)
	m.Start(t0) // a reconnect: the same process restates its subscriptions
	if !m.Subscribed(C, cl) {
		t.Fatalf("after a reconnect the client no longer asks for %s", cl)
	}
	s := m.OnSotw(sotwResp(t, C, "2", "e"), t0)
	if s.Info.Fresh || s.Info.Nacked || m.Resource(C, cl) != nil {
		t.Fatalf("reconnect: fresh %v, nacked %v, still holds the cluster %v", s.Info.Fresh, s.Info.Nacked, m.Resource(C, cl) != nil)
	}
	if len(s.Info.Touched) != 1 || s.Info.Touched[0].Name != cl || s.Info.Touched[0].Prev == nil {
		t.Errorf("reconnect: touched %+v, want %s removed (its previous copy)", s.Info.Touched, cl)
	}

	m = newTestMachine(t, Config{GRPC: true, GRPCTargets: []string{tgt}}) // a restart: a new process
	toCDS(m)
	s = m.OnSotw(sotwResp(t, C, "2", "f"), t0)
	if !s.Info.Fresh || s.Info.Nacked || len(s.Info.Touched) != 0 {
		t.Errorf("restart: fresh %v, nacked %v, touched %+v; want a fresh response that touches nothing", s.Info.Fresh, s.Info.Nacked, s.Info.Touched)
	}
}

// TestGRPCNodeOnFirstRequestOnly: grpc-go sends the node on a stream's first request only
// (its ADS stream's sendMessageLocked), on every stream, whatever NodeOnFirstOnly says (it is
// an Envoy bootstrap setting).
func TestGRPCNodeOnFirstRequestOnly(t *testing.T) {
	const tgt = "svc.ns.svc.cluster.local:80"
	m := newTestMachine(t, Config{GRPC: true, GRPCTargets: []string{tgt}})
	for stream := range 2 {
		first := m.Start(t0)
		if len(first.Sotw) == 0 || first.Sotw[0].GetNode() == nil {
			t.Fatalf("stream %d: no node on the first request", stream)
		}
		for _, r := range first.Sotw[1:] {
			if r.GetNode() != nil {
				t.Errorf("stream %d: node on a later %s request of the restatement", stream, typeWord(r.GetTypeUrl()))
			}
		}
		s := m.OnSotw(sotwResp(t, L, strconv.Itoa(stream+1), "a", apiListener(t, tgt)), t0)
		for _, r := range s.Sotw {
			if r.GetNode() != nil {
				t.Errorf("stream %d: node on the %s request after a response", stream, typeWord(r.GetTypeUrl()))
			}
		}
	}
}
