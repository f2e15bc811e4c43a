package gen

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-jose/go-jose/v4"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	securityapi "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// testJWKS is a JSON Web Key Set with one public RSA key (its private key was discarded).
const testJWKS = `{"keys":[{"kty":"RSA","e":"AQAB","n":"13XyPgifN-Ol4E0xnK8ldLNo6kVhbppspPLbdQpOO4fcnEgdFJ6smkKkfs8wBM9D6JYJwSKBMR054lanhtGiu28HhRA6ShoZTXhG82zSdSBmPIX48W0CwgARy990a0Adp0sbAi5V_IpCa8Zex3rVAHPWLqBgeuVY74qGhBvrsaimsom9VEXMgGFkRvoc8hdyBOJTV6S4F11KiXnSQyuTo_AcXoTUkF3BJZu9AGguDhVcl0WR-240uk2A1qpV_nPp5WNRzOjOomeo2Awf4g9hlwrMgzyZ6pj6T4HVy4Y6y-jgTcI5hCYOilogpjJgAAWvRh5qycU5fiC--TrJwES2-Q"}]}`

func raConfig(ns, name string, ra *securityapi.RequestAuthentication) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindRequestAuthentication, Name: name, Namespace: ns,
		CreationTimestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Spec: ra}
}

// hcmFilters returns the HTTP filter names and the decoded HCM of a chain's first filter.
func hcmFilters(t *testing.T, fc *listenerv3.FilterChain) ([]string, *hcmv3.HttpConnectionManager) {
	t.Helper()
	h := &hcmv3.HttpConnectionManager{}
	if err := fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range h.GetHttpFilters() {
		names = append(names, f.GetName())
	}
	return names, h
}

