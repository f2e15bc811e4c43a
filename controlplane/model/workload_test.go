package model

import (
	"maps"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdslab/xdslab/istioconfig"
)

// workloadSnapshot is a registry with two ServiceEntries in "shop" (one with a WorkloadEntry
// at 10.9.0.1, one with an inline endpoint at 10.9.0.2), one in "other" with an endpoint at
// 10.9.0.3, and a Kubernetes Service in "shop" whose endpoint at 10.9.0.4 carries its Pod's
// labels and whose endpoint at 10.9.0.5 none (no Pod read).
func workloadSnapshot() *Snapshot {
	se := func(ns, name string) istioconfig.Key {
		return istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: ns, Name: name}
	}
	we := istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Namespace: "shop", Name: "cart-vm"}
	slice := istioconfig.Key{Kind: endpointSliceKind, Namespace: "shop", Name: "pods-abc"}
	return NewSnapshot(1, SnapshotInput{
		Services: []*Service{
			{Hostname: "cart.shop.internal", Namespace: "shop", Source: se("shop", "cart")},
			{Hostname: "till.shop.internal", Namespace: "shop", Source: se("shop", "till")},
			{Hostname: "ledger.other.internal", Namespace: "other", Source: se("other", "ledger")},
			{Hostname: "pods.shop.svc.cluster.local", Namespace: "shop"},
		},
		Endpoints: map[string][]*Endpoint{
			"cart.shop.internal":    {{Service: "cart.shop.internal", Address: "10.9.0.1", Labels: map[string]string{"app": "cart"}, Source: we}},
			"till.shop.internal":    {{Service: "till.shop.internal", Address: "10.9.0.2", Source: se("shop", "till")}},
			"ledger.other.internal": {{Service: "ledger.other.internal", Address: "10.9.0.3", Labels: map[string]string{"app": "ledger"}, Source: se("other", "ledger")}},
			"pods.shop.svc.cluster.local": {
				{Service: "pods.shop.svc.cluster.local", Address: "10.9.0.4", Labels: map[string]string{"app": "pod"}, Source: slice},
				{Service: "pods.shop.svc.cluster.local", Address: "10.9.0.5", Source: slice},
			},
		},
	})
}

func TestWithWorkloadLabels(t *testing.T) {
	snap := workloadSnapshot()
	tests := []struct {
		name   string
		ip, ns string
		labels map[string]string // the node's LABELS
		static map[string]string // the node's STATIC_LABELS
		snap   *Snapshot
		want   map[string]string
	}{
		{name: "WorkloadEntry's labels replace the node's", ip: "10.9.0.1", ns: "shop",
			labels: map[string]string{"app": "web", "security.istio.io/tlsMode": "istio"}, snap: snap,
			want: map[string]string{"app": "cart", LabelCluster: RegistryClusterID}},
		{name: "static labels stay under the workload's", ip: "10.9.0.1", ns: "shop",
			labels: map[string]string{"app": "web", "team": "blue"}, static: map[string]string{"team": "blue", "app": "static"}, snap: snap,
			want: map[string]string{"app": "cart", "team": "blue", LabelCluster: RegistryClusterID}},
		{name: "an unlabelled inline endpoint empties the node's labels", ip: "10.9.0.2", ns: "shop",
			labels: map[string]string{"security.istio.io/tlsMode": "istio"}, snap: snap,
			want: map[string]string{LabelCluster: RegistryClusterID}},
		{name: "a workload in another namespace is not the proxy's", ip: "10.9.0.3", ns: "shop",
			labels: map[string]string{"app": "web"}, snap: snap,
			want: map[string]string{"app": "web"}},
		{name: "a Pod's labels", ip: "10.9.0.4", ns: "shop",
			labels: map[string]string{"app": "web"}, snap: snap,
			want: map[string]string{"app": "pod", LabelCluster: RegistryClusterID}},
		{name: "a Kubernetes endpoint without its Pod says nothing", ip: "10.9.0.5", ns: "shop",
			labels: map[string]string{"app": "web"}, snap: snap,
			want: map[string]string{"app": "web"}},
		{name: "no workload at the address", ip: "10.9.9.9", ns: "shop",
			labels: map[string]string{"app": "web"}, snap: snap,
			want: map[string]string{"app": "web"}},
		{name: "a test VM keeps its node's labels", ip: "10.9.0.1", ns: "shop",
			labels: map[string]string{"app": "web", TestVMLabel: "vm-a"}, snap: snap,
			want: map[string]string{"app": "web", TestVMLabel: "vm-a"}},
		{name: "no snapshot", ip: "10.9.0.1", ns: "shop",
			labels: map[string]string{"app": "web"},
			want:   map[string]string{"app": "web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Proxy{Type: SidecarProxy, IPAddresses: []string{tc.ip}, Namespace: tc.ns, Labels: tc.labels, StaticLabels: tc.static}
			before := maps.Clone(p.Labels)
			got := WithWorkloadLabels(p, tc.snap)
			if !maps.Equal(got.Labels, tc.want) {
				t.Errorf("labels = %v, want %v", got.Labels, tc.want)
			}
			if !maps.Equal(p.Labels, before) {
				t.Errorf("the node's proxy changed: %v, was %v", p.Labels, before)
			}
			if maps.Equal(tc.want, tc.labels) && got != p {
				t.Errorf("unchanged labels: want the same proxy back")
			}
			// Idempotent on its own result's labels (a recomputation on a new snapshot starts
			// from the node's proxy, never from a result).
			if again := WithWorkloadLabels(got, tc.snap); !maps.Equal(again.Labels, got.Labels) && got.Labels[TestVMLabel] == "" {
				t.Errorf("second application = %v, want %v", again.Labels, got.Labels)
			}
		})
	}
}

