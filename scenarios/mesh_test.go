package scenarios

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const meshScenario = `name: m
topology:
  mesh:
    services:
      - name: reviews
        namespace: bookinfo
        ports: [{number: 9080, protocol: http}]
        endpoints:
          - {count: 2, locality: r/z1, labels: {app: reviews, version: v1}}
          - {count: 1, locality: r/z2, labels: {app: reviews, version: v2}}
      - {name: db, namespace: data, serviceAccount: db, ports: [{number: 5432, protocol: TCP, name: pg, targetPort: 15432}]}
    config: |
      apiVersion: networking.istio.io/v1
      kind: DestinationRule
      metadata: {name: reviews, namespace: bookinfo}
      spec:
        host: reviews.bookinfo.svc.cluster.local
        subsets: [{name: v1, labels: {version: v1}}]
`

// TestMeshLoads: a mesh fills its defaults, sets the topology's counts and round-trips through
// --print and JSON.
func TestMeshLoads(t *testing.T) {
	s, err := LoadBytes("m.yaml", []byte(meshScenario))
	if err != nil {
		t.Fatal(err)
	}
	m := s.Topology.Mesh
	if s.Topology.Services != 2 || s.Topology.Namespaces != 2 || m.Endpoints() != 3 {
		t.Errorf("counts: %d services %d namespaces %d endpoints", s.Topology.Services, s.Topology.Namespaces, m.Endpoints())
	}
	p := m.Services[0].Ports[0]
	if p.Protocol != "HTTP" || p.Name != "http-9080" || p.TargetPort != 9080 || m.Services[0].ServiceAccount != "default" {
		t.Errorf("defaults: %+v, account %q", p, m.Services[0].ServiceAccount)
	}
	if objs := m.Objects(); len(objs) != 1 || objs[0].Kind != "DestinationRule" {
		t.Errorf("objects %v", objs)
	}
	if !strings.Contains(s.Summary(), "explicit mesh (topology.mesh): 2 services in 2 namespaces, 3 endpoints in 2 localities, 1 Istio objects") {
		t.Errorf("summary:\n%s", s.Summary())
	}
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadBytes("printed.yaml", y)
	if err != nil {
		t.Fatalf("printed mesh does not reload: %v\n%s", err, y)
	}
	if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
		t.Fatalf("round trip: %s", diff)
	}
	j, _ := json.Marshal(s)
	if back, err = LoadBytes("printed.json", j); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
		t.Fatalf("JSON round trip: %s", diff)
	}
}

// TestMeshErrors: each problem of a mesh is reported at its line with a fix; an error in the
// config names the line of the scenario file where the object is written.
func TestMeshErrors(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"protocol", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 80, protocol: htp}]}]\n",
			`m.yaml:4:\d+: topology.mesh.services\[0\].ports\[0\].protocol: unknown protocol "htp"; did you mean "HTTP"`},
		{"auto named http", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 8080, protocol: auto, name: http-web}]}]\n",
			`m.yaml:4:\d+: topology.mesh.services\[0\].ports\[0\].protocol: auto, but Istio takes port 8080 named "http-web" as HTTP; write protocol HTTP, or name the port port-8080`},
		{"auto well-known", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 3306, protocol: AUTO}]}]\n",
			`protocol: auto, but Istio takes port 3306 named "port-3306" as TCP; write protocol TCP`},
		{"no ports", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n}]\n",
			`m.yaml:4:\d+: topology.mesh.services\[0\].ports: a service needs at least one port`},
		{"duplicate", "name: m\ntopology:\n  mesh:\n    services:\n      - {name: a, namespace: n, ports: [{number: 80, protocol: TCP}]}\n      - {name: a, namespace: n, ports: [{number: 80, protocol: TCP}]}\n",
			`m.yaml:6:\d+: topology.mesh.services\[1\].name: service n/a given twice`},
		{"bad name", "name: m\ntopology:\n  mesh:\n    services: [{name: A_b, namespace: n, ports: [{number: 80, protocol: TCP}]}]\n",
			`topology.mesh.services\[0\].name: invalid service name "A_b"`},
		{"port range", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 70000, protocol: TCP}]}]\n",
			`invalid port number 70000`},
		{"negative count", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 80, protocol: TCP}], endpoints: [{count: -1}]}]\n",
			`endpoints\[0\].count: must be >= 0`},
		{"config-change", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 80, protocol: HTTP}]}]\nchurn: [{kind: config-change, rate: 1/s}]\n",
			`churn\[0\].kind: config-change rewrites synthetic`},
		{"sidecar scoping", "name: m\ntopology:\n  sidecarScoping: true\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 80, protocol: HTTP}]}]\n",
			`m.yaml:3:\d+: topology.sidecarScoping: sidecarScoping synthesizes Sidecars`},
		{"config field", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 80, protocol: HTTP}]}]\n    config: |\n      apiVersion: networking.istio.io/v1\n      kind: VirtualService\n      metadata: {name: v, namespace: ns1}\n      spec:\n        hosts: [a]\n        htp: []\n",
			`m.yaml:11: topology.mesh.config: VirtualService ns1/v: .*htp`},
		{"config kind", "name: m\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 80, protocol: HTTP}]}]\n    config: |\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: c, namespace: n}\n",
			`m.yaml:6: topology.mesh.config: v1 ConfigMap( \S+)?: not a kind the lab writes`},
		{"kube sink", "name: m\nsink: {kind: kube}\ntopology:\n  mesh:\n    services: [{name: a, namespace: ns1, ports: [{number: 80, protocol: HTTP}]}]\n    config: |\n      apiVersion: security.istio.io/v1\n      kind: PeerAuthentication\n      metadata: {name: default, namespace: istio-system}\n      spec: {mtls: {mode: STRICT}}\n",
			`topology.mesh.config: PeerAuthentication istio-system/default: the kube sink cannot write it`},
		{"kube sink, authz", "name: m\nsink: {kind: kube}\ntopology:\n  mesh:\n    services: [{name: a, namespace: ns1, ports: [{number: 80, protocol: HTTP}]}]\n    config: |\n      apiVersion: security.istio.io/v1\n      kind: AuthorizationPolicy\n      metadata: {name: p, namespace: ns1}\n      spec: {action: DENY, rules: [{from: [{source: {namespaces: [x]}}]}]}\n",
			`topology.mesh.config: AuthorizationPolicy ns1/p: the kube sink cannot write it; use sink kind dir or mcp`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("m.yaml", []byte(tc.file))
			if err == nil {
				t.Fatal("no error")
			}
			if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("error\n  %v\ndoes not match\n  %s", err, tc.want)
			}
		})
	}
}

// TestMeshAutoProtocol: a port of protocol auto (any case) is named port-NUMBER (its own name
// kept) and round-trips.
func TestMeshAutoProtocol(t *testing.T) {
	const file = "name: m\ntopology:\n  mesh:\n    services:\n      - {name: a, namespace: n, ports: [{number: 8080, protocol: Auto}, {number: 9090, protocol: auto, name: web}, {number: 80, protocol: HTTP}]}\n"
	s, err := LoadBytes("m.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	ps := s.Topology.Mesh.Services[0].Ports
	if ps[0].Protocol != ProtocolAuto || ps[0].Name != "port-8080" || ps[1].Name != "web" {
		t.Errorf("ports %+v", ps)
	}
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := LoadBytes("printed.yaml", y); err != nil {
		t.Fatalf("printed mesh does not reload: %v\n%s", err, y)
	} else if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
		t.Fatalf("round trip: %s", diff)
	}
}
