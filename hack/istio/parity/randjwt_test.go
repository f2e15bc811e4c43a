package parity_test

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// jwtStream is mixed into the seed of the ninth PCG stream (request authentication and the
// policies that read it), drawn after the first seven: every object a seed produced before
// these shapes were added stays as it was.
const jwtStream = 0xbb67ae8584caa73b

// jwtIssuers are the issuers the stream draws: URLs with and without a path (a request
// principal splits at its last slash), and one without a slash at all.
var jwtIssuers = []string{
	"https://login.quarry.test",
	"https://login.quarry.test/realms/north",
	"https://tokens.kestrel.test/v2",
	"signer@kestrel.test",
}

// jwtSubjects, jwtAudiences and jwtClaims are the values the stream's rules and conditions
// name.
var (
	jwtSubjects  = []string{"alice", "bob", "svc-batch", "ops/oncall"}
	jwtAudiences = []string{"web", "web.app.svc.cluster.local", "quarry-api", "kestrel"}
	jwtClaims    = []string{"[groups]", "[role]", "[tenant]", "[org][team]", "[realm_access][roles]", "[ext][tier][name]"}
	// jwtOddClaims are claim keys Istio's validation admits that are not plain nested
	// brackets: an empty last name, a bracket inside a name, a suffix after the brackets
	// and a name glued to "claims".
	jwtOddClaims = []string{"[org][]", "[a]b]", "[[team]]", "[org].x[y]", "X[role]", "[k8s.io/group]"}
)

// jwtRSAModuli are public RSA moduli of keys the corpus uses (requestauthn.yaml): our own.
var jwtRSAModuli = []string{
	"uicRryDBBPe28H1EhtOmrYKEk7VWcy9nnpVvYKBwGgRbO2XDFZTdEV_hUBsARvOj55ob-Dnn2H5s7XvdPmln89lpagAXh6M2mVp6nbUNwG5IQuYnOA-XYuWADmnybr08DZJfAuL9fx7Rx2MZ9b1YFeQmRtStcdwqBrrKm0lXkS6xqpPQtkSugOz9PLSMBPpjfi7pGDIngVcCQ1rTiGuO4M0nJ7fXsQfRPfsOYUiIi7qRAWNpi4x8zkpGKVAqO_fI5vffmQDCOPtfNoWhLsg51CgiqnoD9kwvpiwXgIbokSTi8xOHfH8aYbKZs-LMfOq_EnUya2dM7XzWvHUlKamiKQ",
	"13XyPgifN-Ol4E0xnK8ldLNo6kVhbppspPLbdQpOO4fcnEgdFJ6smkKkfs8wBM9D6JYJwSKBMR054lanhtGiu28HhRA6ShoZTXhG82zSdSBmPIX48W0CwgARy990a0Adp0sbAi5V_IpCa8Zex3rVAHPWLqBgeuVY74qGhBvrsaimsom9VEXMgGFkRvoc8hdyBOJTV6S4F11KiXnSQyuTo_AcXoTUkF3BJZu9AGguDhVcl0WR-240uk2A1qpV_nPp5WNRzOjOomeo2Awf4g9hlwrMgzyZ6pj6T4HVy4Y6y-jgTcI5hCYOilogpjJgAAWvRh5qycU5fiC--TrJwES2-Q",
}

