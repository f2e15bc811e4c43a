package validate

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/go-jose/go-jose/v4"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
)

// strictHeaderName is istiod's rule for outputClaimToHeaders header names.
var strictHeaderName = regexp.MustCompile(`^[-_A-Za-z0-9]+$`)

// requestAuthentication mirrors istiod's ValidateRequestAuthentication: selector and
// targetRef(s) exclusive, and per JWT rule non-empty audiences, an issuer or a jwksUri, a
// jwksUri with scheme http or https, jwks that parse as a JSON Web Key (Set), non-empty
// header, param and cookie locations, claim-to-header pairs with a strict header name, and a
// valid timeout; beyond istiod, no NUL, CR or LF in header names and prefixes (Envoy would
// refuse the listener). Inline keys with private material get istiod's warning; then the parts
// xdslab generates differently are warned about (notGeneratedRequestAuthn).
func (c *checker) requestAuthentication(at Path, ra *securityapi.RequestAuthentication) {
	refs := len(ra.GetTargetRefs())
	if ra.GetTargetRef() != nil {
		refs++
	}
	if ra.GetSelector() != nil && refs > 0 || ra.GetTargetRef() != nil && len(ra.GetTargetRefs()) > 0 {
		c.errf(at.With("targetRefs"), "only one of selector, targetRef or targetRefs can be set: keep one")
	}
	c.targetRefs(at, ra.GetTargetRef(), ra.GetTargetRefs())
	c.selector(at.With("selector", "matchLabels"), ra.GetSelector().GetMatchLabels(), "RequestAuthentication selector")
	for i, r := range ra.GetJwtRules() {
		c.jwtRule(at.With("jwtRules", i), r)
	}
	c.notGeneratedRequestAuthn(at, ra)
}

func (c *checker) jwtRule(at Path, r *securityapi.JWTRule) {
	if r == nil {
		return // istiod accepts a null rule, and generates nothing for it
	}
	for i, a := range r.GetAudiences() {
		if a == "" {
			c.errf(at.With("audiences", i), "an audience must not be empty: remove it")
		}
	}
	if r.GetIssuer() == "" && r.GetJwksUri() == "" {
		c.errf(at.With("issuer"), "issuer or jwksUri must be set: name the token issuer (the iss claim)")
	}
	if u := r.GetJwksUri(); u != "" {
		if _, _, err := model.ParseJwksURI(u); err != nil {
			c.errf(at.With("jwksUri"), "%v", err)
		}
	}
	if r.GetJwks() != "" {
		keys, err := parseJWKS(r.GetJwks())
		if err != nil {
			c.errf(at.With("jwks"), "is not a JSON Web Key Set: %v", err)
		}
		for i, k := range keys {
			if !k.IsPublic() {
				c.warnf(at.With("jwks"), "key at index %d contains private key material: only public keys are used for verification, remove the private parts", i)
			}
		}
	}
	for i, h := range r.GetFromHeaders() {
		if h == nil {
			c.errf(at.With("fromHeaders", i), "must not be null: name a header")
			continue
		} else if h.GetName() == "" {
			c.errf(at.With("fromHeaders", i, "name"), "must not be empty: name the header that carries the token")
		}
		c.headerText(at.With("fromHeaders", i, "name"), h.GetName())
		c.headerText(at.With("fromHeaders", i, "prefix"), h.GetPrefix())
	}
	c.headerText(at.With("outputPayloadToHeader"), r.GetOutputPayloadToHeader())
	for i, p := range r.GetFromParams() {
		if p == "" {
			c.errf(at.With("fromParams", i), "must not be empty: name the query parameter that carries the token")
		}
	}
	for i, k := range r.GetFromCookies() {
		if k == "" {
			c.errf(at.With("fromCookies", i), "must not be empty: name the cookie that carries the token")
		}
	}
	for i, ch := range r.GetOutputClaimToHeaders() {
		cat := at.With("outputClaimToHeaders", i)
		switch {
		case ch == nil:
			c.errf(cat, "must not be null: give a header and a claim")
		case ch.GetHeader() == "" || ch.GetClaim() == "":
			c.errf(cat, "header and claim must both be set")
		case !strictHeaderName.MatchString(ch.GetHeader()):
			c.errf(cat.With("header"), "%q is not a valid header name: use letters, digits, '-' and '_'", ch.GetHeader())
		}
	}
	c.duration(at.With("timeout"), r.GetTimeout())
}

// headerText rejects NUL, CR and LF in a header name or value prefix: istiod accepts them, but
// Envoy rejects the jwt_authn filter (and so the whole listener) that carries them.
func (c *checker) headerText(at Path, v string) {
	if strings.ContainsAny(v, "\x00\r\n") {
		c.errf(at, "%q contains NUL, CR or LF, which Envoy rejects in a header (istiod accepts it and the proxy refuses the listener): remove them", v)
	}
}

// parseJWKS reads a key set ({"keys": […]}) or a single key, as istiod's parser accepts.
func parseJWKS(s string) ([]jose.JSONWebKey, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return nil, err
	}
	if _, ok := probe["keys"]; ok {
		var set jose.JSONWebKeySet
		if err := json.Unmarshal([]byte(s), &set); err != nil {
			return nil, err
		}
		return set.Keys, nil
	}
	var k jose.JSONWebKey
	if err := json.Unmarshal([]byte(s), &k); err != nil {
		return nil, err
	}
	return []jose.JSONWebKey{k}, nil
}