func jwtOf(t *testing.T, f *hcmv3.HttpFilter) *jwtv3.JwtAuthentication {
	t.Helper()
	j := &jwtv3.JwtAuthentication{}
	if err := f.GetTypedConfig().UnmarshalTo(j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestJWTSidecar: the RequestAuthentications that select a sidecar become one jwt_authn filter
// before RBAC on its inbound HTTP chains (the catch-all HTTP chain too), with the rules pooled,
// ordered by issuer and named origins-i; the keys are inlined, fetched by Envoy, or fail closed.
func TestJWTSidecar(t *testing.T) {
	in := goldenInput()
	in.Configs = append(in.Configs,
		raConfig(RootNamespace, "mesh", &securityapi.RequestAuthentication{JwtRules: []*securityapi.JWTRule{
			{Issuer: "https://z.example.com", Jwks: testJWKS},
		}}),
		raConfig("default", "reviews", &securityapi.RequestAuthentication{Selector: selector("app", "client"), JwtRules: []*securityapi.JWTRule{
			{Issuer: "https://a.example.com", JwksUri: "https://keys.example.com/jwks", Audiences: []string{"reviews"},
				FromHeaders: []*securityapi.JWTHeader{{Name: "x-jwt", Prefix: "Bearer "}}, FromParams: []string{"t"}, FromCookies: []string{"c"},
				OutputPayloadToHeader: "x-payload", ForwardOriginalToken: true, SpaceDelimitedClaims: []string{"scope", "roles"},
				OutputClaimToHeaders: []*securityapi.ClaimToHeader{{Header: "x-sub", Claim: "sub"}}},
			{Issuer: "https://m.example.com"},
			nil,
		}}),
		// Never applied: other labels, a targetRef.
		raConfig("default", "other", &securityapi.RequestAuthentication{Selector: selector("app", "other"), JwtRules: []*securityapi.JWTRule{{Issuer: "o", Jwks: testJWKS}}}),
		raConfig("default", "waypoint", &securityapi.RequestAuthentication{TargetRefs: []*typev1beta1.PolicyTargetReference{{Kind: "Service", Name: "reviews"}},
			JwtRules: []*securityapi.JWTRule{{Issuer: "w", Jwks: testJWKS}}}),
		authzConfig("default", "allow-jwt", &securityapi.AuthorizationPolicy{Rules: []*securityapi.Rule{{
			From: []*securityapi.Rule_From{{Source: &securityapi.Source{RequestPrincipals: []string{"https://a.example.com/*"}}}},
		}}}, nil),
	)
	s := model.NewSnapshot(1, in)
	p := sidecarProxy("10.1.0.1", "default") // reviews: inbound 9080, HTTP
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	var vi *Resource
	for _, r := range g[ListenerType] {
		if _, err := validateDeep(r.Message); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if r.Name == VirtualInboundListener {
			vi = &r
		}
	}
	for _, k := range []string{"mesh", "reviews"} {
		if !slices.Contains(vi.Deps, istioconfig.Key{Kind: istioconfig.KindRequestAuthentication, Name: k, Namespace: map[string]string{"mesh": RootNamespace, "reviews": "default"}[k]}) {
			t.Errorf("virtualInbound deps %v lack RequestAuthentication %s", vi.Deps, k)
		}
	}
	var httpChains int
	for _, fc := range vi.Message.(*listenerv3.Listener).GetFilterChains() {
		if fc.GetFilters()[0].GetName() != hcmFilterName {
			continue
		}
		httpChains++
		names, _ := hcmFilters(t, fc)
		if want := []string{jwtAuthnFilterName, httpRBACFilterName, "envoy.filters.http.fault", "envoy.filters.http.cors", routerFilterName}; !slices.Equal(names, want) {
			t.Fatalf("chain %s: http filters = %v, want %v", fc.GetName(), names, want)
		}
	}
	if httpChains < 2 {
		t.Fatalf("%d HTTP chains, want the port's and the catch-all's", httpChains)
	}
	_, h := hcmFilters(t, inboundChainFor(t, g, 9080, "raw_buffer"))
	j := jwtOf(t, h.GetHttpFilters()[0])

	issuers := map[string]string{}
	for name, pr := range j.GetProviders() {
		issuers[name] = pr.GetIssuer()
		if pr.GetPayloadInMetadata() != "payload" || pr.GetClearRouteCache() {
			t.Errorf("%s: payload_in_metadata %q, clear_route_cache %v; want payload, false on a sidecar", name, pr.GetPayloadInMetadata(), pr.GetClearRouteCache())
		}
	}
	if want := map[string]string{"origins-0": "https://a.example.com", "origins-1": "https://m.example.com", "origins-2": "https://z.example.com"}; !maps.Equal(issuers, want) {
		t.Fatalf("providers = %v, want %v", issuers, want)
	}
	a := j.GetProviders()["origins-0"]
	want := &jwtv3.JwtProvider{
		Issuer: "https://a.example.com", Audiences: []string{"reviews"}, Forward: true, ForwardPayloadHeader: "x-payload", PayloadInMetadata: "payload",
		NormalizePayloadInMetadata: &jwtv3.JwtProvider_NormalizePayload{SpaceDelimitedClaims: []string{"permission", "roles", "scope"}},
		FromHeaders:                []*jwtv3.JwtHeader{{Name: "x-jwt", ValuePrefix: "Bearer "}}, FromParams: []string{"t"}, FromCookies: []string{"c"},
		ClaimToHeaders: []*jwtv3.JwtClaimToHeader{{HeaderName: "x-sub", ClaimName: "sub"}},
		JwksSourceSpecifier: &jwtv3.JwtProvider_RemoteJwks{RemoteJwks: &jwtv3.RemoteJwks{
			HttpUri:       &corev3.HttpUri{Uri: "https://keys.example.com/jwks", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "outbound|443||keys.example.com"}, Timeout: durationpb.New(5 * time.Second)},
			CacheDuration: durationpb.New(5 * time.Minute),
		}},
	}
	if !proto.Equal(a, want) {
		t.Errorf("origins-0 = %v\nwant %v", prototext.Format(a), prototext.Format(want))
	}
	if got := j.GetProviders()["origins-1"].GetLocalJwks().GetInlineString(); got != failClosedJWKS {
		t.Errorf("issuer without keys: local_jwks %q, want the fail-closed key", got)
	}
	if got := j.GetProviders()["origins-2"].GetLocalJwks().GetInlineString(); got != testJWKS {
		t.Errorf("inline jwks: local_jwks %q, want them as given", got)
	}
	// Any one provider, or every one of "provider i or no token".
	anyOf := j.GetRules()[0].GetRequires().GetRequiresAny().GetRequirements()
	if len(anyOf) != 4 || anyOf[0].GetProviderName() != "origins-0" || anyOf[2].GetProviderName() != "origins-2" {
		t.Fatalf("requirement = %v", prototext.Format(j.GetRules()[0]))
	}
	all := anyOf[3].GetRequiresAll().GetRequirements()
	if len(all) != 3 || all[1].GetRequiresAny().GetRequirements()[0].GetProviderName() != "origins-1" || all[1].GetRequiresAny().GetRequirements()[1].GetAllowMissing() == nil {
		t.Errorf("requires_all = %v", all)
	}
	if !j.GetBypassCorsPreflight() || j.GetRules()[0].GetMatch().GetPrefix() != "/" {
		t.Errorf("rule match %v, bypass_cors_preflight %v", j.GetRules()[0].GetMatch(), j.GetBypassCorsPreflight())
	}

	// Another namespace sees only the mesh-wide rule: one provider, "it or no token".
	jr := jwtFor(sidecarProxy("10.9.9.9", "db"), s)
	one := jwtOf(t, jr.filter(false))
	req := one.GetRules()[0].GetRequires().GetRequiresAny().GetRequirements()
	if len(one.GetProviders()) != 1 || len(req) != 2 || req[0].GetProviderName() != "origins-0" || req[1].GetAllowMissing() == nil {
		t.Errorf("single rule = %v", prototext.Format(one))
	}
	// Proxyless gRPC gets none.
	if f := jwtFor(grpcProxy("default"), s).filter(false); f != nil {
		t.Errorf("proxyless gRPC got a jwt_authn filter")
	}
}

// TestFailClosedJWKS: the stand-in key set parses and holds only a public key.
func TestFailClosedJWKS(t *testing.T) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(failClosedJWKS), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || !set.Keys[0].IsPublic() || !set.Keys[0].Valid() {
		t.Errorf("fail-closed key set = %+v, want one valid public key", set.Keys)
	}
}

