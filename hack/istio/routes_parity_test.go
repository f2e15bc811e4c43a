package istio_test

import (
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	istiomodel "istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking/core"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
	"github.com/xdslab/xdslab/istioconfig"
)

// routesCorpus exercises the route features of issue 26 (header operations, fault, mirrors,
// rewrites on every match type, redirects, retries, consistent-hash policies, CORS, catch-all
// pruning, timeouts) and VirtualService tcp routes, on ServiceEntry services both control
// planes read the same way.
const routesCorpus = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: default}
spec:
  hosts: [web.example.com]
  addresses: [240.0.0.10]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.1, labels: {version: v1}}, {address: 10.0.0.2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: default}
spec:
  hosts: [api.example.com]
  addresses: [240.0.0.11]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.1.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: sticky, namespace: default}
spec:
  hosts: [sticky.example.com]
  addresses: [240.0.0.12]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.2.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: default}
spec:
  hosts: [db.example.com]
  addresses: [240.0.0.20]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 3306, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.3.1, labels: {role: primary}}, {address: 10.0.3.2, labels: {role: replica}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: default}
spec:
  host: web.example.com
  subsets:
  - name: v1
    labels: {version: v1}
  - name: v2
    labels: {version: v2}
    trafficPolicy:
      loadBalancer:
        consistentHash:
          httpCookie: {name: session, path: /, ttl: 3600s}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: sticky, namespace: default}
spec:
  host: sticky.example.com
  trafficPolicy:
    loadBalancer:
      consistentHash: {httpHeaderName: x-user}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db, namespace: default}
spec:
  host: db.example.com
  trafficPolicy:
    connectionPool:
      tcp: {idleTimeout: 600s}
    loadBalancer:
      consistentHash: {useSourceIp: true}
  subsets:
  - name: primary
    labels: {role: primary}
  - name: replica
    labels: {role: replica}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: default}
spec:
  hosts: [web.example.com]
  http:
  - name: faulty
    match:
    - name: status
      uri: {exact: /status}
      statPrefix: status
    fault:
      delay: {fixedDelay: 2s, percentage: {value: 50}}
      abort: {httpStatus: 503, percentage: {value: 0.5}}
    rewrite: {uri: /anything}
    route:
    - destination: {host: web.example.com, subset: v1}
  - name: grpc-abort
    match:
    - uri: {prefix: /grpc.Service/}
    fault:
      abort: {grpcStatus: UNAVAILABLE}
    route:
    - destination: {host: web.example.com}
  - name: regex-rewrite
    match:
    - uri: {regex: "/api/v[0-9]+/.*"}
    rewrite: {uriRegexRewrite: {match: "^/api/v[0-9]+/(.*)$", rewrite: "/\\1"}}
    headers:
      request:
        set: {x-route: regex}
        add: {x-trace: "on"}
        remove: [x-debug]
      response:
        set: {x-served-by: web}
    route:
    - destination: {host: web.example.com, subset: v1}
      weight: 90
      headers:
        request:
          set: {x-canary: "no"}
    - destination: {host: web.example.com, subset: v2}
      weight: 10
      headers:
        response:
          remove: [x-internal]
  - name: mirrored
    match:
    - uri: {prefix: /mirror}
    mirror: {host: api.example.com}
    mirrorPercentage: {value: 12.5}
    timeout: 3s
    retries: {attempts: 4, perTryTimeout: 1s, retryOn: "5xx,503,reset", retryRemoteLocalities: true}
    route:
    - destination: {host: web.example.com, subset: v2}
  - name: many-mirrors
    match:
    - uri: {prefix: /many}
    mirrors:
    - destination: {host: api.example.com}
      percentage: {value: 50}
    - destination: {host: sticky.example.com}
    route:
    - destination: {host: web.example.com}
  - name: moved
    match:
    - uri: {prefix: /old}
    redirect: {uri: /new, redirectCode: 307, derivePort: FROM_REQUEST_PORT}
  - name: no-retries
    match:
    - uri: {prefix: /once}
    retries: {attempts: 0}
    route:
    - destination: {host: web.example.com}
  - name: authority
    match:
    - uri: {prefix: /auth}
    headers:
      request:
        set: {":authority": internal.example.com}
    route:
    - destination: {host: web.example.com}
  - name: cors
    match:
    - uri: {prefix: /cors}
    corsPolicy:
      allowOrigins: [{exact: "https://a.example"}, {regex: "https://.*[.]b[.]example"}]
      allowMethods: [GET, POST]
      allowHeaders: [x-a]
      exposeHeaders: [x-b]
      maxAge: 24h
      allowCredentials: true
    route:
    - destination: {host: web.example.com}
  - name: rest
    route:
    - destination: {host: web.example.com}
  - name: unreachable
    route:
    - destination: {host: api.example.com}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: sticky, namespace: default}
