package scenarios

import "testing"

// The counterparts of the file-only rejections (TestMalformed) load: each field with what
// gives it effect, a 0 where 0 means something, the kinds a replay may produce, and the
// consistent client settings. A scenario varied in Go or by Set is not held to the
// file-only rules.
func TestWrittenFieldsWithEffect(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"gateway hosts", "name: x\ntopology: {gateways: {count: 2, hostsPerGateway: 3, tlsPassthrough: true}}\n"},
		{"authz weights", "name: x\ntopology: {authorizationPolicies: {perNamespace: 2, allow: 3}}\n"},
		{"imports with scoping", "name: x\ntopology: {namespaces: 2, sidecarScoping: true, sidecarImports: 50}\n"},
		{"imports at the default", "name: x\ntopology: {sidecarImports: 2}\n"},
		{"adaptive", "name: x\ncontrolPlane: {debounce: {policy: adaptive, adaptive: {maxQuiet: 500ms}}}\n"},
		{"empty adaptive", "name: x\ncontrolPlane: {debounce: {policy: fixed, adaptive: {}}}\n"},
		{"jitter with every", "name: x\nclients: [{churn: {every: 30s, jitter: 0.5}}]\n"},
		{"ack timeout with flow control", "name: x\ncontrolPlane: {flowControl: {enabled: true, ackTimeout: 2s}}\n"},
		{"ack timeout at the default", "name: x\ncontrolPlane: {flowControl: {enabled: false, ackTimeout: 5s}}\n"},
		{"zone down 0", "name: x\nchurn: [{kind: zone-failure, at: [1s], down: 0s}]\n"},
		{"empty services", "name: x\nchurn: [{kind: service-create, rate: 1/s, services: }]\n"},
		{"proxyless grpc", "name: x\nclients: [{name: a, xds: grpc}, {name: b, xds: grpc, type: grpc}, {name: c, type: router, xds: delta}]\n"},
		{"kind churned", "name: x\nchurn: [{kind: scale, rate: 1/s}]\nthresholds: {'xdslab_sim_events_total{kind:scale}': ['count>0']}\n"},
		{"kind of a replay", "name: x\nchurn: [{kind: replay, file: t.jsonl}]\nthresholds: {'xdslab_push_latency_seconds{kind:endpoint-flap}': ['p(99)<1s']}\n"},
		{"tagged cpu", "name: x\nthresholds: {'xdslab_cpu_seconds{side:controlplane}': ['value<100s']}\n"},
		{"most services", "name: x\ntopology: {services: 1000000}\n"},
		{"churn on created services", "name: x\ntopology: {services: 0}\nchurn: [{kind: service-create, rate: 1/s}, {kind: endpoint-flap, rate: 5/s}, {kind: config-change, rate: 1/s}]\n"},
		{"authz churn without services", "name: x\ntopology: {services: 0, authorizationPolicies: {perNamespace: 2}}\nchurn: [{kind: config-change, target: authz, rate: 1/s}]\n"},
		{"sds with secrets over ads", "name: x\ntopology:\n  mesh:\n    services: [{name: a, namespace: n, ports: [{number: 80, protocol: HTTP}], endpoints: [{count: 1}]}]\n    config: |\n      apiVersion: security.istio.io/v1\n      kind: PeerAuthentication\n      metadata: {name: default, namespace: istio-system}\n      spec: {mtls: {mode: STRICT}}\nclients: [{auth: {mtls: true}}]\nthresholds: {'xdslab_fleet_nacks_total{type:SDS}': ['count==0'], 'xdslab_cp_responses_total{type:sds}': ['count>0']}\n"},
		{"sds of a replay", "name: x\nchurn: [{kind: replay, file: t.jsonl}]\nthresholds: {'xdslab_fleet_nacks_total{type:SDS}': ['count==0']}\n"},
		{"endpoints scaled up", "name: x\ntopology: {endpointsPerService: 0}\nchurn: [{kind: scale, rate: 1/s}, {kind: endpoint-flap, rate: 5/s}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadBytes("ok.yaml", []byte(tc.yaml)); err != nil {
				t.Fatal(err)
			}
		})
	}

	s, err := LoadBytes("ok.yaml", []byte("name: x\nclients: [{type: router}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("clients[0].xds", "grpc"); err != nil {
		t.Errorf("Set xds=grpc on a router group: %v", err)
	}
	s.Clients[0].Churn.Jitter = 0
	if err := s.Validate(); err != nil {
		t.Errorf("a scenario varied in Go: %v", err)
	}
}
