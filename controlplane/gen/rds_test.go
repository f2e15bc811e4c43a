package gen

import (
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

func exact(s string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: s}}
}
func prefix(s string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: s}}
}
func regex(s string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: s}}
}

// claimMatcher is istiod's matcher of a JWT claim in jwt_authn's payload: the value, or one
// element of a list, matches.
func claimMatcher(claims []string, sm *matcherv3.StringMatcher, invert bool) *matcherv3.MetadataMatcher {
	path := []*matcherv3.MetadataMatcher_PathSegment{{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: "payload"}}}
	for _, c := range claims {
		path = append(path, &matcherv3.MetadataMatcher_PathSegment{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: c}})
	}
	v := &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: sm}}
	return &matcherv3.MetadataMatcher{Filter: "envoy.filters.http.jwt_authn", Path: path, Invert: invert,
		Value: &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_OrMatch{OrMatch: &matcherv3.OrMatcher{ValueMatchers: []*matcherv3.ValueMatcher{
			{MatchPattern: &matcherv3.ValueMatcher_ListMatch{ListMatch: &matcherv3.ListMatcher{MatchPattern: &matcherv3.ListMatcher_OneOf{OneOf: v}}}}, v,
		}}}}}
}

func TestTranslateMatch(t *testing.T) {
	hdr := func(name string, sm *matcherv3.StringMatcher, invert bool) *routev3.HeaderMatcher {
		h := &routev3.HeaderMatcher{Name: name, InvertMatch: invert}
		if sm == nil {
			h.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
		} else {
			h.HeaderMatchSpecifier = &routev3.HeaderMatcher_StringMatch{StringMatch: sm}
		}
		return h
	}
	slash := &routev3.RouteMatch_Prefix{Prefix: "/"}
	tests := []struct {
		name    string
		in      *networking.HTTPMatchRequest
		want    *routev3.RouteMatch
		wantErr string
	}{
		{"empty is prefix /", &networking.HTTPMatchRequest{}, &routev3.RouteMatch{PathSpecifier: slash}, ""},
		{"exact path", &networking.HTTPMatchRequest{Uri: exact("/a")}, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/a"}}, ""},
		{"prefix path", &networking.HTTPMatchRequest{Uri: prefix("/api")}, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/api"}}, ""},
		{"regex path, ignore case", &networking.HTTPMatchRequest{Uri: regex("/v[0-9]+"), IgnoreUriCase: true},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/v[0-9]+"}}, CaseSensitive: wrapperspb.Bool(false)}, ""},
		{"bad path regex", &networking.HTTPMatchRequest{Uri: regex("/v[0-9")}, nil, "bad regex"},
		{"headers sorted, presence, without", &networking.HTTPMatchRequest{
			Headers:        map[string]*networking.StringMatch{"x-b": prefix("pre"), "x-a": exact("1"), "x-any": {}},
			WithoutHeaders: map[string]*networking.StringMatch{"x-debug": {}, "x-env": exact("prod")},
			Method:         exact("GET"),
		}, &routev3.RouteMatch{PathSpecifier: slash, Headers: []*routev3.HeaderMatcher{
			hdr(":method", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "GET"}}, false),
			hdr("x-a", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "1"}}, false),
			hdr("x-any", nil, false),
			hdr("x-b", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "pre"}}, false),
			hdr("x-debug", nil, true),
			// A request without x-env matches too (istiod's treat_missing_header_as_empty).
			{Name: "x-env", InvertMatch: true, TreatMissingHeaderAsEmpty: true,
				HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "prod"}}}},
		}}, ""},
		{"header regex", &networking.HTTPMatchRequest{Headers: map[string]*networking.StringMatch{"user": regex("^j.*")}},
			&routev3.RouteMatch{PathSpecifier: slash, Headers: []*routev3.HeaderMatcher{hdr("user", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "^j.*"}}}, false)}}, ""},
		{"bad header regex", &networking.HTTPMatchRequest{Headers: map[string]*networking.StringMatch{"user": regex("(")}}, nil, `header "user"`},
		{"JWT claims", &networking.HTTPMatchRequest{
			Headers:        map[string]*networking.StringMatch{"@request.auth.claims.group.id": exact("7"), "@request.auth.claims[roles][0]": prefix("ops"), "@request.auth.claims": exact("x")},
			WithoutHeaders: map[string]*networking.StringMatch{"@request.auth.claims[tier]": exact("free")},
		}, &routev3.RouteMatch{PathSpecifier: slash,
			// A name that names no claim is a header.
			Headers: []*routev3.HeaderMatcher{hdr("@request.auth.claims", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "x"}}, false)},
			DynamicMetadata: []*matcherv3.MetadataMatcher{
				claimMatcher([]string{"group", "id"}, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "7"}}, false),
				claimMatcher([]string{"roles", "0"}, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "ops"}}, false),
				claimMatcher([]string{"tier"}, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "free"}}, true),
			}}, ""},
		{"query params", &networking.HTTPMatchRequest{QueryParams: map[string]*networking.StringMatch{"q": exact("x"), "p": {}}},
			&routev3.RouteMatch{PathSpecifier: slash, QueryParameters: []*routev3.QueryParameterMatcher{
				{Name: "p", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}},
				{Name: "q", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "x"}}}},
			}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want != nil && tt.want.CaseSensitive == nil {
				tt.want.CaseSensitive = wrapperspb.Bool(true) // istiod's TranslateRouteMatch always says
			}
			got, err := translateMatch(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// routeMesh is one HTTP service "web" in ns "app" with the given VirtualServices.
func routeMesh(vss ...*istioconfig.Config) *model.Snapshot {
	svcs := []*model.Service{
		{Hostname: "web.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "admin", Number: 9000, Protocol: model.ProtocolHTTP}}},
		{Hostname: "api.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}},
	}
	return model.NewSnapshot(1, model.SnapshotInput{Services: svcs, Configs: vss})
}

func vsConfig(name, ns string, vs *networking.VirtualService) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: name, Namespace: ns}, Spec: vs}
}

