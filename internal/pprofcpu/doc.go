// Package pprofcpu reads Go CPU profiles (runtime/pprof's gzipped profile.proto) without the
// pprof tooling: ByLabel splits a profile's CPU time by the value of one label, which is how a
// run (bench/collect) and the control plane's benchmarks (controlplane/xds) tell the control plane's
// CPU from the harness's when both share a process.
package pprofcpu
