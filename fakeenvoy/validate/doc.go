// Package validate holds what the fake Envoy clients (package fakeenvoy) reject in a decoded
// xDS resource, as pure functions of the resource: Envoy's checks (Deep: the PGV ValidateAll
// rules, recursively inside every Any; ListenerAddresses, SameSockets and DuplicateFilterChain
// for listeners) and
// grpc-go's xDS client's (GRPC, with GRPCInUse, RouteClusters and APIListener for what such a
// client reads of what it accepts; see grpc.go). The clients' state machine calls them when
// it decodes a resource (policy.Nack.Realistic, ClientConfig.GRPC) and applies a response. A
// leaf: it knows go-control-plane's protos only.
package validate