// TestJWTRouter: on a gateway the filter comes before RBAC on every HCM and clears the route
// cache; a router the policy does not select has none.
func TestJWTRouter(t *testing.T) {
	in := gatewayInput()
	in.Configs = append(in.Configs,
		raConfig(RootNamespace, "edge", &securityapi.RequestAuthentication{Selector: selector("tier", "edge"), JwtRules: []*securityapi.JWTRule{{Issuer: "e", Jwks: testJWKS}}}),
		authzConfig(RootNamespace, "ingress", &securityapi.AuthorizationPolicy{Selector: selector("tier", "edge"), Rules: []*securityapi.Rule{{}}}, nil),
	)
	s := model.NewSnapshot(1, in)
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{{map[string]string{"istio": "ingressgateway", "app": "istio-ingressgateway", "tier": "edge"}, true}, {ingressLabels, false}} {
		g, err := generateAll(t, routerProxy(RootNamespace, tc.labels), s)
		if err != nil {
			t.Fatal(err)
		}
		var hcms int
		for _, r := range g[ListenerType] {
			if _, err := validateDeep(r.Message); err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			for _, fc := range r.Message.(*listenerv3.Listener).GetFilterChains() {
				if fc.GetFilters()[0].GetName() != hcmFilterName {
					continue
				}
				hcms++
				names, h := hcmFilters(t, fc)
				if got := names[0] == jwtAuthnFilterName; got != tc.want {
					t.Fatalf("router %v, listener %s: filters %v", tc.labels, r.Name, names)
				}
				if !tc.want {
					continue
				}
				if names[1] != httpRBACFilterName {
					t.Errorf("listener %s: filters %v, want RBAC after jwt_authn", r.Name, names)
				}
				if !jwtOf(t, h.GetHttpFilters()[0]).GetProviders()["origins-0"].GetClearRouteCache() {
					t.Errorf("listener %s: clear_route_cache false on a gateway", r.Name)
				}
				if !slices.ContainsFunc(r.Deps, func(k istioconfig.Key) bool { return k.Kind == istioconfig.KindRequestAuthentication }) {
					t.Errorf("listener %s deps %v lack the RequestAuthentication", r.Name, r.Deps)
				}
			}
		}
		if hcms == 0 {
			t.Fatalf("router %v has no HTTP listeners", tc.labels)
		}
	}
}

