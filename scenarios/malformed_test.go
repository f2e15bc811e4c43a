package scenarios

import (
	"errors"
	"strings"
	"testing"
)

// Every malformed case names its line (and column when it is a node's), what is wrong and the
// fix. Each YAML starts on line 1.
func TestMalformed(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		line, col int    // 0 col: not checked
		path      string // "" not checked
		msg, fix  string // substrings
	}{
		// Unknown keys, with the nearest valid key.
		{"unknown top-level key", "name: x\nduraton: 5s\n", 2, 1, "", `unknown field "duraton"`, `did you mean "duration"?`},
		{"unknown nested key", "name: x\ncontrolPlane:\n  debounce:\n    minQuite: 1s\n", 4, 5, "controlPlane.debounce", `unknown field "minQuite"`, `did you mean "minQuiet"?`},
		{"wrong case", "name: x\ncontrolplane: {}\n", 2, 1, "", `unknown field "controlplane"`, `did you mean "controlPlane"?`},
		{"key in the wrong section", "name: x\ncontrolPlane:\n  minQuiet: 1s\n", 3, 3, "controlPlane", `unknown field "minQuiet"`, `belongs under controlPlane.debounce`},
		{"unknown key far from any", "name: x\ntopology: {zzzzzzzzzz: 1}\n", 2, 12, "topology", `unknown field "zzzzzzzzzz"`, "valid keys at topology: namespaces"},
		{"unknown client key", "name: x\nclients:\n  - count: 1\n    ackdelay: 5ms\n", 4, 5, "clients[0]", `unknown field "ackdelay"`, `did you mean "ackDelay"?`},
		{"unknown dist key", "name: x\ntopology: {endpointsPerService: {dist: exp, mena: 3}}\n", 2, 45, "topology.endpointsPerService", `unknown distribution field "mena"`, `did you mean "mean"?`},
		{"duplicate key", "name: x\nseed: 1\nseed: 2\n", 3, 1, "", `key "seed" given twice`, "first is at line 2"},
		// A key that only holds an anchor says where an anchor can go.
		{"anchor on a free key", "name: x\nbase: &base {count: 5}\nclients:\n  - <<: *base\n    name: a\n", 2, 1, "", `unknown field "base"`, "put &base on the first value that uses it"},
		// A key given twice leaves its siblings checked.
		{"sibling of a duplicate key", "name: x\nthresholds:\n  xdslab_fleet_nacks_total: ['count==0']\n  xdslab_fleet_nacks_total: ['count==1']\n  xdslab_nope_total: ['count==0']\n", 5, 22, "thresholds.xdslab_nope_total", `unknown metric "xdslab_nope_total"`, "write one of the metrics"},
		{"the kept value of a duplicate key", "name: x\nthresholds:\n  xdslab_fleet_nacks_total: ['avg<1']\n  xdslab_fleet_nacks_total: ['count==1']\n", 3, 30, "thresholds.xdslab_fleet_nacks_total[0]", "is a counter; avg does not apply", "count"},
		{"sibling of a duplicate field", "name: x\nseed: 1\nseed: 2\nduration: 5\n", 4, 11, "duration", `duration "5" has no unit`, "5s"},

		// Wrong types.
		{"string for int", "name: x\ntopology: {services: many}\n", 2, 22, "topology.services", `expected a number, got the string "many"`, "write a number"},
		{"quoted number", "name: x\ntopology: {services: \"10\"}\n", 2, 22, "topology.services", "expected a number", "remove the quotes"},
		{"fractional int", "name: x\ntopology: {services: 1.5}\n", 2, 22, "topology.services", "expected a whole number", "whole number"},
		{"int overflow", "name: x\ntopology: {services: 99999999999999999999}\n", 2, 22, "topology.services", "out of range", "smaller"},
		{"negative seed", "name: x\nseed: -1\n", 2, 7, "seed", "out of range", ">= 0"},
		{"number for string", "name: 123\n", 1, 7, "name", "expected a string, got the number 123", `quote it: "123"`},
		{"list for mapping", "name: x\ncontrolPlane: [1, 2]\n", 2, 15, "controlPlane", "expected a mapping, got a list", "write a mapping of debounce"},
		{"mapping for list", "name: x\nchurn: {kind: scale}\n", 2, 8, "churn", "expected a list, got a mapping", "write a list"},
		{"yes for bool", "name: x\ntopology: {sidecarScoping: yes}\n", 2, 28, "topology.sidecarScoping", `expected true or false, got the string "yes"`, "true or false"},
		{"nan", "name: x\ntopology: {virtualServices: .nan}\n", 2, 29, "topology.virtualServices", "invalid number", "finite"},
		{"not a mapping at all", "- a\n- b\n", 1, 1, "", "expected a mapping, got a list", "write a mapping of name"},
		{"complex key", "name: x\n? [a]\n: 1\n", 2, 3, "", "a key must be a name", "plain name"},

		// Units.
		{"duration without unit", "name: x\nduration: 30\n", 2, 11, "duration", `duration "30" has no unit`, "30s"},
		{"bad duration", "name: x\nduration: soon\n", 2, 11, "duration", `invalid duration "soon"`, `"250ms"`},
		{"negative duration", "name: x\nphases: {drain: {timeout: -5s}}\n", 2, 27, "phases.drain.timeout", "negative duration -5s", ">= 0, e.g. 5s"},
		{"zero duration", "name: x\nduration: 0s\n", 2, 11, "duration", "must be > 0", "> 0"},
		{"bad rate unit", "name: x\nchurn: [{kind: scale, rate: 5/d}]\n", 2, 29, "churn[0].rate", `unknown unit "d"`, `"20/s"`},
		{"bad rate", "name: x\nchurn: [{kind: scale, rate: fast}]\n", 2, 29, "churn[0].rate", `invalid rate "fast"`, `"20/s"`},
		{"negative rate", "name: x\nchurn: [{kind: scale, rate: -5/s}]\n", 2, 29, "churn[0].rate", "negative rate -5/s", "rate > 0"},
		{"too many events by rate", "name: x\nduration: 3s\nchurn: [{kind: endpoint-flap, rate: 1e9/s}]\n", 3, 37, "churn[0].rate", "schedules about 3e+09 events", "at most 5000000 events"},
		{"too many events by every", "name: x\nduration: 10s\nchurn: [{kind: endpoint-flap, every: 1us}]\n", 3, 38, "churn[0].every", "schedules about 1e+07 events", "raise every"},
		{"too many events in all", "name: x\nduration: 100s\nchurn: [{kind: endpoint-flap, rate: 30000/s}, {kind: scale, rate: 30000/s}]\n", 3, 8, "churn", "the churn schedules about 6e+06 events", "at most 5000000 events in all"},
		{"negative ramp", "name: x\nclients: [{ramp: -1/s}]\n", 2, 18, "clients[0].ramp", "negative rate", ">= 0"},
		// A count the fleet cannot hold is an error, not an out-of-memory crash at the connect phase.
		// A latency threshold without churn would fail with no data at the end of the run.
		{"latency threshold without churn", "name: x\nthresholds:\n  xdslab_push_latency_seconds: ['p(99)<1s']\n", 3, 32, "thresholds.xdslab_push_latency_seconds", "never measured: the scenario has no churn", "add churn"},
		{"ratio bound as a percentage", "name: x\nthresholds:\n  xdslab_cache_hit_ratio{type:eds}: ['rate>90']\n", 3, 38, "thresholds.xdslab_cache_hit_ratio{type:eds}[0]", "outside 0..1", "write 90% or 0.9"},
		// A proxyless gRPC client does not drain: a listenerDrain written on one is a no-op.
		{"listenerDrain on grpc", "name: x\nclients: [{xds: grpc, listenerDrain: 10s}]\n", 2, 38, "clients[0].listenerDrain", "has no effect: proxyless gRPC clients (xds grpc) do not drain", "remove listenerDrain"},
		// A "-" with nothing after it is not a group of 100 default clients.
		{"empty client entry", "name: x\nclients:\n  -\n  - {name: a}\n", 3, 4, "clients[0]", "empty list entry", "remove the empty entry"},
		{"empty offset", "name: x\nchurn: [{kind: scale, at: [1s, ~]}]\n", 2, 32, "churn[0].at[1]", "empty list entry", "remove the empty entry"},
		{"huge client count", "name: x\nclients: [{count: 999999999999}]\n", 2, 19, "clients[0].count", "must be within 1..1000000, got 999999999999", "use 1 to 1000000"},
		{"clients in all past the limit", "name: x\nclients: [{name: a, count: 600000}, {name: b, count: 600000}]\n", 2, 10, "clients", "the groups hold 1200000 clients together", "at most 1000000 clients in all groups"},
		{"auth both", "name: x\nclients:\n  - auth: {mtls: true, jwt: true}\n", 3, 0, "clients[0].auth", "choose one credential", "not both"},
		{"auth jwt without key", "name: x\nclients:\n  - auth: {jwt: true, issuer: i, audience: a}\n", 3, 0, "clients[0].auth.jwtKey", "jwt needs jwtKey", "set it"},
		{"auth settings without credential", "name: x\nclients:\n  - auth: {caDir: /ca}\n", 3, 0, "clients[0].auth", "auth settings without a credential", "add mtls: true"},
		{"auth on grpc", "name: x\nclients:\n  - xds: grpc\n    auth: {mtls: true}\n", 4, 0, "clients[0].auth", "proxyless gRPC clients do not authenticate", "remove auth"},
		{"targets without grpc", "name: x\nclients:\n  - targets: [a.b:80]\n", 3, 0, "clients[0].targets", `targets given for xds "sotw"`, "set xds: grpc"},
		{"target without port", "name: x\nclients:\n  - xds: grpc\n    targets: [svc.ns.svc.cluster.local]\n", 4, 0, "clients[0].targets[0]", `invalid target "svc.ns.svc.cluster.local"`, "write host:port"},
		{"negative admission", "name: x\ncontrolPlane: {admissionRate: -3}\n", 2, 31, "controlPlane.admissionRate", "negative rate", ">= 0"},

		// Churn.
		{"unknown churn kind", "name: x\nchurn:\n  - kind: endpoint-flip\n    rate: 1/s\n", 3, 11, "churn[0].kind", `unknown churn kind "endpoint-flip"`, `did you mean "endpoint-flap"?`},
		{"missing kind", "name: x\nchurn: [{rate: 1/s}]\n", 2, 9, "churn[0].kind", "kind is required", "add kind"},
		{"no timing", "name: x\nchurn: [{kind: scale}]\n", 2, 9, "churn[0]", "scale has no timing", "exactly one of rate"},
		{"two timings", "name: x\nchurn: [{kind: scale, rate: 1/s, every: 5s}]\n", 2, 9, "churn[0]", "more than one timing", "exactly one of"},
		{"replay with timing", "name: x\nchurn: [{kind: replay, file: t.jsonl, rate: 1/s}]\n", 2, 9, "churn[0]", "replay has its own timing", "remove rate"},
		{"replay without file", "name: x\nchurn: [{kind: replay}]\n", 2, 9, "churn[0].file", "replay needs a file", "add file"},
		{"field of another kind", "name: x\nchurn: [{kind: endpoint-flap, rate: 1/s, services: 3}]\n", 2, 52, "churn[0].services", "services does not apply to kind endpoint-flap", "services applies to scale, rolling-deploy"},
		{"at past the end", "name: x\nduration: 10s\nchurn: [{kind: zone-failure, at: [5s, 20s]}]\n", 3, 39, "churn[0].at[1]", "after the end of the measure phase", "within duration (10s)"},
		{"at is not a list", "name: x\nchurn: [{kind: zone-failure, at: 5s}]\n", 2, 34, "churn[0].at", "expected a list", "write a list"},
		{"stop before start", "name: x\nchurn: [{kind: scale, rate: 1/s, start: 10s, stop: 5s}]\n", 2, 52, "churn[0].stop", "not after start", "later than start"},
		{"zone fraction", "name: x\nchurn: [{kind: zone-failure, at: [1s], fraction: 1.5}]\n", 2, 50, "churn[0].fraction", "within (0, 1]", "(0, 1]"},
		{"config target", "name: x\nchurn: [{kind: config-change, rate: 1/s, target: virtualservices}]\n", 2, 50, "churn[0].target", `unknown target "virtualservices"`, `did you mean "virtualservice"?`},
		{"config target authz typo", "name: x\nchurn: [{kind: config-change, rate: 1/s, target: auth}]\n", 2, 50, "churn[0].target", `unknown target "auth"`, `did you mean "authz"?`},
		{"target authz without policies", "name: x\nchurn: [{kind: config-change, rate: 1/s, target: authz}]\n", 2, 50, "churn[0].target", "the topology has none", "perNamespace: N"},
		{"negative authz policies", "name: x\ntopology:\n  authorizationPolicies: {perNamespace: -2}\n", 3, 41, "topology.authorizationPolicies.perNamespace", "must be within 0..1000, got -2", "use 0 to 1000"},
		{"negative authz weight", "name: x\ntopology:\n  authorizationPolicies: {perNamespace: 2, deny: -1}\n", 3, 0, "topology.authorizationPolicies", "weights must be >= 0", "both 0: 0.7 and 0.3"},
		{"authz on kube sink", "name: x\nsink: {kind: kube}\ntopology:\n  authorizationPolicies: {perNamespace: 2}\n", 4, 0, "topology.authorizationPolicies", "the kube sink cannot write AuthorizationPolicies", "use sink kind dir or mcp"},
		{"virtualservice without http", "name: x\ntopology: {protocols: {tcp: 1}}\nchurn: [{kind: config-change, rate: 1/s, target: virtualservice}]\n", 3, 50, "churn[0].target", "has neither", "target destinationrule"},
		{"down on the wrong kind", "name: x\nchurn: [{kind: scale, rate: 1/s, down: 1s}]\n", 2, 40, "churn[0].down", "down does not apply to kind scale", "endpoint-flap and zone-failure"},
		{"one service account", "name: x\ntopology: {serviceAccountsPerNamespace: 1}\nchurn: [{kind: service-account-change, every: 5s}]\n", 3, 16, "churn[0].kind", "needs a second service account", ">= 2"},
		{"too many versions", "name: x\ntopology: {versions: 101}\n", 2, 22, "topology.versions", "within 1..100", "1 to 100"},
		{"zero scale delta", "name: x\nchurn: [{kind: scale, rate: 1/s, delta: 0}]\n", 2, 41, "churn[0].delta", "constant 0 is below 1", ">= 1"},
		{"rolling services", "name: x\nchurn: [{kind: rolling-deploy, every: 5s, services: -1}]\n", 2, 53, "churn[0].services", "must be >= 1", ">= 1"},

		// Distributions.
		{"unknown dist", "name: x\ntopology: {endpointsPerService: {dist: lognormall, median: 3}}\n", 2, 40, "topology.endpointsPerService.dist", `unknown distribution "lognormall"`, `did you mean "lognormal"?`},
		{"param of another dist", "name: x\ntopology: {endpointsPerService: {dist: exp, median: 3}}\n", 2, 53, "topology.endpointsPerService.median", "median does not apply to dist exp", "reads mean, min, max"},
		{"invalid dist params", "name: x\ntopology: {endpointsPerService: {dist: lognormal, median: 0, sigma: 1}}\n", 2, 33, "topology.endpointsPerService", "needs median > 0", "median > 0"},
		{"dist without name", "name: x\nclients: [{ackDelay: {mean: 5ms}}]\n", 2, 29, "clients[0].ackDelay.mean", "mean does not apply to dist constant", "reads value"},
		{"duration in a count dist", "name: x\ntopology: {endpointsPerService: {dist: exp, mean: 5ms}}\n", 2, 51, "topology.endpointsPerService.mean", "expected a number", "write a number"},
		{"bad duration in a time dist", "name: x\nclients: [{ackDelay: {dist: exp, mean: 5 ms}}]\n", 2, 40, "clients[0].ackDelay.mean", `invalid duration "5 ms"`, "duration"},
		{"list for a dist", "name: x\nclients: [{ackDelay: [1, 2]}]\n", 2, 22, "clients[0].ackDelay", "expected a distribution", "{dist: exp, mean: 5ms}"},
		{"zero ports", "name: x\ntopology: {portsPerService: 0}\n", 2, 29, "topology.portsPerService", "constant 0 is below 1", ">= 1"},
		{"scale delta", "name: x\nchurn: [{kind: scale, rate: 1/s, delta: {dist: uniform, min: 3, max: 1}}]\n", 2, 41, "churn[0].delta", "needs 0 <= min <= max", "min <= max"},

		// Clients.
		{"no clients", "name: x\nclients: []\n", 2, 10, "clients", "at least one client group", "add a group"},
		{"duplicate group", "name: x\nclients: [{name: a}, {name: a}]\n", 2, 29, "clients[1].name", `duplicate group name "a"`, "clients[0]"},
		{"bad group name", "name: x\nclients: [{name: Side_Cars}]\n", 2, 18, "clients[0].name", "invalid group name", `"side-cars"`},
		{"xds variant", "name: x\nclients: [{xds: detla}]\n", 2, 17, "clients[0].xds", `unknown xds variant "detla"`, `did you mean "delta"?`},
		{"client type", "name: x\nclients: [{type: gateway}]\n", 2, 18, "clients[0].type", `unknown client type "gateway"`, "use one of: sidecar, router, grpc"},
		{"zero count", "name: x\nclients: [{count: 0}]\n", 2, 19, "clients[0].count", "must be >= 1", ">= 1"},
		{"nack probability", "name: x\nclients: [{nack: {probability: 2}}]\n", 2, 32, "clients[0].nack.probability", "within [0, 1]", "fraction"},
		{"nack pattern", "name: x\nclients: [{nack: {pattern: 'a(b'}}]\n", 2, 28, "clients[0].nack.pattern", "invalid pattern", "RE2"},
		{"too many namespaces", "name: x\ntopology: {namespaces: 2}\nclients: [{namespaces: 3}]\n", 3, 24, "clients[0].namespaces", "more than the topology has", "at most topology.namespaces (2)"},
		{"namespace count unknown", "name: x\ntopology: {namespaces: 2}\nclients: [{count: 3, namespaceCounts: {ns-0: 1, ns-7: 2}}]\n", 3, 0, "clients[0].namespaceCounts", `namespace "ns-7" is not one of the topology's`, "ns-"},
		{"namespace counts sum", "name: x\ntopology: {namespaces: 2}\nclients: [{count: 3, namespaceCounts: {ns-0: 1, ns-1: 1}}]\n", 3, 0, "clients[0].namespaceCounts", "add up to 2, count is 3", "change count to 2"},
		{"threshold without expressions", "name: x\nthresholds:\n  xdslab_push_latency_seconds:\n", 3, 0, "thresholds.xdslab_push_latency_seconds", "no threshold expressions", "at least one expression"},
		{"label not a string", "name: x\nclients: [{node: {labels: {app: [a]}}}]\n", 2, 33, "clients[0].node.labels.app", "expected a string, got a list", "write a string"},
		{"empty cluster id", "name: x\nclients: [{node: {clusterID: \"\"}}]\n", 2, 30, "clients[0].node.clusterID", "clusterID is empty", "Kubernetes"},
		{"jitter", "name: x\nclients: [{churn: {every: 10s, jitter: -0.1}}]\n", 2, 40, "clients[0].churn.jitter", "within [0, 1]", "fraction"},
		{"negative agent issue delay", "name: x\nclients:\n  - agent: {issueDelay: -5ms}\n", 3, 0, "clients[0].agent.issueDelay", "", ""},
		{"zero streams per connection", "name: x\nclients: [{streamsPerConnection: 0}]\n", 2, 34, "clients[0].streamsPerConnection", "must be >= 1, got 0", "whole number >= 1"},
		{"negative streams per connection", "name: x\nclients:\n  - name: mux\n    streamsPerConnection: -5\n", 4, 27, "clients[0].streamsPerConnection", "must be >= 1, got -5", ">= 1"},
		{"fractional streams per connection", "name: x\nclients: [{streamsPerConnection: 2.5}]\n", 2, 34, "clients[0].streamsPerConnection", "expected a whole number, got 2.5", "whole number"},
		{"streams per connection as a string", "name: x\nclients: [{streamsPerConnection: many}]\n", 2, 34, "clients[0].streamsPerConnection", `expected a number, got the string "many"`, "write a number"},
		{"streams per connection with auth", "name: x\nclients:\n  - auth: {mtls: true}\n    streamsPerConnection: 10\n", 4, 27, "clients[0].streamsPerConnection", "10 streams per connection with auth", "set streamsPerConnection: 1"},
		{"streams per connection with jwt, second group", "name: x\nclients:\n  - name: a\n  - name: b\n    streamsPerConnection: 2\n    auth: {jwt: true, jwtKey: k.pem, issuer: i, audience: a}\n", 5, 27, "clients[1].streamsPerConnection", "2 streams per connection with auth", "or remove auth"},
		{"requireFullConfig not a bool", "name: x\nclients:\n  - name: a\n    requireFullConfig: \"no\"\n", 4, 24, "clients[0].requireFullConfig", `expected true or false, got the string "no"`, "true or false"},
		{"requireFullConfig misspelt", "name: x\nclients: [{requireFullconfig: false}]\n", 2, 12, "clients[0]", "requireFullconfig", "requireFullConfig"},

		// Top level and control plane.
		{"missing name", "seed: 3\n", 0, 0, "name", "name is required", "add a name"},
		{"bad name", "name: My Scenario\n", 1, 7, "name", `invalid name "My Scenario"`, `"my-scenario"`},
		{"maxDelay below minQuiet", "name: x\ncontrolPlane: {debounce: {minQuiet: 2s, maxDelay: 1s}}\n", 2, 51, "controlPlane.debounce.maxDelay", "shorter than minQuiet", "at least minQuiet (2s)"},
		{"negative throttle", "name: x\ncontrolPlane: {pushThrottle: -1}\n", 2, 30, "controlPlane.pushThrottle", "must be >= 0", ">= 0"},
		{"protocols all zero", "name: x\ntopology: {protocols: {http: 0}}\n", 2, 23, "topology.protocols", "all 0", "weight > 0"},
		{"unknown sink kind", "name: x\nsink: {kind: kubernetes}\n", 2, 14, "sink.kind", `unknown sink kind "kubernetes"`, "use one of: dir, kube"},
		{"sink kind typo", "name: x\nsink: {kind: kub}\n", 2, 14, "sink.kind", `unknown sink kind "kub"`, `did you mean "kube"?`},
		{"kube setting on a dir sink", "name: x\nsink: {qps: 10}\n", 2, 13, "sink.qps", "qps applies to sink kind kube only, not dir", "set sink.kind: kube"},
		{"kubeconfig on a dir sink", "name: x\nsink:\n  kind: dir\n  kubeconfig: k.yaml\n", 4, 15, "sink.kubeconfig", "kubeconfig applies to sink kind kube only", "remove it"},
		{"pods on a dir sink", "name: x\nsink: {kind: dir, pods: true}\n", 2, 25, "sink.pods", "pods applies to sink kind kube only, not dir", "set sink.kind: kube"},
		{"negative kube burst", "name: x\nsink: {kind: kube, burst: -1}\n", 2, 27, "sink.burst", "must be >= 0", ">= 0"},
		{"kube qps out of range", "name: x\nsink: {kind: kube, qps: 1e300}\n", 2, 25, "sink.qps", "out of range", "such as 50"},
		{"sink not a mapping", "name: x\nsink: kube\n", 2, 7, "sink", "expected a mapping, got", "write a mapping of kind, kubeconfig, qps, burst"},
		{"fraction", "name: x\ntopology: {virtualServices: 20}\n", 2, 29, "topology.virtualServices", "within [0, 1]", "fraction"},

		// Thresholds.
		{"incomplete clients of an unknown group", "name: x\nclients: [{name: sidecars}]\nthresholds:\n  xdslab_connect_incomplete_clients{group:sidecar}: ['value<=2']\n", 4, 53,
			"thresholds.xdslab_connect_incomplete_clients{group:sidecar}", `has no client group "sidecar"`, `did you mean "sidecars"?`},
		{"invalid threshold", "name: x\nthresholds:\n  xdslab_push_latency_seconds: ['p99<500ms']\n", 3, 33, "thresholds.xdslab_push_latency_seconds[0]", `invalid threshold "p99<500ms"`, "'p(99)<500ms'"},
		{"threshold unit", "name: x\nthresholds:\n  xdslab_push_latency_seconds: ['p(99)<500 parsecs']\n", 3, 33, "thresholds.xdslab_push_latency_seconds[0]", "unknown unit", "AGG OP VALUE"},
		{"threshold not a list", "name: x\nthresholds:\n  xdslab_fleet_nacks_total: count==0\n", 3, 29, "thresholds.xdslab_fleet_nacks_total", "expected a list of expressions", "['count==0']"},
		{"threshold on a counter", "name: x\nthresholds:\n  xdslab_fleet_nacks_total: ['p(99)<3']\n", 3, 30, "thresholds.xdslab_fleet_nacks_total[0]", "is a counter; p(99) does not apply", "count==0"},
		{"time unit on a counter", "name: x\nthresholds:\n  xdslab_fleet_nacks_total: ['count<5s']\n", 3, 30, "thresholds.xdslab_fleet_nacks_total[0]", "time unit", "_seconds"},
		{"bad metric name", "name: x\nthresholds:\n  9lives: ['count==0']\n", 3, 3, "thresholds.9lives", "invalid metric name", "metric name"},
		{"misspelled metric", "name: x\nthresholds:\n  xdslab_push_latncy_seconds: ['p(99)<1s']\n", 3, 31, "thresholds.xdslab_push_latncy_seconds", `unknown metric "xdslab_push_latncy_seconds"`, `did you mean "xdslab_push_latency_seconds"?`},
		{"unknown metric, nothing near", "name: x\nthresholds:\n  http_req_duration: ['p(99)<1s']\n", 3, 22, "thresholds.http_req_duration", `unknown metric "http_req_duration"`, "observability.md"},
		{"tag value in the wrong case", "name: x\nthresholds:\n  xdslab_fleet_nacks_total{type:cds}: ['count==0']\n", 3, 39, "thresholds.xdslab_fleet_nacks_total{type:cds}", `tags type "CDS", not "cds"`, "{type:CDS}"},
		{"cp tag value in the wrong case", "name: x\nthresholds:\n  xdslab_cache_hit_ratio{type:EDS}: ['rate>0.9']\n", 3, 37, "thresholds.xdslab_cache_hit_ratio{type:EDS}", `tags type "eds", not "EDS"`, "{type:eds}"},
		{"tag the metric lacks", "name: x\nthresholds:\n  xdslab_cp_push_cycles_total{type:eds}: ['count<100']\n", 3, 42, "thresholds.xdslab_cp_push_cycles_total{type:eds}", `has no tag "type"`, "has no tags"},
		{"misspelled tag", "name: x\nthresholds:\n  xdslab_push_latency_seconds{knd:scale}: ['p(99)<1s']\n", 3, 43, "thresholds.xdslab_push_latency_seconds{knd:scale}", `has no tag "knd"`, `did you mean "kind"?`},
		{"unknown churn kind", "name: x\nthresholds:\n  xdslab_push_latency_seconds{kind:endpoint-flp}: ['p(99)<1s']\n", 3, 51, "thresholds.xdslab_push_latency_seconds{kind:endpoint-flp}", `never has kind="endpoint-flp"`, `did you mean "endpoint-flap"?`},
		{"push latency of an unknown group", "name: x\nclients: [{name: sotw}, {name: delta}]\nthresholds:\n  xdslab_push_latency_seconds{group:detla}: ['p(99)<1s']\n", 4, 45, "thresholds.xdslab_push_latency_seconds{group:detla}", `has no client group "detla"`, `did you mean "delta"?`},
		{"value on a rate", "name: x\nthresholds:\n  xdslab_cache_hit_ratio: ['value>0.9']\n", 3, 28, "thresholds.xdslab_cache_hit_ratio[0]", "is a rate; value does not apply", "'rate>0.9'"},
		{"p(99) on a gauge", "name: x\nthresholds:\n  xdslab_fleet_connected: ['p(99)>5']\n", 3, 28, "thresholds.xdslab_fleet_connected[0]", "is a gauge; p(99) does not apply", "value, min, max"},
		{"bad tag filter", "name: x\nthresholds:\n  m_total{type}: ['count==0']\n", 3, 3, "thresholds.m_total{type}", "invalid tag filter", "one tag"},

		// Limits of the simulator (a run refuses more).
		{"too many services", "name: x\ntopology: {services: 2000000}\n", 2, 22, "topology.services", "must be within 0..1000000, got 2000000", "the simulator's limit"},
		{"far too many services", "name: x\ntopology:\n  services: 1000000000000\n", 3, 13, "topology.services", "must be within 0..1000000", "use 0 to 1000000"},
		{"too many namespaces for the simulator", "name: x\ntopology: {namespaces: 100001}\n", 2, 24, "topology.namespaces", "must be within 1..100000", "use 1 to 100000"},
		{"more endpoints than addresses", "name: x\ntopology: {services: 10, endpointsPerService: 100000000}\n", 2, 47, "topology.endpointsPerService", "at least 100000000 endpoints per service make at least 1000000000 endpoints, past the simulator's 16646144 endpoint addresses", "at most 16646144 endpoints in all (1664614 each)"},
		{"more endpoints than addresses, by the min", "name: x\ntopology:\n  services: 1000\n  endpointsPerService: {dist: exp, mean: 5, min: 20000, max: 30000}\n", 4, 24, "topology.endpointsPerService", "at least 20000 endpoints per service", "(16646 each)"},
		{"churn services past the limit", "name: x\nchurn: [{kind: scale, rate: 1/s, services: 100001}]\n", 2, 44, "churn[0].services", "<= 100000, got 100001", "the simulator's limit"},

		// Thresholds that would never be measured.
		{"cpu without side", "name: x\nthresholds:\n  xdslab_cpu_seconds: ['value<100']\n", 3, 23, "thresholds.xdslab_cpu_seconds", "written only per side, never as a total", "xdslab_cpu_seconds{side:controlplane}"},
		{"rss without side", "name: x\nthresholds: {xdslab_peak_rss_bytes: ['value<2GiB']}\n", 2, 37, "thresholds.xdslab_peak_rss_bytes", "written only per side", "xdslab_peak_rss_bytes{side:process}"},
		{"phase duration without phase", "name: x\nthresholds: {xdslab_phase_duration_seconds: ['value<100s']}\n", 2, 45, "thresholds.xdslab_phase_duration_seconds", "written only per phase", "{phase:measure} (phase: setup, connect, measure, drain)"},
		{"kind without its churn", "name: x\nchurn: [{kind: endpoint-flap, rate: 1/s}]\nthresholds:\n  xdslab_sim_events_total{kind:scale}: ['count==0']\n", 4, 40, "thresholds.xdslab_sim_events_total{kind:scale}", "the scenario has no scale churn", "add churn of kind scale, or remove the threshold (this scenario churns endpoint-flap)"},
		{"two tags", "name: x\nchurn: [{kind: scale, rate: 1/s}]\nthresholds:\n  xdslab_push_latency_seconds{group:group-1,kind:scale}: ['p(99)<1s']\n", 4, 58, "thresholds.xdslab_push_latency_seconds{group:group-1,kind:scale}", "filters on 2 tags", "xdslab_push_latency_seconds{group:group-1} and xdslab_push_latency_seconds{kind:scale}"},
		{"tag twice", "name: x\nthresholds:\n  xdslab_fleet_nacks_total{type:CDS,type:EDS}: ['count==0']\n", 3, 3, "thresholds.xdslab_fleet_nacks_total{type:CDS,type:EDS}", `tag "type" given twice`, "xdslab_fleet_nacks_total{type:CDS} and xdslab_fleet_nacks_total{type:EDS}"},
		{"prometheus tag filter", "name: x\nthresholds:\n  xdslab_fleet_nacks_total{type=\"cds\"}: ['count==0']\n", 3, 3, `thresholds.xdslab_fleet_nacks_total{type="cds"}`, "write tag:value", "write xdslab_fleet_nacks_total{type:CDS}"},
		{"sds without secrets over ads", "name: x\nclients: [{auth: {mtls: true}}]\nthresholds:\n  xdslab_fleet_nacks_total{type:SDS}: ['count==0']\n", 4, 39, "thresholds.xdslab_fleet_nacks_total{type:SDS}", "no client asks the control plane for secrets", "ISTIO_MUTUAL"},
		{"cp sds without secrets over ads", "name: x\nthresholds:\n  xdslab_cp_responses_total{type:sds}: ['count>0']\n", 3, 40, "thresholds.xdslab_cp_responses_total{type:sds}", "never measured", "PeerAuthentication"},
		{"type the fleet never asks for", "name: x\nthresholds:\n  xdslab_fleet_responses_total{type:VHDS}: ['count==0']\n", 3, 44, "thresholds.xdslab_fleet_responses_total{type:VHDS}", "subscribe to CDS, EDS, LDS, RDS, SDS only, never VHDS", "use one of"},
		{"unitless time bound", "name: x\nthresholds:\n  xdslab_push_latency_seconds: ['p(99)<500']\n", 3, 33, "thresholds.xdslab_push_latency_seconds[0]", "has no unit", "write 500ms or 500s"},
		{"negative time bound", "name: x\nthresholds:\n  xdslab_push_latency_seconds: ['p(99)<-1s']\n", 3, 33, "thresholds.xdslab_push_latency_seconds[0]", "never below 0", "0 or more"},
		{"operator as written", "name: x\nthresholds:\n  xdslab_push_latency_seconds: ['avg===avg']\n", 3, 33, "thresholds.xdslab_push_latency_seconds[0]", "missing number after ===", "AGG OP VALUE"},
		{"kind without any churn", "name: x\nthresholds:\n  xdslab_push_latency_seconds{kind:scale}: ['p(99)<1s']\n", 3, 44, "thresholds.xdslab_push_latency_seconds{kind:scale}", "never measured: the scenario has no scale churn", "add churn of kind scale"},

		// Churn that can never act (every arrival skipped).
		{"flap without services", "name: x\ntopology: {services: 0}\nchurn: [{kind: endpoint-flap, rate: 5/s}]\n", 3, 16, "churn[0].kind", "endpoint-flap churn can never act: the topology has no services", "service-create"},
		{"config-change without services", "name: x\ntopology: {services: 0}\nchurn:\n  - {kind: service-delete, rate: 1/s}\n  - {kind: config-change, rate: 1/s}\n", 5, 12, "churn[1].kind", "config-change churn can never act", "topology.services >= 1"},
		{"mesh without services", "name: x\ntopology: {mesh: {services: []}}\nchurn: [{kind: scale, rate: 1/s}]\n", 3, 16, "churn[0].kind", "topology.mesh has no services", "remove this churn"},
		{"flap without endpoints", "name: x\ntopology: {endpointsPerService: 0}\nchurn: [{kind: endpoint-flap, rate: 5/s}]\n", 3, 16, "churn[0].kind", "no service has an endpoint", "topology.endpointsPerService"},
		{"zone failure without endpoints", "name: x\ntopology: {endpointsPerService: {dist: uniform, min: 0, max: 0.4}}\nchurn: [{kind: zone-failure, at: [1s]}]\n", 3, 16, "churn[0].kind", "zone-failure churn can never act", "add a scale churn"},

		// A 0 written where the run would use the default.
		{"zone fraction 0", "name: x\nchurn: [{kind: zone-failure, at: [1s], fraction: 0}]\n", 2, 50, "churn[0].fraction", "fraction: 0 would remove no endpoint", "(0, 1]"},
		{"services 0", "name: x\nchurn: [{kind: service-create, rate: 1/s, services: 0}]\n", 2, 53, "churn[0].services", "services: 0 would touch no service", ">= 1"},
		{"window 0", "name: x\nchurn: [{kind: rolling-deploy, every: 5s, window: 0s}]\n", 2, 51, "churn[0].window", "window: 0 is not a rollout window", "duration > 0"},
		{"flap down 0", "name: x\nchurn: [{kind: endpoint-flap, rate: 1/s, down: 0s}]\n", 2, 48, "churn[0].down", "down: 0 would flap nothing away", "duration > 0"},

		// Fields written that have no effect.
		{"hosts without gateways", "name: x\ntopology:\n  gateways: {hostsPerGateway: 3}\n", 3, 31, "topology.gateways.hostsPerGateway", "hostsPerGateway 3 has no effect: there are no gateways", "count >= 1"},
		{"passthrough without gateways", "name: x\ntopology:\n  gateways: {tlsPassthrough: true}\n", 3, 30, "topology.gateways.tlsPassthrough", "tlsPassthrough has no effect", "count >= 1"},
		{"authz weights without policies", "name: x\ntopology:\n  authorizationPolicies: {allow: 3}\n", 3, 26, "topology.authorizationPolicies", "perNamespace is 0", "perNamespace >= 1"},
		{"imports without scoping", "name: x\ntopology: {sidecarImports: 5}\n", 2, 28, "topology.sidecarImports", "no effect without sidecarScoping", "sidecarScoping: true"},
		{"adaptive with fixed", "name: x\ncontrolPlane:\n  debounce: {policy: fixed, adaptive: {maxQuiet: 500ms}}\n", 3, 50, "controlPlane.debounce.adaptive.maxQuiet", "configures the adaptive debounce policy", "policy: adaptive"},
		{"adaptive without policy", "name: x\ncontrolPlane: {debounce: {adaptive: {weight: 0.5}}}\n", 2, 46, "controlPlane.debounce.adaptive.weight", "and the policy is fixed", "policy: adaptive"},
		{"jitter without every", "name: x\nclients: [{churn: {jitter: 0.5}}]\n", 2, 28, "clients[0].churn.jitter", "jitter 0.5 has no effect", "churn.every"},
		{"ack timeout without flow control", "name: x\ncontrolPlane:\n  flowControl: {enabled: false, ackTimeout: 2s}\n", 3, 45, "controlPlane.flowControl.ackTimeout", "flow control is off", "enabled: true"},

		// Contradictory client settings.
		{"grpc router", "name: x\nclients: [{count: 1, type: router, xds: grpc}]\n", 2, 41, "clients[0].xds", "contradicts type router", "xds: sotw or delta"},
		{"grpc type sotw", "name: x\nclients:\n  - {count: 1, type: grpc, xds: sotw}\n", 3, 22, "clients[0].type", "type grpc (a proxyless gRPC node, GENERATOR=grpc) contradicts xds sotw", "add xds: grpc"},
		{"grpc type default xds", "name: x\nclients: [{type: grpc}]\n", 2, 18, "clients[0].type", "contradicts xds sotw", "type: sidecar"},
		{"grpc type delta", "name: x\nclients: [{type: grpc, xds: delta}]\n", 2, 18, "clients[0].type", "contradicts xds delta", "add xds: grpc"},

		// Syntax and documents.
		{"tabs", "name: x\ntopology:\n\tservices: 3\n", 3, 0, "", "YAML syntax", "indent with spaces"},
		{"tab on the first line", "\tname: x\n", 1, 0, "", "YAML syntax", "indent with spaces"},
		{"bad indentation", "name: x\n topology: 1\n", 2, 0, "", "YAML syntax", "indentation"},
		{"empty", "", 0, 0, "", "empty", "quickstart --print"},
		{"comment only", "# nothing\n", 0, 0, "", "empty", "quickstart"},
		{"two documents", "name: x\n---\nname: y\n", 2, 1, "", "second YAML document", "one scenario per file"},
		{"unknown tag", "name: !weird x\n", 1, 7, "name", "expected a string", "quote"},
		{"alias bomb", aliasBomb(), 3, 0, "", "more than", "fewer aliases"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadBytes("bad.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("loaded without error: %+v", s)
			}
			if s != nil {
				t.Error("a failed load returned a scenario")
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not a non-empty Errors", err, err)
			}
			var found *Error
			for _, e := range es {
				if strings.Contains(e.Msg, tc.msg) {
					found = e
					break
				}
			}
			if found == nil {
				t.Fatalf("no error says %q; got:\n%v", tc.msg, err)
			}
			if found.File != "bad.yaml" {
				t.Errorf("File = %q", found.File)
			}
			if found.Line != tc.line || (tc.col != 0 && found.Col != tc.col) {
				t.Errorf("position = %d:%d, want %d:%d (%v)", found.Line, found.Col, tc.line, tc.col, found)
			}
			if tc.path != "" && found.Path != tc.path {
				t.Errorf("Path = %q, want %q", found.Path, tc.path)
			}
			if !strings.Contains(found.Fix, tc.fix) {
				t.Errorf("Fix = %q, want it to contain %q", found.Fix, tc.fix)
			}
			if !strings.HasPrefix(found.Error(), "bad.yaml") {
				t.Errorf("Error() = %q does not start with the file", found.Error())
			}
		})
	}
}

