package security

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwtAlgorithms are the signature algorithms a token may use; "none" and HMAC are never
// accepted, so a public JWKS cannot be turned into a signing secret.
var jwtAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.PS256, jose.EdDSA}

// clockLeeway tolerates clock skew between the token issuer and the control plane.
const clockLeeway = time.Minute

// JWTConfig says which tokens are accepted.
type JWTConfig struct {
	// Issuer must equal the token's iss claim.
	Issuer string
	// Audience must be one of the token's aud values.
	Audience string
	// TrustDomain names identities built from Kubernetes-style subjects.
	TrustDomain string
}

// JWTVerifier verifies bearer tokens against a JWKS. It is safe for concurrent use; the key
// set can be replaced (SetKeys, an OIDC issuer's refreshed keys) under running verifications.
type JWTVerifier struct {
	keys atomic.Pointer[jose.JSONWebKeySet]
	cfg  JWTConfig
}

// SetKeys replaces the key set with the JWKS document b (the same checks as ParseJWKS).
func (v *JWTVerifier) SetKeys(b []byte, name string) error {
	set, err := parseKeySet(b, name)
	if err != nil {
		return err
	}
	v.keys.Store(set)
	return nil
}

// LoadJWKS reads a JWKS JSON file.
func LoadJWKS(path string, cfg JWTConfig) (*JWTVerifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jwks file: %w", err)
	}
	return ParseJWKS(b, path, cfg)
}

// ParseJWKS parses a JWKS document; name is used in errors.
func ParseJWKS(b []byte, name string, cfg JWTConfig) (*JWTVerifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, fmt.Errorf("%s: JWT issuer and audience must both be set", name)
	}
	set, err := parseKeySet(b, name)
	if err != nil {
		return nil, err
	}
	v := &JWTVerifier{cfg: cfg}
	v.keys.Store(set)
	return v, nil
}

// parseKeySet parses a JWKS of public keys.
func parseKeySet(b []byte, name string) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + strings.Count(string(b[:min(int(se.Offset), len(b))]), "\n")
			return nil, fmt.Errorf("%s:%d: invalid JWKS JSON: %v; want {\"keys\":[...]}", name, line, err)
		}
		return nil, fmt.Errorf("%s: invalid JWKS: %v; want {\"keys\":[...]} of public keys", name, err)
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("%s: JWKS has no keys; add at least one public key under \"keys\"", name)
	}
	for i, k := range set.Keys {
		if !k.IsPublic() {
			return nil, fmt.Errorf("%s: key %d (kid %q) is not a public key; publish only public keys", name, i, k.KeyID)
		}
	}
	return &set, nil
}

// subjectClaims adds nothing to the registered claims; the subject names the workload.
type subjectClaims = jwt.Claims

// Verify checks the token's signature, expiry, issuer and audience at now and returns the
// identity its subject names: either a SPIFFE id or system:serviceaccount:NS:SA.
func (v *JWTVerifier) Verify(token string, now time.Time) (Identity, error) {
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil {
		return Identity{}, fmt.Errorf("jwt: %w", err)
	}
	var c subjectClaims
	if err := tok.Claims(*v.keys.Load(), &c); err != nil {
		return Identity{}, fmt.Errorf("jwt: %w", err)
	}
	if c.Expiry == nil {
		return Identity{}, errors.New("jwt: no exp claim; tokens without expiry are refused")
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: now}, clockLeeway); err != nil {
		return Identity{}, fmt.Errorf("jwt: %w", err)
	}
	return v.subjectIdentity(c.Subject)
}

func (v *JWTVerifier) subjectIdentity(sub string) (Identity, error) {
	if strings.HasPrefix(sub, "spiffe://") {
		return ParseSPIFFE(sub)
	}
	parts := strings.Split(sub, ":")
	if len(parts) == 4 && parts[0] == "system" && parts[1] == "serviceaccount" && parts[2] != "" && parts[3] != "" {
		return Identity{TrustDomain: v.cfg.TrustDomain, Namespace: parts[2], ServiceAccount: parts[3]}, nil
	}
	return Identity{}, fmt.Errorf("jwt: subject %q is neither a SPIFFE id nor system:serviceaccount:NS:SA", sub)
}
