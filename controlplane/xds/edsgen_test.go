package xds

import (
	"reflect"
	"testing"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/istioconfig"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
)

// TestNamedAssignmentsSurviveFullPush: a full push for a new service keeps the cached bytes of
// every other named ClusterLoadAssignment (no regeneration), while the assignment of a service
// that changed is rebuilt, and a removed service's entry is evicted.
func TestNamedAssignmentsSurviveFullPush(t *testing.T) {
	s, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := topology(3, 2)
	snap1 := model.NewSnapshot(1, in)
	s.Push(snap1, &model.PushRequest{Full: true})
	name := func(i int) string { return gen.ClusterName(gen.Outbound, 8080, "", in.Services[i].Hostname) }
	names := []string{name(0), name(1), name(2)}
	p := benchProxy(1)
	get := func() map[string]uint64 {
		t.Helper()
		res, err := s.resources(p, s.current(), gen.EndpointType, names, false)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, r := range res {
			out[r.Name] = uintptr64(r)
		}
		return out
	}
	before := get()

	// A new service (a full push), and svc-1's port renamed (its service changed).
	added := &model.Service{Hostname: "new.ns-0.svc.cluster.local", Namespace: "ns-0",
		Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}}
	changed := *in.Services[1]
	changed.Ports = []model.Port{{Name: "http-renamed", Number: 8080, Protocol: model.ProtocolHTTP}}
	snap2 := snap1.Apply(2, model.SnapshotDelta{Services: map[string]*model.Service{added.Hostname: added, changed.Hostname: &changed}})
	s.Push(snap2, &model.PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{
		{Kind: model.KindService, Name: added.Hostname}: {}, {Kind: model.KindService, Name: changed.Hostname}: {}}})
	after := get()
	if before[names[0]] != after[names[0]] || before[names[2]] != after[names[2]] {
		t.Error("an unchanged service's assignment was rebuilt by a full push for another service")
	}
	if before[names[1]] == after[names[1]] {
		t.Error("the changed service's assignment was served from the old entry")
	}

	// svc-2 removed: its entry goes with the next full push.
	snap3 := snap2.Apply(3, model.SnapshotDelta{Services: map[string]*model.Service{in.Services[2].Hostname: nil}})
	entries := s.cache.Stats().Entries
	s.Push(snap3, &model.PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindService, Name: in.Services[2].Hostname}: {}}})
	if got := s.cache.Stats().Entries; got >= entries {
		t.Errorf("cache entries %d after removing a service, %d before: its assignment was not evicted", got, entries)
	}
}

// uintptr64 identifies a resource by its address: equal means the same cached entry.
func uintptr64(r *cache.Resource) uint64 { return uint64(reflect.ValueOf(r).Pointer()) }
