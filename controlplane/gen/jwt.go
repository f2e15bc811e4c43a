package gen

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// RequestAuthentication → Envoy's jwt_authn HTTP filter, as istiod's authn policy applier
// generates it (the rules were learned from istiod; the code is xdslab's):
//
//   - A proxy's RequestAuthentications are selected as its AuthorizationPolicies are (root
//     namespace and its own, selector a subset of its labels, no targetRef(s)); the JWT rules of
//     all of them are pooled in istiod's listing order (the proxy's namespace before the root
//     namespace, and in each the oldest object first, then by name) and sorted by issuer with
//     the sort istiod uses (Go's slices.SortFunc, not stable): up to twelve rules, rules of one
//     issuer keep the listing order; beyond, they come in the order that sort leaves them in,
//     which depends only on the listing order. Rule i is the provider "origins-i".
//   - The filter authenticates but never rejects a request for a missing token: each provider
//     is required as "provider i, or no token at all", and with several rules the requirement is
//     "any one provider, or all of those alternatives" — an invalid token is rejected, a missing
//     one is let through for AuthorizationPolicy (requestPrincipals, request.auth.*) to decide.
//   - Every provider writes the verified payload to dynamic metadata under "payload" (what the
//     RBAC metadata matchers read), normalises the space-delimited claims scope and permission
//     (and spaceDelimitedClaims), and clears the route cache on gateways only.
//   - Keys: inline jwks are inlined as local_jwks, as istiod does. A jwksUri without jwks is
//     generated as remote_jwks through the cluster outbound|PORT||HOST (istiod's
//     PILOT_JWT_ENABLE_REMOTE_JWKS=envoy behaviour): istiod's default fetches the keys itself and
//     inlines them, which xdslab, making no outside connections, does not. An issuer with neither
//     (istiod would discover the keys over OpenID Connect) gets failClosedJWKS, as istiod does
//     when a fetch fails: no token verifies. `xdslab validate` warns about both.
//   - The filter goes before the RBAC filters of sidecars' inbound HTTP chains and gateways'
//     HTTP listeners (istiod's order: ext_authz, jwt_authn, RBAC). This Istio version adds no
//     istio_authn filter.

// jwtPayloadKey is the dynamic metadata key of the verified JWT payload.
const jwtPayloadKey = "payload"

// failClosedJWKS is a public RSA key whose private key xdslab generated once and discarded: no
// token verifies against it. It stands for keys xdslab cannot obtain (OpenID discovery).
const failClosedJWKS = `{"keys":[{"kty":"RSA","e":"AQAB","n":"pKykaOGzq2BCxIgIhhiI98DAJL8a5U2cFe7ENUfX-9iH4Bod5YNLK6rjinspk72rv2Gvs2Jb4U5iTAsIYqVJ8P7ERLHg6Tj4IQXTh3kJyNHiwaNp0GFYTUc7WmTJQcxJp9gJIa7JiJmwJD0A8G99ANNX0iCoxynZf0qIVli0FYr3bJdRxRdlNsbVfE0GZNigL35ol1wUGGgHWVe3dJ1nAbb3OjyQNuMwpn1VWuWFnQqpEHDyDzT7J1-fIFsWmQZ3X02xBfxzpJCKOWZ02kGXs_1Hcp7KXgq_t2e84GyRhueT6Hx_DbmPc-J76qdIkEnUQd3jvvj5kNQGhi-KJ5mSBw"}]}`

// jwtRules are the RequestAuthentication rules that apply to one proxy.
type jwtRules struct {
	rules []*securityapi.JWTRule
	deps  []istioconfig.Key
}

// jwtFor selects the proxy's RequestAuthentications and pools their rules.
func jwtFor(p *model.Proxy, s *model.Snapshot) jwtRules {
	var out jwtRules
	nss := []string{p.Namespace}
	if p.Namespace != RootNamespace {
		nss = append(nss, RootNamespace)
	}
	for _, ns := range nss {
		for _, c := range byCreation(s.ConfigsIn(istioconfig.KindRequestAuthentication, ns)) {
			if !model.RequestAuthenticationSelects(c, p) {
				continue
			}
			out.deps = append(out.deps, c.Key())
			for _, r := range c.Spec.(*securityapi.RequestAuthentication).GetJwtRules() {
				if r != nil {
					out.rules = append(out.rules, r)
				}
			}
		}
	}
	// Not SortStableFunc: istiod's sort is not stable, and past twelve rules (where SortFunc
	// stops sorting by insertion) rules of one issuer would otherwise come in another order.
	slices.SortFunc(out.rules, func(a, b *securityapi.JWTRule) int { return cmp.Compare(a.GetIssuer(), b.GetIssuer()) })
	out.deps = sortDeps(out.deps)
	return out
}

