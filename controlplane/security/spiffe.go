package security

import (
	"fmt"
	"strings"
)

// ParseSPIFFE parses spiffe://TRUST_DOMAIN/ns/NS/sa/SA. Every part must be non-empty and free
// of '/', so one id has exactly one reading; the trust domain is compared case-insensitively by
// SPIFFE, so it is returned lower-cased.
func ParseSPIFFE(s string) (Identity, error) {
	rest, ok := strings.CutPrefix(s, "spiffe://")
	if !ok {
		return Identity{}, fmt.Errorf("spiffe id %q: want spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT", s)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 5 || parts[1] != "ns" || parts[3] != "sa" {
		return Identity{}, fmt.Errorf("spiffe id %q: path must be /ns/NAMESPACE/sa/SERVICE_ACCOUNT", s)
	}
	for i, name := range map[int]string{0: "trust domain", 2: "namespace", 4: "service account"} {
		if parts[i] == "" {
			return Identity{}, fmt.Errorf("spiffe id %q: empty %s", s, name)
		}
	}
	return Identity{TrustDomain: strings.ToLower(parts[0]), Namespace: parts[2], ServiceAccount: parts[4]}, nil
}
