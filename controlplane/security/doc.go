// Package security secures the ADS endpoint (issue 17).
//
// A CA (internal/pki, shared with the fleet's emulated istio-agent) is a self-signed root
// created on first start and kept in a directory, or loaded from PEM files; it signs the server certificate for configured DNS names and IPs, and SPIFFE
// workload certificates for tests and the lab's fleet. CertSource (tls.go) lets the server
// certificate be re-issued without touching established connections. Clients authenticate with
// a client certificate whose URI SAN is spiffe://TRUST_DOMAIN/ns/NS/sa/SA (spiffe.go) or with a
// bearer JWT verified against a JWKS file or an OIDC issuer's keys (jwt.go, oidc.go, go-jose;
// signature, exp, nbf, iss and aud are checked). The Authenticator (authz.go) is a gRPC stream interceptor: it refuses a stream
// without a valid credential with Unauthenticated, and wraps RecvMsg so that a first request
// whose node NAMESPACE metadata differs from the identity's namespace, or whose
// SERVICE_ACCOUNT metadata (when present) differs from the identity's service account, is
// refused with PermissionDenied, as istiod does. Refusals are counted by code and logged once per peer host.
// The verified identity rides on the stream's context (IdentityFromContext) so the ADS server
// can serve that identity's SDS secrets. WorkloadCerts (workload.go) issues one workload
// certificate per identity (for client and server use: serverAuth and clientAuth) and re-issues it at half its TTL (Rotate). OIDC (oidc.go) discovers
// an issuer's keys (/.well-known/openid-configuration → jwks_uri) and refreshes them; the
// verifier's key set is swapped atomically.
package security
