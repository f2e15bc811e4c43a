package validate

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
)

// Rules istiod applies to the per-route features of an HTTP route (header operations, retries,
// fault injection, mirrors): validateHTTPRoute and its helpers in istio.io/istio
// pkg/config/validation (virtualservice.go, validation.go), restated here.

// retryOnPolicies are the retryOn names istiod accepts (supportedRetryOnPolicies): Envoy's
// x-envoy-retry-on and x-envoy-retry-grpc-on conditions. HTTP status codes are accepted too.
var retryOnPolicies = map[string]bool{
	"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true, "connect-failure": true,
	"retriable-4xx": true, "refused-stream": true, "retriable-status-codes": true, "retriable-headers": true,
	"envoy-ratelimited": true, "http3-post-connect-failure": true,
	"cancelled": true, "deadline-exceeded": true, "internal": true, "resource-exhausted": true, "unavailable": true,
}

// grpcStatusNames are the gRPC status names an abort may use (istiod: grpc.SupportedGRPCStatus).
var grpcStatusNames = map[string]bool{
	"OK": true, "CANCELLED": true, "UNKNOWN": true, "INVALID_ARGUMENT": true, "DEADLINE_EXCEEDED": true,
	"NOT_FOUND": true, "ALREADY_EXISTS": true, "PERMISSION_DENIED": true, "RESOURCE_EXHAUSTED": true,
	"FAILED_PRECONDITION": true, "ABORTED": true, "OUT_OF_RANGE": true, "UNIMPLEMENTED": true, "INTERNAL": true,
	"UNAVAILABLE": true, "DATA_LOSS": true, "UNAUTHENTICATED": true,
}

// headerValueRE is istiod's httpHeaderValueRegexp: no control characters except tab.
var headerValueRE = regexp.MustCompile("^[^\u0000-\u0008\u000A-\u001F\u007F]*$")

// httpRouteFeatures checks an HTTP route's retries, fault, mirrors and header operations.
func (c *checker) httpRouteFeatures(at Path, r *networking.HTTPRoute) {
	if rt := r.GetRetries(); rt != nil {
		// validateHTTPRetry: every comma-separated entry is a policy name or an HTTP status.
		if on := rt.GetRetryOn(); on != "" {
			for _, p := range strings.Split(on, ",") {
				n, _ := strconv.Atoi(p)
				if http.StatusText(n) == "" && !retryOnPolicies[p] {
					c.errf(at.With("retries", "retryOn"), "%q is not a retryOn policy (istiod rejects it): use Envoy retry conditions such as 5xx, gateway-error, reset, connect-failure, refused-stream, retriable-4xx, retriable-status-codes, unavailable, cancelled, deadline-exceeded, or HTTP status codes, separated by commas without spaces", p)
				}
			}
		}
		if rt.GetAttempts() == 0 && rt.GetRetryRemoteLocalities() != nil {
			c.errf(at.With("retries", "retryRemoteLocalities"), "is set while attempts is 0 (retries disabled): set attempts or remove it")
		}
		if rt.GetBackoff() != nil {
			c.duration(at.With("retries", "backoff"), rt.GetBackoff())
		}
	}
	if f := r.GetFault(); f != nil {
		if a := f.GetAbort(); a != nil {
			switch e := a.GetErrorType().(type) {
			case *networking.HTTPFaultInjection_Abort_GrpcStatus:
				if !grpcStatusNames[e.GrpcStatus] {
					c.errf(at.With("fault", "abort", "grpcStatus"), "%q is not a gRPC status name: use one such as UNAVAILABLE, NOT_FOUND or INTERNAL", e.GrpcStatus)
				}
			case *networking.HTTPFaultInjection_Abort_Http2Error:
				c.errf(at.With("fault", "abort", "http2Error"), "HTTP/2 abort faults are not supported (istiod rejects them): use httpStatus or grpcStatus")
			case nil:
				c.warnf(at.With("fault", "abort"), "has no httpStatus or grpcStatus, so it aborts nothing: set one")
			}
		}
		if _, ok := f.GetDelay().GetHttpDelayType().(*networking.HTTPFaultInjection_Delay_ExponentialDelay); ok {
			c.errf(at.With("fault", "delay", "exponentialDelay"), "is not supported (istiod rejects it): use fixedDelay")
		}
	}
	if r.GetMirror() != nil && len(r.GetMirrors()) > 0 {
		c.errf(at.With("mirrors"), "an http route has either mirror or mirrors, not both: move mirror into mirrors")
	}
	if mp := r.GetMirrorPercent(); mp != nil { //nolint:staticcheck // deprecated, still accepted by istiod
		if mp.GetValue() > 100 {
			c.errf(at.With("mirrorPercent"), "%d is more than 100", mp.GetValue())
		}
		c.warnf(at.With("mirrorPercent"), "is deprecated: use mirrorPercentage")
	}
	for i, m := range r.GetMirrors() {
		ma := at.With("mirrors", i)
		if m.GetDestination() == nil {
			c.errf(ma.With("destination"), "is required: name the service to mirror to")
			continue
		}
		c.destination(ma.With("destination"), m.GetDestination())
		if m.GetPercentage() != nil {
			c.percent(ma.With("percentage", "value"), m.GetPercentage().GetValue())
		}
	}
	c.corsPolicy(at.With("corsPolicy"), r.GetCorsPolicy()) // matches.go
	c.headerOperations(at.With("headers"), r.GetHeaders())
	authority := r.GetRewrite().GetAuthority()
	for _, k := range append(slices.Sorted(maps.Keys(r.GetHeaders().GetRequest().GetSet())), slices.Sorted(maps.Keys(r.GetHeaders().GetRequest().GetAdd()))...) {
		if !strings.EqualFold(k, ":authority") && !strings.EqualFold(k, "host") {
			continue
		}
		if authority != "" { // validateAuthorityRewrite
			c.errf(at.With("headers", "request"), "sets the authority (%s) although rewrite.authority or another header already does: set it in one place", k)
			break
		}
		authority = k
	}
	for i, d := range r.GetRoute() {
		c.headerOperations(at.With("route", i, "headers"), d.GetHeaders())
	}
}

