package gen

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	commonfaultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	previousprioritiesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// The expected routes below are what istiod's generator builds for the same VirtualService and
// DestinationRule; each case names the istiod function (istio.io/istio
// pilot/pkg/networking/core/route/route.go, route/retry/retry.go) whose rule it pins.

const (
	webHost = "web.app.svc.cluster.local"
	apiHost = "api.app.svc.cluster.local"
)

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// istioDefaultRetry is retry.DefaultPolicy(): 2 attempts on the default retryOn, previous_hosts,
// 5 host re-picks.
func istioDefaultRetry(t *testing.T) *routev3.RetryPolicy {
	return &routev3.RetryPolicy{
		RetryOn:    DefaultRetryOn,
		NumRetries: wrapperspb.UInt32(2),
		RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{
			Name:       "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: mustAny(t, &previoushostsv3.PreviousHostsPredicate{})},
		}},
		HostSelectionRetryMaxAttempts: 5,
	}
}

// webRoute is the route istiod builds for an HTTP route named "r" without a match to cluster,
// with no other setting: prefix "/", no timeout, the default retry policy.
func webRoute(t *testing.T, cluster string) *routev3.Route {
	return &routev3.Route{
		Name:  "r",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
			Timeout:          durationpb.New(0),
			MaxGrpcTimeout:   durationpb.New(0), //nolint:staticcheck // istiod's setTimeout
			RetryPolicy:      istioDefaultRetry(t),
		}},
	}
}

func action(r *routev3.Route) *routev3.RouteAction { return r.GetRoute() }

func drConfig(name, ns string, dr *networking.DestinationRule) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: name, Namespace: ns}, Spec: dr}
}

func consistentHashLB(ch *networking.LoadBalancerSettings_ConsistentHashLB) *networking.TrafficPolicy {
	return &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: ch}}}
}

func headerHash(name string) *networking.LoadBalancerSettings_ConsistentHashLB {
	return &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: name}}
}

func hashOnHeader(name string) *routev3.RouteAction_HashPolicy {
	return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: name}}}
}

func hvo(k, v string, appendValue bool) *corev3.HeaderValueOption {
	a := corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
	if appendValue {
		a = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	}
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, Value: v}, AppendAction: a}
}