// jwtShapes adds, in most seeds, one to five RequestAuthentications — mesh-wide in the root
// namespace, on the ingress gateway, selecting a client workload from the root namespace,
// namespace-wide in a client namespace, selecting a client namespace's proxy, or selecting no
// proxy — of one to four rules each (so a proxy may pool more than twelve, which istiod's sort
// by issuer does not keep in listing order), of four issuers (so rules share them), with
// inline keys (EC, Ed25519 and HMAC keys drawn from the stream, or the corpus's RSA keys),
// audiences, every token location and output, and AuthorizationPolicies (ALLOW, DENY, AUDIT)
// that read them: requestPrincipals and notRequestPrincipals in every wildcard form, and
// `when` conditions on request.auth.principal, audiences, presenter and claims, nested ones
// and odd keys too.
func (m *randMesh) jwtShapes() {
	m.r = rand.New(rand.NewPCG(m.seed^jwtStream, jwtStream))
	if !m.chance(0.75) {
		return
	}
	for i := range 1 + m.r.IntN(5) {
		ns, spec := m.jwtPlacement(false)
		var rules []any
		for range 1 + m.r.IntN(4) {
			rules = append(rules, m.jwtRule())
		}
		spec["jwtRules"] = rules
		api := "security.istio.io/v1"
		if m.chance(0.2) {
			api = "security.istio.io/v1beta1"
		}
		m.add("RequestAuthentication", api, fmt.Sprintf("jwt%d", i), ns, spec)
	}
	for i := range m.r.IntN(4) {
		ns, spec := m.jwtPlacement(true)
		spec["action"] = m.pick("ALLOW", "ALLOW", "DENY", "AUDIT")
		var rules []any
		for range 1 + m.r.IntN(2) {
			rules = append(rules, m.jwtAuthzRule())
		}
		spec["rules"] = rules
		m.add("AuthorizationPolicy", "security.istio.io/v1", fmt.Sprintf("jwtz%d", i), ns, spec)
	}
}

// jwtPlacement draws where a policy applies: its namespace and a spec with its selector.
func (m *randMesh) jwtPlacement(authz bool) (string, map[string]any) {
	spec := map[string]any{}
	sel := func(k, v string) { spec["selector"] = map[string]any{"matchLabels": map[string]any{k: v}} }
	switch m.r.IntN(7) {
	case 6:
		// A selector in the root namespace selects workloads of every namespace.
		sel("app", m.pick("web", "client"))
		return "istio-system", spec
	case 0:
		if authz && m.chance(0.5) {
			// A mesh-wide AuthorizationPolicy applies everywhere: keep most on one proxy.
			sel("app", "web")
			return "app", spec
		}
		return "istio-system", spec
	case 1:
		sel("istio", "ingressgateway")
		return "istio-system", spec
	case 2:
		return m.pick(clientNamespaces...), spec
	case 3:
		if m.chance(0.2) {
			sel("app", "absent")
			return m.pick(clientNamespaces...), spec
		}
		fallthrough
	default:
		ns := m.pick("app", "app", "other", "plain")
		app, _ := proxyOf(ns)
		sel("app", app)
		return ns, spec
	}
}

// jwtRule draws one JWT rule. Every rule has inline keys: without them istiod would fetch
// them (a jwksUri beside them is not fetched).
func (m *randMesh) jwtRule() map[string]any {
	r := map[string]any{"issuer": m.pick(jwtIssuers...), "jwks": m.jwks()}
	if m.chance(0.25) {
		r["jwksUri"] = m.pick("https://login.quarry.test/keys", "https://tokens.kestrel.test:8443/jwks.json", "http://keys.quarry.test/v1/certs")
		if m.chance(0.3) {
			delete(r, "issuer") // an issuer may be left out beside a jwksUri
		}
	}
	if m.chance(0.5) {
		r["audiences"] = toAny(m.some(jwtAudiences, 3))
	}
	if m.chance(0.5) {
		var hs []any
		for _, n := range m.some([]string{"authorization", "x-jwt-assertion", "x-forwarded-access-token", "x-quarry-token"}, 2) {
			h := map[string]any{"name": n}
			if m.chance(0.6) {
				h["prefix"] = m.pick("Bearer ", "Token ", "JWT")
			}
			hs = append(hs, h)
		}
		r["fromHeaders"] = hs
	}
	if m.chance(0.3) {
		r["fromParams"] = toAny(m.some([]string{"access_token", "token", "jwt"}, 2))
	}
	if m.chance(0.3) {
		r["fromCookies"] = toAny(m.some([]string{"session", "quarry-auth", "id_token"}, 2))
	}
	if m.chance(0.3) {
		r["outputPayloadToHeader"] = m.pick("x-jwt-payload", "x-verified-claims")
	}
	if m.chance(0.3) {
		r["forwardOriginalToken"] = m.chance(0.7)
	}
	if m.chance(0.3) {
		var chs []any
		for i, c := range m.some([]string{"sub", "iss", "tenant", "org.team", "azp"}, 3) {
			chs = append(chs, map[string]any{"header": fmt.Sprintf("x-claim-%d", i), "claim": c})
		}
		r["outputClaimToHeaders"] = chs
	}
	if m.chance(0.2) {
		r["spaceDelimitedClaims"] = toAny(m.some([]string{"roles", "scope", "groups", "permission"}, 3))
	}
	if m.chance(0.15) {
		r["timeout"] = m.pick("2s", "750ms", "10s")
	}
	return r
}

