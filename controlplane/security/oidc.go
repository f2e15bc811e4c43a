package security

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultJWKSRefresh is how often an OIDC issuer's keys are fetched again (istiod refreshes
// its JWKS every 20 minutes; a shorter period picks up a rotated signing key sooner).
const DefaultJWKSRefresh = 5 * time.Minute

// maxOIDCDocument bounds the discovery document and the JWKS read from an issuer.
const maxOIDCDocument = 1 << 20

// OIDC finds and refreshes an OIDC issuer's signing keys: ISSUER/.well-known/openid-configuration
// names jwks_uri (its issuer must be ISSUER, as OpenID Connect Discovery 1.0 §4.3 requires),
// and the JWKS there verifies the tokens.
type OIDC struct {
	Issuer string
	Client *http.Client // nil: http.DefaultClient's transport with a 10s timeout
}

// CheckIssuerURL reports an issuer that cannot be discovered: it must be an https URL, or an
// http one on a loopback host (tests, a local issuer), without query or fragment.
func CheckIssuerURL(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil {
		return fmt.Errorf("jwt issuer %q: %v", issuer, err)
	}
	loopback := u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"
	switch {
	case u.Scheme != "https" && (u.Scheme != "http" || !loopback):
		return fmt.Errorf("jwt issuer %q: OIDC discovery needs an https:// issuer URL (http only on a loopback host), or pass --jwks-file", issuer)
	case u.Host == "":
		return fmt.Errorf("jwt issuer %q: no host", issuer)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("jwt issuer %q: an issuer URL has no query or fragment", issuer)
	}
	return nil
}

func (o OIDC) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (o OIDC) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOIDCDocument+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if len(b) > maxOIDCDocument {
		return nil, fmt.Errorf("GET %s: document larger than %d bytes", u, maxOIDCDocument)
	}
	return b, nil
}

// Keys fetches the issuer's discovery document and then its JWKS.
func (o OIDC) Keys(ctx context.Context) (jwks []byte, jwksURI string, err error) {
	if err := CheckIssuerURL(o.Issuer); err != nil {
		return nil, "", err
	}
	disc := strings.TrimSuffix(o.Issuer, "/") + "/.well-known/openid-configuration"
	b, err := o.get(ctx, disc)
	if err != nil {
		return nil, "", fmt.Errorf("oidc discovery: %w", err)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, "", fmt.Errorf("oidc discovery %s: %v", disc, err)
	}
	if doc.Issuer != o.Issuer {
		return nil, "", fmt.Errorf("oidc discovery %s: issuer %q is not %q; the issuer URL must match exactly", disc, doc.Issuer, o.Issuer)
	}
	u, err := url.Parse(doc.JWKSURI)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, "", fmt.Errorf("oidc discovery %s: jwks_uri %q is not an http(s) URL", disc, doc.JWKSURI)
	}
	if jwks, err = o.get(ctx, doc.JWKSURI); err != nil {
		return nil, "", fmt.Errorf("oidc jwks: %w", err)
	}
	return jwks, doc.JWKSURI, nil
}

// NewVerifier discovers the issuer's keys and returns a verifier for cfg (cfg.Issuer is
// o.Issuer).
func (o OIDC) NewVerifier(ctx context.Context, cfg JWTConfig) (*JWTVerifier, error) {
	if cfg.Issuer != o.Issuer {
		return nil, errors.New("oidc: verifier issuer differs from the discovered issuer")
	}
	jwks, uri, err := o.Keys(ctx)
	if err != nil {
		return nil, err
	}
	return ParseJWKS(jwks, uri, cfg)
}

// Refresh fetches the issuer's keys into v; a failure keeps the keys v has.
func (o OIDC) Refresh(ctx context.Context, v *JWTVerifier) error {
	jwks, uri, err := o.Keys(ctx)
	if err != nil {
		return err
	}
	return v.SetKeys(jwks, uri)
}

// RefreshLoop refreshes v every period until ctx is done, logging failures (the old keys stay).
func (o OIDC) RefreshLoop(ctx context.Context, v *JWTVerifier, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := o.Refresh(ctx, v); err != nil && ctx.Err() == nil {
				log.Warn("refreshing the OIDC issuer's keys failed; keeping the previous ones", "issuer", o.Issuer, "error", err)
			}
		}
	}
}