// webRoutes generates the sidecar RDS for port 80 and returns the routes of web's virtual host.
func webRoutes(t *testing.T, p *model.Proxy, cfgs ...*istioconfig.Config) []*routev3.Route {
	t.Helper()
	s := routeMesh(cfgs...)
	rs, err := ForType(RouteType, p).Generate(p, s, []string{"80"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs { // ValidateAll, typed_config unpacked
		if _, err := validateDeep(r.Message); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
	}
	if len(rs) != 1 {
		t.Fatalf("%d route configurations", len(rs))
	}
	for _, vh := range rs[0].Message.(*routev3.RouteConfiguration).GetVirtualHosts() {
		if strings.HasPrefix(vh.GetName(), "web.") {
			return vh.GetRoutes()
		}
	}
	t.Fatal("no virtual host for web")
	return nil
}

func TestRouteFeatures(t *testing.T) {
	webCluster := ClusterName(Outbound, 80, "", webHost)
	// On a sidecar's route configuration a destination without a port gets the listener's
	// port, even for api, whose only port is 8080 (istiod looks it up among port 80's services).
	apiCluster := ClusterName(Outbound, 80, "", apiHost)
	tests := []struct {
		name string
		hr   *networking.HTTPRoute
		dr   *networking.DestinationRule // for web, when set
		want func(r *routev3.Route)
	}{
		// Item 8, TranslateHeadersOperations + translateAppendHeaders: set overwrites, add
		// appends, both sorted by name; pseudo-headers and Host are never set, an :authority in
		// set (winning over add) becomes the host rewrite; removals drop internal names.
		{"route headers", &networking.HTTPRoute{Headers: &networking.Headers{
			Request: &networking.Headers_HeaderOperations{
				Set:    map[string]string{"x-b": "2", "x-a": "1", ":authority": "set.example"},
				Add:    map[string]string{"x-c": "3", "host": "add.example"},
				Remove: []string{"x-old", ":path", "Host"},
			},
			Response: &networking.Headers_HeaderOperations{Set: map[string]string{"x-resp": "r"}, Add: map[string]string{"x-extra": "e"}, Remove: []string{"server"}},
		}}, nil, func(r *routev3.Route) {
			r.RequestHeadersToAdd = []*corev3.HeaderValueOption{hvo("x-a", "1", false), hvo("x-b", "2", false), hvo("x-c", "3", true)}
			r.RequestHeadersToRemove = []string{"x-old"}
			r.ResponseHeadersToAdd = []*corev3.HeaderValueOption{hvo("x-resp", "r", false), hvo("x-extra", "e", true)}
			r.ResponseHeadersToRemove = []string{"server"}
			action(r).HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "set.example"}
		}},
		// Item 8, processDestination: one destination's headers go on the route after the
		// route's; its authority applies only when the route sets none.
		{"single destination headers", &networking.HTTPRoute{
			Headers: &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: map[string]string{"x-route": "1"}}},
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web"}, Headers: &networking.Headers{
				Request:  &networking.Headers_HeaderOperations{Set: map[string]string{"x-dest": "2", ":authority": "dest.example"}},
				Response: &networking.Headers_HeaderOperations{Remove: []string{"x-internal"}},
			}}},
		}, nil, func(r *routev3.Route) {
			r.RequestHeadersToAdd = []*corev3.HeaderValueOption{hvo("x-route", "1", false), hvo("x-dest", "2", false)}
			r.ResponseHeadersToRemove = []string{"x-internal"}
			action(r).HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "dest.example"}
		}},
		// Item 8, processWeightedDestination: several destinations carry their headers (and
		// authority) on their weighted cluster; a 0 weight is left out.
		{"weighted destination headers", &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{
			{Destination: &networking.Destination{Host: "web"}, Weight: 75, Headers: &networking.Headers{
				Request:  &networking.Headers_HeaderOperations{Add: map[string]string{"x-canary": "no"}, Set: map[string]string{"host": "stable.example"}},
				Response: &networking.Headers_HeaderOperations{Set: map[string]string{"x-served-by": "web"}}}},
			{Destination: &networking.Destination{Host: "api"}, Weight: 25, Headers: &networking.Headers{
				Request: &networking.Headers_HeaderOperations{Remove: []string{"x-canary"}}}},
			{Destination: &networking.Destination{Host: "api", Subset: "never"}, Weight: 0},
		}}, nil, func(r *routev3.Route) {
			action(r).ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{
				{Name: webCluster, Weight: wrapperspb.UInt32(75), RequestHeadersToAdd: []*corev3.HeaderValueOption{hvo("x-canary", "no", true)},
					ResponseHeadersToAdd: []*corev3.HeaderValueOption{hvo("x-served-by", "web", false)},
					HostRewriteSpecifier: &routev3.WeightedCluster_ClusterWeight_HostRewriteLiteral{HostRewriteLiteral: "stable.example"}},
				{Name: apiCluster, Weight: wrapperspb.UInt32(25), RequestHeadersToRemove: []string{"x-canary"}},
			}}}
		}},
		// Item 6, MirrorPercent + TranslateRequestMirrorPolicy: a mirror at 100% by default,
		// mirrorPercentage in millionths, trace_sampled false, no shadow host suffix; the
		// mirror's cluster port follows GetDestinationCluster (the listener's, see apiCluster).
		{"mirror default percent", &networking.HTTPRoute{Mirror: &networking.Destination{Host: "api"}}, nil, func(r *routev3.Route) {
			action(r).RequestMirrorPolicies = []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: apiCluster,
				RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}},
				TraceSampled:    wrapperspb.Bool(false), DisableShadowHostSuffixAppend: true}}
		}},
		{"mirrorPercentage", &networking.HTTPRoute{Mirror: &networking.Destination{Host: "api", Subset: "v2"}, MirrorPercentage: &networking.Percent{Value: 12.5}}, nil, func(r *routev3.Route) {
			action(r).RequestMirrorPolicies = []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: ClusterName(Outbound, 80, "v2", apiHost),
				RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 125000, Denominator: typev3.FractionalPercent_MILLION}},
				TraceSampled:    wrapperspb.Bool(false), DisableShadowHostSuffixAppend: true}}
		}},
		{"mirrorPercentage 0 mirrors nothing", &networking.HTTPRoute{Mirror: &networking.Destination{Host: "api"}, MirrorPercentage: &networking.Percent{Value: 0}}, nil, func(*routev3.Route) {}},
		// MirrorPercentByPolicy: each entry of mirrors, after the single mirror; one at 0% is
		// left out; a destination port wins over the service's.
		{"mirrors", &networking.HTTPRoute{Mirrors: []*networking.HTTPMirrorPolicy{
			{Destination: &networking.Destination{Host: "api"}, Percentage: &networking.Percent{Value: 50}},
			{Destination: &networking.Destination{Host: "web", Port: &networking.PortSelector{Number: 9000}}},
			{Destination: &networking.Destination{Host: "api", Subset: "off"}, Percentage: &networking.Percent{Value: 0}},
		}}, nil, func(r *routev3.Route) {
			action(r).RequestMirrorPolicies = []*routev3.RouteAction_RequestMirrorPolicy{
				{Cluster: apiCluster, RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 500000, Denominator: typev3.FractionalPercent_MILLION}},
					TraceSampled: wrapperspb.Bool(false), DisableShadowHostSuffixAppend: true},
				{Cluster: ClusterName(Outbound, 9000, "", webHost), RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}},
					TraceSampled: wrapperspb.Bool(false), DisableShadowHostSuffixAppend: true},
			}
		}},
		// Item 7, applyHTTPRouteDestination: rewrite.uri is a prefix_rewrite whatever the
		// match type (here an exact and a regex match); uriRegexRewrite is a regex_rewrite.
		{"rewrite uri on exact match", &networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{{Uri: exact("/old")}},
			Rewrite: &networking.HTTPRewrite{Uri: "/new"}}, nil, func(r *routev3.Route) {
			r.Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/old"}, CaseSensitive: wrapperspb.Bool(true)}
			action(r).PrefixRewrite = "/new"
		}},
		{"rewrite uri on regex match", &networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{{Name: "v1", Uri: regex("/v1/.*")}},
			Rewrite: &networking.HTTPRewrite{Uri: "/", Authority: "v1.internal"}}, nil, func(r *routev3.Route) {
			r.Name = "r.v1" // TranslateRoute: route name "." match name
			r.Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/v1/.*"}}, CaseSensitive: wrapperspb.Bool(true)}
			action(r).PrefixRewrite = "/"
			action(r).HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "v1.internal"}
		}},
		{"uriRegexRewrite", &networking.HTTPRoute{Rewrite: &networking.HTTPRewrite{UriRegexRewrite: &networking.RegexRewrite{Match: "^/api/(.*)$", Rewrite: `/\1`}}}, nil, func(r *routev3.Route) {
			action(r).RegexRewrite = &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: "^/api/(.*)$"}, Substitution: `/\1`}
		}},
		// ApplyRedirect: a derived request port that is the scheme's default is left out; an
		// explicit port and prefixRewrite are kept; redirectCode picks the response code.
		{"redirect derivePort", &networking.HTTPRoute{Redirect: &networking.HTTPRedirect{Uri: "/new", RedirectCode: 302,
			RedirectPort: &networking.HTTPRedirect_DerivePort{DerivePort: networking.HTTPRedirect_FROM_REQUEST_PORT}}}, nil, func(r *routev3.Route) {
			r.Action = &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{PathRewriteSpecifier: &routev3.RedirectAction_PathRedirect{PathRedirect: "/new"},
				ResponseCode: routev3.RedirectAction_FOUND}}
		}},
		{"redirect port and prefixRewrite", &networking.HTTPRoute{Redirect: &networking.HTTPRedirect{PrefixRewrite: "/v2/", Scheme: "https", Authority: "secure.example",
			RedirectPort: &networking.HTTPRedirect_Port{Port: 8443}}}, nil, func(r *routev3.Route) {
			r.Action = &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{HostRedirect: "secure.example", PortRedirect: 8443,
				PathRewriteSpecifier:   &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: "/v2/"},
				SchemeRewriteSpecifier: &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: "https"}}}
		}},
		// TranslateRoute: a match's statPrefix becomes the route's stat_prefix.
		{"match statPrefix", &networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{{Uri: prefix("/api"), StatPrefix: "web-api"}}}, nil, func(r *routev3.Route) {
			r.Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/api"}, CaseSensitive: wrapperspb.Bool(true)}
			r.StatPrefix = "web-api"
		}},
		// Item 5, TranslateFault: typed_per_filter_config for envoy.filters.http.fault with a
		// fixed delay and an HTTP abort, each with a Percent in millionths.
		{"fault delay and http abort", &networking.HTTPRoute{Fault: &networking.HTTPFaultInjection{
			Delay: &networking.HTTPFaultInjection_Delay{HttpDelayType: &networking.HTTPFaultInjection_Delay_FixedDelay{FixedDelay: durationpb.New(5 * time.Second)}, Percentage: &networking.Percent{Value: 10}},
			Abort: &networking.HTTPFaultInjection_Abort{ErrorType: &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: 503}, Percentage: &networking.Percent{Value: 0.1}},
		}}, nil, func(r *routev3.Route) {
			r.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.fault": mustAny(t, &faultv3.HTTPFault{
				Delay: &commonfaultv3.FaultDelay{FaultDelaySecifier: &commonfaultv3.FaultDelay_FixedDelay{FixedDelay: durationpb.New(5 * time.Second)},
					Percentage: &typev3.FractionalPercent{Numerator: 100000, Denominator: typev3.FractionalPercent_MILLION}},
				Abort: &faultv3.FaultAbort{ErrorType: &faultv3.FaultAbort_HttpStatus{HttpStatus: 503},
					Percentage: &typev3.FractionalPercent{Numerator: 1000, Denominator: typev3.FractionalPercent_MILLION}},
			})}
		}},
		// A gRPC abort by status name (grpc.SupportedGRPCStatus); no percentage: Envoy's 100%.
		// A delay without percentage uses the deprecated integer percent (0 here).
		{"fault grpc abort", &networking.HTTPRoute{Fault: &networking.HTTPFaultInjection{
			Abort: &networking.HTTPFaultInjection_Abort{ErrorType: &networking.HTTPFaultInjection_Abort_GrpcStatus{GrpcStatus: "UNAVAILABLE"}},
			Delay: &networking.HTTPFaultInjection_Delay{HttpDelayType: &networking.HTTPFaultInjection_Delay_FixedDelay{FixedDelay: durationpb.New(time.Millisecond)}},
		}}, nil, func(r *routev3.Route) {
			r.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.fault": mustAny(t, &faultv3.HTTPFault{
				Delay: &commonfaultv3.FaultDelay{FaultDelaySecifier: &commonfaultv3.FaultDelay_FixedDelay{FixedDelay: durationpb.New(time.Millisecond)},
					Percentage: &typev3.FractionalPercent{Numerator: 0, Denominator: typev3.FractionalPercent_HUNDRED}},
				Abort: &faultv3.FaultAbort{ErrorType: &faultv3.FaultAbort_GrpcStatus{GrpcStatus: 14}},
			})}
		}},
		// TranslateCORSPolicy: origins as string matchers, lists comma-joined, maxAge in
		// seconds, the filter on, unmatched preflights forwarded unless IGNORE.
		{"cors", &networking.HTTPRoute{CorsPolicy: &networking.CorsPolicy{
			AllowOrigins:  []*networking.StringMatch{exact("https://a.example"), regex(`https://.*\.b\.example`)},
			AllowMethods:  []string{"GET", "POST"},
			AllowHeaders:  []string{"x-a", "x-b"},
			ExposeHeaders: []string{"x-c"},
			MaxAge:        durationpb.New(24 * time.Hour), AllowCredentials: wrapperspb.Bool(true),
		}}, nil, func(r *routev3.Route) {
			r.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.cors": mustAny(t, &corsv3.CorsPolicy{
				AllowOriginStringMatch: []*matcherv3.StringMatcher{
					{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "https://a.example"}},
					{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: `https://.*\.b\.example`}}},
				},
				AllowMethods: "GET,POST", AllowHeaders: "x-a,x-b", ExposeHeaders: "x-c", MaxAge: "86400", AllowCredentials: wrapperspb.Bool(true),
				FilterEnabled:                &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}},
				ForwardNotMatchingPreflights: wrapperspb.Bool(true),
			})}
		}},
		{"cors ignoring unmatched preflights, fault too", &networking.HTTPRoute{
			CorsPolicy: &networking.CorsPolicy{AllowOrigin: []string{"https://old.example"}, UnmatchedPreflights: networking.CorsPolicy_IGNORE},
			Fault:      &networking.HTTPFaultInjection{Abort: &networking.HTTPFaultInjection_Abort{ErrorType: &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: 500}}},
		}, nil, func(r *routev3.Route) {
			r.TypedPerFilterConfig = map[string]*anypb.Any{
				"envoy.filters.http.cors": mustAny(t, &corsv3.CorsPolicy{
					AllowOriginStringMatch:       []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "https://old.example"}}},
					FilterEnabled:                &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}},
					ForwardNotMatchingPreflights: wrapperspb.Bool(false),
				}),
				"envoy.filters.http.fault": mustAny(t, &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{ErrorType: &faultv3.FaultAbort_HttpStatus{HttpStatus: 500}}}),
			}
		}},
		// Item 13, retry.ConvertPolicy: attempts, retryOn with status codes split out (and
		// retriable-status-codes added), perTryTimeout, backoff, remote localities.
		{"retries", &networking.HTTPRoute{Retries: &networking.HTTPRetry{Attempts: 3, RetryOn: "5xx,503,reset", PerTryTimeout: durationpb.New(time.Second),
			Backoff: durationpb.New(50 * time.Millisecond), RetryRemoteLocalities: wrapperspb.Bool(true)}}, nil, func(r *routev3.Route) {
			rp := action(r).RetryPolicy
			rp.NumRetries = wrapperspb.UInt32(3)
			rp.RetryOn = "5xx,reset,retriable-status-codes"
			rp.RetriableStatusCodes = []uint32{503}
			rp.PerTryTimeout = durationpb.New(time.Second)
			rp.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(50 * time.Millisecond)}
			rp.RetryPriority = &routev3.RetryPolicy_RetryPriority{Name: "envoy.retry_priorities.previous_priorities",
				ConfigType: &routev3.RetryPolicy_RetryPriority_TypedConfig{TypedConfig: mustAny(t, &previousprioritiesv3.PreviousPrioritiesConfig{UpdateFrequency: 2})}}
		}},
		{"retryIgnorePreviousHosts false", &networking.HTTPRoute{Retries: &networking.HTTPRetry{Attempts: 1, RetryIgnorePreviousHosts: wrapperspb.Bool(false)}}, nil, func(r *routev3.Route) {
			action(r).RetryPolicy.NumRetries = wrapperspb.UInt32(1)
			action(r).RetryPolicy.RetryHostPredicate = nil
		}},
		{"attempts 0 disables retries", &networking.HTTPRoute{Retries: &networking.HTTPRetry{Attempts: 0}}, nil, func(r *routev3.Route) {
			action(r).RetryPolicy = nil
		}},
		// Item 9, HashForHTTPDestination + ConsistentHashToHashPolicy: the destination's
		// DestinationRule hash; one hashed destination drops previous_hosts from the retry
		// policy (ConvertPolicy(policy, consistentHash=true)).
		{"hash on header", &networking.HTTPRoute{}, &networking.DestinationRule{Host: "web", TrafficPolicy: consistentHashLB(headerHash("x-user"))}, func(r *routev3.Route) {
			action(r).HashPolicy = []*routev3.RouteAction_HashPolicy{hashOnHeader("x-user")}
			action(r).RetryPolicy.RetryHostPredicate = nil
		}},
		{"hash on cookie, subset wins", &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{dest("web", "v1", 0)}}, &networking.DestinationRule{Host: "web",
			TrafficPolicy: consistentHashLB(headerHash("x-user")),
			Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}, TrafficPolicy: consistentHashLB(&networking.LoadBalancerSettings_ConsistentHashLB{
				HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{
					Name: "session", Path: "/app", Ttl: durationpb.New(time.Hour)}}})}},
		}, func(r *routev3.Route) {
			action(r).ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: ClusterName(Outbound, 80, "v1", webHost)}
			action(r).HashPolicy = []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{
				Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "session", Path: "/app", Ttl: durationpb.New(time.Hour)}}}}
			action(r).RetryPolicy.RetryHostPredicate = nil
		}},
		{"hash on source ip, port level wins", &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web", Port: &networking.PortSelector{Number: 80}}}}},
			&networking.DestinationRule{Host: "web", TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: headerHash("x-user")}},
				PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 80},
					LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
						HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}}}},
			}}, func(r *routev3.Route) {
				action(r).HashPolicy = []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{
					ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}}}
				action(r).RetryPolicy.RetryHostPredicate = nil
			}},
		// Weighted destinations: each hashed destination adds its policy, and the retry policy
		// keeps previous_hosts (consistentHash is only set for a single destination).
		{"hash on query parameter, weighted", &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{dest("web", "", 50), dest("api", "", 50)}},
			&networking.DestinationRule{Host: "web", TrafficPolicy: consistentHashLB(&networking.LoadBalancerSettings_ConsistentHashLB{
				HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpQueryParameterName{HttpQueryParameterName: "user"}})},
			func(r *routev3.Route) {
				action(r).ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{
					{Name: webCluster, Weight: wrapperspb.UInt32(50)}, {Name: apiCluster, Weight: wrapperspb.UInt32(50)}}}}
				action(r).HashPolicy = []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_QueryParameter_{
					QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: "user"}}}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hr := proto.Clone(tt.hr).(*networking.HTTPRoute)
			hr.Name = "r"
			if len(hr.Route) == 0 && hr.Redirect == nil {
				hr.Route = []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web"}}}
			}
			cfgs := []*istioconfig.Config{vsConfig("web", "app", &networking.VirtualService{Hosts: []string{"web"}, Http: []*networking.HTTPRoute{hr}})}
			if tt.dr != nil {
				cfgs = append(cfgs, drConfig("web", "app", tt.dr))
			}
			got := webRoutes(t, sidecarProxy("10.0.0.9", "app"), cfgs...)
			want := webRoute(t, webCluster)
			tt.want(want)
			if len(got) != 1 {
				t.Fatalf("%d routes, want 1", len(got))
			}
			if diff := cmp.Diff(want, got[0], protocmp.Transform()); diff != "" {
				t.Errorf("route (-istiod +ours):\n%s", diff)
			}
		})
	}
}