// createdAt sets c's creation time to minute min of a fixed day.
func createdAt(c *istioconfig.Config, min int) *istioconfig.Config {
	c.CreationTimestamp = time.Date(2024, 1, 1, 0, min, 0, 0, time.UTC)
	return c
}

func dest(host, subset string, weight int32) *networking.HTTPRouteDestination {
	return &networking.HTTPRouteDestination{Destination: &networking.Destination{Host: host, Subset: subset}, Weight: weight}
}

// routeSummary lists "name match → action" for the web virtual host on a port.
func routeSummary(t *testing.T, p *model.Proxy, s *model.Snapshot, port string) []string {
	t.Helper()
	rs, _ := ForType(RouteType, p).Generate(p, s, []string{port})
	if len(rs) != 1 {
		t.Fatalf("want 1 route configuration, got %d", len(rs))
	}
	var out []string
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		if !strings.HasPrefix(vh.GetName(), "web.") {
			continue
		}
		for _, r := range vh.GetRoutes() {
			m := r.GetMatch()
			var act string
			switch {
			case r.GetRoute().GetCluster() != "":
				act = r.GetRoute().GetCluster()
			case r.GetRoute().GetWeightedClusters() != nil:
				for _, c := range r.GetRoute().GetWeightedClusters().GetClusters() {
					act += c.GetName() + "=" + c.GetWeight().String() + " "
				}
				act = strings.TrimSpace(act)
			case r.GetRedirect() != nil:
				act = "redirect"
			}
			out = append(out, r.GetName()+" "+m.GetPrefix()+m.GetPath()+m.GetSafeRegex().GetRegex()+" -> "+act)
		}
	}
	return out
}

