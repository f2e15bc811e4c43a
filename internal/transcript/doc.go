// Package transcript runs transcript tests: text files that script a pure state machine input
// by input and list, after each input, the effects it must have, exactly and in order (in the
// spirit of etcd-io/raft's interaction tests). A file holds cases, each started by a line
// "=== NAME [OPTIONS]"; blank lines and lines starting with # are comments; an effect line
// starts with one of the format's effect prefixes; every other line is an input. With update
// set, the effect lines are rewritten from what the machine does (review the diff like code).
//
// It serves the tests of the cores that speak xDS: the control plane's ADS session
// (controlplane/xds, testdata/session) and the fake Envoy's machine (fakeenvoy/machine,
// testdata). Each brings its own inputs and effects; this package only reads files,
// compares and rewrites.
package transcript
