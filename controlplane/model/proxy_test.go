package model

import (
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

func node(t testing.TB, id string, md map[string]any) *corev3.Node {
	t.Helper()
	s, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Node{Id: id, Metadata: s}
}

func TestParseProxy(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		md       map[string]any
		locality *corev3.Locality
		want     Proxy
		wantErr  string
	}{
		{
			name: "istio sidecar",
			id:   "sidecar~10.1.2.3~web-0.ns-1~ns-1.svc.cluster.local",
			md: map[string]any{"NAMESPACE": "ns-1", "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.28.0",
				"LABELS": map[string]any{"app": "web", "version": "v1"}, "INTERCEPTION_MODE": "REDIRECT"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.1.2.3"}, ID: "web-0.ns-1",
				DNSDomain: "ns-1.svc.cluster.local", Namespace: "ns-1", ClusterID: "Kubernetes",
				IstioVersion: "1.28.0", InterceptionMode: "REDIRECT", NodeNamespace: "ns-1",
				Labels:     map[string]string{"app": "web", "version": "v1", LabelCluster: "Kubernetes"},
				NodeLabels: map[string]string{"app": "web", "version": "v1"}},
		},
		{
			name: "topology labels from the node's locality, NODE_NAME and NETWORK",
			id:   "sidecar~10.1.2.3~web-0.ns-1~ns-1.svc.cluster.local",
			md: map[string]any{"NAMESPACE": "ns-1", "CLUSTER_ID": "east", "NODE_NAME": "node-7", "NETWORK": "net-1",
				"LABELS": map[string]any{"app": "web"}},
			locality: &corev3.Locality{Region: "r1", Zone: "z1", SubZone: "s1"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.1.2.3"}, ID: "web-0.ns-1",
				DNSDomain: "ns-1.svc.cluster.local", Namespace: "ns-1", ClusterID: "east", NodeNamespace: "ns-1",
				NodeName: "node-7", Network: "net-1",
				Labels: map[string]string{"app": "web", LabelCluster: "east", LabelRegion: "r1", LabelZone: "z1",
					LabelSubzone: "s1", LabelHostname: "node-7", LabelNetwork: "net-1"},
				NodeLabels: map[string]string{"app": "web"},
				Locality:   Locality{"r1", "z1", "s1"}, NodeLocality: Locality{"r1", "z1", "s1"}},
		},
		{
			name: "the labels' locality wins over the node's; a network label over NETWORK",
			id:   "sidecar~10.1.2.3~web-0.ns-1~ns-1.svc.cluster.local",
			md: map[string]any{"NAMESPACE": "ns-1", "NETWORK": "net-1",
				"LABELS": map[string]any{LabelLocality: "r2/z2", LabelNetwork: "net-2"}},
			locality: &corev3.Locality{Region: "r1", Zone: "z1"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.1.2.3"}, ID: "web-0.ns-1",
				DNSDomain: "ns-1.svc.cluster.local", Namespace: "ns-1", NodeNamespace: "ns-1", Network: "net-1",
				Labels:     map[string]string{LabelLocality: "r2/z2", LabelNetwork: "net-2", LabelRegion: "r2", LabelZone: "z2"},
				NodeLabels: map[string]string{LabelLocality: "r2/z2", LabelNetwork: "net-2"},
				Locality:   Locality{"r2", "z2", ""}, NodeLocality: Locality{"r1", "z1", ""}},
		},
		{
			name: "UNPRIVILEGED_POD and the agent's ports (numbers, a decimal string; 0 and junk left out)",
			id:   "sidecar~10.1.2.3~web-0.ns-1~ns-1.svc.cluster.local",
			md: map[string]any{"NAMESPACE": "ns-1", "UNPRIVILEGED_POD": "true", "ENVOY_STATUS_PORT": 15021, "ENVOY_PROMETHEUS_PORT": "15090",
				"ENVOY_SECURE_METRICS_PORT": 0, "ENVOY_SECURE_MERGED_METRICS_PORT": "x"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.1.2.3"}, ID: "web-0.ns-1",
				DNSDomain: "ns-1.svc.cluster.local", Namespace: "ns-1", NodeNamespace: "ns-1", Labels: map[string]string{},
				Unprivileged: true, StaticPorts: []uint32{15021, 15090}},
		},
		{
			name: "a subzone without a zone is not a label",
			id:   "sidecar~10.1.2.3~web-0.ns-1~ns-1.svc.cluster.local",
			md:   map[string]any{"NAMESPACE": "ns-1"}, locality: &corev3.Locality{Region: "r1", SubZone: "s1"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.1.2.3"}, ID: "web-0.ns-1",
				DNSDomain: "ns-1.svc.cluster.local", Namespace: "ns-1", NodeNamespace: "ns-1",
				Labels:   map[string]string{LabelRegion: "r1"},
				Locality: Locality{"r1", "", "s1"}, NodeLocality: Locality{"r1", "", "s1"}},
		},
		{
			name: "no NAMESPACE: the DNS domain's namespace, not the id's",
			id:   "sidecar~10.1.2.3~web-0.ns-a~ns-b.svc.cluster.local",
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.1.2.3"}, ID: "web-0.ns-a",
				DNSDomain: "ns-b.svc.cluster.local", Namespace: "ns-b", Labels: map[string]string{}},
		},
		{
			name: "grpc proxyless, namespace from the DNS domain",
			id:   "sidecar~::1~client.default~default.svc.cluster.local",
			md:   map[string]any{"GENERATOR": "grpc"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"::1"}, ID: "client.default",
				DNSDomain: "default.svc.cluster.local", Namespace: "default", Generator: "grpc"},
		},
		{name: "router", id: "router~10.0.0.1~gw.istio-system~istio-system.svc.cluster.local",
			want: Proxy{Type: Router, IPAddresses: []string{"10.0.0.1"}, ID: "gw.istio-system",
				DNSDomain: "istio-system.svc.cluster.local", Namespace: "istio-system"}},
		{name: "too few fields", id: "sidecar~10.0.0.1~pod.ns", wantErr: "want 4 fields"},
		{name: "bad type", id: "waypoint~10.0.0.1~pod.ns~ns.svc", wantErr: "unknown proxy type"},
		{name: "bad ip", id: "sidecar~ten~pod.ns~ns.svc", wantErr: "bad IP"},
		{name: "bad ip and bad INSTANCE_IPS", id: "sidecar~ten~pod.ns~ns.svc", md: map[string]any{"INSTANCE_IPS": "10.0.0.1,eleven"}, wantErr: "INSTANCE_IPS"},
		// As istiod: INSTANCE_IPS first (every entry an IP), else the id's address.
		{name: "INSTANCE_IPS over the id's address", id: "sidecar~10.0.0.1~pod.ns~ns.svc", md: map[string]any{"INSTANCE_IPS": "10.9.0.1,fd00::1"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.9.0.1", "fd00::1"}, ID: "pod.ns", DNSDomain: "ns.svc", Namespace: "ns", Labels: map[string]string{}}},
		{name: "INSTANCE_IPS with a bad entry: the id's address", id: "sidecar~10.0.0.1~pod.ns~ns.svc", md: map[string]any{"INSTANCE_IPS": "10.9.0.1, 10.9.0.2"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.0.0.1"}, ID: "pod.ns", DNSDomain: "ns.svc", Namespace: "ns", Labels: map[string]string{}}},
		{name: "INSTANCE_IPS with a bad id address", id: "sidecar~vm~pod.ns~ns.svc", md: map[string]any{"INSTANCE_IPS": "10.9.0.1"},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.9.0.1"}, ID: "pod.ns", DNSDomain: "ns.svc", Namespace: "ns", Labels: map[string]string{}}},
		// istiod serves a proxy of no namespace (its config namespace "").
		{name: "no namespace", id: "sidecar~10.0.0.1~pod~d",
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.0.0.1"}, ID: "pod", DNSDomain: "d", Labels: map[string]string{}}},
		{name: "no namespace but the id's", id: "sidecar~10.0.0.1~pod.ns~d",
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.0.0.1"}, ID: "pod.ns", DNSDomain: "d", Labels: map[string]string{}}},
		{name: "empty", id: "", wantErr: "want 4 fields"},
		{name: "static labels", id: "sidecar~10.0.0.1~p.ns~d",
			md: map[string]any{"NAMESPACE": "ns", "LABELS": map[string]any{"app": "a", "team": "t"}, "STATIC_LABELS": map[string]any{"team": "t"}},
			want: Proxy{Type: SidecarProxy, IPAddresses: []string{"10.0.0.1"}, ID: "p.ns", DNSDomain: "d", Namespace: "ns", NodeNamespace: "ns",
				Labels: map[string]string{"app": "a", "team": "t"}, NodeLabels: map[string]string{"app": "a", "team": "t"}, StaticLabels: map[string]string{"team": "t"}}},
		{name: "non-string static label", id: "sidecar~10.0.0.1~p.ns~ns.svc", md: map[string]any{"STATIC_LABELS": map[string]any{"a": true}}, wantErr: "STATIC_LABELS"},
		{name: "non-string label", id: "sidecar~10.0.0.1~p.ns~ns.svc", md: map[string]any{"LABELS": map[string]any{"a": 1.0}}, wantErr: "not a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := node(t, tc.id, tc.md)
			n.Locality = tc.locality
			got, err := ParseProxy(n)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.NodeID = tc.id
			if got.Type != tc.want.Type || got.ID != tc.want.ID || got.DNSDomain != tc.want.DNSDomain ||
				got.Namespace != tc.want.Namespace || got.ClusterID != tc.want.ClusterID ||
				got.Generator != tc.want.Generator || got.IstioVersion != tc.want.IstioVersion ||
				got.InterceptionMode != tc.want.InterceptionMode || got.NodeID != tc.want.NodeID ||
				!slices.Equal(got.IPAddresses, tc.want.IPAddresses) || !mapsEqual(got.Labels, tc.want.Labels) ||
				!mapsEqual(got.StaticLabels, tc.want.StaticLabels) || !mapsEqual(got.NodeLabels, tc.want.NodeLabels) ||
				got.NodeNamespace != tc.want.NodeNamespace || got.NodeName != tc.want.NodeName || got.Network != tc.want.Network ||
				got.Locality != tc.want.Locality || got.NodeLocality != tc.want.NodeLocality || !got.Resolved {
				t.Errorf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
	if _, err := ParseProxy(nil); err == nil {
		t.Error("nil node: no error")
	}
}

func FuzzParseNodeID(f *testing.F) {
	for _, s := range []string{"sidecar~10.1.2.3~web-0.ns-1~ns-1.svc.cluster.local", "router~::1~a.b~c", "~~~", "sidecar~1.2.3.4~.~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		p, err := ParseProxy(&corev3.Node{Id: id})
		if err != nil {
			if p != nil {
				t.Fatal("proxy returned with an error")
			}
			return
		}
		if len(p.IPAddresses) == 0 || p.NodeID != id || (p.Type != SidecarProxy && p.Type != Router) {
			t.Fatalf("accepted %q as %+v", id, p)
		}
	})
}
