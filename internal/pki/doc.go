// Package pki is the lab's certificate authority: a self-signed ECDSA root, on disk (the control
// plane's --ca-dir) or in memory (the fleet's emulated istio-agent), that issues server and
// SPIFFE workload certificates. The control plane's security package and the fake Envoys both
// use it; it depends on the standard library only.
package pki