// FuzzJWTRule feeds arbitrary JWT rules (protobuf wire bytes) to the generator: it never
// panics, and a rule the config validator admits yields a jwt_authn filter that passes
// ValidateAll, typed_config unpacked.
func FuzzJWTRule(f *testing.F) {
	seeds := []*securityapi.JWTRule{
		{Issuer: "i", Jwks: testJWKS},
		{Issuer: "https://i.example.com", JwksUri: "http://k.example.com:8080/k", Timeout: durationpb.New(time.Second), Audiences: []string{"a", "b"},
			FromHeaders: []*securityapi.JWTHeader{{Name: "h", Prefix: "p "}}, FromParams: []string{"q"}, FromCookies: []string{"c"},
			OutputClaimToHeaders: []*securityapi.ClaimToHeader{{Header: "x-a", Claim: "a.b"}}, SpaceDelimitedClaims: []string{"z", "scope"}},
		{JwksUri: "https://k.example.com/k"},
		{Issuer: "only-issuer"},
	}
	for _, r := range seeds {
		if !validForFuzz(raConfig("ns", "x", &securityapi.RequestAuthentication{JwtRules: []*securityapi.JWTRule{r}})) {
			f.Fatalf("seed %v is not a valid rule", prototext.Format(r))
		}
		b, _ := proto.Marshal(r)
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, gateway bool) {
		r := &securityapi.JWTRule{}
		if proto.Unmarshal(data, r) != nil {
			return
		}
		jr := jwtRules{rules: []*securityapi.JWTRule{r, {Issuer: "second", Jwks: testJWKS}}}
		filt := jr.filter(gateway)
		if !validForFuzz(raConfig("ns", "x", &securityapi.RequestAuthentication{JwtRules: jr.rules})) {
			return
		}
		if _, err := validateDeep(filt); err != nil {
			t.Fatalf("rule %v: %v", prototext.Format(r), err)
		}
	})
}

// BenchmarkVirtualInboundJWT measures a sidecar's virtualInbound listener with no
// RequestAuthentication and with 1 and 5 selecting it (one rule each, inline keys): time, CPU
// and the listener's bytes (the jwt_authn filter, keys inlined, rides on every HTTP chain).
func BenchmarkVirtualInboundJWT(b *testing.B) {
	p := sidecarProxy("10.1.0.1", "default") // reviews: inbound 9080
	for _, n := range []int{0, 1, 5} {
		in := goldenInput()
		for i := range n {
			in.Configs = append(in.Configs, raConfig("default", fmt.Sprintf("ra-%d", i), &securityapi.RequestAuthentication{JwtRules: []*securityapi.JWTRule{{
				Issuer: fmt.Sprintf("https://issuer-%d.example.com", i), Audiences: []string{"reviews"}, Jwks: testJWKS,
			}}}))
		}
		s := model.NewSnapshot(1, in)
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) { benchVirtualInbound(b, p, s) })
	}
}

