package parity

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// TestRouteViewIgnoresMatcherOrderKeepsVirtualHost: header and query parameter matchers (all
// must match) compare as sets, as istiod emits them in map order; a route that moves to
// another virtual host is a difference although the virtual hosts' names are normalised away.
func TestRouteViewIgnoresMatcherOrderKeepsVirtualHost(t *testing.T) {
	header := func(n string) *routev3.HeaderMatcher {
		return &routev3.HeaderMatcher{Name: n, HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}}
	}
	query := func(n string) *routev3.QueryParameterMatcher {
		return &routev3.QueryParameterMatcher{Name: n, QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}}
	}
	route := func(hs []*routev3.HeaderMatcher, qs []*routev3.QueryParameterMatcher) *routev3.Route {
		return &routev3.Route{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}, Headers: hs, QueryParameters: qs},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}}},
		}
	}
	rc := func(aRoutes, bRoutes []*routev3.Route) *Dump {
		return &Dump{Routes: map[string]*routev3.RouteConfiguration{"80": {Name: "80", VirtualHosts: []*routev3.VirtualHost{
			{Name: "a:80", Domains: []string{"a"}, Routes: aRoutes},
			{Name: "b:80", Domains: []string{"b"}, Routes: bRoutes},
		}}}}
	}
	ab := route([]*routev3.HeaderMatcher{header("x"), header("y")}, []*routev3.QueryParameterMatcher{query("p"), query("q")})
	ba := route([]*routev3.HeaderMatcher{header("y"), header("x")}, []*routev3.QueryParameterMatcher{query("q"), query("p")})
	if ds := Diff(Project(rc([]*routev3.Route{ab}, nil)), Project(rc([]*routev3.Route{ba}, nil))); len(ds) > 0 {
		t.Errorf("matcher order made a difference:\n%s", Format(ds))
	}
	if ds := Diff(Project(rc([]*routev3.Route{ab}, nil)), Project(rc(nil, []*routev3.Route{ab}))); len(ds) == 0 {
		t.Error("a route moved to another virtual host made no difference")
	}
}

// TestRouteViewEmptyPathRedirect: an empty path_redirect equals none (Envoy keeps the
// request's path either way).
func TestRouteViewEmptyPathRedirect(t *testing.T) {
	redirect := func(empty bool) *Dump {
		r := &routev3.RedirectAction{HostRedirect: "x.example.com"}
		if empty {
			r.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: ""}
		}
		return &Dump{Routes: map[string]*routev3.RouteConfiguration{"80": {VirtualHosts: []*routev3.VirtualHost{{Name: "a", Domains: []string{"a"}, Routes: []*routev3.Route{
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, Action: &routev3.Route_Redirect{Redirect: r}},
		}}}}}}
	}
	if ds := Diff(Project(redirect(true)), Project(redirect(false))); len(ds) > 0 {
		t.Errorf("differences:\n%s", Format(ds))
	}
}

// TestListenerViewServerTLSParams: a gateway's downstream TLS parameters (its servers'
// versions and cipher suites) are compared; a sidecar's are not (istiod spells out its mesh
// mTLS defaults there), nor are an upstream context's.
func TestListenerViewServerTLSParams(t *testing.T) {
	listener := func(router bool, suites ...string) *Dump {
		ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsParams: &tlsv3.TlsParameters{CipherSuites: suites},
		}}
		a, err := anypb.New(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l := &listenerv3.Listener{Name: "0.0.0.0_443", FilterChains: []*listenerv3.FilterChain{{
			TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}},
		}}}
		return &Dump{Listeners: map[string]*listenerv3.Listener{l.Name: l}, Router: router}
	}
	if ds := Diff(Project(listener(true, "AES128-SHA")), Project(listener(true, "AES256-SHA"))); len(ds) == 0 {
		t.Error("a gateway's cipher suites made no difference")
	}
	if ds := Diff(Project(listener(false, "AES128-SHA")), Project(listener(false, "AES256-SHA"))); len(ds) > 0 {
		t.Errorf("a sidecar's cipher suites made a difference:\n%s", Format(ds))
	}
}