spec:
  hosts: [sticky.example.com]
  http:
  - name: hashed
    route:
    - destination: {host: sticky.example.com}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: db, namespace: default}
spec:
  hosts: [db.example.com]
  tcp:
  - match:
    - destinationSubnets: [10.9.0.0/16]
    route:
    - destination: {host: db.example.com, subset: replica}
  - route:
    - destination: {host: db.example.com, subset: primary}
      weight: 80
    - destination: {host: db.example.com, subset: replica}
      weight: 20
`

// ourSnapshot decodes the corpus with xdslab's decoder (validation included) and builds the
// snapshot its control plane would serve.
func ourSnapshot(t *testing.T, corpus string) *model.Snapshot {
	t.Helper()
	res, err := config.Decoder{}.DecodeAll("corpus.yaml", []byte(corpus))
	if err != nil {
		t.Fatal(err)
	}
	in := model.SnapshotInput{Endpoints: map[string][]*model.Endpoint{}}
	for _, c := range res.Configs {
		if c.Kind != istioconfig.KindServiceEntry {
			in.Configs = append(in.Configs, c)
			continue
		}
		conv, err := registry.ConvertServiceEntry(c, nil, registry.ConvertOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in.Services = append(in.Services, conv.Services...)
		for h, eps := range conv.Endpoints {
			in.Endpoints[h] = eps
		}
	}
	return model.NewSnapshot(1, in)
}

// istiodOnly are the HTTP filters istiod adds for telemetry.
var istiodOnly = []string{"istio.metadata_exchange", "envoy.filters.http.grpc_stats", "istio.alpn", "istio.stats"}

// normalizeRoute clears what istiod adds for telemetry and debugging only: the config
// metadata naming the VirtualService and the tracing decorator.
func normalizeRoute(r *routev3.Route) *routev3.Route {
	r = proto.Clone(r).(*routev3.Route)
	r.Metadata, r.Decorator = nil, nil
	return r
}

func vhostRoutes(t *testing.T, rcs []*routev3.RouteConfiguration, rc, vh string) []*routev3.Route {
	t.Helper()
	for _, c := range rcs {
		if c.GetName() != rc {
			continue
		}
		for _, v := range c.GetVirtualHosts() {
			if v.GetName() == vh {
				var out []*routev3.Route
				for _, r := range v.GetRoutes() {
					out = append(out, normalizeRoute(r))
				}
				return out
			}
		}
	}
	t.Fatalf("no virtual host %s in route configuration %s", vh, rc)
	return nil
}

func listenerNamed(t *testing.T, ls []*listenerv3.Listener, name string) *listenerv3.Listener {
	t.Helper()
	for _, l := range ls {
		if l.GetName() == name {
			return l
		}
	}
	t.Fatalf("no listener %s", name)
	return nil
}

// tcpProxies lists each filter chain's match and tcp_proxy, the default filter chain last,
// without the access log istiod configures from its mesh config (telemetry).
func tcpProxies(t *testing.T, l *listenerv3.Listener) []proto.Message {
	t.Helper()
	var out []proto.Message
	chains := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(slices.Clone(chains), d)
	}
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			if f.GetName() != "envoy.filters.network.tcp_proxy" {
				continue
			}
			tp := &tcpproxyv3.TcpProxy{}
			if err := f.GetTypedConfig().UnmarshalTo(tp); err != nil {
				t.Fatal(err)
			}
			tp.AccessLog = nil
			m := fc.GetFilterChainMatch()
			if m == nil {
				m = &listenerv3.FilterChainMatch{}
			}
			out = append(out, m, tp)
		}
	}
	return out
}

func httpFilterNames(t *testing.T, l *listenerv3.Listener) []string {
	t.Helper()
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			if f.GetName() != "envoy.filters.network.http_connection_manager" {
				continue
			}
			h := &hcmv3.HttpConnectionManager{}
			if err := f.GetTypedConfig().UnmarshalTo(h); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, hf := range h.GetHttpFilters() {
				if !slices.Contains(istiodOnly, hf.GetName()) {
					names = append(names, hf.GetName())
				}
			}
			return names
		}
	}
	t.Fatalf("listener %s has no HTTP connection manager", l.GetName())
	return nil
}

// TestRoutesMatchIstiod generates the sidecar routes and listeners of routesCorpus with
// istiod's own generator (pilot/pkg/networking/core) and with ours, and requires the same
// routes (every field but istiod's metadata and decorator), the same HTTP filter order (less
// istiod's telemetry filters) and the same tcp route filter chains.
func TestRoutesMatchIstiod(t *testing.T) {
	cg := core.NewConfigGenTest(t, core.TestOptions{ConfigString: routesCorpus})
	ip := cg.SetupProxy(&istiomodel.Proxy{Labels: map[string]string{"app": "client"}})
	istioListeners := cg.Listeners(ip)
	istioRoutes := cg.RoutesFromListeners(ip, istioListeners)

	s := ourSnapshot(t, routesCorpus)
	p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"1.1.1.1"}, ID: "app.test", Namespace: "default",
		DNSDomain: "default.svc.cluster.local", Labels: map[string]string{"app": "client"}}
	var ours []*routev3.RouteConfiguration
	rs, err := gen.ForType(gen.RouteType, p).Generate(p, s, []string{"80"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		ours = append(ours, r.Message.(*routev3.RouteConfiguration))
	}
	lrs, err := gen.ForType(gen.ListenerType, p).Generate(p, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ourListeners []*listenerv3.Listener
	for _, r := range lrs {
		ourListeners = append(ourListeners, r.Message.(*listenerv3.Listener))
	}

	for _, vh := range []string{"web.example.com:80", "sticky.example.com:80", "api.example.com:80"} {
		want, got := vhostRoutes(t, istioRoutes, "80", vh), vhostRoutes(t, ours, "80", vh)
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("%s routes (-istiod +xdslab):\n%s", vh, diff)
		}
	}
	want, got := httpFilterNames(t, listenerNamed(t, istioListeners, "0.0.0.0_80")), httpFilterNames(t, listenerNamed(t, ourListeners, "0.0.0.0_80"))
	if !slices.Equal(want, got) {
		t.Errorf("0.0.0.0_80 HTTP filters: istiod %v, xdslab %v", want, got)
	}
	if diff := cmp.Diff(tcpProxies(t, listenerNamed(t, istioListeners, "240.0.0.20_3306")), tcpProxies(t, listenerNamed(t, ourListeners, "240.0.0.20_3306")), protocmp.Transform()); diff != "" {
		t.Errorf("240.0.0.20_3306 filter chains (-istiod +xdslab):\n%s", diff)
	}
	if n := len(tcpProxies(t, listenerNamed(t, ourListeners, "240.0.0.20_3306"))); n != 4 {
		t.Errorf("240.0.0.20_3306: %d match/tcp_proxy entries, want 4 (the subnet chain and the weighted default chain)", n)
	}
	if t.Failed() {
		var names []string
		for _, l := range istioListeners {
			names = append(names, l.GetName())
		}
		t.Logf("istiod listeners: %s", strings.Join(names, " "))
	}
}