// TestTopologyLabels checks the labels and locality istiod gives a proxy parsed from its
// node (setTopologyLabels over SetWorkloadLabels, AugmentLabels in its registries).
func TestTopologyLabels(t *testing.T) {
	se := istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "shop", Name: "cart"}
	seOther := istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "other", Name: "ledger"}
	slice := istioconfig.Key{Kind: endpointSliceKind, Namespace: "shop", Name: "pods-abc"}
	snap := NewSnapshot(1, SnapshotInput{
		Services: []*Service{
			{Hostname: "cart.shop.internal", Namespace: "shop", Source: se},
			{Hostname: "ledger.other.internal", Namespace: "other", Source: seOther},
			{Hostname: "pods.shop.svc.cluster.local", Namespace: "shop"},
		},
		Endpoints: map[string][]*Endpoint{
			"cart.shop.internal": {
				{Service: "cart.shop.internal", Address: "10.9.0.1", Labels: map[string]string{"app": "cart"}, Locality: Locality{"we-r", "we-z", ""}, Source: se},
				{Service: "cart.shop.internal", Address: "10.9.0.2", Labels: map[string]string{"app": "cart", LegacyLocalityLabel: "lb-r.lb-z"}, Source: se},
				{Service: "cart.shop.internal", Address: "10.9.0.3", Labels: map[string]string{"app": "cart", LabelRegion: "mine"}, Locality: Locality{"we-r", "", ""}, Source: se},
			},
			"ledger.other.internal": {{Service: "ledger.other.internal", Address: "10.9.0.4", Labels: map[string]string{"app": "ledger"}, Source: seOther}},
			"pods.shop.svc.cluster.local": {
				{Service: "pods.shop.svc.cluster.local", Address: "10.9.0.5", Labels: map[string]string{"app": "pod"}, Locality: Locality{"pod-r", "pod-z", "pod-s"}, Source: slice},
				// As the Kubernetes registry builds a Pod's endpoint: its node's name among the
				// labels (RegistryLabels).
				{Service: "pods.shop.svc.cluster.local", Address: "10.9.0.6", Labels: RegistryLabels(map[string]string{"app": "pod"}, Locality{}, "pod-node", ""), Source: slice},
			},
		},
	})
	nodeLoc := &corev3.Locality{Region: "node-r", Zone: "node-z"}
	tests := []struct {
		name    string
		ip, id  string
		md      map[string]any
		want    map[string]string
		wantLoc Locality
	}{
		{name: "no workload: the node's labels, CLUSTER_ID and the node's locality", ip: "10.9.9.9",
			md:   map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes", "LABELS": map[string]any{"app": "web"}},
			want: map[string]string{"app": "web", LabelCluster: "Kubernetes", LabelRegion: "node-r", LabelZone: "node-z"}, wantLoc: Locality{"node-r", "node-z", ""}},
		{name: "a WorkloadEntry's locality over the node's, NODE_NAME and NETWORK", ip: "10.9.0.1",
			md: map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes", "NODE_NAME": "n-1", "NETWORK": "net-1", "LABELS": map[string]any{"app": "web"}},
			want: map[string]string{"app": "cart", LabelCluster: "Kubernetes", LabelRegion: "we-r", LabelZone: "we-z",
				LabelHostname: "n-1", LabelNetwork: "net-1"}, wantLoc: Locality{"we-r", "we-z", ""}},
		{name: "a workload's locality label, dots read as slashes", ip: "10.9.0.2",
			md: map[string]any{"NAMESPACE": "shop"},
			want: map[string]string{"app": "cart", LegacyLocalityLabel: "lb-r.lb-z", LabelCluster: RegistryClusterID,
				LabelRegion: "lb-r", LabelZone: "lb-z"}, wantLoc: Locality{"lb-r", "lb-z", ""}},
		{name: "the registry's locality over the workload's region label; no zone label: the node's is not read", ip: "10.9.0.3",
			md:   map[string]any{"NAMESPACE": "shop"},
			want: map[string]string{"app": "cart", LabelCluster: RegistryClusterID, LabelRegion: "we-r"}, wantLoc: Locality{"we-r", "", ""}},
		{name: "a Pod's locality", ip: "10.9.0.5",
			md:   map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes"},
			want: map[string]string{"app": "pod", LabelCluster: "Kubernetes", LabelRegion: "pod-r", LabelZone: "pod-z", LabelSubzone: "pod-s"}, wantLoc: Locality{"pod-r", "pod-z", "pod-s"}},
		{name: "a Pod on a node, the proxy without NODE_NAME: no hostname (istiod reads the proxy's only)", ip: "10.9.0.6",
			md:   map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes"},
			want: map[string]string{"app": "pod", LabelCluster: "Kubernetes", LabelRegion: "node-r", LabelZone: "node-z"}, wantLoc: Locality{"node-r", "node-z", ""}},
		{name: "a Pod on a node, the proxy's NODE_NAME", ip: "10.9.0.6",
			md:   map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes", "NODE_NAME": "n-2"},
			want: map[string]string{"app": "pod", LabelCluster: "Kubernetes", LabelRegion: "node-r", LabelZone: "node-z", LabelHostname: "n-2"}, wantLoc: Locality{"node-r", "node-z", ""}},
		{name: "another cluster's proxy: no workload in this cluster's registries", ip: "10.9.0.1",
			md:   map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "west", "LABELS": map[string]any{"app": "web"}},
			want: map[string]string{"app": "web", LabelCluster: "west", LabelRegion: "node-r", LabelZone: "node-z"}, wantLoc: Locality{"node-r", "node-z", ""}},
		{name: "no NAMESPACE: a ServiceEntry workload of any namespace", ip: "10.9.0.4", id: "p.shop",
			md:   map[string]any{"LABELS": map[string]any{"app": "web"}},
			want: map[string]string{"app": "ledger", LabelCluster: RegistryClusterID, LabelRegion: "node-r", LabelZone: "node-z"}, wantLoc: Locality{"node-r", "node-z", ""}},
		{name: "no NAMESPACE: no Pod", ip: "10.9.0.5", id: "p.shop",
			md:   map[string]any{"LABELS": map[string]any{"app": "web"}},
			want: map[string]string{"app": "web", LabelRegion: "node-r", LabelZone: "node-z"}, wantLoc: Locality{"node-r", "node-z", ""}},
		{name: "a test VM: the node's labels, topology added", ip: "10.9.0.1",
			md:   map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes", "LABELS": map[string]any{"app": "web", TestVMLabel: "vm"}},
			want: map[string]string{"app": "web", TestVMLabel: "vm", LabelCluster: "Kubernetes", LabelRegion: "node-r", LabelZone: "node-z"}, wantLoc: Locality{"node-r", "node-z", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.id
			if id == "" {
				id = "p.ns"
			}
			n := node(t, "sidecar~"+tc.ip+"~"+id+"~shop.svc.cluster.local", tc.md)
			n.Locality = nodeLoc
			p, err := ParseProxy(n)
			if err != nil {
				t.Fatal(err)
			}
			got := WithWorkloadLabels(p, snap)
			if !maps.Equal(got.Labels, tc.want) || got.Locality != tc.wantLoc {
				t.Errorf("labels = %v, locality %v\nwant %v, locality %v", got.Labels, got.Locality, tc.want, tc.wantLoc)
			}
			// A second call gives the same proxy (p, or its memoized copy), not a new copy.
			if again := WithWorkloadLabels(p, snap); again != got {
				t.Errorf("a second call from the node's proxy made another copy")
			}
			// On a snapshot where its workload is gone, the node's proxy itself.
			if gone := WithWorkloadLabels(p, NewSnapshot(2, SnapshotInput{})); gone != p {
				t.Errorf("no workload: got a copy %v, want the node's proxy", gone.Labels)
			}
			if back := WithWorkloadLabels(p, snap); !maps.Equal(back.Labels, tc.want) {
				t.Errorf("workload back: labels = %v, want %v", back.Labels, tc.want)
			}
		})
	}
}

