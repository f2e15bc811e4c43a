package gen

import (
	"slices"
	"testing"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/registry"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestNoneEntryEmptySelector: a ServiceEntry of resolution NONE without addresses, decoded
// from YAML and converted as the registry does, in a namespace without WorkloadEntries. As in
// istiod, `workloadSelector: {labels: {}}` is a selector (it picks every WorkloadEntry of the
// namespace, here none, so the TCP port gets no 0.0.0.0 listener), while
// `workloadSelector: {}` has no labels map and keeps the listener; with a WorkloadEntry in
// the namespace, `labels: {}` picks it and the port gets a listener at its address.
func TestNoneEntryEmptySelector(t *testing.T) {
	const we = `
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: crock-1, namespace: larder}
spec: {address: 10.121.0.1, labels: {app: crock}}
`
	for _, tc := range []struct {
		name, selector string
		workloads      bool
		want           []string
	}{
		{"empty labels map, no workload", "workloadSelector: {labels: {}}", false, nil},
		{"no labels map, no workload", "workloadSelector: {}", false, []string{"0.0.0.0_7467"}},
		{"no selector", "", false, []string{"0.0.0.0_7467"}},
		{"empty labels map picks the namespace's workload", "workloadSelector: {labels: {}}", true, []string{"10.121.0.1_7467"}},
		{"no labels map picks the namespace's workload", "workloadSelector: {}", true, []string{"10.121.0.1_7467"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: crock, namespace: larder}
spec:
  hosts: [crock.larder.example.org]
  location: MESH_INTERNAL
  resolution: NONE
  ports: [{name: tcp-crock, number: 7467, protocol: TCP}]
  ` + tc.selector + "\n"
			if tc.workloads {
				y += "---\n" + we
			}
			cfgs, err := config.Decode("crock.yaml", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			var se *istioconfig.Config
			var wes []*istioconfig.Config
			for _, c := range cfgs {
				if c.Kind == istioconfig.KindServiceEntry {
					se = c
				} else {
					wes = append(wes, c)
				}
			}
			conv, err := registry.ConvertServiceEntry(se, wes, registry.ConvertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: conv.Services, Endpoints: conv.Endpoints})
			p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.250.0.9"}, Namespace: "other", ID: "client.other"}
			rs, err := ForType(ListenerType, p).Generate(p, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				if _, err := validateDeep(r.Message); err != nil {
					t.Errorf("%s: %v", r.Name, err)
				}
				if r.Name != VirtualInboundListener && r.Name != VirtualOutboundListener {
					got = append(got, r.Name)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("listeners %v, want %v", got, tc.want)
			}
		})
	}
}
