package kube_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xdslab/xdslab/simulator/sinks"
)

// The integration check: the simulator's kube sink writes a mesh to a real
// kube-apiserver (with a real etcd and Istio's own CRDs), running as the service account
// examples/kube/rbac.yaml grants; our control plane reads it through the kube registry as the
// control plane's account; a fake Envoy observes every simulated endpoint change, and those
// changes reach it as endpoint (EDS) updates only. It logs the sink's write rate and the time
// from the sink's Apply to the fake Envoy holding the change (the benchmarks in bench_test.go
// measure them).
func TestKubeSinkToFakeEnvoy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	cl := startCluster(t)
	c := newChain(t, chainOptions{sink: "kube", cluster: cl, services: 20, endpoints: 5, pods: true, qps: 200, burst: 400, workers: 8})
	st := c.kubeSink.Stats()
	t.Logf("kube sink: initial topology took %d API writes in %v: %.0f writes/s", st.Objects(), c.initTook, float64(st.Objects())/c.initTook.Seconds())

	// The Pods the sink wrote (as the sink's account) are in the API server, running and
	// ready at their endpoint's address.
	kc, _ := kubeClients(t, cl.admin, -1, 0)
	pods, err := kc.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: sinks.KubeManagedByLabel + "=" + sinks.KubeFieldManager})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 20*5 {
		t.Errorf("%d Pods in the API server, want %d", len(pods.Items), 20*5)
	}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.Status.Phase != "Running" || p.Labels["app"] == "" || p.Spec.NodeName != sinks.KubeNodeName {
			t.Errorf("pod %s/%s: ip %q phase %q labels %v node %q", p.Namespace, p.Name, p.Status.PodIP, p.Status.Phase, p.Labels, p.Spec.NodeName)
		}
	}

	var lat, accepted []time.Duration
	writes0 := c.kubeSink.Stats().Objects()
	begin := time.Now()
	for range 20 {
		_, a, d := c.step(t)
		accepted = append(accepted, a)
		lat = append(lat, a+d)
	}
	slices.Sort(lat)
	slices.Sort(accepted)
	writes := c.kubeSink.Stats().Objects() - writes0
	t.Logf("kube sink: %d events (%d API writes): Apply (API server accepted) p50 %v max %v; Apply to the fake Envoy p50 %v max %v; churn ran at %.0f writes/s",
		len(lat), writes, accepted[len(accepted)/2], accepted[len(accepted)-1], lat[len(lat)/2], lat[len(lat)-1], float64(writes)/time.Since(begin).Seconds())
	types := c.rec.check(t)
	for typ, n := range types {
		if typ != resource.EndpointType {
			t.Errorf("endpoint churn caused %d %s responses: want endpoint (EDS) updates only (%v)", n, typ, types)
		}
	}
	if types[resource.EndpointType] == 0 {
		t.Errorf("no endpoint update reached the fake Envoy: %v", types)
	}
}
