//go:build tools

// Package istio pins what kube-istiod.sh builds from this module: istiod's own binary.
package istio

import _ "istio.io/istio/pilot/cmd/pilot-discovery"
