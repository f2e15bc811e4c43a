package parity_test

import (
	"context"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/hack/istio/parity"
)

// grpcProxies are the proxyless gRPC clients the corpus is compared from: grpc-go clients
// bootstrapped by istio-agent, whose node is the sidecar's (id, metadata) with GENERATOR
// "grpc".
var grpcProxies = []struct {
	name  string
	proxy parity.Proxy
}{
	// A gRPC workload of web.app: its own namespace's short names resolve.
	{"grpc-web", parity.Proxy{Type: "sidecar", IP: "10.1.0.1", Pod: "web-1", Namespace: "app", Labels: map[string]string{"app": "web", "version": "v1"}, ServiceAccount: "web", Generator: "grpc"}},
	// A gRPC client of no service in another namespace, with a locality (ranked assignments).
	{"grpc-other", parity.Proxy{Type: "sidecar", IP: "10.2.9.9", Pod: "client", Namespace: "other", Labels: map[string]string{"app": "client"}, ServiceAccount: "client", Locality: "region-b/zone-1", Generator: "grpc"}},
	// A gRPC client under a Sidecar resource (its scope).
	{"grpc-scoped", parity.Proxy{Type: "sidecar", IP: "10.3.9.9", Pod: "client", Namespace: "scoped", Labels: map[string]string{"app": "client"}, ServiceAccount: "client", Generator: "grpc"}},
	// A gRPC client whose Sidecar's port-80 listener imports VirtualServices naming services it
	// does not hold (grpcvsonly.yaml).
	{"grpc-vsonly", parity.Proxy{Type: "sidecar", IP: "10.4.9.9", Pod: "client", Namespace: "vsonly", Labels: map[string]string{"app": "client"}, ServiceAccount: "client", Generator: "grpc"}},
	// A gRPC client under a Sidecar with HTTP_PROXY ports (httpproxy.yaml).
	{"grpc-quire", parity.Proxy{Type: "sidecar", IP: "10.131.9.3", Pod: "scribe-3", Namespace: "quire", Labels: map[string]string{"app": "scribe"}, ServiceAccount: "scribe", Generator: "grpc"}},
	// gRPC servers (grpcserver.yaml): STRICT with a DISABLE port and AuthorizationPolicies,
	// PERMISSIVE without and with the tlsMode label (on grpc-perm-istio's WorkloadEntry, not on
	// its node: istiod reads the workload's labels), DISABLE.
	{"grpc-strict", parity.Proxy{Type: "sidecar", IP: "10.62.0.1", Pod: "greeter-1", Namespace: "rpc-strict", Labels: map[string]string{"app": "greeter"}, ServiceAccount: "greeter", Generator: "grpc"}},
	{"grpc-perm", parity.Proxy{Type: "sidecar", IP: "10.62.1.1", Pod: "echo-1", Namespace: "rpc-perm", Labels: map[string]string{"app": "echo"}, ServiceAccount: "echo", Generator: "grpc"}},
	{"grpc-perm-istio", parity.Proxy{Type: "sidecar", IP: "10.62.1.2", Pod: "echo-2", Namespace: "rpc-perm", Labels: map[string]string{"app": "echo"}, ServiceAccount: "echo", Generator: "grpc"}},
	{"grpc-plain", parity.Proxy{Type: "sidecar", IP: "10.62.2.1", Pod: "plain-1", Namespace: "rpc-plain", Labels: map[string]string{"app": "plain"}, ServiceAccount: "plain", Generator: "grpc"}},
	// gRPC servers whose node's labels are not their workload's (workloadlabels.yaml): shelf-1
	// is tier back, not front; till's inline endpoint has no labels, not the node's tlsMode.
	{"grpc-relabel-shelf", parity.Proxy{Type: "sidecar", IP: "10.63.0.1", Pod: "shelf-1", Namespace: "relabel", Labels: map[string]string{"app": "shelf", "tier": "front"}, ServiceAccount: "shelf", Generator: "grpc"}},
	{"grpc-relabel-till", parity.Proxy{Type: "sidecar", IP: "10.63.0.2", Pod: "till-1", Namespace: "relabel", Labels: map[string]string{"app": "till", "security.istio.io/tlsMode": "istio"}, ServiceAccount: "till", Generator: "grpc"}},
}