// byCreation is cs (one namespace's configs, by name) ordered oldest first, then by name, as
// istiod lists them; cs itself is not modified.
func byCreation(cs []*istioconfig.Config) []*istioconfig.Config {
	return slices.SortedStableFunc(slices.Values(cs), func(a, b *istioconfig.Config) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp)
	})
}

// filter is the jwt_authn filter, or nil without rules; gateway sets clear_route_cache.
func (j jwtRules) filter(gateway bool) *hcmv3.HttpFilter {
	if len(j.rules) == 0 {
		return nil
	}
	providers := make(map[string]*jwtv3.JwtProvider, len(j.rules))
	var each, anyOf []*jwtv3.JwtRequirement
	for i, r := range j.rules {
		name := "origins-" + strconv.Itoa(i)
		providers[name] = jwtProvider(r, gateway)
		byName := &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_ProviderName{ProviderName: name}}
		each = append(each, &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_RequiresAny{RequiresAny: &jwtv3.JwtRequirementOrList{
			Requirements: []*jwtv3.JwtRequirement{byName, {RequiresType: &jwtv3.JwtRequirement_AllowMissing{AllowMissing: &emptypb.Empty{}}}},
		}}})
		anyOf = append(anyOf, &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_ProviderName{ProviderName: name}})
	}
	req := each[0]
	if len(each) > 1 {
		anyOf = append(anyOf, &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_RequiresAll{RequiresAll: &jwtv3.JwtRequirementAndList{Requirements: each}}})
		req = &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_RequiresAny{RequiresAny: &jwtv3.JwtRequirementOrList{Requirements: anyOf}}}
	}
	cfg := &jwtv3.JwtAuthentication{
		Providers: providers,
		Rules: []*jwtv3.RequirementRule{{
			Match:           &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			RequirementType: &jwtv3.RequirementRule_Requires{Requires: req},
		}},
		BypassCorsPreflight: true,
	}
	return &hcmv3.HttpFilter{Name: jwtAuthnFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(cfg)}}
}

func jwtProvider(r *securityapi.JWTRule, gateway bool) *jwtv3.JwtProvider {
	p := &jwtv3.JwtProvider{
		Issuer:               r.GetIssuer(),
		Audiences:            r.GetAudiences(),
		Forward:              r.GetForwardOriginalToken(),
		ForwardPayloadHeader: r.GetOutputPayloadToHeader(),
		PayloadInMetadata:    jwtPayloadKey,
		NormalizePayloadInMetadata: &jwtv3.JwtProvider_NormalizePayload{
			SpaceDelimitedClaims: spaceDelimitedClaims(r.GetSpaceDelimitedClaims()),
		},
		ClearRouteCache: gateway,
		FromParams:      r.GetFromParams(),
		FromCookies:     r.GetFromCookies(),
	}
	for _, ch := range r.GetOutputClaimToHeaders() {
		p.ClaimToHeaders = append(p.ClaimToHeaders, &jwtv3.JwtClaimToHeader{HeaderName: ch.GetHeader(), ClaimName: ch.GetClaim()})
	}
	for _, h := range r.GetFromHeaders() {
		p.FromHeaders = append(p.FromHeaders, &jwtv3.JwtHeader{Name: h.GetName(), ValuePrefix: h.GetPrefix()})
	}
	keys := r.GetJwks()
	if keys == "" && r.GetJwksUri() != "" {
		if host, port, err := model.ParseJwksURI(r.GetJwksUri()); err == nil {
			timeout := r.GetTimeout()
			if timeout == nil {
				timeout = durationpb.New(5 * time.Second)
			}
			p.JwksSourceSpecifier = &jwtv3.JwtProvider_RemoteJwks{RemoteJwks: &jwtv3.RemoteJwks{
				HttpUri: &corev3.HttpUri{
					Uri:              r.GetJwksUri(),
					HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: ClusterName("outbound", uint32(port), "", host)},
					Timeout:          timeout,
				},
				CacheDuration: durationpb.New(5 * time.Minute),
			}}
			return p
		}
	}
	if keys == "" {
		keys = failClosedJWKS
	}
	p.JwksSourceSpecifier = &jwtv3.JwtProvider_LocalJwks{LocalJwks: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: keys}}}
	return p
}

// spaceDelimitedClaims are scope and permission plus the rule's own, sorted and unique (a
// rule without its own gets istiod's default order, permission then scope).
func spaceDelimitedClaims(own []string) []string {
	if own == nil {
		return []string{"permission", "scope"}
	}
	out := append([]string{"permission", "scope"}, own...)
	slices.Sort(out)
	return slices.Compact(out)
}
