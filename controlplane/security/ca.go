package security

import "github.com/xdslab/xdslab/internal/pki"

// The CA lives in internal/pki, shared with the fleet's emulated istio-agent.
type (
	// CA signs the control plane's server certificate and workload certificates.
	CA = pki.CA
	// Identity is a workload identity in Istio's SPIFFE form.
	Identity = pki.Identity
)

// LoadOrCreateCA and LoadCA: see internal/pki.
var (
	LoadOrCreateCA = pki.LoadOrCreateCA
	LoadCA         = pki.LoadCA
)

const caKeyFile = pki.KeyFile