// TestParityGRPCWithIstio serves testdata/mesh from Istio's DiscoveryServer (its proxyless gRPC
// generator, grpcgen) and from xdslab's control plane, and fetches from both, as each of
// grpcProxies, what grpc-go fetches when it dials every "HOST:PORT" either control plane offers
// the client (wildcard LDS), and the short names "NAME.NS:PORT" and, in the client's namespace,
// "NAME:PORT" of those: the API listeners, their route configurations, the clusters those
// routes name and the clusters' assignments. It fails on any semantic difference (ProjectGRPC;
// docs/parity.md, "Proxyless gRPC"). PARITY_DIR serves another directory instead.
func TestParityGRPCWithIstio(t *testing.T) {
	dir := "testdata/mesh"
	if d := os.Getenv("PARITY_DIR"); d != "" {
		dir = d // another corpus (a random seed's mesh.yaml directory), for probing by hand
	}
	ctx, istioAddr, oursAddr := serveBoth(t, dir)
	applied := map[int]bool{}
	for _, p := range grpcProxies {
		t.Run(p.name, func(t *testing.T) {
			ds, skip := compareGRPC(t, ctx, istioAddr, oursAddr, p.proxy, applied)
			if skip {
				if dir != "testdata/mesh" {
					t.Skip("neither control plane offers this client a listener")
				}
				t.Fatal("neither control plane offers a listener")
			}
			if len(ds) > 0 {
				t.Errorf("%d semantic differences (- only Istio, + only xdslab):\n%s", len(ds), parity.Format(ds))
			}
		})
	}

	for i, d := range grpcDivergences {
		if !applied[i] && !t.Failed() && dir == "testdata/mesh" {
			t.Errorf("gRPC divergence %q changed no Istio line: remove it from grpcDivergences and docs/parity.md", d.why)
		}
	}
}

// compareGRPC fetches from both control planes, as gRPC client p, what grpc-go fetches when it
// dials every "HOST:PORT" either offers the client (wildcard LDS) and the short names of those,
// and the server listeners of p's workload (grpcServerNames),
// projects both (ProjectGRPC), rewrites Istio's lines by grpcDivergences (marking in applied
// the divergences that changed a line) and returns the differences; skip reports that
// neither control plane offers the client a listener.
func compareGRPC(t *testing.T, ctx context.Context, istioAddr, oursAddr string, p parity.Proxy, applied map[int]bool) (ds []parity.Delta, skip bool) {
	t.Helper()
	names := map[string]bool{}
	for _, addr := range []string{istioAddr, oursAddr} {
		d, err := parity.FetchGRPC(ctx, addr, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		for n := range d.Listeners {
			names[n] = true
			for _, s := range shortGRPCNames(n, p.Namespace) {
				names[s] = true
			}
		}
	}
	if len(names) == 0 {
		return nil, true
	}
	for _, n := range grpcServerNames(t, ctx, istioAddr, oursAddr, p) {
		names[n] = true
	}
	listeners := slices.Sorted(maps.Keys(names))
	want, err := parity.FetchGRPC(ctx, istioAddr, p, listeners)
	if err != nil {
		t.Fatalf("Istio: %v", err)
	}
	got, err := parity.FetchGRPC(ctx, oursAddr, p, listeners)
	if err != nil {
		t.Fatalf("xdslab: %v", err)
	}
	wv, gv := parity.ProjectGRPC(want), parity.ProjectGRPC(got)
	if *dump != "" {
		for _, side := range []struct {
			name string
			v    parity.View
		}{{"istio", wv}, {"xdslab", gv}} {
			for k, lines := range side.v {
				if strings.Contains(k, *dump) {
					t.Logf("%s %s:\n  %s", side.name, k, strings.Join(lines, "\n  "))
				}
			}
		}
	}
	t.Logf("%d listeners asked for; Istio answers %d listeners, %d routes, %d clusters", len(listeners), len(want.Listeners), len(want.Routes), len(want.Clusters))
	for k, lines := range wv {
		for i, d := range grpcDivergences {
			if n, ok := d.rewrite(k, lines, gv[k]); ok {
				lines = n
				applied[i] = true
			}
		}
		wv[k] = lines
	}
	return parity.Diff(wv, gv), false
}

// grpcDivergence is a difference from istiod's proxyless gRPC resources that xdslab keeps on
// purpose or has not closed yet (docs/parity.md, "Proxyless gRPC"): rewrite turns Istio's lines
// of resource key into what xdslab generates instead, given xdslab's lines, and reports whether
// it changed any, so everything else is still compared. A divergence that changes nothing in a
// run fails the test, so the list stays true.
type grpcDivergence struct {
	why     string
	rewrite func(key string, istio, xdslab []string) ([]string, bool)
}

var grpcDivergences = []grpcDivergence{
	{
		// istiod's grpcgen gives every service an EDS cluster, and its EDS answers nothing for a
		// DNS service: grpc-go cannot reach it. xdslab sends LOGICAL_DNS (the endpoint's
		// address, or the service's host name), which grpc-go resolves.
		why: "DNS services: LOGICAL_DNS, not an EDS cluster without endpoints",
		rewrite: func(key string, istio, xdslab []string) ([]string, bool) {
			if !strings.HasPrefix(key, "cluster ") || !slices.Contains(istio, "type: EDS") || !slices.Contains(istio, "endpoints: none") || !slices.Contains(xdslab, "type: LOGICAL_DNS") {
				return istio, false
			}
			out := slices.DeleteFunc(slices.Clone(istio), func(l string) bool {
				return l == "type: EDS" || l == "endpoints: none" || strings.HasPrefix(l, "eds_cluster_config: ")
			})
			for _, l := range xdslab {
				if l == "type: LOGICAL_DNS" || strings.HasPrefix(l, "endpoint ") {
					out = append(out, l)
				}
			}
			return out, true
		},
	},
	{
		// grpc-go has no Maglev and NACKs the CDS response that holds a MAGLEV cluster.
		why: "maglev is RING_HASH with grpc-go's defaults",
		rewrite: func(_ string, istio, _ []string) ([]string, bool) {
			if !slices.Contains(istio, "lb_policy: MAGLEV") {
				return istio, false
			}
			out := slices.DeleteFunc(slices.Clone(istio), func(l string) bool { return strings.HasPrefix(l, "maglev_lb_config: ") })
			out[slices.Index(out, "lb_policy: MAGLEV")] = "lb_policy: RING_HASH"
			return out, true
		},
	},
	{
		// grpc-go has no CORS filter: a route's per-filter config for it makes grpc-go NACK the
		// route configuration.
		why: "no CORS per-route config",
		rewrite: func(key string, istio, _ []string) ([]string, bool) {
			changed := false
			out := slices.Clone(istio)
			for i, l := range out {
				if n := removeField(l, ` typed_per_filter_config:{key:"envoy.filters.http.cors"`); n != l {
					out[i], changed = n, true
				}
			}
			return out, changed
		},
	},
}

// removeField removes from the one-line text l the field that starts at prefix (which holds the
// field's opening brace), up to its matching closing brace.
func removeField(l, prefix string) string {
	i := strings.Index(l, prefix)
	if i < 0 {
		return l
	}
	depth := 0
	for j := i + strings.Index(prefix, "{"); j < len(l); j++ {
		switch l[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return l[:i] + l[j+1:]
			}
		}
	}
	return l
}

