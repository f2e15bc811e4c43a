package kubedump

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	"github.com/xdslab/xdslab/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// exampleDir is the checked-in example dump.
const exampleDir = "../../examples/import/dump"

func readExample(t testing.TB) []File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(exampleDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("example dump: %v (found %d files)", err, len(paths))
	}
	var files []File
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// Relative names keep the goldens independent of where the repository lives.
		files = append(files, File{Name: "examples/import/dump/" + filepath.Base(p), Data: data})
	}
	return files
}

func importBytes(t testing.TB, files []File, anonymize bool, salt string) []byte {
	t.Helper()
	d, err := Parse(files)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Convert(d)
	if err != nil {
		t.Fatal(err)
	}
	if anonymize {
		if err := NewAnonymizer(salt).Result(r); err != nil {
			t.Fatal(err)
		}
	}
	out, err := r.Scenario("")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGolden: the example dump gives the checked-in scenarios examples/import/imported.yaml
// and imported-anonymized.yaml (xdslab import with and without --anonymize); both load as
// valid scenarios. Regenerate with go test ./internal/kubedump -run TestGolden -update.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		anonymize bool
	}{{"imported.yaml", false}, {"imported-anonymized.yaml", true}} {
		t.Run(tc.name, func(t *testing.T) {
			got := importBytes(t, readExample(t), tc.anonymize, "")
			path := filepath.Join("../../examples/import", tc.name)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("scenario differs from %s (run with -update if the change is intended):\n%s", path, firstDiff(string(want), string(got)))
			}
			s, err := scenarios.LoadBytes(tc.name, got)
			if err != nil {
				t.Fatalf("the written scenario does not load: %v", err)
			}
			m := s.Topology.Mesh
			if m == nil || len(m.Services) != 11 || m.Endpoints() != 23 || len(m.Objects()) != 11 {
				t.Fatalf("mesh: got %v", s.Summary())
			}
			if s.Topology.Services != 11 || s.Topology.Namespaces != 3 {
				t.Errorf("topology counts: %d services in %d namespaces, want 11 in 3", s.Topology.Services, s.Topology.Namespaces)
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return "(no line differs)"
}

func itoa(i int) string { return strconv.Itoa(i) }

func fmtInt(i int) string { return strconv.Itoa(i) }

// TestConvertCounts checks the conversion against facts of the example dump counted by hand:
// a not-ready endpoint is left out, a named targetPort is resolved, protocols come from
// appProtocol and port names, localities from zones and Nodes' regions, and workloads group
// pods by owner.
func TestConvertCounts(t *testing.T) {
	d, err := Parse(readExample(t))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Convert(d)
	if err != nil {
		t.Fatal(err)
	}
	svc := map[string]scenarios.MeshService{}
	for _, s := range r.Mesh.Services {
		svc[s.Namespace+"/"+s.Name] = s
	}
	count := func(s scenarios.MeshService) int {
		n := 0
		for _, g := range s.Endpoints {
			n += g.Count
		}
		return n
	}
	if _, ok := svc["legacy/mainframe-dns"]; ok {
		t.Error("the ExternalName service was modelled")
	}
	fe := svc["shop/frontend"]
	if count(fe) != 2 {
		t.Errorf("shop/frontend: %d endpoints, want 2 (its third is not ready)", count(fe))
	}
	if p := fe.Ports[0]; p.TargetPort != 8080 || p.Protocol != "HTTP" {
		t.Errorf("shop/frontend port: %+v, want target 8080 (named http) and HTTP (http-web)", p)
	}
	if p := svc["shop/cart"].Ports[0]; p.Protocol != "GRPC" {
		t.Errorf("shop/cart: protocol %s, want GRPC from appProtocol", p.Protocol)
	}
	if p := svc["shop/payments"].Ports; p[0].Protocol != "HTTPS" || p[1].Protocol != "auto" || p[1].Name != "metrics" {
		t.Errorf("shop/payments: ports %+v, want HTTPS and auto named metrics (istiod sniffs it)", p)
	}
	rv := svc["bookinfo/reviews"]
	if count(rv) != 5 {
		t.Errorf("bookinfo/reviews: %d endpoints, want 5", count(rv))
	}
	versions := map[string]int{}
	for _, g := range rv.Endpoints {
		versions[g.Labels["version"]] += g.Count
		if !strings.HasPrefix(g.Locality, "us-east1/us-east1-") {
			t.Errorf("reviews locality %q, want us-east1/us-east1-X", g.Locality)
		}
		if _, ok := g.Labels["pod-template-hash"]; ok {
			t.Error("per-pod label pod-template-hash kept")
		}
	}
	if versions["v1"] != 2 || versions["v2"] != 2 || versions["v3"] != 1 {
		t.Errorf("reviews versions %v, want v1:2 v2:2 v3:1", versions)
	}
	if r.Sidecars != 21 || r.Routers != 2 {
		t.Errorf("proxies: %d sidecars %d routers, want 21 and 2", r.Sidecars, r.Routers)
	}
	sizes := map[string]int{}
	for _, w := range r.Workloads {
		sizes[w.Kind+" "+w.Namespace+"/"+w.Name] = w.Pods
	}
	if sizes["Deployment bookinfo/reviews-v1"] != 2 || sizes["StatefulSet shop/redis"] != 1 || sizes["Deployment shop/frontend"] != 3 {
		t.Errorf("workloads %v", sizes)
	}
	if r.Unmodelled["ConfigMap"] != 1 || len(r.Unmodelled) != 1 || r.Nodes != 3 {
		t.Errorf("unmodelled %v, nodes %d", r.Unmodelled, r.Nodes)
	}
	// The control plane generates RBAC from AuthorizationPolicies: the dump's is carried.
	if !slices.ContainsFunc(r.Configs, func(co *ConfigObject) bool {
		return co.Kind == "AuthorizationPolicy" && co.Namespace == "shop" && co.Name == "payments-allow-checkout"
	}) {
		t.Errorf("the AuthorizationPolicy is not in the config")
	}
}

// TestEndpointsFromPods: without EndpointSlices, a service's endpoints are the ready pods its
// selector matches.
func TestEndpointsFromPods(t *testing.T) {
	dump := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: a}
  spec:
    selector: {app: web}
    ports: [{name: http, port: 80, targetPort: 8080}]
- apiVersion: v1
  kind: Pod
  metadata: {name: web-1, namespace: a, labels: {app: web, version: v1, istio-locality: r1.z1}}
  spec: {containers: [{name: web}, {name: istio-proxy}], serviceAccountName: web}
  status: {podIP: 10.0.0.1, conditions: [{type: Ready, status: "True"}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: web-2, namespace: a, labels: {app: web, version: v1, istio-locality: r1.z1}}
  spec: {containers: [{name: web}]}
  status: {podIP: 10.0.0.2, conditions: [{type: Ready, status: "False"}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: other, namespace: a, labels: {app: other}}
  spec: {containers: [{name: other}]}
  status: {podIP: 10.0.0.3, phase: Running}
`
	d, err := Parse([]File{{Name: "d.yaml", Data: []byte(dump)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Convert(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Mesh.Services) != 1 {
		t.Fatalf("services: %+v", r.Mesh.Services)
	}
	s := r.Mesh.Services[0]
	if len(s.Endpoints) != 1 || s.Endpoints[0].Count != 1 || s.Endpoints[0].Locality != "r1/z1" || s.ServiceAccount != "web" {
		t.Errorf("web: %+v", s)
	}
	if s.Ports[0].Protocol != "HTTP" || s.Ports[0].TargetPort != 8080 {
		t.Errorf("port %+v", s.Ports[0])
	}
}

// TestBadDumps: every malformed dump is an error naming the file, the line and a fix.
func TestBadDumps(t *testing.T) {
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: a}\nspec: {ports: [{port: 80}]}\n"
	for _, tc := range []struct {
		name, dump, want string
	}{
		{"malformed YAML", "apiVersion: v1\nkind: Service\nmetadata: {name: [\n", `d.yaml:\d+: malformed YAML`},
		{"malformed first line", "\t- apiVersion: v1\n  kind: Service\n", `d.yaml:1: malformed YAML: found character that cannot start any token`},
		{"not an object", "- a\n- b\n", `d.yaml:1: expected an object`},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", `d.yaml:1: object without kind`},
		{"no apiVersion", "kind: Service\nmetadata: {name: x}\n", `d.yaml:1: Service: object without apiVersion`},
		{"service without name", "apiVersion: v1\nkind: Service\nmetadata:\n  namespace: a\nspec: {}\n", `d.yaml:3: Service: Service without metadata.name; give it metadata.name`},
		{"no namespace", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n", `d.yaml:3: Service web: Service without metadata.namespace; dump with kubectl get`},
		{"slice of nothing", svc + "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-x\n  namespace: a\naddressType: IPv4\nendpoints: []\n",
			`d.yaml:8: EndpointSlice a/web-x: EndpointSlice references no Service; add the label kubernetes.io/service-name`},
		{"slice of a missing service", svc + "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: api-x\n  namespace: a\n  labels: {kubernetes.io/service-name: api}\naddressType: IPv4\nendpoints: []\n",
			`d.yaml:11: EndpointSlice a/api-x: EndpointSlice references Service a/api, which the dump does not have; add Service a/api`},
		{"duplicate", svc + "---\n" + svc, `d.yaml:6: Service a/web: given twice; keep one of them \(the first is at d.yaml:1\)`},
		{"bad port type", "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: a}\nspec: {ports: [{port: eighty}]}\n", `d.yaml:1: Service a/web: cannot read Service`},
		{"invalid Istio object", "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v, namespace: a}\nspec: {hosts: [web], htp: []}\n", `d.yaml:1: VirtualService a/v: .*htp`},
		{"nothing modelled", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\n", `d.yaml: the dump has no Service and no Istio object`},
		{"list items not a list", "apiVersion: v1\nkind: List\nitems: {a: b}\n", `d.yaml:1: .*items is not a list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]File{{Name: "d.yaml", Data: []byte(tc.dump)}})
			if err == nil {
				_, err = Convert(d)
			}
			if err == nil {
				t.Fatal("no error")
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %T is not Errors: %v", err, err)
			}
			if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("error\n  %v\ndoes not match\n  %s", err, tc.want)
			}
		})
	}
}

