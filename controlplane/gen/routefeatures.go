package gen

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	commonfaultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	grpcwebv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	previousprioritiesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// The per-route features of a VirtualService HTTP route that istiod translates beside the
// match and the destinations: header operations, mirroring, fault injection, consistent-hash
// policies and retries. Each function restates the rule of the istiod function named in its
// comment (istio.io/istio pilot/pkg/networking/core/route/route.go and route/retry/retry.go).

const (
	faultFilterName = "envoy.filters.http.fault"
	corsFilterName  = "envoy.filters.http.cors"
	// previousHostsPredicate makes a retry pick another host than the ones already tried.
	previousHostsPredicate = "envoy.retry_host_predicates.previous_hosts"
	previousPriorities     = "envoy.retry_priorities.previous_priorities"
	// hostSelectionRetryMaxAttempts is how often Envoy re-picks a host the predicate refuses.
	hostSelectionRetryMaxAttempts = 5
)

// faultFilter is the HTTP fault filter with an empty config: it does nothing by itself, and a
// route's typed_per_filter_config under its name turns faults on for that route. istiod puts it
// in every HCM just before the router (ListenerBuilder.buildHTTPConnectionManager, after
// grpc_stats and alpn, before cors), and in the proxyless gRPC listeners (grpcgen
// supportedFilters).
func faultFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: faultFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&faultv3.HTTPFault{})}}
}

// corsFilter is the CORS filter with an empty config, which a route's CorsPolicy under its
// name turns on; istiod puts it right after the fault filter.
func corsFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: corsFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&corsv3.Cors{})}}
}

// httpFilters is the HTTP filter chain of every Envoy HTTP connection manager: fault, cors,
// router (istiod's order, less its telemetry filters).
func httpFilters() []*hcmv3.HttpFilter {
	return []*hcmv3.HttpFilter{faultFilter(), corsFilter(), routerFilter()}
}

// grpcWebFilterName is Envoy's gRPC-Web filter, which istiod puts on a GRPC-WEB port's HTTP
// connection manager (after authentication and authorization, before the others).
const grpcWebFilterName = "envoy.filters.http.grpc_web"

// withGRPCWeb puts the grpc_web filter first in h's filters when on is set (a GRPC-WEB port);
// RBAC and jwt_authn filters added later go before it, as in istiod.
func withGRPCWeb(h *hcmv3.HttpConnectionManager, on bool) *hcmv3.HttpConnectionManager {
	if on {
		f := &hcmv3.HttpFilter{Name: grpcWebFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&grpcwebv3.GrpcWeb{})}}
		h.HttpFilters = append([]*hcmv3.HttpFilter{f}, h.HttpFilters...)
	}
	return h
}

// grpcHCM is a proxyless gRPC API listener's HTTP connection manager: grpc-go has no CORS
// filter, so its chain is fault, router (istiod's grpcgen supportedFilters).
func grpcHCM(name string) *hcmv3.HttpConnectionManager {
	h := rdsHCM(name, name)
	h.HttpFilters = []*hcmv3.HttpFilter{faultFilter(), routerFilter()}
	h.GetRds().ConfigSource = adsConfigSource() // istiod's grpcgen sets no initial_fetch_timeout
	return h
}

// translateCORS is istiod's TranslateCORSPolicy: allowed origins as string matchers (the
// deprecated allowOrigin as exact ones), methods, headers and exposed headers comma-joined,
// maxAge in seconds, credentials, the filter on for 100%, and unmatched preflights forwarded
// unless unmatchedPreflights is IGNORE.
func translateCORS(in *networking.CorsPolicy) *corsv3.CorsPolicy {
	out := &corsv3.CorsPolicy{
		ForwardNotMatchingPreflights: wrapperspb.Bool(in.GetUnmatchedPreflights() != networking.CorsPolicy_IGNORE),
		FilterEnabled:                &corev3.RuntimeFractionalPercent{DefaultValue: fractionHundred(100)},
		AllowCredentials:             in.GetAllowCredentials(),
		AllowHeaders:                 strings.Join(in.GetAllowHeaders(), ","),
		AllowMethods:                 strings.Join(in.GetAllowMethods(), ","),
		ExposeHeaders:                strings.Join(in.GetExposeHeaders(), ","),
	}
	if in.GetAllowOrigins() != nil {
		out.AllowOriginStringMatch = []*matcherv3.StringMatcher{}
		for _, o := range in.GetAllowOrigins() {
			if m, _ := stringMatcher(o); m != nil {
				out.AllowOriginStringMatch = append(out.AllowOriginStringMatch, m)
			}
		}
	} else {
		for _, o := range in.GetAllowOrigin() { //nolint:staticcheck // deprecated, still read by istiod
			out.AllowOriginStringMatch = append(out.AllowOriginStringMatch, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: o}})
		}
	}
	if in.GetMaxAge() != nil {
		out.MaxAge = strconv.FormatInt(in.GetMaxAge().GetSeconds(), 10)
	}
	return out
}

