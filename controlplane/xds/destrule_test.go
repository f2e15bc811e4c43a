package xds

import (
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestNamedAssignmentOfProxyNamespaceRule: a subset both the proxy's namespace and the
// service's namespace define, differently. A proxy of the first gets its namespace's endpoints,
// others the service namespace's, whichever asks first: the cache must not share the bytes.
func TestNamedAssignmentOfProxyNamespaceRule(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(1, 2) // svc-0.ns-0, endpoints 10.0.0.1 and 10.0.0.2
	host := in.Services[0].Hostname
	in.Endpoints[host][0].Labels = map[string]string{"version": "x"}
	in.Endpoints[host][1].Labels = map[string]string{"version": "y"}
	rule := func(ns, version string) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "r", Namespace: ns},
			Spec: &networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": version}}}}}
	}
	in.Configs = []*istioconfig.Config{rule("client", "x"), rule("ns-0", "y")}
	ts.push(in, true)
	name := gen.ClusterName(gen.Outbound, 8080, "v1", host)
	for _, tc := range []struct{ ns, want string }{{"other", "10.0.0.2"}, {"client", "10.0.0.1"}, {"other", "10.0.0.2"}} {
		c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", tc.ns, ""))
		c.send(gen.EndpointType, "", "", []string{name}, "")
		r := c.recv()
		if len(r.Resources) != 1 {
			t.Fatalf("%s: %d assignments", tc.ns, len(r.Resources))
		}
		var cla endpointv3.ClusterLoadAssignment
		if err := r.Resources[0].UnmarshalTo(&cla); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range cla.GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				got = append(got, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
			}
		}
		if !slices.Equal(got, []string{tc.want}) {
			t.Errorf("proxy in %s: %s has %v, want [%s]", tc.ns, name, got, tc.want)
		}
	}
}

// TestClustersOfWorkloadSelectorRule: a DestinationRule with a workloadSelector in the clients'
// namespace applies to the proxies there it selects only. Two proxies of that namespace, asking
// in turns, each get their own cluster: the cache must not share the bytes.
func TestClustersOfWorkloadSelectorRule(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(1, 1) // svc-0.ns-0
	host := in.Services[0].Hostname
	in.Configs = []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "r", Namespace: "client"},
		Spec: &networking.DestinationRule{Host: host, WorkloadSelector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "pay"}},
			TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(7 * time.Second)}}}}}}
	ts.push(in, true)
	name := gen.ClusterName(gen.Outbound, 8080, "", host)
	node := func(ip, app string) *corev3.Node {
		md, err := structpb.NewStruct(map[string]any{"NAMESPACE": "client", "LABELS": map[string]any{"app": app}})
		if err != nil {
			t.Fatal(err)
		}
		return &corev3.Node{Id: "sidecar~" + ip + "~" + app + ".client~client.svc.cluster.local", Metadata: md}
	}
	for _, tc := range []struct{ ip, app, want string }{{"10.200.0.1", "pay", "7s"}, {"10.200.0.2", "web", "10s"}, {"10.200.0.3", "pay", "7s"}} {
		c := dial(t, ts.addr, node(tc.ip, tc.app))
		c.send(gen.ClusterType, "", "", []string{name}, "")
		r := c.recv()
		var got string
		for _, a := range r.Resources {
			var cl clusterv3.Cluster
			if err := a.UnmarshalTo(&cl); err != nil {
				t.Fatal(err)
			}
			if cl.GetName() == name {
				got = cl.GetConnectTimeout().AsDuration().String()
			}
		}
		if got != tc.want {
			t.Errorf("proxy app=%s: %s connect timeout %q, want %s", tc.app, name, got, tc.want)
		}
	}
}
