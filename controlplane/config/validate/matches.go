package validate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/xdslab/xdslab/internal/suggest"
	networking "istio.io/api/networking/v1alpha3"
)

// Rules istiod applies to what an HTTP route matches on and to its CORS policy:
// validateHTTPRouteMatchRequest, validateStringMatch, validateStringMatchRegexp,
// validateStringRegexp, ValidateHTTPHeaderNameOrJwtClaimRoute and validateCORSPolicy in
// istio.io/istio pkg/config/validation (virtualservice.go, validation.go), restated here.

// maxRegexLen is istiod's bound on a regex, in bytes: Envoy limits the size of the compiled
// RE2 program, which is never smaller than the pattern, so istiod bounds the pattern.
const maxRegexLen = 1024

// regexError says what is wrong with a regex istiod rejects ("" for one it accepts): an empty
// one, one longer than maxRegexLen, or one that is not RE2 syntax (Go's regexp compiles the
// same syntax as RE2, which Envoy uses; lookarounds, backreferences and \C are not in it).
func regexError(re string) string {
	switch {
	case re == "":
		return "is empty: write an RE2 regex, or use exact or prefix"
	case len(re) > maxRegexLen:
		return fmt.Sprintf("is %d bytes long, more than the %d istiod allows: shorten it, or split the match", len(re), maxRegexLen)
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Sprintf("%q is not an RE2 regex (%v): fix it; RE2 has no lookarounds, backreferences or \\C (syntax: https://github.com/google/re2/wiki/Syntax)", re, err)
	}
	return ""
}

// regex reports the regex at at if istiod rejects it.
func (c *checker) regex(at Path, re string) {
	if msg := regexError(re); msg != "" {
		c.errf(at, "%s", msg)
	}
}

// stringMatch mirrors istiod's validateStringMatch: a regex must be valid, and a prefix must
// not be empty, Envoy's string matchers requiring one, unless emptyPrefixOK (the uri, whose
// path matcher takes "" for every path; istiod's validateStringMatchRegexp). An exact ""
// and a match without a type (the value is present) are fine.
func (c *checker) stringMatch(at Path, sm *networking.StringMatch, emptyPrefixOK bool) {
	switch m := sm.GetMatchType().(type) {
	case *networking.StringMatch_Prefix:
		if m.Prefix == "" && !emptyPrefixOK {
			c.errf(at.With("prefix"), "is empty, which istiod rejects: write the prefix, or leave out the match type ({}) to match any value")
		}
	case *networking.StringMatch_Regex:
		c.regex(at.With("regex"), m.Regex)
	}
}

// httpTokenRE is an HTTP header field name (RFC 9110 token characters).
var httpTokenRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// pseudoHeaders are the HTTP/2 pseudo-headers a match may name.
var pseudoHeaders = []string{":method", ":scheme", ":authority", ":path", ":status"}

// jwtClaimHeader reports whether a match names a JWT claim rather than a header:
// @request.auth.claims.NAME (dot-separated) or @request.auth.claims[NAME] (brackets).
func jwtClaimHeader(name string) bool {
	const prefix = "@request.auth.claims"
	if len(name) < len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
		return false
	}
	rest := name[len(prefix):]
	return (strings.HasPrefix(rest, ".") && len(rest) > 1) ||
		(strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") && len(rest) > 2)
}

// matchHeaderName mirrors istiod's ValidateHTTPHeaderNameOrJwtClaimRoute for the names of
// headers and withoutHeaders: a header name, a pseudo-header or a JWT claim. Names under
// headers must also be lowercase (an xdslab rule older than this file).
func (c *checker) matchHeaderName(at Path, h string, lowercase bool) {
	switch {
	case jwtClaimHeader(h):
		// Matched in the metadata the JWT filter writes, as istiod does.
	case h == "", lowercase && strings.ToLower(h) != h:
		c.errf(at, "header name %q must be lowercase and not empty", h)
	case slices.Contains(pseudoHeaders, h):
	case !httpTokenRE.MatchString(h):
		c.errf(at, "header name %q is not a valid HTTP header name: use letters, digits and !#$%%&'*+-.^_`|~ only (no spaces, no ':'), a pseudo-header (%s) or @request.auth.claims.NAME", h, strings.Join(pseudoHeaders, ", "))
	}
}

