package controlplane_test

import (
	"path/filepath"
	"testing"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
)

// sidecarHTTPProxyMesh is a service under a Sidecar with HTTP proxy egress listeners: an
// HTTP_PROXY port (0.0.0.0), one under captureMode NONE (127.0.0.1) and two unix sockets, a
// path and an abstract name (gen/httpproxy.go).
const sidecarHTTPProxyMesh = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: quill, namespace: quire}
spec:
  hosts: [quill.quire.svc.cluster.local]
  addresses: [240.0.131.1]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {name: http-quill, number: 80, protocol: HTTP}
  - {name: grpc-quill, number: 7070, protocol: GRPC}
  - {name: tcp-quill, number: 3128, protocol: TCP}
  endpoints:
  - address: 10.131.1.1
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: scribe, namespace: quire}
spec:
  egress:
  - port: {number: 3128, protocol: HTTP_PROXY, name: proxy}
    hosts: ["./*"]
  - port: {number: 3129, protocol: HTTP_PROXY, name: proxy-local}
    captureMode: NONE
    hosts: ["./*"]
  - port: {number: 0, protocol: HTTP, name: uds-http}
    bind: unix:///var/run/quire/http.sock
    hosts: ["./*"]
  - port: {number: 0, protocol: GRPC-WEB, name: uds-web}
    bind: unix://@quire-proxy
    hosts: ["./*"]
  - hosts: ["./*"]
`

// TestFleetSidecarHTTPProxy: fake Envoys (realistic NACKs) under a Sidecar with HTTP proxy
// egress listeners hold them, the unix socket ones on pipes, beside the catch-all listener's
// VIP listener on the HTTP_PROXY port, and reach a full config without a NACK, over SotW and
// Delta.
func TestFleetSidecarHTTPProxy(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "quire.yaml"), sidecarHTTPProxyMesh)
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	s := controlplanetest.NewServer(t, opts)
	waitSnap(t, s, "the service", func(s *model.Snapshot) bool { return len(s.Endpoints("quill.quire.svc.cluster.local")) == 1 })
	names := []string{"0.0.0.0_3128", "127.0.0.1_3129", "unix:///var/run/quire/http.sock_0", "unix://@quire-proxy_0", "240.0.131.1_3128"}
	held := &heldListeners{names: names, seen: map[string]bool{}}
	runHeldFleet(t, s.GRPCAddr(), fakeenvoy.IdentityTemplate{Namespace: "quire"}, held)
	for _, name := range names {
		for _, g := range []string{"sotw ", "delta "} {
			if !held.has(g + name) {
				t.Errorf("no client holds %q", g+name)
			}
		}
	}
}
