package gen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// dnsHostEndpoint is the endpoint the registry gives a DNS ServiceEntry that lists no
// endpoints and has no workloadSelector (registry.ConvertServiceEntry): its own host name,
// without labels. Fixtures of such entries must carry it: a DNS service with no endpoints at
// all is an entry whose workloadSelector selects nothing, for which istiod builds no cluster.
func dnsHostEndpoint(svc *model.Service) *model.Endpoint {
	return &model.Endpoint{Service: svc.Hostname, Address: svc.Hostname, Source: svc.Source}
}

// goldenMesh is a small mesh that exercises every feature the generators support.
func goldenMesh() *model.Snapshot { return model.NewSnapshot(1, goldenInput()) }

// goldenInput is goldenMesh's input.
func goldenInput() model.SnapshotInput {
	ep := func(svc, addr, version, region, zone string, w uint32, h model.HealthStatus) *model.Endpoint {
		return &model.Endpoint{Service: svc, Address: addr, Labels: map[string]string{"app": strings.Split(svc, ".")[0], "version": version},
			Locality: model.Locality{Region: region, Zone: zone}, Weight: w, Health: h, ServiceAccount: "default"}
	}
	reviews := "reviews.default.svc.cluster.local"
	ratings := "ratings.default.svc.cluster.local"
	services := []*model.Service{
		{Hostname: reviews, Namespace: "default", Addresses: []string{"10.96.0.10"}, Ports: []model.Port{{Name: "http", Number: 9080, Protocol: model.ProtocolHTTP}}, ServiceAccounts: []string{"default"}},
		{Hostname: ratings, Namespace: "default", Addresses: []string{"10.96.0.11"}, Ports: []model.Port{{Name: "grpc", Number: 9090, Protocol: model.ProtocolGRPC}}},
		{Hostname: "mysql.db.svc.cluster.local", Namespace: "db", Addresses: []string{"10.96.0.20"}, Ports: []model.Port{{Name: "tcp", Number: 3306, Protocol: model.ProtocolTCP}}},
		{Hostname: "redis.cache.svc.cluster.local", Namespace: "cache", Ports: []model.Port{{Name: "tcp", Number: 6379, Protocol: model.ProtocolTCP}}},
		{Hostname: "httpbin.org", Namespace: "default", Ports: []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}}, Resolution: model.ResolutionDNS, MeshExternal: true},
		{Hostname: "api.example.com", Namespace: "default", Ports: []model.Port{{Name: "https", Number: 443, Protocol: model.ProtocolHTTPS}}, Resolution: model.ResolutionDNS, MeshExternal: true},
		{Hostname: "legacy.example.com", Namespace: "default", Ports: []model.Port{{Name: "tcp", Number: 7000, Protocol: model.ProtocolTCP}}, Resolution: model.ResolutionPassthrough, MeshExternal: true},
	}
	ratingsEP := ep(ratings, "10.1.0.5", "v1", "us-east", "a", 1, model.Healthy)
	ratingsEP.Ports = map[string]uint32{"grpc": 50051}
	endpoints := map[string][]*model.Endpoint{
		reviews: {
			ep(reviews, "10.1.0.1", "v1", "us-east", "a", 1, model.Healthy),
			ep(reviews, "10.1.0.2", "v2", "us-east", "b", 3, model.Healthy),
			ep(reviews, "10.1.0.3", "v2", "us-west", "a", 0, model.Draining),
			ep(reviews, "10.1.0.4", "v3", "us-west", "a", 2, model.Unhealthy),
		},
		ratings:                         {ratingsEP},
		"mysql.db.svc.cluster.local":    {ep("mysql.db.svc.cluster.local", "10.1.1.1", "v1", "us-east", "a", 1, model.Healthy)},
		"redis.cache.svc.cluster.local": {ep("redis.cache.svc.cluster.local", "10.1.2.1", "v1", "us-east", "a", 1, model.Healthy)},
		"api.example.com": {
			ep("api.example.com", "api-1.example.com", "v1", "", "", 1, model.Healthy),
			ep("api.example.com", "api-2.example.com", "v1", "", "", 1, model.Healthy),
		},
		"httpbin.org": {dnsHostEndpoint(services[4])},
	}
	dr := &networking.DestinationRule{
		Host: "reviews",
		TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}},
			ConnectionPool: &networking.ConnectionPoolSettings{
				Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100, ConnectTimeout: durationpb.New(250 * time.Millisecond)},
				Http: &networking.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: 10, Http2MaxRequests: 200, MaxRequestsPerConnection: 5},
			},
			OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3), Interval: durationpb.New(5 * time.Second), BaseEjectionTime: durationpb.New(time.Minute), MaxEjectionPercent: 30},
		},
		Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}},
			}},
		},
	}
	vs := &networking.VirtualService{
		Hosts: []string{"reviews"},
		Http: []*networking.HTTPRoute{
			{Name: "jason", Match: []*networking.HTTPMatchRequest{{Headers: map[string]*networking.StringMatch{"end-user": {MatchType: &networking.StringMatch_Exact{Exact: "jason"}}}}},
				Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews", Subset: "v2"}}}},
			{Name: "old", Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/old"}}}},
				Redirect: &networking.HTTPRedirect{Uri: "/new", RedirectCode: 302}},
			{Name: "teapot", Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: "/coffee"}}}},
				DirectResponse: &networking.HTTPDirectResponse{Status: 418, Body: &networking.HTTPBody{Specifier: &networking.HTTPBody_String_{String_: "teapot"}}}},
			{Name: "split", Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "/api/v[12]/.*"}}, IgnoreUriCase: true}},
				Route: []*networking.HTTPRouteDestination{
					{Destination: &networking.Destination{Host: "reviews", Subset: "v1"}, Weight: 80},
					{Destination: &networking.Destination{Host: "reviews", Subset: "v2"}, Weight: 20},
				},
				Rewrite: &networking.HTTPRewrite{Authority: "reviews.internal"},
				Timeout: durationpb.New(2 * time.Second),
				Retries: &networking.HTTPRetry{Attempts: 4, PerTryTimeout: durationpb.New(500 * time.Millisecond)}},
			{Name: "rest", Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews", Subset: "v1"}}}},
		},
	}
	ratingsVS := &networking.VirtualService{
		Hosts: []string{ratings},
		Http: []*networking.HTTPRoute{
			{Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/ratings.Ratings/"}}, Method: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: "POST"}}}},
				Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: ratings}}},
				Timeout: durationpb.New(time.Second), Retries: &networking.HTTPRetry{Attempts: 2}},
		},
	}
	configs := []*istioconfig.Config{
		{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "reviews", Namespace: "default", ResourceVersion: "7"}, Spec: dr},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "reviews", Namespace: "default", ResourceVersion: "3"}, Spec: vs},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "ratings", Namespace: "default", ResourceVersion: "1"}, Spec: ratingsVS},
	}
	return model.SnapshotInput{Services: services, Endpoints: endpoints, Configs: configs}
}