// some draws one to most distinct values of xs, in the order drawn.
func (m *randMesh) some(xs []string, most int) []string {
	ys := slices.Clone(xs)
	m.r.Shuffle(len(ys), func(i, j int) { ys[i], ys[j] = ys[j], ys[i] })
	return ys[:1+m.r.IntN(min(most, len(ys)))]
}

// jwks draws a key set of one or two keys (EC P-256 or P-384 and Ed25519 public keys and
// HMAC secrets from the stream's draws, or one of the RSA keys), or a single key outside a set.
func (m *randMesh) jwks() string {
	var keys []map[string]any
	for i := range 1 + m.r.IntN(2) {
		k := m.jwk()
		if m.chance(0.5) {
			k["kid"] = fmt.Sprintf("k%d-%d", i, m.r.IntN(100))
		}
		keys = append(keys, k)
	}
	var v any = map[string]any{"keys": keys}
	if len(keys) == 1 && m.chance(0.2) {
		v = keys[0]
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// jwk draws one public key.
func (m *randMesh) jwk() map[string]any {
	b64 := base64.RawURLEncoding.EncodeToString
	switch m.r.IntN(4) {
	case 0:
		return map[string]any{"kty": "RSA", "e": "AQAB", "n": m.pick(jwtRSAModuli...)}
	case 3:
		if m.chance(0.5) {
			seed := make([]byte, ed25519.SeedSize)
			for i := range seed {
				seed[i] = byte(m.r.IntN(256))
			}
			pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
			return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": b64(pub), "use": "sig"}
		}
		// A shared secret (HS256): Istio warns that it is private, and admits it.
		secret := make([]byte, 32)
		for i := range secret {
			secret[i] = byte(m.r.IntN(256))
		}
		return map[string]any{"kty": "oct", "k": b64(secret), "alg": "HS256"}
	case 1:
		pub := m.ecPublic(ecdh.P256(), 32)
		return map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pub[1:33]), "y": b64(pub[33:])}
	}
	pub := m.ecPublic(ecdh.P384(), 48)
	return map[string]any{"kty": "EC", "crv": "P-384", "x": b64(pub[1:49]), "y": b64(pub[49:]), "alg": "ES384"}
}

// ecPublic derives an uncompressed public point from a private scalar drawn from the stream
// (redrawn in the rare case it is out of range), so that keys are deterministic for a seed.
func (m *randMesh) ecPublic(c ecdh.Curve, size int) []byte {
	for {
		d := make([]byte, size)
		for i := range d {
			d[i] = byte(m.r.IntN(256))
		}
		if k, err := c.NewPrivateKey(d); err == nil {
			return k.PublicKey().Bytes()
		}
	}
}

// jwtPrincipal draws a request principal in one of its forms: ISS/SUB, *, ISS/*, */SUB,
// *SUFFIX, PREFIX*, ISS alone and ISS/.
func (m *randMesh) jwtPrincipal() string {
	iss, sub := m.pick(jwtIssuers...), m.pick(jwtSubjects...)
	switch m.r.IntN(9) {
	case 7:
		return iss // no subject: the issuer up to its last slash, if any
	case 8:
		return iss + "/" // an empty subject
	case 0:
		return "*"
	case 1:
		return iss + "/*"
	case 2:
		return "*/" + sub
	case 3:
		return "*" + sub
	case 4:
		return iss[:len(iss)/2] + "*"
	}
	return iss + "/" + sub
}

