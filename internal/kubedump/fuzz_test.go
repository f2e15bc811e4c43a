package kubedump

import (
	"errors"
	"testing"

	"github.com/xdslab/xdslab/scenarios"
)

// FuzzParse: the dump parser and the conversion never panic; they either fail with Errors that
// each name the file, or give a result whose scenario (plain and anonymized) loads.
func FuzzParse(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new interesting input, which on inputs the size
	// of the example dump (55 KB) takes minutes of uncounted executions.
	for _, s := range []string{
		exampleSmall,
		"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: n}\nspec: {ports: [{name: http, port: 80}]}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: a, namespace: n}, spec: {ports: [{port: 80, targetPort: x}]}}\n" +
			"- {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: a-1, namespace: n, labels: {kubernetes.io/service-name: a}}, addressType: IPv4, endpoints: [{addresses: [10.0.0.1], zone: z}], ports: [{name: '', port: 8080}]}\n",
		"apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v, namespace: n}\nspec: {hosts: [a.n.svc.cluster.local], http: [{route: [{destination: {host: a}}]}]}\n",
		"kind: List\nitems: [1, 2]\n",
		"---\n---\n",
		"a: &x [*x]\n",
		"{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\", \"namespace\": \"n\"}}",
		"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: n}\nspec: {ports: [{port: 99999}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse([]File{{Name: "f.yaml", Data: data}})
		if err == nil {
			var r *Result
			if r, err = Convert(d); err == nil {
				for _, anon := range []bool{false, true} {
					if anon {
						if err := NewAnonymizer("").Result(r); err != nil {
							t.Fatalf("anonymize: %v", err)
						}
					}
					out, err := r.Scenario("")
					if err != nil {
						t.Fatalf("scenario: %v", err)
					}
					if _, err := scenarios.LoadBytes("out.yaml", out); err != nil {
						t.Fatalf("the written scenario does not load (anonymized %t): %v\n%s", anon, err, out)
					}
				}
				return
			}
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("error %T is not a non-empty Errors: %v", err, err)
		}
		for _, e := range es {
			if e.File == "" || e.Msg == "" {
				t.Fatalf("error without file or message: %#v", e)
			}
		}
	})
}

// exampleSmall is a slice of the example dump: a service with a slice, a pod and routing.
const exampleSmall = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: reviews, namespace: bookinfo}
  spec:
    selector: {app: reviews}
    ports: [{name: http, port: 9080, targetPort: 9080, protocol: TCP}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: reviews-abc, namespace: bookinfo, labels: {kubernetes.io/service-name: reviews}}
  addressType: IPv4
  endpoints:
  - addresses: [10.8.0.11]
    conditions: {ready: true}
    nodeName: node-a
    zone: us-east1-b
    targetRef: {kind: Pod, name: reviews-v1-1, namespace: bookinfo}
  - addresses: [10.8.0.12]
    conditions: {ready: false}
    zone: us-east1-c
  ports: [{name: http, port: 9080, protocol: TCP}]
- apiVersion: v1
  kind: Pod
  metadata:
    name: reviews-v1-1
    namespace: bookinfo
    labels: {app: reviews, version: v1, pod-template-hash: 7f9}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: reviews-v1-7f9, controller: true, uid: x}]
  spec: {nodeName: node-a, serviceAccountName: reviews, containers: [{name: reviews}, {name: istio-proxy}]}
  status: {podIP: 10.8.0.11, phase: Running}
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, labels: {topology.kubernetes.io/region: us-east1}}
- apiVersion: networking.istio.io/v1
  kind: DestinationRule
  metadata: {name: reviews, namespace: bookinfo}
  spec: {host: reviews, subsets: [{name: v1, labels: {version: v1}}], trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}}
- apiVersion: networking.istio.io/v1
  kind: ServiceEntry
  metadata: {name: vm, namespace: bookinfo}
  spec: {hosts: [vm.internal], addresses: [192.168.1.0/24], ports: [{number: 22, name: ssh, protocol: TCP}], resolution: STATIC, endpoints: [{address: 192.168.1.7}]}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c, namespace: bookinfo}
`
