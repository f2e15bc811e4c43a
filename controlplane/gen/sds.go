package gen

import (
	"errors"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// SDS secret names, as Istio's agent serves them: the workload's own certificate and the
// root it trusts.
const (
	SecretDefault = "default"
	SecretRootCA  = "ROOTCA"
)

// SDSMaterial is the PEM a workload's secrets are built from.
type SDSMaterial struct {
	CertChainPEM  []byte // the workload certificate, leaf first
	PrivateKeyPEM []byte
	RootCAPEM     []byte
}

// SDSSecrets builds the "default" (tls_certificate) and "ROOTCA" (validation_context) secrets
// for names (nil: both), in name order. It is pure: the caller issues the certificate. Gateway
// credentials ("kubernetes://NAME") are left out without an error: there is no secret store.
func SDSSecrets(m SDSMaterial, names []string) ([]*tlsv3.Secret, error) {
	if len(m.CertChainPEM) == 0 || len(m.PrivateKeyPEM) == 0 || len(m.RootCAPEM) == 0 {
		return nil, errors.New("sds: certificate chain, private key and root CA are all required")
	}
	want := map[string]bool{SecretDefault: names == nil, SecretRootCA: names == nil}
	var errs []error
	for _, n := range names {
		if strings.Contains(n, "://") {
			// A gateway's credential (kubernetes://NAME): xdslab keeps no Kubernetes secrets, so
			// it answers as istiod does for a secret that does not exist: with nothing.
			continue
		}
		if _, ok := want[n]; !ok {
			errs = append(errs, errors.New("sds: unknown secret "+n+": serve "+SecretDefault+" or "+SecretRootCA))
			continue
		}
		want[n] = true
	}
	inline := func(b []byte) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
	}
	var out []*tlsv3.Secret
	if want[SecretRootCA] {
		out = append(out, &tlsv3.Secret{Name: SecretRootCA, Type: &tlsv3.Secret_ValidationContext{
			ValidationContext: &tlsv3.CertificateValidationContext{TrustedCa: inline(m.RootCAPEM)},
		}})
	}
	if want[SecretDefault] {
		out = append(out, &tlsv3.Secret{Name: SecretDefault, Type: &tlsv3.Secret_TlsCertificate{
			TlsCertificate: &tlsv3.TlsCertificate{CertificateChain: inline(m.CertChainPEM), PrivateKey: inline(m.PrivateKeyPEM)},
		}})
	}
	return out, errors.Join(errs...)
}