var typeShort = map[string]string{ClusterType: "cds", EndpointType: "eds", ListenerType: "lds", RouteType: "rds"}

// goldenJSON renders resources as indented protojson with their deps. protojson's whitespace
// is deliberately unstable, so the output is compacted and re-indented by encoding/json.
func goldenJSON(t *testing.T, rs []Resource) []byte {
	t.Helper()
	type entry struct {
		Name     string          `json:"name"`
		Deps     []string        `json:"deps,omitempty"`
		Resource json.RawMessage `json:"resource"`
	}
	var entries []entry
	for _, r := range rs {
		b, err := protojson.Marshal(r.Message)
		if err != nil {
			t.Fatal(err)
		}
		e := entry{Name: r.Name, Resource: b}
		for _, d := range r.Deps {
			e.Deps = append(e.Deps, d.String())
		}
		entries = append(entries, e)
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// scopedGoldenMesh is goldenMesh with visibility rules: a Sidecar in default importing its own
// namespace and db, a db service exported only to db, and a DestinationRule for redis in cache
// exported only to cache.
func scopedGoldenMesh() *model.Snapshot {
	internal := &model.Service{Hostname: "internal.db.svc.cluster.local", Namespace: "db", Addresses: []string{"10.96.0.21"},
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}, ExportTo: []string{"."}}
	sidecar := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "default", Namespace: "default"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*", "db/*"}}}}}
	redisDR := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "redis", Namespace: "cache"},
		Spec: &networking.DestinationRule{Host: "redis", ExportTo: []string{"."},
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
				LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}}}}}
	return goldenMesh().Apply(2, model.SnapshotDelta{
		Services:  map[string]*model.Service{internal.Hostname: internal},
		Endpoints: map[string][]*model.Endpoint{internal.Hostname: {{Service: internal.Hostname, Address: "10.1.1.2", Weight: 1}}},
		Configs:   map[istioconfig.Key]*istioconfig.Config{sidecar.Key(): sidecar, redisDR.Key(): redisDR},
	})
}

// checkGolden compares g's resources of each type with testdata/PREFIX-TYPE.json (rewritten
// with -update).
func checkGolden(t *testing.T, prefix string, types []string, g generated) {
	t.Helper()
	for _, typeURL := range types {
		file := filepath.Join("testdata", prefix+"-"+typeShort[typeURL]+".json")
		got := goldenJSON(t, g[typeURL])
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test ./controlplane/gen -update to create it)", err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s differs from the golden file (-want +got; run go test ./controlplane/gen -update if intended):\n%s", file, diff)
		}
	}
}

func TestGolden(t *testing.T) {
	mesh, scoped := goldenMesh(), scopedGoldenMesh()
	cases := []struct {
		name  string
		proxy *model.Proxy
		snap  *model.Snapshot
	}{
		{"sidecar", sidecarProxy("10.1.0.1", "default"), mesh},
		{"grpc", grpcProxy("default"), mesh},
		// The Sidecar of default: only default's and db's services (internal.db is not
		// exported to default), so no redis.
		{"scoped-sidecar", sidecarProxy("10.1.0.1", "default"), scoped},
		{"scoped-grpc", grpcProxy("default"), scoped},
		// No Sidecar in cache: the whole mesh except internal.db, with redis's cache-only
		// DestinationRule applied.
		{"cache-sidecar", sidecarProxy("10.200.0.9", "cache"), scoped},
	}
	for _, tc := range cases {
		g, err := generateAll(t, tc.proxy, tc.snap)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkResources(t, tc.proxy, g)
		checkGolden(t, tc.name, Types(), g)
	}
}

// The scoped goldens hold what the rules say, independent of the JSON: the services each
// proxy's clusters and listeners name.
func TestScopedViews(t *testing.T) {
	s := scopedGoldenMesh()
	hostsOf := func(p *model.Proxy) []string {
		rs, err := ForType(ClusterType, p).Generate(p, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			if cn, err := ParseClusterName(r.Name); err == nil && cn.Direction == Outbound && !slices.Contains(out, cn.Host) {
				out = append(out, cn.Host)
			}
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		proxy *model.Proxy
		want  []string
	}{
		{sidecarProxy("10.1.0.1", "default"), []string{"api.example.com", "httpbin.org", "legacy.example.com",
			"mysql.db.svc.cluster.local", "ratings.default.svc.cluster.local", "reviews.default.svc.cluster.local"}},
		{sidecarProxy("10.200.0.9", "cache"), []string{"api.example.com", "httpbin.org", "legacy.example.com",
			"mysql.db.svc.cluster.local", "ratings.default.svc.cluster.local", "redis.cache.svc.cluster.local", "reviews.default.svc.cluster.local"}},
		{sidecarProxy("10.200.0.8", "db"), []string{"api.example.com", "httpbin.org", "internal.db.svc.cluster.local", "legacy.example.com",
			"mysql.db.svc.cluster.local", "ratings.default.svc.cluster.local", "redis.cache.svc.cluster.local", "reviews.default.svc.cluster.local"}},
	}
	for _, tt := range tests {
		if got := hostsOf(tt.proxy); !slices.Equal(got, tt.want) {
			t.Errorf("proxy in %s: clusters for %v, want %v", tt.proxy.Namespace, got, tt.want)
		}
	}
	// redis's DestinationRule (exported to cache only) shapes the cache proxy's cluster alone.
	lb := func(p *model.Proxy) clusterv3.Cluster_LbPolicy {
		rs, _ := ForType(ClusterType, p).Generate(p, s, []string{ClusterName(Outbound, 6379, "", "redis.cache.svc.cluster.local")})
		if len(rs) != 1 {
			t.Fatalf("proxy in %s: %d redis clusters", p.Namespace, len(rs))
		}
		return rs[0].Message.(*clusterv3.Cluster).GetLbPolicy()
	}
	if got := lb(sidecarProxy("10.200.0.9", "cache")); got != clusterv3.Cluster_RANDOM {
		t.Errorf("cache proxy: redis lb %v, want RANDOM from the cache-only DestinationRule", got)
	}
	if got := lb(sidecarProxy("10.200.0.8", "db")); got == clusterv3.Cluster_RANDOM {
		t.Error("db proxy: redis uses the DestinationRule exported only to cache")
	}
}