// httpMatch checks one HTTP match request's string matches (istiod:
// validateHTTPRouteMatchRequest), in the API's field order: uri, scheme, method, authority,
// headers and withoutHeaders (names and values), queryParams.
func (c *checker) httpMatch(ma Path, m *networking.HTTPMatchRequest) {
	c.stringMatch(ma.With("uri"), m.GetUri(), true)
	c.stringMatch(ma.With("scheme"), m.GetScheme(), false)
	c.stringMatch(ma.With("method"), m.GetMethod(), false)
	c.stringMatch(ma.With("authority"), m.GetAuthority(), false)
	for _, h := range slices.Sorted(maps.Keys(m.GetHeaders())) {
		c.matchHeaderName(ma.With("headers", h), h, true)
		c.stringMatch(ma.With("headers", h), m.GetHeaders()[h], false)
	}
	for _, h := range slices.Sorted(maps.Keys(m.GetWithoutHeaders())) {
		c.matchHeaderName(ma.With("withoutHeaders", h), h, false)
		// regex "*" is istiod's spelling of "the header is absent", not a regex
		// (vsNotGenerated warns that xdslab does not translate it).
		if sm := m.GetWithoutHeaders()[h]; sm.GetRegex() != "*" {
			c.stringMatch(ma.With("withoutHeaders", h), sm, false)
		}
	}
	for _, q := range slices.Sorted(maps.Keys(m.GetQueryParams())) {
		c.stringMatch(ma.With("queryParams", q), m.GetQueryParams()[q], false)
	}
}

// corsMethods are the allowMethods istiod accepts (case-sensitive): Go's net/http method
// names, and "*".
var corsMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "*"}

// corsPolicy mirrors istiod's validateCORSPolicy: every allowed origin matches something (an
// exact, prefix or valid regex value), methods are HTTP method names, header names are
// tokens or "*", and maxAge is a duration in whole seconds.
func (c *checker) corsPolicy(at Path, p *networking.CorsPolicy) {
	if p == nil {
		return
	}
	for i, o := range p.GetAllowOrigins() {
		oa := at.With("allowOrigins", i)
		switch m := o.GetMatchType().(type) {
		case *networking.StringMatch_Regex:
			if m.Regex != "" {
				c.regex(oa.With("regex"), m.Regex)
				continue
			}
		case *networking.StringMatch_Exact:
			if m.Exact != "" {
				continue
			}
		case *networking.StringMatch_Prefix:
			if m.Prefix != "" {
				continue
			}
		}
		c.errf(oa, "matches no origin (istiod rejects an empty one): set exact, prefix or regex to a non-empty value, e.g. exact: https://app.example.com")
	}
	for i, m := range p.GetAllowMethods() {
		switch {
		case slices.Contains(corsMethods, m):
		case slices.Contains(corsMethods, strings.ToUpper(m)):
			c.errf(at.With("allowMethods", i), "%q is not an HTTP method istiod accepts: write %q (methods are case-sensitive)", m, strings.ToUpper(m))
		default:
			c.errf(at.With("allowMethods", i), "%q is not an HTTP method istiod accepts: use one of %s%s", m, strings.Join(corsMethods, ", "), suggest.Hint(strings.ToUpper(m), corsMethods))
		}
	}
	for _, f := range []struct {
		name  string
		names []string
	}{{"allowHeaders", p.GetAllowHeaders()}, {"exposeHeaders", p.GetExposeHeaders()}} {
		for i, h := range f.names {
			switch {
			case h == "":
				c.errf(at.With(f.name, i), "a header name is empty: name the header, or use \"*\" for any")
			case h != "*" && !httpTokenRE.MatchString(h):
				c.errf(at.With(f.name, i), "%q is not a valid HTTP header name: use letters, digits and !#$%%&'*+-.^_`|~ only (no spaces, no ':'), or \"*\" for any", h)
			}
		}
	}
	if ma := p.GetMaxAge(); ma != nil {
		c.duration(at.With("maxAge"), ma)
		if d := ma.AsDuration(); ma.CheckValid() == nil && d >= time.Millisecond && d%time.Millisecond == 0 && ma.GetNanos() > 0 {
			c.errf(at.With("maxAge"), "%v has a fraction of a second, which CORS cannot express: use whole seconds", ma.AsDuration())
		}
	}
}
