// Package fetest is the test fixture shared by the fake Envoy packages' tests (fakeenvoy,
// fakeenvoy/machine and fakeenvoy/fleet): Envoy resources as a go-control-plane user builds
// them (EDSCluster, CLA, RDSListener, Route, BaseResources, and resources Envoy rejects), a
// sidecar's node (Node), and CPServer, a real go-control-plane ADS server on loopback that
// records every request a client sends. It does not import fakeenvoy, so the tests of the
// packages fakeenvoy imports (fakeenvoy/machine) can use it; Node stands in for
// IdentityTemplate.Node there.
package fetest