// TestIstioProtocol: the protocol Istio gives a port (its ConvertProtocol), from appProtocol or
// the name's prefix; auto where istiod sniffs.
func TestIstioProtocol(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		port corev1.ServicePort
		want string
	}{
		{corev1.ServicePort{Name: "http"}, "HTTP"},
		{corev1.ServicePort{Name: "http2-api"}, "HTTP2"},
		{corev1.ServicePort{Name: "grpc-web"}, "GRPC-Web"},
		{corev1.ServicePort{Name: "grpc-web-ui"}, "GRPC-Web"},
		{corev1.ServicePort{Name: "grpc-api"}, "GRPC"},
		{corev1.ServicePort{Name: "https-admin"}, "HTTPS"},
		{corev1.ServicePort{Name: "tls"}, "TLS"},
		{corev1.ServicePort{Name: "mongo"}, "Mongo"},
		{corev1.ServicePort{Name: "metrics"}, "auto"},
		{corev1.ServicePort{}, "auto"},
		{corev1.ServicePort{Name: "db", Port: 3306}, "TCP"},
		{corev1.ServicePort{Port: 53}, "TCP"},
		{corev1.ServicePort{Name: "HTTP-Web"}, "HTTP"},
		{corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP}, "UDP"},
		{corev1.ServicePort{Name: "udp-x"}, "UDP"},
		{corev1.ServicePort{Name: "web", AppProtocol: str("http")}, "HTTP"},
		{corev1.ServicePort{Name: "http", AppProtocol: str("kubernetes.io/h2c")}, "HTTP2"},
		{corev1.ServicePort{Name: "x", AppProtocol: str("GRPC")}, "GRPC"},
		{corev1.ServicePort{Name: "http", AppProtocol: str("custom.example/proto")}, "auto"},
		{corev1.ServicePort{Name: "http", AppProtocol: str("custom.example/proto"), Port: 27017}, "TCP"},
	} {
		if got := istioProtocol(tc.port); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.port, got, tc.want)
		}
	}
}