// The default route of a service without a VirtualService hashes on its DestinationRule's
// (port-level) consistent hash and keeps the default retry policy with previous_hosts
// (istiod: buildSidecarVirtualHostForService, hashForService, BuildDefaultHTTPOutboundRoute).
func TestDefaultRouteHashPolicy(t *testing.T) {
	dr := drConfig("web", "app", &networking.DestinationRule{Host: "web", TrafficPolicy: &networking.TrafficPolicy{
		LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: headerHash("x-user")}},
		PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 9000},
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: headerHash("x-admin")}}}},
	}})
	got := webRoutes(t, sidecarProxy("10.0.0.9", "app"), dr)
	want := webRoute(t, ClusterName(Outbound, 80, "", webHost))
	want.Name = "default"
	action(want).HashPolicy = []*routev3.RouteAction_HashPolicy{hashOnHeader("x-user")}
	if len(got) != 1 {
		t.Fatalf("%d routes", len(got))
	}
	if diff := cmp.Diff(want, got[0], protocmp.Transform()); diff != "" {
		t.Errorf("default route (-istiod +ours):\n%s", diff)
	}
	if hp := defaultHashPolicy(newIndex(routeMesh(dr), nil), routeMesh().Service(webHost), model.Port{Number: 9000}); len(hp) != 1 || hp[0].GetHeader().GetHeaderName() != "x-admin" {
		t.Errorf("port 9000 default route hash %v, want the port-level x-admin", hp)
	}
}

