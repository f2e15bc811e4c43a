package scenarios

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCloneIsDeep: Set on a clone (each point of a tune sweep) leaves the original as it was,
// through every map and list a client group holds.
func TestCloneIsDeep(t *testing.T) {
	src := "name: x\nclients:\n  - {name: a, count: 2, node: {labels: {app: a}}, namespaceCounts: {ns-0: 1, ns-1: 1}}\n" +
		"  - {name: g, count: 1, xds: grpc, targets: ['svc-0.ns-0.svc.cluster.local:8080']}\n" +
		"churn: [{kind: scale, at: [1s, 2s]}]\n"
	for _, kv := range [][2]string{
		{"clients[0].node.labels.app", "b"},
		{"clients[0].namespaceCounts.ns-0", "2"},
		{"clients[1].targets[0]", "svc-1.ns-0.svc.cluster.local:8080"},
		{"churn[0].at[0]", "500ms"},
	} {
		setOnClone(t, src, kv[0], kv[1])
	}
	mesh := "name: m\ntopology:\n  mesh:\n    services:\n      - name: a\n        namespace: n\n        ports: [{number: 80, protocol: HTTP}]\n" +
		"        endpoints: [{count: 2, locality: r/z, labels: {version: v1}}]\n"
	for _, kv := range [][2]string{
		{"topology.mesh.services[0].ports[0].number", "81"},
		{"topology.mesh.services[0].endpoints[0].count", "3"},
		{"topology.mesh.services[0].endpoints[0].labels.version", "v2"},
	} {
		setOnClone(t, mesh, kv[0], kv[1])
	}
}

// setOnClone loads src, sets path on a clone and fails when the original changed.
func setOnClone(t *testing.T, src, path, value string) {
	t.Helper()
	orig, err := LoadBytes("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := LoadBytes("x.yaml", []byte(src))
	c := orig.Clone()
	_ = c.Set(path, value) // valid or not, the original must not change
	if diff := cmp.Diff(want, orig, ignoreSrc); diff != "" {
		t.Errorf("Set(%q, %q) on a clone changed the original:\n%s", path, value, diff)
	}
}