func aliasBomb() string {
	var b strings.Builder
	// Merge keys are the one place the schema recurses into aliases: each level merges the
	// previous one ten times, 10^8 mappings if expanded.
	b.WriteString("name: x\nclients:\n  - &c0 {count: 1}\n")
	for i := 1; i < 9; i++ {
		prev := "*c" + itoa(i-1)
		b.WriteString("  - &c" + itoa(i) + " {<<: [" + strings.Repeat(prev+", ", 9) + prev + "]}\n")
	}
	return b.String()
}

// One load lists every problem, in file order, not just the first.
func TestAllErrorsReported(t *testing.T) {
	src := `name: Bad Name
duration: -1s
controlPlane: {debounce: {minQuiet: 1s, maxDelay: 10ms}}
churn:
  - {kind: endpoint-flop, rate: 1/s}
  - {kind: scale}
clients: [{count: -2, xds: quic}]
thresholds: {xdslab_fleet_nacks_total: ['cnt==0']}
`
	_, err := LoadBytes("many.yaml", []byte(src))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v", err)
	}
	wantLines := []int{1, 2, 3, 5, 6, 7, 7, 8}
	var got []int
	for _, e := range es {
		got = append(got, e.Line)
	}
	if len(got) != len(wantLines) {
		t.Fatalf("got %d errors at lines %v, want lines %v:\n%v", len(got), got, wantLines, err)
	}
	for i := range got {
		if got[i] != wantLines[i] {
			t.Fatalf("errors at lines %v, want %v:\n%v", got, wantLines, err)
		}
	}
	if n := strings.Count(err.Error(), "\n"); n != len(es)-1 {
		t.Errorf("Error() has %d lines, want one per error", n+1)
	}
}

