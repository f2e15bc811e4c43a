package istio_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/hack/istio/istiodlab"
	xdsparity "github.com/xdslab/xdslab/hack/istio/parity"
)

const (
	cdsURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	edsURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	ldsURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	rdsURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// deltaMesh is two ServiceEntries of one namespace; "gone" is deleted by the probes.
const deltaMeshKeep = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: keep, namespace: app}
spec:
  hosts: [keep.app.example]
  addresses: [240.0.1.1]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.1}]
`

// deltaMeshKeepDR changes keep's cluster (its load balancer), not its endpoints.
const deltaMeshKeepDR = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: keep, namespace: app}
spec:
  host: keep.app.example
  trafficPolicy:
    loadBalancer: {simple: RANDOM}
`

const deltaMeshGone = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: gone, namespace: app}
spec:
  hosts: [gone.app.example]
  addresses: [240.0.1.2]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.2}]
`

// deltaPeer is one Delta ADS stream driven by hand, as Envoy drives it.
type deltaPeer struct {
	t      *testing.T
	name   string
	stream grpc.BidiStreamingClient[discoverygrpc.DeltaDiscoveryRequest, discoverygrpc.DeltaDiscoveryResponse]
	resp   chan *discoverygrpc.DeltaDiscoveryResponse
	cancel context.CancelFunc
	node   bool
	// held: what the client holds, per type: name → version
	held map[string]map[string]string
	raw  map[string]map[string][]byte
}

func dialDelta(t *testing.T, name, addr string) *deltaPeer {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := &deltaPeer{t: t, name: name, stream: st, resp: make(chan *discoverygrpc.DeltaDiscoveryResponse, 100), cancel: cancel,
		held: map[string]map[string]string{}, raw: map[string]map[string][]byte{}}
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				close(p.resp)
				return
			}
			p.resp <- r
		}
	}()
	return p
}

var probeProxy = xdsparity.Proxy{Type: "sidecar", IP: "10.1.0.9", Pod: "client-1", Namespace: "app", Labels: map[string]string{"app": "client"}, ServiceAccount: "client"}

func (p *deltaPeer) send(r *discoverygrpc.DeltaDiscoveryRequest) {
	p.t.Helper()
	if !p.node {
		r.Node = probeProxy.Node()
		p.node = true
	}
	if err := p.stream.Send(r); err != nil {
		p.t.Fatalf("%s: send: %v", p.name, err)
	}
}

// collect gathers the responses that come within d of quiet (at most max), and applies them
// to held.
func (p *deltaPeer) collect(d time.Duration) []*discoverygrpc.DeltaDiscoveryResponse {
	var out []*discoverygrpc.DeltaDiscoveryResponse
	for {
		select {
		case r, ok := <-p.resp:
			if !ok {
				return out
			}
			out = append(out, r)
			h := p.held[r.GetTypeUrl()]
			if h == nil {
				h = map[string]string{}
				p.held[r.GetTypeUrl()] = h
				p.raw[r.GetTypeUrl()] = map[string][]byte{}
			}
			for _, res := range r.GetResources() {
				h[res.GetName()] = res.GetVersion()
				p.raw[r.GetTypeUrl()][res.GetName()] = res.GetResource().GetValue()
			}
			for _, n := range r.GetRemovedResources() {
				delete(h, n)
				delete(p.raw[r.GetTypeUrl()], n)
			}
		case <-time.After(d):
			return out
		}
	}
}

// collectUntil gathers responses until done holds for those gathered (at most max), then
// what follows within 200 ms of quiet.
func (p *deltaPeer) collectUntil(max time.Duration, done func([]*discoverygrpc.DeltaDiscoveryResponse) bool) []*discoverygrpc.DeltaDiscoveryResponse {
	var out []*discoverygrpc.DeltaDiscoveryResponse
	for end := time.Now().Add(max); time.Now().Before(end) && !done(out); {
		out = append(out, p.collect(50*time.Millisecond)...)
	}
	return append(out, p.collect(200*time.Millisecond)...)
}

func short(u string) string { return u[strings.LastIndex(u, ".")+1:] }

func describe(rs []*discoverygrpc.DeltaDiscoveryResponse) string {
	var b strings.Builder
	for _, r := range rs {
		var names []string
		for _, res := range r.GetResources() {
			names = append(names, res.GetName())
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "  %s nonce=%s +%v -%v\n", short(r.GetTypeUrl()), r.GetNonce(), names, r.GetRemovedResources())
	}
	return b.String()
}

// byType returns the responses of one type.
func byType(rs []*discoverygrpc.DeltaDiscoveryResponse, url string) []*discoverygrpc.DeltaDiscoveryResponse {
	var out []*discoverygrpc.DeltaDiscoveryResponse
	for _, r := range rs {
		if r.GetTypeUrl() == url {
			out = append(out, r)
		}
	}
	return out
}

func (p *deltaPeer) ack(rs []*discoverygrpc.DeltaDiscoveryResponse) {
	for _, r := range rs {
		p.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: r.GetTypeUrl(), ResponseNonce: r.GetNonce()})
	}
}

// edsNames and rdsNames are what Envoy subscribes to from the held clusters and listeners.
func (p *deltaPeer) edsNames() []string {
	var out []string
	for n, b := range p.raw[cdsURL] {
		c := &clusterv3.Cluster{}
		if err := proto.Unmarshal(b, c); err != nil {
			p.t.Fatal(err)
		}
		if c.GetType() == clusterv3.Cluster_EDS {
			sn := c.GetEdsClusterConfig().GetServiceName()
			if sn == "" {
				sn = n
			}
			out = append(out, sn)
		}
	}
	sort.Strings(out)
	return out
}

func (p *deltaPeer) rdsNames() []string {
	set := map[string]bool{}
	for _, b := range p.raw[ldsURL] {
		l := &listenerv3.Listener{}
		if err := proto.Unmarshal(b, l); err != nil {
			p.t.Fatal(err)
		}
		chains := append(slices.Clone(l.GetFilterChains()), l.GetDefaultFilterChain())
		for _, fc := range chains {
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(h) == nil && h.GetRds() != nil {
					set[h.GetRds().GetRouteConfigName()] = true
				}
			}
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// bootstrap runs Envoy's initial Delta sequence and returns every response.
func (p *deltaPeer) bootstrap(quiet time.Duration) {
	p.t.Helper()
	p.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: cdsURL})
	cds := p.collect(quiet)
	p.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: edsURL, ResourceNamesSubscribe: p.edsNames()})
	p.ack(cds)
	eds := p.collect(quiet)
	p.ack(eds)
	p.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: ldsURL})
	lds := p.collect(quiet)
	p.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: rdsURL, ResourceNamesSubscribe: p.rdsNames()})
	p.ack(lds)
	rds := p.collect(quiet)
	p.ack(rds)
	p.collect(quiet)
	for _, u := range []string{cdsURL, edsURL, ldsURL, rdsURL} {
		if len(p.held[u]) == 0 {
			p.t.Fatalf("%s: holds no %s after bootstrap", p.name, short(u))
		}
	}
}

// deltaServers starts Istio's DiscoveryServer and ours on one directory of YAML.
func deltaServers(t *testing.T, dir string) (istio, ours string) {
	t.Helper()
	is, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := controlplanetest.NewServer(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.WaitForSnapshot(ctx, func(s *model.Snapshot) bool { return s != nil && len(s.Services()) > 1 }); err != nil {
		t.Fatal(err)
	}
	return is.Addr, srv.GRPCAddr()
}

func writeDeltaMesh(t *testing.T) string {
	dir := t.TempDir()
	for n, s := range map[string]string{"keep.yaml": deltaMeshKeep, "gone.yaml": deltaMeshGone} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func names(rs []*discoverygrpc.DeltaDiscoveryResponse, removed bool) []string {
	var out []string
	for _, r := range rs {
		if removed {
			out = append(out, r.GetRemovedResources()...)
			continue
		}
		for _, res := range r.GetResources() {
			out = append(out, res.GetName())
		}
	}
	sort.Strings(out)
	return out
}

func has(list []string, sub string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, sub) })
}

// restate opens a new stream for p's holdings, as Envoy does after a reconnect: every type
// restated with its subscription and initial_resource_versions, edit applied to the versions.
func (p *deltaPeer) restate(t *testing.T, addr string, edit func(url string, v map[string]string)) *deltaPeer {
	q := dialDelta(t, p.name, addr)
	sub := map[string][]string{edsURL: p.edsNames(), rdsURL: p.rdsNames()}
	for _, u := range []string{cdsURL, edsURL, ldsURL, rdsURL} {
		v := maps.Clone(p.held[u])
		if edit != nil {
			edit(u, v)
		}
		q.held[u], q.raw[u] = maps.Clone(p.held[u]), maps.Clone(p.raw[u])
		q.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: u, ResourceNamesSubscribe: sub[u], InitialResourceVersions: v})
	}
	return q
}

// TestDeltaPeerWithIstio drives one Delta stream by hand, as Envoy does, against Istio's
// DiscoveryServer and xdslab's control plane serving the same two ServiceEntries, and checks
// what a Delta client relies on from both:
//   - a reconnect with initial_resource_versions: a resource claimed at a version the server
//     never sent is sent again, and a claimed cluster that does not exist is in
//     removed_resources (Istio re-sends everything; xdslab only what differs);
//   - an assignment unsubscribed is not pushed when its endpoints change, and is sent with
//     them when subscribed again;
//   - a cluster a DestinationRule changes is followed by its assignment (it warms until then);
//   - a deleted service: its cluster is in CDS removed_resources and unchanged clusters are not
//     sent again by xdslab.
func TestDeltaPeerWithIstio(t *testing.T) {
	dir := writeDeltaMesh(t)
	istio, ours := deltaServers(t, dir)
	addrs := map[string]string{"istio": istio, "xdslab": ours}
	var peers []*deltaPeer
	for _, name := range []string{"istio", "xdslab"} {
		p := dialDelta(t, name, addrs[name])
		p.bootstrap(400 * time.Millisecond)
		t.Logf("%s holds CDS %d, EDS %v, LDS %d, RDS %v", p.name, len(p.held[cdsURL]), p.edsNames(), len(p.held[ldsURL]), p.rdsNames())

		// Unchanged: xdslab owes nothing; Istio re-sends all.
		q := p.restate(t, addrs[name], nil)
		rs := q.collect(700 * time.Millisecond)
		t.Logf("%s after a reconnect with current versions:\n%s", name, describe(rs))
		if name == "xdslab" && len(names(rs, false))+len(names(rs, true)) > 0 {
			t.Errorf("xdslab re-sent resources the client holds at their versions:\n%s", describe(rs))
		}
		q.cancel()

		// A claimed version the server never sent, and a claimed cluster that does not exist.
		q = p.restate(t, addrs[name], func(u string, v map[string]string) {
			switch u {
			case cdsURL:
				v["outbound|80||keep.app.example"] = "stale"
				v["outbound|80||never.app.example"] = "1"
			case edsURL:
				v["outbound|80||keep.app.example"] = "stale"
			}
		})
		rs = q.collect(700 * time.Millisecond)
		t.Logf("%s after a reconnect with a stale version and an unknown cluster:\n%s", name, describe(rs))
		cds := byType(rs, cdsURL)
		if !has(names(cds, false), "keep.app.example") {
			t.Errorf("%s: a cluster claimed at a stale version was not sent again", name)
		}
		if !has(names(byType(rs, edsURL), false), "keep.app.example") {
			t.Errorf("%s: an assignment claimed at a stale version was not sent again", name)
		}
		if !has(names(cds, true), "never.app.example") {
			t.Errorf("%s: a claimed cluster that does not exist is not in removed_resources", name)
		}
		q.cancel()
		peers = append(peers, p)
	}

	// Unsubscribed, an assignment whose endpoints change is not sent; subscribed again, it is,
	// with the new endpoints.
	keep := "outbound|80||keep.app.example"
	for _, p := range peers {
		p.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: edsURL, ResourceNamesUnsubscribe: []string{keep}})
		if rs := p.collect(300 * time.Millisecond); len(rs) > 0 {
			t.Errorf("%s: an unsubscribe was answered:\n%s", p.name, describe(rs))
		}
	}
	moved := strings.ReplaceAll(deltaMeshKeep, "10.0.0.1", "10.0.0.11")
	if err := os.WriteFile(filepath.Join(dir, "keep.yaml"), []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // an endpoint push goes out within a debounce (100 ms) of the change
	for _, p := range peers {
		rs := p.collect(200 * time.Millisecond)
		if has(names(byType(rs, edsURL), false), "keep.app.example") {
			t.Errorf("%s: an unsubscribed assignment was pushed:\n%s", p.name, describe(rs))
		}
		p.ack(rs)
		p.send(&discoverygrpc.DeltaDiscoveryRequest{TypeUrl: edsURL, ResourceNamesSubscribe: []string{keep}})
		rs = p.collectUntil(3*time.Second, func([]*discoverygrpc.DeltaDiscoveryResponse) bool {
			return strings.Contains(string(p.raw[edsURL][keep]), "10.0.0.11")
		})
		t.Logf("%s after subscribing again to %s:\n%s", p.name, keep, describe(rs))
		if !strings.Contains(string(p.raw[edsURL][keep]), "10.0.0.11") {
			t.Errorf("%s: subscribed again, %s does not hold the new endpoint", p.name, keep)
		}
		p.ack(rs)
		p.collect(200 * time.Millisecond)
	}

	// A cluster changed by a DestinationRule is followed by its assignment, unchanged as it
	// is: the changed cluster warms until it gets one (Envoy's Delta mux asks for nothing
	// new, the name being subscribed already).
	if err := os.WriteFile(filepath.Join(dir, "keep-dr.yaml"), []byte(deltaMeshKeepDR), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range peers {
		rs := p.collectUntil(5*time.Second, func(rs []*discoverygrpc.DeltaDiscoveryResponse) bool {
			return has(names(byType(rs, cdsURL), false), "keep.app.example")
		})
		t.Logf("%s after a DestinationRule changed %s:\n%s", p.name, keep, describe(rs))
		if !has(names(byType(rs, edsURL), false), "keep.app.example") {
			t.Errorf("%s: the changed cluster %s was not followed by its assignment", p.name, keep)
		}
		p.ack(rs)
		p.collect(200 * time.Millisecond)
	}

	if err := os.Remove(filepath.Join(dir, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, p := range peers {
		rs := p.collectUntil(5*time.Second, func(rs []*discoverygrpc.DeltaDiscoveryResponse) bool {
			return has(names(byType(rs, ldsURL), true), "8080")
		})
		t.Logf("%s after the delete:\n%s", p.name, describe(rs))
		cds := byType(rs, cdsURL)
		if !has(names(cds, true), "gone.app.example") {
			t.Errorf("%s: the deleted service's cluster is not in CDS removed_resources", p.name)
		}
		if !has(names(byType(rs, ldsURL), true), "8080") {
			t.Errorf("%s: the deleted service's listener is not in LDS removed_resources", p.name)
		}
		if p.name == "xdslab" && has(names(cds, false), "keep.app.example") {
			t.Errorf("%s: CDS re-sent an unchanged cluster", p.name)
		}
	}
}
