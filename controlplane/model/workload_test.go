package model

import (
	"maps"
	"testing"

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
			want: map[string]string{"app": "cart"}},
		{name: "static labels stay under the workload's", ip: "10.9.0.1", ns: "shop",
			labels: map[string]string{"app": "web", "team": "blue"}, static: map[string]string{"team": "blue", "app": "static"}, snap: snap,
			want: map[string]string{"app": "cart", "team": "blue"}},
		{name: "an unlabelled inline endpoint empties the node's labels", ip: "10.9.0.2", ns: "shop",
			labels: map[string]string{"security.istio.io/tlsMode": "istio"}, snap: snap,
			want: map[string]string{}},
		{name: "a workload in another namespace is not the proxy's", ip: "10.9.0.3", ns: "shop",
			labels: map[string]string{"app": "web"}, snap: snap,
			want: map[string]string{"app": "web"}},
		{name: "a Pod's labels", ip: "10.9.0.4", ns: "shop",
			labels: map[string]string{"app": "web"}, snap: snap,
			want: map[string]string{"app": "pod"}},
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

func TestSameLabels(t *testing.T) {
	tests := []struct {
		have, over, under map[string]string
		want              bool
	}{
		{nil, nil, nil, true},
		{map[string]string{}, nil, nil, true},
		{map[string]string{"a": "1"}, map[string]string{"a": "1"}, nil, true},
		{map[string]string{"a": "1"}, map[string]string{"a": "1"}, map[string]string{"a": "0"}, true},
		{map[string]string{"a": "0"}, map[string]string{"a": "1"}, map[string]string{"a": "0"}, false},
		{map[string]string{"a": "1", "s": "x"}, map[string]string{"a": "1"}, map[string]string{"s": "x"}, true},
		{map[string]string{"a": "1"}, map[string]string{"a": "1"}, map[string]string{"s": "x"}, false},
		{map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1"}, nil, false},
		{map[string]string{"a": "1", "s": "y"}, map[string]string{"a": "1"}, map[string]string{"s": "x"}, false},
		{nil, map[string]string{"a": "1"}, nil, false},
	}
	for i, tt := range tests {
		if got := sameLabels(tt.have, tt.over, tt.under); got != tt.want {
			t.Errorf("%d: sameLabels(%v, %v, %v) = %v, want %v", i, tt.have, tt.over, tt.under, got, tt.want)
		}
	}
}
