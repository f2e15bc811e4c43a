//go:build tools

// Package tools pins what kube-istiod.sh builds from this module: istiod's own binary.
package tools

import _ "istio.io/istio/pilot/cmd/pilot-discovery"