// headerOps is a route's or a destination's header manipulation (istiod: HeadersOperations).
type headerOps struct {
	reqAdd, respAdd       []*corev3.HeaderValueOption
	reqRemove, respRemove []string
	authority             string
}

// internalHeader reports a pseudo-header or Host, which Envoy does not let a route set
// (istiod: isInternalHeader).
func internalHeader(k string) bool { return strings.HasPrefix(k, ":") || strings.EqualFold(k, "host") }

func authorityHeader(k string) bool {
	return strings.EqualFold(k, ":authority") || strings.EqualFold(k, "host")
}

// headerValues turns a set or add map into header value options sorted by name, and returns the
// authority it sets (":authority" or "host", which become a host rewrite instead). set
// overwrites, add appends (istiod: translateAppendHeaders).
func headerValues(m map[string]string, appendValue bool) ([]*corev3.HeaderValueOption, string) {
	if len(m) == 0 {
		return nil, ""
	}
	authority := ""
	action := corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
	if appendValue {
		action = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	}
	var out []*corev3.HeaderValueOption
	for _, k := range sortedKeys(m) {
		if authorityHeader(k) {
			authority = m[k]
		}
		if internalHeader(k) {
			continue
		}
		out = append(out, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, Value: m[k]}, AppendAction: action})
	}
	return out, authority
}

func withoutInternal(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !internalHeader(k) {
			out = append(out, k)
		}
	}
	return out
}

// translateHeaders is istiod's TranslateHeadersOperations: request set then add, response set
// then add, removals without the internal headers; an authority in set wins over one in add.
func translateHeaders(h *networking.Headers) headerOps {
	if h == nil {
		return headerOps{}
	}
	req, resp := h.GetRequest(), h.GetResponse()
	var ops headerOps
	set, setAuth := headerValues(req.GetSet(), false)
	add, addAuth := headerValues(req.GetAdd(), true)
	ops.reqAdd = append(set, add...)
	set, _ = headerValues(resp.GetSet(), false)
	add, _ = headerValues(resp.GetAdd(), true)
	ops.respAdd = append(set, add...)
	ops.reqRemove = withoutInternal(req.GetRemove())
	ops.respRemove = withoutInternal(resp.GetRemove())
	ops.authority = addAuth
	if setAuth != "" {
		ops.authority = setAuth
	}
	return ops
}

// applyToRoute appends the operations to a route's header lists.
func (o headerOps) applyToRoute(r *routev3.Route) {
	r.RequestHeadersToAdd = append(r.RequestHeadersToAdd, o.reqAdd...)
	r.ResponseHeadersToAdd = append(r.ResponseHeadersToAdd, o.respAdd...)
	r.RequestHeadersToRemove = append(r.RequestHeadersToRemove, o.reqRemove...)
	r.ResponseHeadersToRemove = append(r.ResponseHeadersToRemove, o.respRemove...)
}

// fractionHundred and fractionMillion are istiod's translateIntegerToFractionalPercent and
// translatePercentToFractionalPercent (a Percent's value 0-100 with decimals, in millionths).
func fractionHundred(p uint32) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{Numerator: p, Denominator: typev3.FractionalPercent_HUNDRED}
}

func fractionMillion(p *networking.Percent) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{Numerator: uint32(p.GetValue() * 10000), Denominator: typev3.FractionalPercent_MILLION}
}