// Every HTTP connection manager has the fault and CORS filters right before the router, as
// istiod's (buildHTTPConnectionManager: "TypedPerFilterConfig in route needs these filters");
// proxyless gRPC gets fault and router only (grpcgen supportedFilters).
func TestFaultFilterInEveryHCM(t *testing.T) {
	for _, tc := range []struct {
		name  string
		proxy *model.Proxy
		want  []string
	}{
		{"sidecar", sidecarProxy("10.1.0.1", "default"), []string{faultFilterName, corsFilterName, routerFilterName}},
		{"grpc", grpcProxy("default"), []string{faultFilterName, routerFilterName}},
	} {
		g, err := generateAll(t, tc.proxy, goldenMesh())
		if err != nil {
			t.Fatal(err)
		}
		hcms := 0
		for _, r := range g[ListenerType] {
			for _, h := range listenerHCMs(t, r) {
				hcms++
				var names []string
				for _, f := range h.GetHttpFilters() {
					names = append(names, f.GetName())
				}
				if !slices.Equal(names, tc.want) {
					t.Errorf("%s %s: http filters %v, want %v", tc.name, r.Name, names, tc.want)
				}
			}
		}
		if hcms == 0 {
			t.Errorf("%s: no HTTP connection manager", tc.name)
		}
	}
}