// headerOperations is istiod's header manipulation rules: request set/add may name the
// authority (":authority" or "host") but no other pseudo-header; request removals and every
// response operation may name neither; values hold no control characters and are valid
// Envoy header formatter strings (headerValueError: "%%" for a literal '%').
func (c *checker) headerOperations(at Path, h *networking.Headers) {
	if h == nil {
		return
	}
	internal := func(k string) bool { return strings.HasPrefix(k, ":") || strings.EqualFold(k, "host") }
	authority := func(k string) bool { return strings.EqualFold(k, ":authority") || strings.EqualFold(k, "host") }
	name := func(fa Path, k string, allowAuthority bool) {
		switch {
		case k == "":
			c.errf(fa, "a header name is empty: name the header")
		case internal(k) && !(allowAuthority && authority(k)):
			c.errf(fa, "%q cannot be changed here: pseudo-headers and Host are managed by the proxy (set the authority with request set or rewrite.authority)", k)
		}
	}
	value := func(fa Path, k, v string) {
		if !headerValueRE.MatchString(v) {
			c.errf(fa, "the value of %q holds control characters: remove them", k)
		} else if msg := headerValueError(v); msg != "" { // headervalue.go
			c.errf(fa, "the value of %q %s", k, msg)
		}
	}
	for _, side := range []struct {
		name string
		ops  *networking.Headers_HeaderOperations
		auth bool
	}{{"request", h.GetRequest(), true}, {"response", h.GetResponse(), false}} {
		for _, op := range []struct {
			name string
			m    map[string]string
		}{{"set", side.ops.GetSet()}, {"add", side.ops.GetAdd()}} {
			for _, k := range slices.Sorted(maps.Keys(op.m)) {
				fa := at.With(side.name, op.name, k)
				name(fa, k, side.auth)
				value(fa, k, op.m[k])
			}
		}
		for i, k := range side.ops.GetRemove() {
			name(at.With(side.name, "remove", i), k, false)
		}
	}
}

// vsNotGenerated warns about VirtualService fields xdslab admits (istiod does) but does not
// translate into Envoy config, so that nothing is dropped silently (NotGeneratedVirtualService
// lists the same for the control plane's log).
func (c *checker) vsNotGenerated(at Path, vs *networking.VirtualService) {
	for _, p := range vsNotGenerated(at, vs) {
		c.warnf(p.Path, "%s", p.Msg)
	}
}

const vsNotGeneratedMsg = "is accepted but not generated by xdslab"

func vsNotGenerated(at Path, vs *networking.VirtualService) []Problem {
	var out []Problem
	add := func(p Path, format string, args ...any) {
		out = append(out, Problem{Path: p, Msg: vsNotGeneratedMsg + ": " + fmt.Sprintf(format, args...), Warn: true})
	}
	for i, r := range vs.GetHttp() {
		for j, m := range r.GetMatch() {
			for _, h := range slices.Sorted(maps.Keys(m.GetWithoutHeaders())) {
				if m.GetWithoutHeaders()[h].GetRegex() == "*" {
					add(at.With("http", i, "match", j, "withoutHeaders", h, "regex"), "regex \"*\" (istiod's \"header absent\") is not translated and this route is left out; write %s: {} instead, which means the same", h)
				}
			}
		}
	}
	return out
}

// NotGeneratedVirtualService lists, as "FIELD: MESSAGE", the fields of a VirtualService that
// xdslab accepts but does not generate; nil for any other spec.
func NotGeneratedVirtualService(spec proto.Message) []string {
	vs, ok := spec.(*networking.VirtualService)
	if !ok {
		return nil
	}
	var out []string
	for _, p := range vsNotGenerated(Path{"spec"}, vs) {
		out = append(out, p.Path.String()+": "+p.Msg)
	}
	return out
}