func TestVirtualServiceRoutes(t *testing.T) {
	sidecar := sidecarProxy("10.0.0.9", "app")
	sidecar.Labels = map[string]string{"app": "client", "track": "canary"}
	tests := []struct {
		name    string
		vss     []*istioconfig.Config
		port    string
		want    []string
		wantErr string
	}{
		{"no VS: default route", nil, "80", []string{"default / -> outbound|80||web.app.svc.cluster.local"}, ""},
		{"weighted subsets, zero weight dropped", []*istioconfig.Config{vsConfig("w", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
			{Name: "split", Route: []*networking.HTTPRouteDestination{dest("web", "v1", 70), dest("web", "v2", 30), dest("web", "v3", 0)}},
		}})}, "80", []string{"split / -> outbound|80|v1|web.app.svc.cluster.local=value:70 outbound|80|v2|web.app.svc.cluster.local=value:30"}, ""},
		// istiod resolves a destination without a port among the services of the listener's
		// port, each reduced to that port: api's only port is 8080, yet its cluster is :80.
		{"port match filters, destination port from the listener", []*istioconfig.Config{vsConfig("p", "app", &networking.VirtualService{Hosts: []string{"web.app.svc.cluster.local"}, Http: []*networking.HTTPRoute{
			{Name: "admin-only", Match: []*networking.HTTPMatchRequest{{Port: 9000, Uri: prefix("/admin")}}, Route: []*networking.HTTPRouteDestination{dest("web", "", 0)}},
			{Name: "to-api", Match: []*networking.HTTPMatchRequest{{Uri: prefix("/api")}}, Route: []*networking.HTTPRouteDestination{dest("api", "", 0)}},
		}})}, "80", []string{"to-api /api -> outbound|80||api.app.svc.cluster.local"}, ""},
		{"source labels match the proxy", []*istioconfig.Config{vsConfig("s", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
			{Name: "canary", Match: []*networking.HTTPMatchRequest{{SourceLabels: map[string]string{"track": "canary"}}}, Route: []*networking.HTTPRouteDestination{dest("web", "v2", 0)}},
			{Name: "other", Match: []*networking.HTTPMatchRequest{{SourceLabels: map[string]string{"track": "stable"}}}, Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}},
			{Name: "rest", Route: []*networking.HTTPRouteDestination{dest("web", "", 0)}},
		}})}, "80", []string{"canary / -> outbound|80|v2|web.app.svc.cluster.local"}, ""}, // canary matches every request of this proxy: "rest" is unreachable and left out, as istiod does
		// istiod checks sourceLabels and sourceNamespace only for a match without gateways: one
		// naming mesh applies to every sidecar (and one naming only a gateway to none).
		{"a match naming mesh ignores its source conditions", []*istioconfig.Config{vsConfig("g", "app", &networking.VirtualService{Hosts: []string{"web"}, Gateways: []string{"mesh", "istio-system/edge"}, Http: []*networking.HTTPRoute{
			{Name: "mesh-blue", Match: []*networking.HTTPMatchRequest{{Gateways: []string{"mesh"}, Uri: prefix("/blue"), SourceLabels: map[string]string{"track": "stable"}}}, Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}},
			{Name: "mesh-green", Match: []*networking.HTTPMatchRequest{{Gateways: []string{"mesh"}, Uri: prefix("/green"), SourceNamespace: "elsewhere"}}, Route: []*networking.HTTPRouteDestination{dest("web", "v2", 0)}},
			{Name: "edge-only", Match: []*networking.HTTPMatchRequest{{Gateways: []string{"istio-system/edge"}, Uri: prefix("/edge"), SourceLabels: map[string]string{"track": "canary"}}}, Route: []*networking.HTTPRouteDestination{dest("web", "v2", 0)}},
			{Name: "labelled", Match: []*networking.HTTPMatchRequest{{Uri: prefix("/red"), SourceLabels: map[string]string{"track": "stable"}}}, Route: []*networking.HTTPRouteDestination{dest("web", "v2", 0)}},
		}})}, "80", []string{"mesh-blue /blue -> outbound|80|v1|web.app.svc.cluster.local", "mesh-green /green -> outbound|80|v2|web.app.svc.cluster.local"}, ""},
		{"nothing after a catch-all match", []*istioconfig.Config{vsConfig("c", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
			{Name: "a", Match: []*networking.HTTPMatchRequest{{Uri: prefix("/a")}, {Uri: regex(".*")}, {Uri: prefix("/b")}}, Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}},
			{Name: "b", Route: []*networking.HTTPRouteDestination{dest("web", "v2", 0)}},
		}})}, "80", []string{"a /a -> outbound|80|v1|web.app.svc.cluster.local", "a .* -> outbound|80|v1|web.app.svc.cluster.local"}, ""},
		{"a header condition is not a catch-all", []*istioconfig.Config{vsConfig("h", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
			{Name: "a", Match: []*networking.HTTPMatchRequest{{Uri: prefix("/"), Headers: map[string]*networking.StringMatch{"x": exact("1")}}}, Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}},
			{Name: "b", Route: []*networking.HTTPRouteDestination{dest("web", "v2", 0)}},
		}})}, "80", []string{"a / -> outbound|80|v1|web.app.svc.cluster.local", "b / -> outbound|80|v2|web.app.svc.cluster.local"}, ""},
		{"one bad route does not drop the others", []*istioconfig.Config{
			vsConfig("bad", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
				{Name: "broken", Match: []*networking.HTTPMatchRequest{{Uri: regex("([")}}, Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}},
				{Name: "fine", Match: []*networking.HTTPMatchRequest{{Uri: exact("/ok")}}, Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}},
				{Name: "redir", Match: []*networking.HTTPMatchRequest{{Uri: prefix("/old")}}, Redirect: &networking.HTTPRedirect{Uri: "/new"}},
			}}),
		}, "80", []string{"fine /ok -> outbound|80|v1|web.app.svc.cluster.local", "redir /old -> redirect"}, "VirtualService app/bad http[0 (broken)]"},
		{"gateway-only VS ignored", []*istioconfig.Config{vsConfig("gw", "app", &networking.VirtualService{Hosts: []string{"web"}, Gateways: []string{"ingress"}, Http: []*networking.HTTPRoute{
			{Name: "gw", Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}},
		}})}, "80", []string{"default / -> outbound|80||web.app.svc.cluster.local"}, ""},
		{"wildcard host", []*istioconfig.Config{vsConfig("wild", "other", &networking.VirtualService{Hosts: []string{"*.app.svc.cluster.local"}, Http: []*networking.HTTPRoute{
			{Name: "all", Route: []*networking.HTTPRouteDestination{dest("web.app.svc.cluster.local", "", 0)}},
		}})}, "80", []string{"all / -> outbound|80||web.app.svc.cluster.local"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := routeMesh(tt.vss...)
			got := routeSummary(t, sidecar, s, tt.port)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("routes (-want +got)\n%s", diff)
			}
			_, err := ForType(RouteType, sidecar).Generate(sidecar, s, []string{tt.port})
			if tt.wantErr == "" && err != nil {
				t.Errorf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRouteDomains(t *testing.T) {
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		{Hostname: "a.x.svc.cluster.local", Namespace: "x", Addresses: []string{"10.0.0.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
		// Shares a's VIP: the VIP domains stay with a, b keeps its names.
		{Hostname: "b.y.svc.cluster.local", Namespace: "y", Addresses: []string{"10.0.0.1"}, Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
	}})
	p := sidecarProxy("10.9.9.9", "x")
	rs, err := ForType(RouteType, p).Generate(p, s, nil)
	if err != nil || len(rs) != 1 {
		t.Fatalf("got %d resources, err %v", len(rs), err)
	}
	got := map[string][]string{}
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		got[vh.GetName()] = vh.GetDomains()
	}
	want := map[string][]string{
		"a.x.svc.cluster.local:80": {"a.x.svc.cluster.local", "a.x.svc.cluster.local:80", "a", "a:80", "a.x", "a.x:80", "a.x.svc", "a.x.svc:80", "10.0.0.1", "10.0.0.1:80"},
		"b.y.svc.cluster.local:80": {"b.y.svc.cluster.local", "b.y.svc.cluster.local:80", "b.y", "b.y:80", "b.y.svc", "b.y.svc:80"},
		AllowAnyVirtualHost:        {"*"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("domains (-want +got)\n%s", diff)
	}
	if last := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts(); last[len(last)-1].GetName() != AllowAnyVirtualHost {
		t.Errorf("allow_any is not the last virtual host")
	}
}

// TestGRPCRoutesKeepRedirects: a proxyless gRPC client gets a redirect route as istiod's grpcgen
// sends it (grpc-go accepts it and fails the RPCs it matches, which must not fall through to
// the next route); names that are no service port get nothing.
func TestGRPCRoutesKeepRedirects(t *testing.T) {
	s := routeMesh(vsConfig("v", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{
		{Name: "redir", Match: []*networking.HTTPMatchRequest{{Uri: prefix("/old")}}, Redirect: &networking.HTTPRedirect{Uri: "/new"}},
		{Name: "main", Route: []*networking.HTTPRouteDestination{dest("web", "", 0)}, Retries: &networking.HTTPRetry{Attempts: 2}},
	}}))
	p := grpcProxy("app")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"web.app.svc.cluster.local:80", "nope:1", "garbage"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Name != "web.app.svc.cluster.local:80" {
		t.Fatalf("got %v", rs)
	}
	vh := rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts()[0]
	if len(vh.GetRoutes()) != 2 || vh.GetRoutes()[0].GetRedirect().GetPathRedirect() != "/new" || vh.GetRoutes()[1].GetName() != "main" {
		t.Fatalf("routes: %v", vh.GetRoutes())
	}
	if rp := vh.GetRoutes()[1].GetRoute().GetRetryPolicy(); rp.GetRetryOn() != DefaultRetryOn || rp.GetNumRetries().GetValue() != 2 {
		t.Errorf("retry policy %v", rp)
	}
	if d := vh.GetDomains(); d[0] != "web.app.svc.cluster.local:80" || !strings.Contains(strings.Join(d, ","), "web:80") {
		t.Errorf("domains %v", d)
	}
}

// TestVirtualServicePrecedence: a sidecar reads the HTTP routes of one VirtualService per host,
// the first in istiod's order (VirtualServicesForGateway: private to the proxy's namespace,
// exported to it, public; each by creation time, name, namespace), an exact host before a
// wildcard one and the most specific wildcard before the others.
func TestVirtualServicePrecedence(t *testing.T) {
	route := func(name string, hosts []string, exportTo ...string) *networking.VirtualService {
		return &networking.VirtualService{Hosts: hosts, ExportTo: exportTo, Http: []*networking.HTTPRoute{
			{Name: name, Match: []*networking.HTTPMatchRequest{{Uri: prefix("/" + name)}}, Route: []*networking.HTTPRouteDestination{dest("web.app.svc.cluster.local", "", 0)}},
		}}
	}
	web := []string{"web.app.svc.cluster.local"}
	tests := []struct {
		name string
		vss  []*istioconfig.Config
		want string // the one route name seen
	}{
		{"older first", []*istioconfig.Config{createdAt(vsConfig("a", "app", route("new", web)), 2), createdAt(vsConfig("z", "app", route("old", web)), 1)}, "old"},
		{"same time: by name", []*istioconfig.Config{createdAt(vsConfig("b", "app", route("b", web)), 1), createdAt(vsConfig("a", "zz", route("a", web)), 1)}, "a"},
		{"same time and name: by namespace", []*istioconfig.Config{vsConfig("a", "zz", route("zz", web)), vsConfig("a", "other", route("other", web))}, "other"},
		{"exact before an older wildcard", []*istioconfig.Config{createdAt(vsConfig("w", "app", route("wild", []string{"*.svc.cluster.local"})), 1), createdAt(vsConfig("e", "app", route("exact", web)), 2)}, "exact"},
		{"most specific wildcard", []*istioconfig.Config{createdAt(vsConfig("w", "app", route("wide", []string{"*"})), 1), createdAt(vsConfig("n", "app", route("narrow", []string{"*.app.svc.cluster.local"})), 2)}, "narrow"},
		{"private to the proxy's namespace before public", []*istioconfig.Config{createdAt(vsConfig("pub", "app", route("public", web)), 1), createdAt(vsConfig("priv", "app", route("private", web, ".")), 2)}, "private"},
		{"exported by name before public", []*istioconfig.Config{createdAt(vsConfig("pub", "app", route("public", web)), 1), createdAt(vsConfig("exp", "other", route("exported", web, "app")), 2)}, "exported"},
		// A VS without a route for the port builds no virtual host: the next one's routes apply.
		{"an older VS with tcp routes only", []*istioconfig.Config{createdAt(vsConfig("tcp", "app", &networking.VirtualService{Hosts: web, Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: web[0]}}}}}}), 1), createdAt(vsConfig("http", "app", route("http", web)), 2)}, "http"},
		{"an older VS whose routes are for another port", []*istioconfig.Config{createdAt(vsConfig("p", "app", &networking.VirtualService{Hosts: web, Http: []*networking.HTTPRoute{{Name: "other-port", Match: []*networking.HTTPMatchRequest{{Port: 9000}}, Route: []*networking.HTTPRouteDestination{dest("web.app.svc.cluster.local", "", 0)}}}}), 1), createdAt(vsConfig("q", "app", route("on80", web)), 2)}, "on80"},
		{"a wildcard VS is not tried after an exact one without routes", []*istioconfig.Config{createdAt(vsConfig("tcp", "app", &networking.VirtualService{Hosts: web, Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: web[0]}}}}}}), 1), createdAt(vsConfig("w", "app", route("wild", []string{"*.app.svc.cluster.local"})), 2)}, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sidecarProxy("10.0.0.9", "app")
			got := routeSummary(t, p, routeMesh(tt.vss...), "80")
			want := []string{tt.want + " /" + tt.want + " -> outbound|80||web.app.svc.cluster.local"}
			if tt.want == "default" {
				want = []string{"default / -> outbound|80||web.app.svc.cluster.local"}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("routes (-want +got)\n%s", diff)
			}
		})
	}
}

