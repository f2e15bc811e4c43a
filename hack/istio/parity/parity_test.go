package parity_test

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"istio.io/istio/pkg/log"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/hack/istio/istiodlab"
	"github.com/xdslab/xdslab/hack/istio/parity"
)

func TestMain(m *testing.M) {
	o := log.DefaultOptions()
	o.SetDefaultOutputLevel(log.OverrideScopeName, log.ErrorLevel)
	if err := log.Configure(o); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

var dump = flag.String("dump", "", "log both sides' view of every resource whose key contains this")

// proxies are the points of view the corpus is compared from.
var proxies = []struct {
	name  string
	proxy parity.Proxy
}{
	// A workload of web.app (WorkloadEntry web-1): outbound, and inbound for its own ports.
	{"sidecar-web", parity.Proxy{Type: "sidecar", IP: "10.1.0.1", Pod: "web-1", Namespace: "app", Labels: map[string]string{"app": "web", "version": "v1"}, ServiceAccount: "web"}},
	// A sidecar of no service in another namespace (exportTo, no inbound).
	// Its locality is the one its node reports (no workload in the registry, no topology label).
	{"sidecar-other", parity.Proxy{Type: "sidecar", IP: "10.2.9.9", Pod: "client", Namespace: "other", Labels: map[string]string{"app": "client"}, ServiceAccount: "client", Locality: "region-b/zone-1"}},
	// A sidecar of no service in a namespace whose PeerAuthentication is DISABLE: its
	// catch-all inbound chains differ from sidecar-other's (STRICT) although both see the same
	// mesh, so the two must not share cached listener bytes.
	// Its locality comes from its topology labels, over the one its node reports.
	{"sidecar-plain", parity.Proxy{Type: "sidecar", IP: "10.4.9.9", Pod: "client", Namespace: "plain", Labels: map[string]string{"app": "client", "topology.kubernetes.io/region": "region-c", "topology.kubernetes.io/zone": "zone-1"}, ServiceAccount: "client", Locality: "region-b/zone-1"}},
	// A sidecar under a Sidecar resource.
	{"sidecar-scoped", parity.Proxy{Type: "sidecar", IP: "10.3.9.9", Pod: "client", Namespace: "scoped", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	// A sidecar under a Sidecar whose egress listeners import different services and
	// VirtualServices on one port (sidecarports.yaml).
	{"sidecar-split", parity.Proxy{Type: "sidecar", IP: "10.5.9.9", Pod: "client", Namespace: "split", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	// Sidecars under a Sidecar's outboundTrafficPolicy (outboundpolicy.yaml): REGISTRY_ONLY,
	// and ALLOW_ANY with an egressProxy.
	{"sidecar-locked", parity.Proxy{Type: "sidecar", IP: "10.6.9.9", Pod: "client", Namespace: "locked", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	{"sidecar-egressproxy", parity.Proxy{Type: "sidecar", IP: "10.7.9.9", Pod: "client", Namespace: "egressed", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	// A workload of shelf.relabel whose node's labels (tier front) are not its WorkloadEntry's
	// (tier back): istiod selects by the WorkloadEntry's (workloadlabels.yaml).
	{"sidecar-relabel", parity.Proxy{Type: "sidecar", IP: "10.63.0.1", Pod: "shelf-1", Namespace: "relabel", Labels: map[string]string{"app": "shelf", "tier": "front"}, ServiceAccount: "shelf"}},
	// A workload of till.inbound under a Sidecar with ingress listeners (sidecaringress.yaml).
	{"sidecar-inbound", parity.Proxy{Type: "sidecar", IP: "10.64.0.1", Pod: "till-1", Namespace: "inbound", Labels: map[string]string{"app": "till"}, ServiceAccount: "till"}},
	// A sidecar of no service under a Sidecar whose egress listeners bind addresses (egressbind.yaml).
	{"sidecar-egressbind", parity.Proxy{Type: "sidecar", IP: "10.65.9.9", Pod: "client", Namespace: "egressbind", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	// A VM whose node names no namespace (no NAMESPACE metadata, a DNS domain without one) and
	// whose INSTANCE_IPS is not the node id's address (nonamespace.yaml).
	{"sidecar-nons", parity.Proxy{Type: "sidecar", IP: "10.68.0.1", NodeIP: "10.68.9.250", Pod: "reader-vm", NoNamespace: true, Domain: "localdomain", Labels: map[string]string{"app": "reader-node"}, ServiceAccount: "reader"}},
	// Proxies in interception mode NONE (nonemode.yaml): a workload of loom.bare under no
	// Sidecar, and one of spindle.bare under a Sidecar with ingress and egress listeners.
	{"sidecar-none", parity.Proxy{Type: "sidecar", IP: "10.66.0.1", Pod: "loom-1", Namespace: "bare", Labels: map[string]string{"app": "loom"}, ServiceAccount: "loom", InterceptionMode: "NONE"}},
	{"sidecar-none-dual", parity.Proxy{Type: "sidecar", IP: "10.66.0.3,fd00:66::3", NodeIP: "10.66.0.3", Pod: "loom-2", Namespace: "bare", Labels: map[string]string{"app": "loom"}, ServiceAccount: "loom", InterceptionMode: "NONE"}},
	{"sidecar-none-scoped", parity.Proxy{Type: "sidecar", IP: "10.66.0.2", Pod: "spindle-1", Namespace: "bare", Labels: map[string]string{"app": "spindle"}, ServiceAccount: "spindle", InterceptionMode: "NONE"}},
	// Sidecars of no service in interception mode REDIRECT whose Sidecars bind TLS and HTTPS
	// egress ports and catch-all egress listeners (egresscatchall.yaml).
	{"sidecar-reel", parity.Proxy{Type: "sidecar", IP: "10.66.2.1", Pod: "client", Namespace: "reel", Labels: map[string]string{"app": "reel"}, ServiceAccount: "client"}},
	{"sidecar-reel-bind", parity.Proxy{Type: "sidecar", IP: "10.66.2.2", Pod: "client2", Namespace: "reel", Labels: map[string]string{"app": "reelbind"}, ServiceAccount: "client"}},
	// A sidecar of no service under a Sidecar that imports DYNAMIC_DNS ServiceEntries, one of
	// them exported to its namespace only (dynamicdns.yaml).
	{"sidecar-dfp", parity.Proxy{Type: "sidecar", IP: "10.69.9.9", Pod: "client", Namespace: "dfp", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	// IPv6-only sidecars of no service (ipv6only.yaml): one that sees the whole corpus, one
	// under a Sidecar that binds egress ports to :: and 0.0.0.0, and an IPv4 sidecar under that
	// Sidecar too (:: is an address like any other there).
	{"sidecar-v6", parity.Proxy{Type: "sidecar", IP: "fd00:10::9", Pod: "client", Namespace: "sixth", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	{"sidecar-v6-bind", parity.Proxy{Type: "sidecar", IP: "fd00:10::10", Pod: "binder", Namespace: "sixth", Labels: map[string]string{"app": "sixbind"}, ServiceAccount: "client"}},
	{"sidecar-dual", parity.Proxy{Type: "sidecar", IP: "10.69.0.11,fd00:10::11", NodeIP: "10.69.0.11", Pod: "dual", Namespace: "sixth", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}},
	{"sidecar-dual-bind", parity.Proxy{Type: "sidecar", IP: "10.69.0.12,fd00:10::12", NodeIP: "10.69.0.12", Pod: "binder-dual", Namespace: "sixth", Labels: map[string]string{"app": "sixbind"}, ServiceAccount: "client"}},
	{"sidecar-duo-loop", parity.Proxy{Type: "sidecar", IP: "10.97.0.31,fd00:97::31", NodeIP: "10.97.0.31", Pod: "loop-1", Namespace: "duo", Labels: map[string]string{"app": "loop"}, ServiceAccount: "loop", InterceptionMode: "NONE"}},
	{"sidecar-duo-wild", parity.Proxy{Type: "sidecar", IP: "10.97.0.32,fd00:97::32", NodeIP: "10.97.0.32", Pod: "wild-1", Namespace: "duo", Labels: map[string]string{"app": "wild"}, ServiceAccount: "wild"}},
	{"sidecar-counter", parity.Proxy{Type: "sidecar", IP: "10.98.0.1", Pod: "counter-1", Namespace: "counter", Labels: map[string]string{"app": "counter"}, ServiceAccount: "counter"}},
	{"sidecar-v4-bind", parity.Proxy{Type: "sidecar", IP: "10.69.0.10", Pod: "binder4", Namespace: "sixth", Labels: map[string]string{"app": "sixbind"}, ServiceAccount: "client"}},
	// An IPv6-only ingress gateway (ipv6only.yaml): the gateway's view from fd00:9::1.
	{"gateway-dual", parity.Proxy{Type: "router", IP: "10.9.0.8,fd00:9::8", NodeIP: "10.9.0.8", Pod: "ingress-dual", Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}, ServiceAccount: "ingress"}},
	{"gateway-v6", parity.Proxy{Type: "router", IP: "fd00:9::1", Pod: "ingress-v6", Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}, ServiceAccount: "ingress"}},
	// Sidecars of no service under a Sidecar with HTTP_PROXY ports and unix socket egress
	// listeners (httpproxy.go), in interception mode REDIRECT and NONE.
	{"sidecar-quire", parity.Proxy{Type: "sidecar", IP: "10.131.9.1", Pod: "scribe-1", Namespace: "quire", Labels: map[string]string{"app": "scribe"}, ServiceAccount: "scribe"}},
	{"sidecar-quire-none", parity.Proxy{Type: "sidecar", IP: "10.131.9.2", Pod: "scribe-2", Namespace: "quire", Labels: map[string]string{"app": "scribe"}, ServiceAccount: "scribe", InterceptionMode: "NONE"}},
	{"sidecar-quire-dual", parity.Proxy{Type: "sidecar", IP: "10.131.9.3,fd00:131::3", NodeIP: "10.131.9.3", Pod: "scribe-3", Namespace: "quire", Labels: map[string]string{"app": "scribe"}, ServiceAccount: "scribe"}},
	{"sidecar-quire-dual-none", parity.Proxy{Type: "sidecar", IP: "10.131.9.4,fd00:131::4", NodeIP: "10.131.9.4", Pod: "scribe-4", Namespace: "quire", Labels: map[string]string{"app": "scribe"}, ServiceAccount: "scribe", InterceptionMode: "NONE"}},
	// The ingress gateway.
	{"gateway", parity.Proxy{Type: "router", IP: "10.9.0.1", Pod: "ingress", Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}, ServiceAccount: "ingress"}},
	// A router whose node sends no NAMESPACE, its config namespace istio-system from its DNS
	// domain: its service targets are ServiceEntries of any namespace (gwporttranslation.yaml).
	{"gateway-nons", parity.Proxy{Type: "router", IP: "10.9.0.7", Pod: "quay-gw", NoNamespace: true, Domain: "istio-system.svc.cluster.local", Labels: map[string]string{"istio": "quaygateway"}, ServiceAccount: "quay-gw"}},
}

// TestParityWithIstio serves testdata/mesh from Istio's DiscoveryServer and from xdslab's
// control plane, fetches every proxy's CDS, EDS, LDS and RDS from both, and fails on any
// semantic difference that is not a known gap (pendingGaps).
func TestParityWithIstio(t *testing.T) {
	dir := "testdata/mesh"
	if d := os.Getenv("PARITY_DIR"); d != "" {
		dir = d // another corpus, for probing by hand
	}
	ctx, istioAddr, oursAddr := serveBoth(t, dir)
	applied := map[int]bool{}
	ran := map[string]bool{}
	for _, p := range proxies {
		t.Run(p.name, func(t *testing.T) {
			ran[p.name] = true
			if ds := compareProxy(t, ctx, istioAddr, oursAddr, p.name, p.proxy, applied); len(ds) > 0 {
				t.Errorf("%d semantic differences (- only Istio, + only xdslab):\n%s", len(ds), parity.Format(ds))
			}
		})
	}
	for i, g := range pendingGaps {
		if !applied[i] && (g.proxy == "" && len(ran) == len(proxies) || ran[g.proxy]) {
			t.Errorf("pending gap %q changed no Istio line: it is closed; remove it from pendingGaps and docs/parity.md", g.why)
		}
	}
}

// serveBoth serves the Istio YAML of dir from istiodlab and from xdslab until t ends, waits
// until xdslab has loaded it, and returns a context bounding the fetches and both ADS addresses.
func serveBoth(t *testing.T, dir string) (ctx context.Context, istioAddr, oursAddr string) {
	t.Helper()
	istio, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ours := controlplanetest.NewServer(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	select {
	case <-ours.Synced():
	case <-ctx.Done():
		t.Fatalf("xdslab did not sync %s in 60s", dir)
	}
	if _, err := ours.WaitForSnapshot(ctx, func(s *model.Snapshot) bool { return s != nil && len(s.Services()) > 0 }); err != nil {
		t.Fatal(err)
	}
	return ctx, istio.Addr, ours.GRPCAddr()
}

// compareProxy fetches p's resources from both servers, projects them, rewrites Istio's view
// with pendingGaps (recording in applied which ones changed a line) and returns the
// differences. With -dump it logs both views of the matching resources.
func compareProxy(t *testing.T, ctx context.Context, istioAddr, oursAddr, name string, p parity.Proxy, applied map[int]bool) []parity.Delta {
	t.Helper()
	want, err := parity.Fetch(ctx, istioAddr, p)
	if err != nil {
		t.Fatalf("Istio: %v", err)
	}
	got, err := parity.Fetch(ctx, oursAddr, p)
	if err != nil {
		t.Fatalf("xdslab: %v", err)
	}
	wv, gv := parity.Project(want), parity.Project(got)
	if p.Type == "router" {
		wv.DropUnreferencedClusters()
		gv.DropUnreferencedClusters()
	}
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
	applyPending(name, wv, applied)
	return parity.Diff(wv, gv)
}

// pendingGap is a difference from Istio that xdslab does not close yet: an item of issue 26 not
// implemented on this branch. Its rewrite is applied to Istio's view before the comparison, so
// everything else on the line is still compared; a rewrite that no longer changes anything
// fails the test, so the list stays true. docs/parity.md lists the same.
type pendingGap struct {
	proxy string // "" for every proxy
	re    *regexp.Regexp
	repl  string
	why   string
}

var pendingGaps = []pendingGap{}

// applyPending rewrites Istio's view v for proxy, recording which gaps changed a line.
func applyPending(proxy string, v parity.View, applied map[int]bool) {
	for k, lines := range v {
		for j, l := range lines {
			for i, g := range pendingGaps {
				if g.proxy != "" && g.proxy != proxy {
					continue
				}
				if n := g.re.ReplaceAllString(l, g.repl); n != l {
					applied[i] = true
					l = n
				}
			}
			lines[j] = l
		}
		v[k] = lines
	}
}
