package controlplane_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// sidecarIngressMesh is a service whose two workloads are the fake Envoys below (the fleet's
// first addresses), under a Sidecar with ingress listeners of every kind xdslab generates:
// STATIC clusters to 127.0.0.1, to the workload's IP and to a unix socket, an ORIGINAL_DST one,
// and listeners that bind their own port (captureMode NONE).
const sidecarIngressMesh = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: till, namespace: inbound}
spec:
  hosts: [till.inbound.svc.cluster.local]
  addresses: [240.0.80.1]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {name: http-till, number: 8080, protocol: HTTP, targetPort: 18080}
  - {name: tcp-till, number: 9090, protocol: TCP, targetPort: 19090}
  workloadSelector: {labels: {app: till}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: till-1, namespace: inbound}
spec: {address: 100.64.0.1, labels: {app: till}, serviceAccount: till}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: till-2, namespace: inbound}
spec: {address: 100.64.0.2, labels: {app: till}, serviceAccount: till}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: till-in, namespace: inbound}
spec:
  workloadSelector: {labels: {app: till}}
  inboundConnectionPool: {tcp: {maxConnections: 13}}
  ingress:
  - port: {number: 18080, protocol: HTTP, name: http-in}
    defaultEndpoint: 127.0.0.1:8080
    connectionPool: {http: {http2MaxRequests: 301}}
  - port: {number: 19090, protocol: TCP, name: tcp-in}
    defaultEndpoint: 0.0.0.0:9090
  - port: {number: 18081, protocol: GRPC, name: grpc-in}
    defaultEndpoint: unix:///var/run/till/grpc.sock
  - port: {number: 18082, protocol: HTTP, name: http-bound}
    defaultEndpoint: 127.0.0.1:8082
    captureMode: NONE
  - port: {number: 18083, protocol: TCP, name: tcp-bound}
    bind: 0.0.0.0
    captureMode: NONE
  - port: {number: 18085, name: auto-in}
`

// TestFleetSidecarIngress: fake Envoys whose Sidecar has ingress listeners warm the inbound
// clusters and listeners xdslab generates for it and reach a full config without a NACK, over
// SotW and Delta.
func TestFleetSidecarIngress(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "till.yaml"), sidecarIngressMesh)
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	s := controlplanetest.NewServer(t, opts)
	waitSnap(t, s, "the workloads", func(s *model.Snapshot) bool { return len(s.Endpoints("till.inbound.svc.cluster.local")) == 2 })
	id := fakeenvoy.IdentityTemplate{Namespace: "inbound", Labels: map[string]string{"app": "till"}}
	held := &heldListeners{names: []string{"100.64.0.1_18082", "100.64.0.2_18082", "0.0.0.0_18083"}, static: "inbound|18080||", seen: map[string]bool{}}
	runHeldFleet(t, s.GRPCAddr(), id, held)
	// The Sidecar applied: each client holds its own bound listener and the STATIC cluster.
	for _, want := range []string{"sotw 100.64.0.1_18082", "delta 100.64.0.2_18082", "sotw 0.0.0.0_18083", "delta 0.0.0.0_18083", "sotw static", "delta static"} {
		if !held.has(want) {
			t.Errorf("no client holds %q", want)
		}
	}
}

// sidecarEgressBindMesh is a service under a Sidecar whose HTTP egress ports bind addresses;
// its DestinationRule tunnels its TCP port.
const sidecarEgressBindMesh = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: kiln, namespace: egressbind}
spec:
  hosts: [kiln.egressbind.svc.cluster.local]
  addresses: [240.0.81.1]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {name: http-kiln, number: 8080, protocol: HTTP}
  - {name: http-admin, number: 9080, protocol: HTTP}
  - {name: tcp-kiln, number: 5000, protocol: TCP}
  endpoints:
  - address: 10.65.1.1
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: kiln, namespace: egressbind}
spec:
  host: kiln.egressbind.svc.cluster.local
  trafficPolicy:
    tunnel: {protocol: CONNECT, targetHost: kiln-exit.example.org, targetPort: 8443}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: pinned, namespace: egressbind}
spec:
  egress:
  - port: {number: 8080, protocol: HTTP, name: http-pinned}
    bind: 127.0.0.2
    hosts: ["./*"]
  - port: {number: 9080, protocol: HTTP, name: http-local}
    captureMode: NONE
    hosts: ["./*"]
  - port: {number: 5000, protocol: TCP, name: tcp-pinned}
    bind: 127.0.0.2
    hosts: ["./*"]
  - hosts: ["./*"]
`