// TestVirtualServiceHostsWithoutService: a VirtualService host that names no service with the
// route configuration's port gets a virtual host of its own, as istiod builds it: on the ports
// of the services the VirtualService names, or on port 80 when it names none with that port
// (istiod's port 80 rule); the routes' destinations without a port take the listener's.
func TestVirtualServiceHostsWithoutService(t *testing.T) {
	to := func(host string) []*networking.HTTPRoute {
		return []*networking.HTTPRoute{{Name: "r", Route: []*networking.HTTPRouteDestination{dest(host, "", 0)}}}
	}
	tests := []struct {
		name string
		vs   *networking.VirtualService
		port string
		want map[string]string // virtual host name → its route's cluster (alias hosts only)
	}{
		{"an alias on port 80", &networking.VirtualService{Hosts: []string{"alias.example.com"}, Http: to("api.app.svc.cluster.local")}, "80",
			map[string]string{"alias.example.com:80": "outbound|80||api.app.svc.cluster.local"}},
		{"an alias alone is on no other port", &networking.VirtualService{Hosts: []string{"alias.example.com"}, Http: to("api.app.svc.cluster.local")}, "8080",
			map[string]string{}},
		{"an alias beside a service: that service's port", &networking.VirtualService{Hosts: []string{"alias.example.com", "api.app.svc.cluster.local"}, Http: to("api.app.svc.cluster.local")}, "8080",
			map[string]string{"alias.example.com:8080": "outbound|8080||api.app.svc.cluster.local"}},
		{"a service without port 80 is a name on port 80", &networking.VirtualService{Hosts: []string{"api.app.svc.cluster.local"}, Http: to("api.app.svc.cluster.local")}, "80",
			map[string]string{"api.app.svc.cluster.local:80": "outbound|80||api.app.svc.cluster.local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := routeMesh(vsConfig("v", "app", tt.vs))
			p := sidecarProxy("10.0.0.9", "app")
			rs, err := ForType(RouteType, p).Generate(p, s, []string{tt.port})
			if err != nil || len(rs) != 1 {
				t.Fatalf("%d route configurations, %v", len(rs), err)
			}
			if _, err := validateDeep(rs[0].Message); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
				if strings.HasPrefix(vh.GetName(), "alias.") || vh.GetName() == "api.app.svc.cluster.local:80" {
					got[vh.GetName()] = vh.GetRoutes()[0].GetRoute().GetCluster()
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("virtual hosts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVirtualServiceHostsBesideNonHTTPService: a VirtualService naming a service whose port 80
// is not HTTP (TCP here) and a host of no service still gives that host a virtual host on port
// 80, as when it names no service (random seed 236), and so wins the host over a newer
// VirtualService naming it alone (random seed 109); on another port where the service is not
// HTTP it gives none.
func TestVirtualServiceHostsBesideNonHTTPService(t *testing.T) {
	named := func(name string, hosts ...string) *networking.VirtualService {
		return &networking.VirtualService{Hosts: hosts, Http: []*networking.HTTPRoute{
			{Name: name, Route: []*networking.HTTPRouteDestination{dest("web.app.svc.cluster.local", "", 0)}},
		}}
	}
	const db = "db.app.svc.cluster.local"
	tests := []struct {
		name string
		vss  []*istioconfig.Config
		port string
		want map[string]string // alias virtual host name → its first route's name
	}{
		{"beside a TCP port 80: on port 80", []*istioconfig.Config{vsConfig("v", "app", named("beside", "alias.example.com", db))}, "80",
			map[string]string{"alias.example.com:80": "beside"}},
		{"the older VS wins the alias", []*istioconfig.Config{
			createdAt(vsConfig("newer", "app", named("alone", "alias.example.com")), 2),
			createdAt(vsConfig("older", "app", named("beside", db, "alias.example.com")), 1)}, "80",
			map[string]string{"alias.example.com:80": "beside"}},
		{"the newer VS beside a TCP port 80 still loses", []*istioconfig.Config{
			createdAt(vsConfig("newer", "app", named("beside", db, "alias.example.com")), 2),
			createdAt(vsConfig("older", "app", named("alone", "alias.example.com")), 1)}, "80",
			map[string]string{"alias.example.com:80": "alone"}},
		{"beside a TCP port other than 80: nowhere", []*istioconfig.Config{vsConfig("v", "app", named("beside", "alias.example.com", db))}, "9000",
			map[string]string{}},
		{"beside an HTTP port: on that port", []*istioconfig.Config{vsConfig("v", "app", named("beside", "alias.example.com", db))}, "8443",
			map[string]string{"alias.example.com:8443": "beside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
				{Hostname: "web.app.svc.cluster.local", Namespace: "app", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}},
				{Hostname: db, Namespace: "app", Ports: []model.Port{{Name: "tcp", Number: 80, Protocol: model.ProtocolTCP}, {Name: "tcp-admin", Number: 9000, Protocol: model.ProtocolTCP}, {Name: "http", Number: 8443, Protocol: model.ProtocolHTTP}}},
			}, Configs: tt.vss})
			p := sidecarProxy("10.0.0.9", "app")
			rs, err := ForType(RouteType, p).Generate(p, s, []string{tt.port})
			if err != nil || len(rs) != 1 {
				t.Fatalf("%d route configurations, %v", len(rs), err)
			}
			if _, err := validateDeep(rs[0].Message); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
				if strings.HasPrefix(vh.GetName(), "alias.") {
					got[vh.GetName()] = vh.GetRoutes()[0].GetName()
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("virtual hosts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSidecarRoutesAnswerEveryName: a sidecar that asks for route configurations no listener
// of it names (an Envoy draining a removed listener keeps asking) gets one for each, as from
// istiod: a port number with its VirtualService-only virtual hosts and allow_any, another
// name empty.
func TestSidecarRoutesAnswerEveryName(t *testing.T) {
	alias := vsConfig("v", "app", &networking.VirtualService{Hosts: []string{"alias.example.com"},
		Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{dest("api.app.svc.cluster.local", "", 0)}}}})
	s := routeMesh(alias)
	p := sidecarProxy("10.0.0.9", "app")
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"9999", "80", "no-such-route", "80"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range rs {
		if _, err := validateDeep(r.Message); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		rc := r.Message.(*routev3.RouteConfiguration)
		if rc.GetName() != r.Name {
			t.Errorf("resource %s holds route configuration %q", r.Name, rc.GetName())
		}
		var vhs []string
		for _, vh := range rc.GetVirtualHosts() {
			vhs = append(vhs, vh.GetName())
		}
		got[r.Name] = vhs
	}
	want := map[string][]string{
		"80":            {"web.app.svc.cluster.local:80", "alias.example.com:80", AllowAnyVirtualHost},
		"9999":          {AllowAnyVirtualHost},
		"no-such-route": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("route configurations by name: virtual hosts (-want +got):\n%s", diff)
	}
	for i := 1; i < len(rs); i++ {
		if rs[i-1].Name >= rs[i].Name {
			t.Errorf("resources not sorted and unique: %s before %s", rs[i-1].Name, rs[i].Name)
		}
	}
}
