// Package security holds the secure-ADS pieces of the control plane (issue 17). So far it holds
// the SPIFFE identity parser: a workload identity spiffe://TRUST_DOMAIN/ns/NS/sa/SA is what a
// client certificate names, and its namespace is what authorization compares with the node's
// NAMESPACE metadata. The CA, TLS, JWT and the gRPC interceptors are not built yet.
package security
