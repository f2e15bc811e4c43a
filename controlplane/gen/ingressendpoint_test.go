package gen

import "testing"

// TestIngressEndpointPort: a Sidecar ingress defaultEndpoint's port is read as istiod reads it
// (strconv.Atoi: a sign is allowed), so what validate admits is what the inbound cluster sends to.
func TestIngressEndpointPort(t *testing.T) {
	p := sidecarProxy("10.92.0.1", "ie")
	for _, tc := range []struct {
		def  string
		port uint32
	}{{"127.0.0.1:8080", 8080}, {"127.0.0.1:+8080", 8080}, {"127.0.0.1:x", 0}, {"127.0.0.1:70000", 0}} {
		if _, port := ingressEndpoint(tc.def, p); port != tc.port {
			t.Errorf("%q: port %d, want %d", tc.def, port, tc.port)
		}
	}
}