func TestLabelLayersSame(t *testing.T) {
	top := func(kv ...string) topoLabels {
		var t topoLabels
		for i := 0; i < len(kv); i += 2 {
			t.set(kv[i], kv[i+1])
		}
		return t
	}
	tests := []struct {
		have, over, under map[string]string
		top               topoLabels
		want              bool
	}{
		{nil, nil, nil, topoLabels{}, true},
		{map[string]string{}, nil, nil, topoLabels{}, true},
		{map[string]string{"a": "1"}, map[string]string{"a": "1"}, nil, topoLabels{}, true},
		{map[string]string{"a": "1"}, map[string]string{"a": "1"}, map[string]string{"a": "0"}, topoLabels{}, true},
		{map[string]string{"a": "0"}, map[string]string{"a": "1"}, map[string]string{"a": "0"}, topoLabels{}, false},
		{map[string]string{"a": "1", "s": "x"}, map[string]string{"a": "1"}, map[string]string{"s": "x"}, topoLabels{}, true},
		{map[string]string{"a": "1"}, map[string]string{"a": "1"}, map[string]string{"s": "x"}, topoLabels{}, false},
		{map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1"}, nil, topoLabels{}, false},
		{map[string]string{"a": "1", "s": "y"}, map[string]string{"a": "1"}, map[string]string{"s": "x"}, topoLabels{}, false},
		{nil, map[string]string{"a": "1"}, nil, topoLabels{}, false},
		{map[string]string{"a": "1", "c": "k"}, map[string]string{"a": "1"}, nil, top("c", "k"), true},
		{map[string]string{"a": "1"}, map[string]string{"a": "1"}, nil, top("c", "k"), false},
		{map[string]string{"a": "2"}, map[string]string{"a": "1"}, nil, top("a", "2"), true},
		{map[string]string{"s": "2"}, nil, map[string]string{"s": "1"}, top("s", "2"), true},
		{map[string]string{"s": "1"}, nil, map[string]string{"s": "1"}, top("s", "2"), false},
		{map[string]string{"s": "2", "x": "y"}, nil, map[string]string{"s": "1"}, top("s", "2"), false},
	}
	for i, tt := range tests {
		l := labelLayers{under: tt.under, over: tt.over, top: tt.top}
		if got := l.same(tt.have); got != tt.want {
			t.Errorf("%d: same(%v) over %v, under %v, top %v = %v, want %v", i, tt.have, tt.over, tt.under, tt.top, got, tt.want)
		}
		if got := mapsEqual(l.build(), tt.have); got != tt.want {
			t.Errorf("%d: build = %v, compared with %v: %v, want %v", i, l.build(), tt.have, got, tt.want)
		}
	}
}

func TestRegistryLabels(t *testing.T) {
	tests := []struct {
		name              string
		labels            map[string]string
		loc               Locality
		hostname, network string
		want              map[string]string
	}{
		{name: "cluster alone", want: map[string]string{LabelCluster: RegistryClusterID}},
		{name: "the locality's parts over the labels'", labels: map[string]string{"app": "a", LabelRegion: "mine"},
			loc:  Locality{Region: "r", SubZone: "s"},
			want: map[string]string{"app": "a", LabelCluster: RegistryClusterID, LabelRegion: "r", LabelSubzone: "s"}},
		{name: "node and network", hostname: "n-1", network: "net-1",
			want: map[string]string{LabelCluster: RegistryClusterID, LabelHostname: "n-1", LabelNetwork: "net-1"}},
		{name: "a network label wins", labels: map[string]string{LabelNetwork: "mine"}, network: "net-1",
			want: map[string]string{LabelCluster: RegistryClusterID, LabelNetwork: "mine"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.labels)
			if got := RegistryLabels(tc.labels, tc.loc, tc.hostname, tc.network); !maps.Equal(got, tc.want) {
				t.Errorf("RegistryLabels = %v, want %v", got, tc.want)
			}
			if !maps.Equal(before, tc.labels) {
				t.Errorf("labels modified: %v", tc.labels)
			}
		})
	}
}

func TestLocalityFromLabel(t *testing.T) {
	tests := []struct {
		labels map[string]string
		want   Locality
		ok     bool
	}{
		{nil, Locality{}, false},
		{map[string]string{LabelLocality: "r/z/s"}, Locality{"r", "z", "s"}, true},
		{map[string]string{LegacyLocalityLabel: "r.z"}, Locality{"r", "z", ""}, true},
		{map[string]string{LegacyLocalityLabel: "r.z/s"}, Locality{"r.z", "s", ""}, true},
		{map[string]string{LabelLocality: "", LegacyLocalityLabel: "r"}, Locality{}, false},
	}
	for _, tc := range tests {
		if got, ok := LocalityFromLabel(tc.labels); got != tc.want || ok != tc.ok {
			t.Errorf("LocalityFromLabel(%v) = %v, %v; want %v, %v", tc.labels, got, ok, tc.want, tc.ok)
		}
	}
}