// Decoding errors stop before validation (values are not trustworthy), but all decoding errors
// are listed.
func TestDecodeErrorsAreAllListed(t *testing.T) {
	_, err := LoadBytes("d.yaml", []byte("name: x\nseeed: 1\ntopology: {servics: 1}\nclients: [{cont: 1}]\n"))
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
	for i, want := range []string{`"seed"`, `"services"`, `"count"`} {
		if !strings.Contains(es[i].Fix, want) {
			t.Errorf("error %d fix %q lacks %s", i, es[i].Fix, want)
		}
	}
}

func TestAnchorsAndMerge(t *testing.T) {
	src := `
name: anchors
x-client: &base {count: 5, xds: delta, ackDelay: {dist: exp, mean: 3ms}}
clients:
  - <<: *base
    name: a
  - <<: *base
    name: b
    count: 7
`
	_, err := LoadBytes("a.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), `unknown field "x-client"`) {
		t.Fatalf("an unknown top-level anchor holder must be rejected, got %v", err)
	}
	src = strings.Replace(src, "x-client: &base", "description: &d hello\nclients: &unused []\n#", 1)
	_ = src
	ok := `
name: anchors
clients:
  - &base {name: a, count: 5, xds: delta, ackDelay: {dist: exp, mean: 3ms}}
  - <<: *base
    name: b
    count: 7
`
	s, err := LoadBytes("a.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	b := s.Clients[1]
	if b.Name != "b" || b.Count != 7 || b.XDS != XDSDelta || b.AckDelay.Mean != 0.003 {
		t.Errorf("merged group = %+v", b)
	}
}

// A decoding error suppresses only the validation errors it causes, not its siblings'.
func TestDecodeErrorSuppressesOnlyConsequences(t *testing.T) {
	src := `name: x
controlPlane:
  minQuiet: 1s
  debounce: {minQuiet: 2s, maxDelay: 1s}
churn:
  - {kind: scale, rat: 1/s}
  - {kind: scale, rate: often}
`
	_, err := LoadBytes("s.yaml", []byte(src))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Path+": "+e.Msg)
	}
	want := []string{
		`controlPlane: unknown field "minQuiet"`,
		"controlPlane.debounce.maxDelay: maxDelay 1s is shorter than minQuiet 2s",
		`churn[0]: unknown field "rat"`,
		`churn[1].rate: invalid rate "often"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEndpointLimitReadsTheClamp: a constant endpoint count clamped by its max draws the max
// (dist.Sampler clamps every draw but pareto's and uniform's), so the address limit reads the
// max: 10 services of at most 10 endpoints fit, whatever the value.
func TestEndpointLimitReadsTheClamp(t *testing.T) {
	if _, err := LoadBytes("clamped.yaml", []byte("name: x\ntopology: {services: 10, endpointsPerService: {dist: constant, value: 100000000, max: 10}}\n")); err != nil {
		t.Errorf("a clamped constant was refused: %v", err)
	}
}