// TestFleetSidecarEgressBind: fake Envoys under a Sidecar whose HTTP egress ports bind an
// address (127.0.0.2_8080, TCP 127.0.0.2_5000) or their port (127.0.0.1_9080) hold those
// listeners, whose tcp_proxy filters on 240.0.81.1_5000 and 127.0.0.2_5000 carry the
// DestinationRule's tunneling_config (decoded and compared), and reach a full config without
// a NACK, over SotW and Delta.
func TestFleetSidecarEgressBind(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "kiln.yaml"), sidecarEgressBindMesh)
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	s := controlplanetest.NewServer(t, opts)
	waitSnap(t, s, "the service", func(s *model.Snapshot) bool { return len(s.Endpoints("kiln.egressbind.svc.cluster.local")) == 1 })
	held := &heldListeners{names: []string{"127.0.0.2_8080", "127.0.0.1_9080", "240.0.81.1_5000", "127.0.0.2_5000"}, seen: map[string]bool{},
		tunnel: map[string]string{"240.0.81.1_5000": "kiln-exit.example.org:8443", "127.0.0.2_5000": "kiln-exit.example.org:8443"}}
	runHeldFleet(t, s.GRPCAddr(), fakeenvoy.IdentityTemplate{Namespace: "egressbind"}, held)
	for _, want := range []string{"sotw 127.0.0.2_8080", "delta 127.0.0.2_8080", "sotw 127.0.0.1_9080", "delta 127.0.0.1_9080", "sotw 240.0.81.1_5000", "delta 240.0.81.1_5000", "sotw 127.0.0.2_5000", "delta 127.0.0.2_5000",
		"sotw tunnel 240.0.81.1_5000", "delta tunnel 240.0.81.1_5000", "sotw tunnel 127.0.0.2_5000", "delta tunnel 127.0.0.2_5000"} {
		if !held.has(want) {
			t.Errorf("no client holds %q", want)
		}
	}
}

// runHeldFleet runs one SotW and one Delta fake Envoy of identity id against target, with
// hooks held, until both hold a full config, and fails on any NACK.
func runHeldFleet(t *testing.T, target string, id fakeenvoy.IdentityTemplate, held *heldListeners) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	sotw := fleet.Group{Name: "sotw", Count: 1, Identity: id, Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}
	delta := sotw
	delta.Name, delta.Client.Delta = "delta", true
	f, err := fleet.New(fleet.Config{Target: target, Groups: []fleet.Group{sotw, delta}, Hooks: held})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	waitFull(t, f, 2)
	if st := f.Observer().Stats(); st.Total.Nacks != 0 {
		t.Errorf("NACKs = %d, want none", st.Total.Nacks)
	}
}

// heldListeners records, per fleet group ("GROUP NAME"), which of names its clients hold as
// listeners, and ("GROUP static") whether they hold cluster static as a STATIC cluster.
type heldListeners struct {
	probe.NopHooks
	names  []string
	static string
	// tunnel maps a listener to the tunneling_config hostname every tcp_proxy of it must
	// carry ("GROUP tunnel NAME" is seen when it does).
	tunnel map[string]string
	mu     sync.Mutex
	seen   map[string]bool
}

func (h *heldListeners) Applied(c probe.ClientInfo, _ probe.ResponseInfo, v probe.View) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range h.names {
		if v.Resource("type.googleapis.com/envoy.config.listener.v3.Listener", name) != nil {
			h.seen[c.Group+" "+name] = true
		}
	}
	for name, want := range h.tunnel {
		if l, ok := v.Resource("type.googleapis.com/envoy.config.listener.v3.Listener", name).(*listenerv3.Listener); ok && tunnels(l, want) {
			h.seen[c.Group+" tunnel "+name] = true
		}
	}
	if h.static == "" {
		return
	}
	if cl, ok := v.Resource("type.googleapis.com/envoy.config.cluster.v3.Cluster", h.static).(*clusterv3.Cluster); ok && cl.GetType() == clusterv3.Cluster_STATIC {
		h.seen[c.Group+" static"] = true
	}
}

func (h *heldListeners) has(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[s]
}

// tunnels reports whether l has tcp_proxy filters and each tunnels to hostname.
func tunnels(l *listenerv3.Listener, hostname string) bool {
	n := 0
	for _, fc := range append(slices.Clone(l.GetFilterChains()), l.GetDefaultFilterChain()) {
		for _, f := range fc.GetFilters() {
			tp := &tcpproxyv3.TcpProxy{}
			if f.GetTypedConfig().MessageIs(tp) {
				if err := f.GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetTunnelingConfig().GetHostname() != hostname {
					return false
				}
				n++
			}
		}
	}
	return n > 0
}