// TestJWTSameIssuerOrder: rules of one issuer keep istiod's listing order, the proxy's
// namespace before the root namespace and, in each, the oldest object first (then by name) —
// not the order of names. Found by hack/istio/parity (testdata/mesh/authnorder.yaml).
func TestJWTSameIssuerOrder(t *testing.T) {
	rule := func(header string) []*securityapi.JWTRule {
		return []*securityapi.JWTRule{{Issuer: "https://same.example.com", Jwks: testJWKS, FromHeaders: []*securityapi.JWTHeader{{Name: header}}}}
	}
	older := raConfig("default", "b-older", &securityapi.RequestAuthentication{JwtRules: rule("ns-older")})
	older.CreationTimestamp = older.CreationTimestamp.Add(-time.Hour)
	in := goldenInput()
	in.Configs = append(in.Configs,
		raConfig(RootNamespace, "a-mesh", &securityapi.RequestAuthentication{JwtRules: rule("mesh")}),
		raConfig("default", "a-newer", &securityapi.RequestAuthentication{JwtRules: rule("ns-newer")}),
		older,
	)
	j := jwtOf(t, jwtFor(sidecarProxy("10.1.0.1", "default"), model.NewSnapshot(1, in)).filter(false))
	var got []string
	for i := range len(j.GetProviders()) {
		got = append(got, j.GetProviders()[fmt.Sprintf("origins-%d", i)].GetFromHeaders()[0].GetName())
	}
	if want := []string{"ns-older", "ns-newer", "mesh"}; !slices.Equal(got, want) {
		t.Errorf("providers of one issuer (by their header) = %v, want %v", got, want)
	}
}

// TestJWTManyRulesOrder: past twelve pooled rules, rules of one issuer come in the order
// istiod's sort by issuer (slices.SortFunc, not stable) leaves them in, not in listing order.
// Found by hack/istio/parity's JWT stream (seed 13; testdata/mesh/jwtmany.yaml).
func TestJWTManyRulesOrder(t *testing.T) {
	issuers := []string{"b", "a", "c", "b", "a", "b", "c", "a", "b", "a", "c", "b", "a"}
	var rules []*securityapi.JWTRule
	for i, iss := range issuers {
		rules = append(rules, &securityapi.JWTRule{Issuer: "https://" + iss + ".test", Jwks: testJWKS, FromHeaders: []*securityapi.JWTHeader{{Name: fmt.Sprintf("x-h%d", i)}}})
	}
	for _, tc := range []struct {
		name  string
		rules []*securityapi.JWTRule
		want  []string
	}{
		// Twelve or fewer: listing order within an issuer.
		{"twelve", rules[:12], []string{"x-h1", "x-h4", "x-h7", "x-h9", "x-h0", "x-h3", "x-h5", "x-h8", "x-h11", "x-h2", "x-h6", "x-h10"}},
		// Thirteen: istiod's order (checked against istiod by jwtmany.yaml).
		{"thirteen", rules, []string{"x-h7", "x-h1", "x-h12", "x-h9", "x-h4", "x-h3", "x-h5", "x-h8", "x-h0", "x-h11", "x-h6", "x-h10", "x-h2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := goldenInput()
			in.Configs = append(in.Configs, raConfig("default", "many", &securityapi.RequestAuthentication{JwtRules: tc.rules}))
			j := jwtOf(t, jwtFor(sidecarProxy("10.1.0.1", "default"), model.NewSnapshot(1, in)).filter(false))
			var got []string
			for i := range len(j.GetProviders()) {
				got = append(got, j.GetProviders()[fmt.Sprintf("origins-%d", i)].GetFromHeaders()[0].GetName())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("providers (by their header) = %v, want %v", got, tc.want)
			}
		})
	}
}