// shortGRPCNames are the shorter targets a gRPC client in namespace ns may dial for the
// listener "HOST:PORT" of a Kubernetes-style host NAME.NS.svc.cluster.local: "NAME.NS:PORT",
// and "NAME:PORT" when NS is ns.
func shortGRPCNames(listener, ns string) []string {
	host, port, err := net.SplitHostPort(listener)
	if err != nil {
		return nil
	}
	rest, ok := strings.CutSuffix(host, ".svc.cluster.local")
	if !ok {
		return nil
	}
	name, hostNS, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(hostNS, ".") {
		return nil
	}
	out := []string{net.JoinHostPort(name+"."+hostNS, port)}
	if hostNS == ns {
		out = append(out, net.JoinHostPort(name, port))
	}
	return out
}

// grpcServerNames are the server listener names a grpc-go xDS server of p's workload asks for
// when it listens on a port the workload serves (either control plane's inbound ports, see
// parity.InboundPorts), on 0.0.0.0 and on p's IP, and for a port it does not serve (1), which
// neither answers.
func grpcServerNames(t *testing.T, ctx context.Context, istioAddr, oursAddr string, p parity.Proxy) []string {
	t.Helper()
	ports := map[uint32]bool{1: true}
	for _, addr := range []string{istioAddr, oursAddr} {
		ps, err := parity.InboundPorts(ctx, addr, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ps {
			ports[n] = true
		}
	}
	var out []string
	for n := range ports {
		for _, host := range []string{"0.0.0.0", p.IP} {
			out = append(out, gen.GRPCServerListenerPrefix+net.JoinHostPort(host, strconv.FormatUint(uint64(n), 10)))
		}
	}
	return out
}
