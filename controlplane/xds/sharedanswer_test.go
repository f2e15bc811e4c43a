package xds

import (
	"testing"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
)

// TestSubscribedSharesAnswers: streams of one class subscribed to the same names get one answer
// per push state (the same slice), equal to what the per-name path builds; a new push state
// builds afresh.
func TestSubscribedSharesAnswers(t *testing.T) {
	s, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := topology(20, 3)
	st := &pushState{snap: model.NewSnapshot(1, in), fullGen: 1}
	var names []string
	for _, svc := range in.Services {
		names = append(names, gen.ClusterName(gen.Outbound, 8080, "", svc.Hostname))
	}
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	ns := s.sets.Intern(set)
	p1, p2 := benchProxy(1), benchProxy(2)
	r1, err := s.subscribed(p1, st, gen.EndpointType, ns)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := s.subscribed(p2, st, gen.EndpointType, ns)
	if len(r1) != len(names) || &r1[0] != &r2[0] {
		t.Fatalf("answers not shared: %d resources, %p vs %p", len(r1), &r1[0], &r2[0])
	}
	direct, err := s.resources(p1, st, gen.EndpointType, ns.Sorted(), false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range direct {
		if direct[i].Name != r1[i].Name || direct[i].Hash != r1[i].Hash {
			t.Fatalf("resource %d: shared %s/%x, per name %s/%x", i, r1[i].Name, r1[i].Hash, direct[i].Name, direct[i].Hash)
		}
	}
	st2 := &pushState{snap: st.snap, fullGen: 1}
	r3, _ := s.subscribed(p1, st2, gen.EndpointType, ns)
	if &r3[0] == &r1[0] {
		t.Error("a new push state reused the old answer slice")
	}
}