// mirrorFraction is istiod's MirrorPercent: mirrorPercentage (a Percent) wins over the
// deprecated integer mirrorPercent; an explicit 0 turns mirroring off (nil); unset is 100%.
func mirrorFraction(hr *networking.HTTPRoute) *corev3.RuntimeFractionalPercent {
	switch {
	case hr.GetMirrorPercentage() != nil:
		if hr.GetMirrorPercentage().GetValue() > 0 {
			return &corev3.RuntimeFractionalPercent{DefaultValue: fractionMillion(hr.GetMirrorPercentage())}
		}
		return nil
	case hr.GetMirrorPercent() != nil: //nolint:staticcheck // deprecated, still accepted by istiod
		if v := hr.GetMirrorPercent().GetValue(); v > 0 { //nolint:staticcheck // as above
			return &corev3.RuntimeFractionalPercent{DefaultValue: fractionHundred(v)}
		}
		return nil
	}
	return &corev3.RuntimeFractionalPercent{DefaultValue: fractionHundred(100)}
}

// mirrorPolicyFraction is istiod's MirrorPercentByPolicy for one entry of mirrors.
func mirrorPolicyFraction(m *networking.HTTPMirrorPolicy) *corev3.RuntimeFractionalPercent {
	if m.GetPercentage() != nil {
		if m.GetPercentage().GetValue() > 0 {
			return &corev3.RuntimeFractionalPercent{DefaultValue: fractionMillion(m.GetPercentage())}
		}
		return nil
	}
	return &corev3.RuntimeFractionalPercent{DefaultValue: fractionHundred(100)}
}

// mirrorPolicy is istiod's TranslateRequestMirrorPolicy with its defaults: the mirrored request
// does not inherit the trace's sampling decision, and its Host gets no "-shadow" suffix
// (DISABLE_SHADOW_HOST_SUFFIX defaults to true).
func mirrorPolicy(cluster string, f *corev3.RuntimeFractionalPercent) *routev3.RouteAction_RequestMirrorPolicy {
	return &routev3.RouteAction_RequestMirrorPolicy{
		Cluster:                       cluster,
		RuntimeFraction:               f,
		TraceSampled:                  wrapperspb.Bool(false),
		DisableShadowHostSuffixAppend: true,
	}
}

// grpcStatusCodes maps the gRPC status names an abort may use to their codes (istiod:
// grpc.SupportedGRPCStatus; its validation rejects any other name).
var grpcStatusCodes = map[string]codes.Code{
	"OK": codes.OK, "CANCELLED": codes.Canceled, "UNKNOWN": codes.Unknown, "INVALID_ARGUMENT": codes.InvalidArgument,
	"DEADLINE_EXCEEDED": codes.DeadlineExceeded, "NOT_FOUND": codes.NotFound, "ALREADY_EXISTS": codes.AlreadyExists,
	"PERMISSION_DENIED": codes.PermissionDenied, "RESOURCE_EXHAUSTED": codes.ResourceExhausted,
	"FAILED_PRECONDITION": codes.FailedPrecondition, "ABORTED": codes.Aborted, "OUT_OF_RANGE": codes.OutOfRange,
	"UNIMPLEMENTED": codes.Unimplemented, "INTERNAL": codes.Internal, "UNAVAILABLE": codes.Unavailable,
	"DATA_LOSS": codes.DataLoss, "UNAUTHENTICATED": codes.Unauthenticated,
}

// GRPCStatusCode returns the code of a gRPC status name as an abort fault spells it.
func GRPCStatusCode(name string) (uint32, bool) {
	c, ok := grpcStatusCodes[name]
	return uint32(c), ok
}