func TestSplitRetryOn(t *testing.T) {
	tests := []struct {
		in    string
		want  string
		codes []uint32
	}{
		{"5xx", "5xx", nil},
		{"503,gateway-error, 504 ,", "gateway-error", []uint32{503, 504}},
		{"999,reset", "999,reset", nil}, // not an HTTP status: kept as a name (validation rejects it)
	}
	for _, tt := range tests {
		got, codes := splitRetryOn(tt.in)
		if got != tt.want || !cmp.Equal(codes, tt.codes) {
			t.Errorf("splitRetryOn(%q) = %q %v, want %q %v", tt.in, got, codes, tt.want, tt.codes)
		}
	}
}

// listenerHCMs unpacks the HTTP connection managers of a listener: its API listener's, its
// filter chains' and its default chain's.
func listenerHCMs(t *testing.T, r Resource) []*hcmv3.HttpConnectionManager {
	t.Helper()
	l := r.Message.(*listenerv3.Listener)
	var out []*hcmv3.HttpConnectionManager
	unpack := func(a *anypb.Any) {
		h := &hcmv3.HttpConnectionManager{}
		if err := a.UnmarshalTo(h); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		out = append(out, h)
	}
	if a := l.GetApiListener().GetApiListener(); a != nil {
		unpack(a)
	}
	chains := append([]*listenerv3.FilterChain{l.GetDefaultFilterChain()}, l.GetFilterChains()...)
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			if f.GetName() == hcmFilterName {
				unpack(f.GetTypedConfig())
			}
		}
	}
	return out
}