// TestTolerant: kinds the lab does not model are counted, not errors; so are Services it
// cannot model (ExternalName, no ports).
func TestTolerant(t *testing.T) {
	dump := `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: a}, spec: {ports: [{name: grpc, port: 9090}]}}
- {apiVersion: v1, kind: Service, metadata: {name: ext, namespace: a}, spec: {type: ExternalName, externalName: x.example}}
- {apiVersion: v1, kind: Service, metadata: {name: none, namespace: a}, spec: {clusterIP: None}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: a}}
- {apiVersion: security.istio.io/v1, kind: AuthorizationPolicy, metadata: {name: p, namespace: a}, spec: {}}
- {apiVersion: networking.istio.io/v1alpha3, kind: EnvoyFilter, metadata: {name: f, namespace: a}, spec: {}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: a}}
- {apiVersion: networking.istio.io/v1, kind: Sidecar, metadata: {name: default, namespace: istio-system}, spec: {egress: [{hosts: [./*]}]}}
- {apiVersion: networking.istio.io/v1, kind: Sidecar, metadata: {name: web, namespace: a}, spec: {workloadSelector: {labels: {app: web}}, egress: [{hosts: [./*]}]}}
`
	d, err := Parse([]File{{Name: "d.yaml", Data: []byte(dump)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Convert(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Mesh.Services) != 1 || r.Mesh.Services[0].Ports[0].Protocol != "GRPC" {
		t.Errorf("services %+v", r.Mesh.Services)
	}
	if got := r.UnmodelledText(); got != "ConfigMap ×1, Deployment ×1, EnvoyFilter ×1" {
		t.Errorf("unmodelled: %s", got)
	}
	if len(r.Notes) != 3 || !strings.Contains(r.Notes[0], "Sidecar a/web selects workloads") {
		t.Errorf("notes %q, want the workload Sidecar, ExternalName and no-ports", r.Notes)
	}
	out, err := r.Scenario("t")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("# Not modelled (counted, left out): ConfigMap ×1, Deployment ×1, EnvoyFilter ×1")) {
		t.Errorf("scenario lacks the unmodelled comment:\n%s", out)
	}
	if _, err := scenarios.LoadBytes("t.yaml", out); err != nil {
		t.Fatal(err)
	}
}

// TestAnonymize: deterministic for one salt, different for another, keeps no name, host,
// locality or address of the dump, and the result still loads (its references resolve: the
// config passes the control plane's decoder, which checks subsets and gateways).
func TestAnonymize(t *testing.T) {
	files := readExample(t)
	a := importBytes(t, files, true, "")
	b := importBytes(t, files, true, "")
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same salt differ")
	}
	c := importBytes(t, files, true, "my-secret")
	if bytes.Equal(a, c) {
		t.Fatal("another salt gives the same output")
	}
	for _, secret := range []string{"bookinfo", "reviews", "ratings", "productpage", "frontend", "payments", "checkout",
		"shop", "legacy", "mainframe", "us-east1", "192.168.10.", "public-gw", "frontend-shop-cert", "stripe", "cluster.yaml"} {
		if bytes.Contains(a, []byte(secret)) {
			t.Errorf("anonymized scenario contains %q", secret)
		}
	}
	for _, out := range [][]byte{a, c} {
		if _, err := scenarios.LoadBytes("anon.yaml", out); err != nil {
			t.Fatalf("anonymized scenario does not load: %v", err)
		}
	}
}

// TestAnonymizeConsistent: a name maps to one hash wherever it appears, so references resolve.
func TestAnonymizeConsistent(t *testing.T) {
	an := NewAnonymizer("")
	an.Namespace("shop")
	svc, ns := an.Service("cart"), an.Namespace("shop")
	for host, want := range map[string]string{
		"cart":                          svc,
		"cart.shop":                     svc + "." + ns,
		"cart.shop.svc.cluster.local":   svc + "." + ns + ".svc.cluster.local",
		"*.shop.svc.cluster.local":      "*." + ns + ".svc.cluster.local",
		"*":                             "*",
		"istio-system/*":                "istio-system/*",
		"./cart.shop.svc.cluster.local": "./" + svc + "." + ns + ".svc.cluster.local",
	} {
		if got := an.nsHost(host); got != want {
			t.Errorf("host %q: got %q, want %q", host, got, want)
		}
	}
	wild, api := an.Host("*.payments.example.com"), an.Host("api.payments.example.com")
	if !strings.HasPrefix(wild, "*.") || !strings.HasSuffix(api, wild[1:]) || !strings.HasSuffix(api, ".com") || strings.Contains(api, "payments") {
		t.Errorf("external hosts %s and %s: the wildcard no longer covers the host, or a label leaked", wild, api)
	}
	if an.Labels(map[string]string{"app": "cart"})["app"] != svc {
		t.Error("label app: cart is not the service's hash")
	}
	if got := an.Locality("r1/z1"); !strings.HasPrefix(got, an.Locality("r1/z2")[:strings.Index(got, "/")]) {
		t.Errorf("zones of one region lost their region: %s vs %s", got, an.Locality("r1/z2"))
	}
}

// TestAnonymizeAddresses: prefix-preserving: addresses sharing n leading bits still do, a CIDR
// keeps its length with its host bits cleared, and the mapping is one-to-one.
func TestAnonymizeAddresses(t *testing.T) {
	an := NewAnonymizer("")
	a, b, c := an.Address("192.168.10.5"), an.Address("192.168.10.77"), an.Address("192.168.11.5")
	cidr := an.Address("192.168.10.0/24")
	if a == "192.168.10.5" || a == b {
		t.Fatalf("addresses not rewritten: %s %s", a, b)
	}
	prefix := func(s string, n int) string { return strings.Join(strings.Split(s, ".")[:n], ".") }
	if prefix(a, 3) != prefix(b, 3) {
		t.Errorf("%s and %s share a /24 before, not after", a, b)
	}
	if prefix(a, 2) != prefix(c, 2) || prefix(a, 3) == prefix(c, 3) {
		t.Errorf("%s and %s: /16 not kept or /24 merged", a, c)
	}
	if cidr != prefix(a, 3)+".0/24" {
		t.Errorf("CIDR %s, want %s.0/24 (the /24 of %s)", cidr, prefix(a, 3), a)
	}
	seen := map[string]bool{}
	for i := range 256 {
		out := an.Address("10.0.0." + fmtInt(i))
		if seen[out] {
			t.Fatalf("two addresses map to %s", out)
		}
		seen[out] = true
	}
	if got := an.Address("127.0.0.1"); got != "127.0.0.1" {
		t.Errorf("loopback rewritten to %s", got)
	}
}

// TestAuthorizationPolicyCarried: an AuthorizationPolicy goes into topology.mesh.config (the
// control plane generates RBAC from it), the scenario loads, and anonymized its principals,
// namespaces, addresses and conditions name the same mesh as the rest.
func TestAuthorizationPolicyCarried(t *testing.T) {
	dump := `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: pay, namespace: shop}, spec: {ports: [{name: http, port: 80}]}}
- apiVersion: security.istio.io/v1
  kind: AuthorizationPolicy
  metadata: {name: pay-allow, namespace: shop}
  spec:
    action: ALLOW
    selector: {matchLabels: {app: pay}}
    rules:
    - from:
      - source: {principals: [cluster.local/ns/shop/sa/checkout, cluster.local/ns/front/sa/*], namespaces: [front, team-*], notNamespaces: [legacy], ipBlocks: [10.1.2.0/24]}
      to:
      - operation: {methods: [GET], paths: [/pay/*]}
      when:
      - {key: source.namespace, values: [front]}
      - {key: 'request.headers[x-team]', values: [payments]}
`
	d, err := Parse([]File{{Name: "d.yaml", Data: []byte(dump)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Convert(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Unmodelled) != 0 || len(r.Configs) != 1 || r.Configs[0].Kind != "AuthorizationPolicy" {
		t.Fatalf("unmodelled %v, configs %d", r.Unmodelled, len(r.Configs))
	}
	out, err := r.Scenario("t")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.LoadBytes("t.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if objs := s.Topology.Mesh.Objects(); len(objs) != 1 || objs[0].Kind != "AuthorizationPolicy" {
		t.Fatalf("mesh config objects %v", objs)
	}

	a := NewAnonymizer("")
	if err := a.Result(r); err != nil {
		t.Fatal(err)
	}
	out, err = r.Scenario("t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.LoadBytes("t.yaml", out); err != nil {
		t.Fatalf("anonymized: %v\n%s", err, out)
	}
	text := string(out)
	for _, leak := range []string{"shop", "checkout", "front", "legacy", "10.1.2.0"} {
		if strings.Contains(text, leak) {
			t.Errorf("anonymized scenario still names %q:\n%s", leak, text)
		}
	}
	shop, front := a.Namespace("shop"), a.Namespace("front")
	for _, want := range []string{"cluster.local/ns/" + shop + "/sa/" + a.account("checkout"), "cluster.local/ns/" + front + "/sa/*",
		"- " + front, "- " + a.Namespace("team-") + "*", "request.headers[x-team]", "payments", "/pay/*"} {
		if !strings.Contains(text, want) {
			t.Errorf("anonymized scenario lacks %q:\n%s", want, text)
		}
	}
}

// TestFQDNEndpointsCounted: endpoints of FQDN EndpointSlices (DNS names) are not modelled, and
// say so — counted on the console and in the header, the service named in a note — instead of
// vanishing.
func TestFQDNEndpointsCounted(t *testing.T) {
	dump := `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: ext, namespace: a}, spec: {ports: [{name: http, port: 80}]}}
- {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: ext-1, namespace: a, labels: {kubernetes.io/service-name: ext}}, addressType: FQDN, endpoints: [{addresses: [db.example.com]}, {addresses: [db2.example.com], conditions: {ready: false}}], ports: [{name: http, port: 80}]}
- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: a}, spec: {ports: [{name: http, port: 80}]}}
- {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: web-1, namespace: a, labels: {kubernetes.io/service-name: web}}, addressType: IPv4, endpoints: [{addresses: [10.0.0.1]}], ports: [{name: http, port: 80}]}
- {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: web-2, namespace: a, labels: {kubernetes.io/service-name: web}}, addressType: FQDN, endpoints: [{addresses: [web.example.com]}], ports: [{name: http, port: 80}]}
`
	d, err := Parse([]File{{Name: "d.yaml", Data: []byte(dump)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Convert(d)
	if err != nil {
		t.Fatal(err)
	}
	if r.FQDNEndpoints != 2 || r.Mesh.Endpoints() != 1 {
		t.Errorf("FQDN endpoints %d, endpoints %d; want 2 and 1", r.FQDNEndpoints, r.Mesh.Endpoints())
	}
	if sum := strings.Join(r.Summary(), "\n"); !strings.Contains(sum, "not modelled (counted, left out): 2 ready endpoint(s) of EndpointSlices with addressType FQDN") ||
		!strings.Contains(sum, "Service a/ext: 1 ready endpoint(s)") || !strings.Contains(sum, "Service a/web: 1 ready endpoint(s)") {
		t.Errorf("summary does not count and name them:\n%s", sum)
	}
	if err := NewAnonymizer("").Result(r); err != nil {
		t.Fatal(err)
	}
	out, err := r.Scenario("t")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("# Not modelled (counted, left out): 2 ready endpoint(s) of EndpointSlices with addressType FQDN")) {
		t.Errorf("the anonymized header lost the count:\n%s", out)
	}
}

// TestAnonymizePortNames: a port of an Istio object is named by its protocol and number, and
// port-NUMBER without a protocol (before, "<nil>-80", which no object may be named).
func TestAnonymizePortNames(t *testing.T) {
	an := NewAnonymizer("")
	out, err := an.value("", map[string]any{"ports": []any{
		map[string]any{"number": 80, "name": "web-frontend"},
		map[string]any{"number": 81, "name": "http-orders", "protocol": "HTTP"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ports := out.(map[string]any)["ports"].([]any)
	if a, b := ports[0].(map[string]any)["name"], ports[1].(map[string]any)["name"]; a != "port-80" || b != "http-81" {
		t.Errorf("port names %v and %v, want port-80 and http-81", a, b)
	}
}