// translateFault is istiod's TranslateFault: a fixed delay and an HTTP or gRPC abort, each with
// its percentage (a Percent in millionths; a delay without one uses the deprecated integer
// percent, an abort without one has no percentage, which Envoy reads as 100%). Kinds istiod
// does not translate (exponential delay, HTTP/2 resets) are left out; nil when nothing is left.
func translateFault(in *networking.HTTPFaultInjection) *faultv3.HTTPFault {
	if in == nil {
		return nil
	}
	out := &faultv3.HTTPFault{}
	if d := in.GetDelay(); d != nil {
		if fd, ok := d.GetHttpDelayType().(*networking.HTTPFaultInjection_Delay_FixedDelay); ok {
			out.Delay = &commonfaultv3.FaultDelay{FaultDelaySecifier: &commonfaultv3.FaultDelay_FixedDelay{FixedDelay: durationpb.New(fd.FixedDelay.AsDuration())}}
			if d.GetPercentage() != nil {
				out.Delay.Percentage = fractionMillion(d.GetPercentage())
			} else {
				out.Delay.Percentage = fractionHundred(uint32(d.GetPercent())) //nolint:staticcheck // deprecated, still accepted by istiod
			}
		}
	}
	if a := in.GetAbort(); a != nil {
		abort := &faultv3.FaultAbort{}
		switch e := a.GetErrorType().(type) {
		case *networking.HTTPFaultInjection_Abort_HttpStatus:
			abort.ErrorType = &faultv3.FaultAbort_HttpStatus{HttpStatus: uint32(e.HttpStatus)}
		case *networking.HTTPFaultInjection_Abort_GrpcStatus:
			code, _ := GRPCStatusCode(e.GrpcStatus)
			abort.ErrorType = &faultv3.FaultAbort_GrpcStatus{GrpcStatus: code}
		default:
			abort = nil
		}
		if abort != nil {
			if a.GetPercentage() != nil {
				abort.Percentage = fractionMillion(a.GetPercentage())
			}
			out.Abort = abort
		}
	}
	if out.Delay == nil && out.Abort == nil {
		return nil
	}
	return out
}

// consistentHash is the consistent-hash setting that applies to traffic for a destination
// (istiod: HashForHTTPDestination): the subset's port-level setting, else the subset's, else
// the rule's port-level one for the destination's explicit port, else the rule's.
func consistentHash(dr *istioconfig.Config, d *networking.Destination) *networking.LoadBalancerSettings_ConsistentHashLB {
	if dr == nil {
		return nil
	}
	rule := drSpec(dr)
	portLevel := func(pls []*networking.TrafficPolicy_PortTrafficPolicy) *networking.LoadBalancerSettings_ConsistentHashLB {
		if d.GetPort() == nil {
			return nil
		}
		for _, s := range pls {
			if s.GetPort().GetNumber() == d.GetPort().GetNumber() {
				return s.GetLoadBalancer().GetConsistentHash()
			}
		}
		return nil
	}
	ch := rule.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash()
	pls := portLevel(rule.GetTrafficPolicy().GetPortLevelSettings())
	var ss, ssPLS *networking.LoadBalancerSettings_ConsistentHashLB
	for _, s := range rule.GetSubsets() {
		if s.GetName() == d.GetSubset() {
			ss = s.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash()
			ssPLS = portLevel(s.GetTrafficPolicy().GetPortLevelSettings())
			break
		}
	}
	switch {
	case ssPLS != nil:
		return ssPLS
	case ss != nil:
		return ss
	case pls != nil:
		return pls
	}
	return ch
}

// serviceConsistentHash is the setting for a service's default route (istiod: hashForService):
// the rule's, unless the port's port-level setting has one.
func serviceConsistentHash(dr *istioconfig.Config, port uint32) *networking.LoadBalancerSettings_ConsistentHashLB {
	if dr == nil {
		return nil
	}
	tp := drSpec(dr).GetTrafficPolicy()
	ch := tp.GetLoadBalancer().GetConsistentHash()
	for _, s := range tp.GetPortLevelSettings() {
		if s.GetPort().GetNumber() == port {
			if h := s.GetLoadBalancer().GetConsistentHash(); h != nil {
				ch = h
			}
			break
		}
	}
	return ch
}

// hashPolicy is istiod's ConsistentHashToHashPolicy: header, cookie (name, ttl, path,
// attributes), source IP or query parameter; nil for a setting that hashes on none of them
// (ring size or Maglev options alone).
func hashPolicy(ch *networking.LoadBalancerSettings_ConsistentHashLB) *routev3.RouteAction_HashPolicy {
	switch k := ch.GetHashKey().(type) {
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{
			Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: k.HttpHeaderName}}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie:
		c := k.HttpCookie
		cookie := &routev3.RouteAction_HashPolicy_Cookie{Name: c.GetName(), Path: c.GetPath()}
		if c.GetTtl() != nil {
			cookie.Ttl = durationpb.New(c.GetTtl().AsDuration())
		}
		for _, a := range c.GetAttributes() {
			cookie.Attributes = append(cookie.Attributes, &routev3.RouteAction_HashPolicy_CookieAttribute{Name: a.GetName(), Value: a.GetValue()})
		}
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: cookie}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{
			ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: k.UseSourceIp}}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpQueryParameterName:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_QueryParameter_{
			QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: k.HttpQueryParameterName}}}
	}
	return nil
}