// routeFeaturesMesh is goldenMesh plus a VirtualService per route feature of issue 26 (header
// operations, mirrors, fault, rewrites, retries, hashing, tcp routes) and a DestinationRule
// with a consistent hash.
func routeFeaturesMesh() *model.Snapshot {
	ratingsDR := drConfig("ratings", "default", &networking.DestinationRule{Host: "ratings",
		TrafficPolicy: consistentHashLB(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{
			HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{Name: "user", Ttl: durationpb.New(time.Minute)}}})})
	httpbin := vsConfig("httpbin", "default", &networking.VirtualService{Hosts: []string{"httpbin.org"}, Http: []*networking.HTTPRoute{
		{Name: "faulty", Match: []*networking.HTTPMatchRequest{{Name: "status", Uri: exact("/status"), StatPrefix: "status"}},
			Fault: &networking.HTTPFaultInjection{
				Abort: &networking.HTTPFaultInjection_Abort{ErrorType: &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: 503}, Percentage: &networking.Percent{Value: 5}},
				Delay: &networking.HTTPFaultInjection_Delay{HttpDelayType: &networking.HTTPFaultInjection_Delay_FixedDelay{FixedDelay: durationpb.New(time.Second)}, Percentage: &networking.Percent{Value: 50}}},
			Rewrite: &networking.HTTPRewrite{Uri: "/anything"},
			Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "httpbin.org"}}}},
		{Name: "split", Match: []*networking.HTTPMatchRequest{{Uri: regex("/api/.*")}},
			Headers: &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: map[string]string{"x-route": "split"}, Remove: []string{"x-debug"}},
				Response: &networking.Headers_HeaderOperations{Add: map[string]string{"x-served": "xdslab"}}},
			Rewrite:          &networking.HTTPRewrite{UriRegexRewrite: &networking.RegexRewrite{Match: "^/api/(.*)$", Rewrite: `/\1`}},
			Mirror:           &networking.Destination{Host: "ratings.default.svc.cluster.local"},
			MirrorPercentage: &networking.Percent{Value: 10},
			Retries:          &networking.HTTPRetry{Attempts: 3, RetryOn: "5xx,503", RetryRemoteLocalities: wrapperspb.Bool(true)},
			// CORS for Envoy; left out for proxyless gRPC, whose xDS client has no CORS filter.
			CorsPolicy: &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{prefix("https://")}, AllowMethods: []string{"GET"}},
			Route: []*networking.HTTPRouteDestination{
				{Destination: &networking.Destination{Host: "httpbin.org"}, Weight: 90, Headers: &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: map[string]string{"x-canary": "no"}}}},
				{Destination: &networking.Destination{Host: "ratings.default.svc.cluster.local"}, Weight: 10},
			}},
	}})
	ratings := vsConfig("ratings-mirror", "default", &networking.VirtualService{Hosts: []string{"ratings"}, Http: []*networking.HTTPRoute{
		{Name: "hashed", Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "ratings"}}},
			Fault:   &networking.HTTPFaultInjection{Abort: &networking.HTTPFaultInjection_Abort{ErrorType: &networking.HTTPFaultInjection_Abort_GrpcStatus{GrpcStatus: "UNAVAILABLE"}, Percentage: &networking.Percent{Value: 1}}},
			Mirrors: []*networking.HTTPMirrorPolicy{{Destination: &networking.Destination{Host: "reviews", Port: &networking.PortSelector{Number: 9080}}, Percentage: &networking.Percent{Value: 25}}}},
	}})
	mysql := vsConfig("mysql", "db", &networking.VirtualService{Hosts: []string{"mysql"}, Tcp: []*networking.TCPRoute{
		{Match: []*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.9.0.0/16"}}}, Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "mysql", Subset: "replica"}}}},
		{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "mysql"}, Weight: 80}, {Destination: &networking.Destination{Host: "mysql", Subset: "replica"}, Weight: 20}}},
	}})
	in := goldenInput()
	in.Configs = append(in.Configs, ratingsDR, httpbin, ratings, mysql)
	// The golden mesh's ratings VirtualService would shadow ratings-mirror: leave it out.
	in.Configs = slices.DeleteFunc(in.Configs, func(c *istioconfig.Config) bool {
		return c.Kind == istioconfig.KindVirtualService && c.Name == "ratings"
	})
	return model.NewSnapshot(1, in)
}

// TestRouteFeaturesGolden pins the whole sidecar and proxyless gRPC RDS/LDS for the route
// features (testdata/routes-*.json, rewritten with -update), each resource passing ValidateAll
// with its typed_config unpacked.
func TestRouteFeaturesGolden(t *testing.T) {
	s := routeFeaturesMesh()
	for _, tc := range []struct {
		name  string
		proxy *model.Proxy
	}{{"routes-sidecar", sidecarProxy("10.1.0.1", "default")}, {"routes-grpc", grpcProxy("default")}} {
		g, err := generateAll(t, tc.proxy, s)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkResources(t, tc.proxy, g)
		checkGolden(t, tc.name, []string{ListenerType, RouteType}, g)
	}
}