// jwtAuthzRule draws a rule that reads the JWT: request principals in its source and `when`
// conditions on request.auth attributes, sometimes beside an operation.
func (m *randMesh) jwtAuthzRule() map[string]any {
	rule := map[string]any{}
	if m.chance(0.6) {
		src := map[string]any{}
		ps := func() []any {
			var out []any
			for range 1 + m.r.IntN(3) {
				out = append(out, m.jwtPrincipal())
			}
			return out
		}
		switch m.r.IntN(4) {
		case 0, 1:
			src["requestPrincipals"] = ps()
		case 2:
			src["notRequestPrincipals"] = ps()
		case 3:
			src["requestPrincipals"] = ps()
			src["notRequestPrincipals"] = ps()
		}
		if m.chance(0.2) {
			src["namespaces"] = []any{m.pick(clientNamespaces...)}
		}
		rule["from"] = []any{map[string]any{"source": src}}
	}
	if m.chance(0.25) {
		op := map[string]any{}
		if m.chance(0.5) {
			op["methods"] = []any{m.pick("GET", "POST")}
		} else {
			op["paths"] = []any{m.pick("/api/*", "/admin", "*/token")}
		}
		rule["to"] = []any{map[string]any{"operation": op}}
	}
	if m.chance(0.7) || len(rule) == 0 {
		var when []any
		for range 1 + m.r.IntN(3) {
			when = append(when, m.jwtCondition())
		}
		rule["when"] = when
	}
	return rule
}

// jwtCondition draws a `when` condition on a request.auth attribute, with values, notValues
// or both, exact or with a * at one end.
func (m *randMesh) jwtCondition() map[string]any {
	var key string
	var pool []string
	switch m.r.IntN(4) {
	case 0:
		key = "request.auth.principal"
		for range 3 {
			pool = append(pool, m.jwtPrincipal())
		}
	case 1:
		key, pool = "request.auth.audiences", append(slices.Clone(jwtAudiences), "quarry-*", "*.cluster.local")
	case 2:
		key, pool = "request.auth.presenter", []string{"web-frontend", "cli", "batch-*", "*-mobile"}
	default:
		key = "request.auth.claims" + m.pick(jwtClaims...)
		if m.chance(0.2) {
			key = "request.auth.claims" + m.pick(jwtOddClaims...)
		}
		pool = []string{"admin", "dev", "acme", "team-*", "*-ops", "*"}
	}
	c := map[string]any{"key": key}
	switch m.r.IntN(4) {
	case 0:
		c["notValues"] = toAny(m.some(pool, 2))
	case 1:
		c["values"] = toAny(m.some(pool, 2))
		c["notValues"] = toAny(m.some(pool, 1))
	default:
		c["values"] = toAny(m.some(pool, 3))
	}
	return c
}

// TestRandomJWTValid checks, without serving anything, that the ninth stream writes only
// what Istio's validation and xdslab's admit (checkValid) for seeds 1..300 (or -parity.seeds
// N), and that most seeds draw some request authentication.
func TestRandomJWTValid(t *testing.T) {
	n := 300
	if *paritySeeds > 0 {
		n = *paritySeeds
	}
	drawn := 0
	for seed := range uint64(n) {
		m := newRandMesh(seed + 1)
		m.generate()
		y, err := m.YAML(seed + 1)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(y), "kind: RequestAuthentication") {
			drawn++
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), y, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("seed-%d", seed+1), func(t *testing.T) { checkValid(t, dir, y) })
	}
	if drawn < n/2 {
		t.Errorf("only %d of %d seeds draw a RequestAuthentication", drawn, n)
	}
}