var (
	previousHostsAny      = toAny(&previoushostsv3.PreviousHostsPredicate{})
	previousPrioritiesAny = toAny(&previousprioritiesv3.PreviousPrioritiesConfig{UpdateFrequency: 2})
)

func previousHosts() []*routev3.RetryPolicy_RetryHostPredicate {
	return []*routev3.RetryPolicy_RetryHostPredicate{{
		Name:       previousHostsPredicate,
		ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: cloneAny(previousHostsAny)},
	}}
}

func cloneAny(a *anypb.Any) *anypb.Any {
	return &anypb.Any{TypeUrl: a.GetTypeUrl(), Value: slices.Clone(a.GetValue())}
}

// sidecarRetryPolicy is istiod's retry.ConvertPolicy for Envoy: with no retries in the route,
// the default (2 attempts on DefaultRetryOn, a retry avoiding the hosts already tried, 5 host
// re-picks); attempts 0 turns retries off (nil); otherwise the route's attempts, retryOn
// (numbers in it become retriable status codes, and "retriable-status-codes" is added when
// needed), perTryTimeout, retryIgnorePreviousHosts, retryRemoteLocalities and backoff. The
// previous-hosts predicate is left out when the route hashes to one destination
// (consistentHash), since skipping the hashed host would break stickiness.
func sidecarRetryPolicy(in *networking.HTTPRetry, consistentHash bool) *routev3.RetryPolicy {
	out := &routev3.RetryPolicy{
		RetryOn:                       DefaultRetryOn,
		NumRetries:                    wrapperspb.UInt32(2),
		HostSelectionRetryMaxAttempts: hostSelectionRetryMaxAttempts,
	}
	if !consistentHash {
		out.RetryHostPredicate = previousHosts()
	}
	if in == nil {
		return out
	}
	if in.GetAttempts() <= 0 {
		return nil
	}
	out.NumRetries = wrapperspb.UInt32(uint32(in.GetAttempts()))
	if in.GetRetryOn() != "" {
		out.RetryOn, out.RetriableStatusCodes = splitRetryOn(in.GetRetryOn())
		if len(out.RetriableStatusCodes) > 0 && !strings.Contains(out.RetryOn, "retriable-status-codes") {
			out.RetryOn += ",retriable-status-codes"
		}
	}
	if d := in.GetPerTryTimeout(); d != nil {
		out.PerTryTimeout = durationpb.New(d.AsDuration())
	}
	if ip := in.GetRetryIgnorePreviousHosts(); ip != nil {
		out.RetryHostPredicate = nil
		if ip.GetValue() {
			out.RetryHostPredicate = previousHosts()
		}
	}
	if in.GetRetryRemoteLocalities().GetValue() {
		out.RetryPriority = &routev3.RetryPolicy_RetryPriority{
			Name:       previousPriorities,
			ConfigType: &routev3.RetryPolicy_RetryPriority_TypedConfig{TypedConfig: cloneAny(previousPrioritiesAny)},
		}
	}
	if b := in.GetBackoff(); b != nil {
		out.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(b.AsDuration())}
	}
	return out
}

// splitRetryOn separates retryOn's HTTP status codes from its policy names (istiod:
// parseRetryOn); blanks around entries are dropped.
func splitRetryOn(s string) (string, []uint32) {
	var names []string
	var codes []uint32
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, err := strconv.Atoi(part); err == nil && http.StatusText(n) != "" {
			codes = append(codes, uint32(n))
			continue
		}
		names = append(names, part)
	}
	return strings.Join(names, ","), codes
}

// setTimeout is istiod's setTimeout: the route timeout (0: none); a proxyless gRPC client gets
// it as max_stream_duration (grpc-go reads no other), an Envoy as max_grpc_timeout too, so
// that a grpc-timeout header does not outlast the route's timeout.
func setTimeout(ra *routev3.RouteAction, d time.Duration, grpc bool) {
	ra.Timeout = durationpb.New(d)
	if grpc {
		ra.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(d)}
		return
	}
	ra.MaxGrpcTimeout = durationpb.New(d) //nolint:staticcheck // deprecated in Envoy, still what istiod sends
}
