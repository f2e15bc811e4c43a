package measure

import (
	"fmt"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/probe"
)

// mtCheck compares each event's classes and latencies with want (a censored event's bound
// depends on when Results runs: its push is not compared).
func mtCheck(t *testing.T, res MatchResults, want []mtWant) {
	t.Helper()
	if len(res.Events) != len(want) {
		t.Fatalf("events = %d, want %d", len(res.Events), len(want))
	}
	for i, w := range want {
		e := res.Events[i]
		got := mtWant{observed: e.Observed, held: e.AlreadyHeld, superseded: e.Superseded, missed: e.Missed,
			push: e.Convergence, recv: e.ReceiveConvergence, censored: e.Censored}
		if e.Censored {
			got.push = 0
		}
		if got != w {
			t.Errorf("event %d (%s): got %+v, want %+v", e.EventID, e.Kind, got, w)
		}
	}
}

// TestMatcherDeletionBeyondCapSupersedes: a service-delete of 100 service ports keeps 64
// ClusterAbsent predicates (the simulator's cap) and carries the other 36 in Rest. A change of
// a service whose deletion is in Rest (an endpoint count, an lb policy), made before the
// deletion and never pushed on its own, can never be seen: the deletion passed it, as it
// passes the change of a service whose deletion it kept. Both are superseded with their latency
// to the response that removed the clusters; neither waits to be missed.
func TestMatcherDeletionBeyondCapSupersedes(t *testing.T) {
	cds, edsT := resource.ClusterType, resource.EndpointType
	const n, kept = 100, 64
	svc := func(i int) string { return fmt.Sprintf("outbound|80||s-%02d.ns.svc.cluster.local", i) }
	del := probe.Expectation{EventID: 9, Kind: "service-delete", T0: at(100)}
	clusters, cla, gone := map[string]proto.Message{}, map[string]proto.Message{}, map[string]proto.Message{}
	for i := range n {
		p := probe.Predicate{Op: probe.ClusterAbsent, Resource: svc(i)}
		if i < kept {
			del.All = append(del.All, p)
		} else {
			del.Rest = append(del.Rest, p)
		}
		clusters[svc(i)] = &clusterv3.Cluster{Name: svc(i)}
		cla[svc(i)] = mtCLA(svc(i), "10.0.0.1")
		gone[svc(i)] = nil
	}
	events := []probe.Expectation{
		{EventID: 1, Kind: "scale", T0: at(0), All: []probe.Predicate{count(svc(10), 2)}},  // deletion kept in All
		{EventID: 2, Kind: "scale", T0: at(10), All: []probe.Predicate{count(svc(90), 2)}}, // deletion in Rest
		{EventID: 3, Kind: "lb-change", T0: at(20), All: []probe.Predicate{{Op: probe.ClusterLbPolicy, Resource: svc(95), Value: "LEAST_REQUEST"}}},
		del,
	}
	m := NewMatcher(MatcherConfig{Now: mtNow})
	c := &mtClient{index: 0, group: "g", ns: "default"}
	m.Track(0, "g", "default")
	c.push(m, cds, at(0), time.Time{}, clusters)
	c.push(m, edsT, at(0), time.Time{}, cla)
	for _, e := range events {
		if _, err := m.Expect(e); err != nil {
			t.Fatal(err)
		}
	}
	c.push(m, cds, at(400), time.Time{}, gone)
	mtCheck(t, m.Results(), []mtWant{
		{superseded: 1, push: 400 * time.Millisecond},
		{superseded: 1, push: 390 * time.Millisecond},
		{superseded: 1, push: 380 * time.Millisecond},
		{observed: 1, push: 300 * time.Millisecond, recv: 300 * time.Millisecond},
	})
}

// TestMatcherWarmingPassedIsSupersededInEffect: Envoy applies a cluster only once it is warm,
// so a change received in a cluster still warming is not observed (not in effect). When a later
// change of the same subject replaces the warming copy before it warmed, the client can never
// be in the earlier change's state: it is superseded, and its push latency runs to the moment
// the state that passed it took effect (the assignment that warmed the cluster), as an
// observed change's does. The outcome is the same whichever way the matcher learns it: the
// later event reached at the client retires it (its own predicate on the subject), or the
// response shows the client past it through a later event that never holds as a whole there
// (its change of the subject is in Rest), and for a change the client never received.
func TestMatcherWarmingPassedIsSupersededInEffect(t *testing.T) {
	cds, edsT := resource.ClusterType, resource.EndpointType
	lb := func(c, v string) probe.Predicate {
		return probe.Predicate{Op: probe.ClusterLbPolicy, Resource: c, Value: v}
	}
	rr, lr, rnd := clusterv3.Cluster_ROUND_ROBIN, clusterv3.Cluster_LEAST_REQUEST, clusterv3.Cluster_RANDOM
	cases := []struct {
		name     string
		received bool              // the client received the earlier change (warming) before the later one came
		later    probe.Expectation // changes c1 to RANDOM (T0 150 ms)
		want     []mtWant
	}{{
		name:     "received, retired by the later event reached",
		received: true,
		later:    probe.Expectation{EventID: 2, Kind: "lb-change", T0: at(150), All: []probe.Predicate{lb("c1", "RANDOM")}},
		want: []mtWant{{superseded: 1, push: 300 * time.Millisecond, recv: 100 * time.Millisecond},
			{observed: 1, push: 150 * time.Millisecond, recv: 50 * time.Millisecond}},
	}, {
		name:     "received, moved past by a later event's Rest",
		received: true,
		later: probe.Expectation{EventID: 2, Kind: "lb-change", T0: at(150), All: []probe.Predicate{lb("c9", "RANDOM")},
			Rest: []probe.Predicate{lb("c1", "RANDOM")}},
		want: []mtWant{{superseded: 1, push: 300 * time.Millisecond, recv: 100 * time.Millisecond},
			{observed: 1, push: 150 * time.Millisecond, recv: 50 * time.Millisecond}},
	}, {
		name:  "never received, retired by the later event reached",
		later: probe.Expectation{EventID: 2, Kind: "lb-change", T0: at(150), All: []probe.Predicate{lb("c1", "RANDOM")}},
		want: []mtWant{{superseded: 1, push: 300 * time.Millisecond},
			{observed: 1, push: 150 * time.Millisecond, recv: 50 * time.Millisecond}},
	}, {
		name: "never received, moved past by a later event's Rest",
		later: probe.Expectation{EventID: 2, Kind: "lb-change", T0: at(150), All: []probe.Predicate{lb("c9", "RANDOM")},
			Rest: []probe.Predicate{lb("c1", "RANDOM")}},
		want: []mtWant{{superseded: 1, push: 300 * time.Millisecond},
			{observed: 1, push: 150 * time.Millisecond, recv: 50 * time.Millisecond}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMatcher(MatcherConfig{Now: mtNow})
			c := &mtClient{index: 0, group: "g", ns: "default"}
			m.Track(0, "g", "default")
			c.push(m, cds, at(0), time.Time{}, eds("c1", lbCluster("c1", rr), "c9", lbCluster("c9", rr)))
			for _, e := range []probe.Expectation{{EventID: 1, Kind: "lb-change", T0: at(0), All: []probe.Predicate{lb("c1", "LEAST_REQUEST")}}, tc.later} {
				if _, err := m.Expect(e); err != nil {
					t.Fatal(err)
				}
			}
			c.warming = map[string]proto.Message{cds + "/c1": lbCluster("c1", rr), cds + "/c9": lbCluster("c9", rr)}
			if tc.received {
				c.push(m, cds, at(100), time.Time{}, eds("c1", lbCluster("c1", lr)))
			}
			c.push(m, cds, at(200), time.Time{}, eds("c1", lbCluster("c1", rnd), "c9", lbCluster("c9", rnd)))
			c.warming = nil // their assignments warm both
			c.push(m, edsT, at(300), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1"), "c9", mtCLA("c9", "10.0.0.1")))
			mtCheck(t, m.Results(), tc.want)
		})
	}
}

// TestMatcherRestartShowsAbsenceByClientKind: a deletion pending at a client when its stream
// drops, or its process restarts. After a reconnect both kinds keep what they held, and the
// first response lacking the cluster removes it (touched): observed. A restarted Envoy's
// first accepted CDS response is its whole set (wildcard), so what it lacks is absent:
// observed there. A restarted proxyless gRPC client asks by name, and grpc-go takes a name a
// SotW response lacks as deleted only when it held it (its xdsclient's authority: an uncached
// name may be missing because the response answers an earlier request; its watch expiry
// decides): the new process's first response shows nothing absent, and the deletion is not
// observed there.
func TestMatcherRestartShowsAbsenceByClientKind(t *testing.T) {
	cds := resource.ClusterType
	const svcA, svcB = "outbound|80||a", "outbound|80||b"
	both := func() map[string]proto.Message {
		return eds(svcA, &clusterv3.Cluster{Name: svcA}, svcB, &clusterv3.Cluster{Name: svcB})
	}
	observed := []mtWant{{observed: 1, push: 300 * time.Millisecond, recv: 300 * time.Millisecond}}
	cases := []struct {
		name           string
		named, restart bool
		want           []mtWant
	}{
		{name: "envoy reconnect", want: observed},
		{name: "grpc reconnect", named: true, want: observed},
		{name: "envoy restart", restart: true, want: observed},
		{name: "grpc restart", named: true, restart: true, want: []mtWant{{missed: 1, censored: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMatcher(MatcherConfig{Now: mtNow})
			c := &mtClient{index: 0, group: "g", ns: "default", named: tc.named,
				subs: map[string]bool{cds + "/" + svcA: true, cds + "/" + svcB: true}}
			m.TrackNamed(0, "g", "default", tc.named)
			c.push(m, cds, at(0), time.Time{}, both())
			if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "service-delete", T0: at(100),
				All: []probe.Predicate{{Op: probe.ClusterAbsent, Resource: svcA}}}); err != nil {
				t.Fatal(err)
			}
			m.touch(c.info()) // claimed while the client watches the cluster
			set := map[string]proto.Message{svcA: nil, svcB: &clusterv3.Cluster{Name: svcB}}
			if tc.restart {
				c.view, c.unsynced, c.got = mtView{}, true, nil
				set = eds(svcB, &clusterv3.Cluster{Name: svcB})
			}
			c.push(m, cds, at(400), time.Time{}, set)
			mtCheck(t, m.Results(), tc.want)
		})
	}
}

// TestMatcherHeldDeletionBeyondCapSupersedes: the same deletion of 100 ports, but the client
// already lacks the clusters when it is registered (already held): an earlier change of a
// service deleted through Rest is superseded without latency (Results' classification of what
// is still pending), not missed.
func TestMatcherHeldDeletionBeyondCapSupersedes(t *testing.T) {
	cds := resource.ClusterType
	svc := func(i int) string { return fmt.Sprintf("outbound|80||s-%02d.ns.svc.cluster.local", i) }
	del := probe.Expectation{EventID: 9, Kind: "service-delete", T0: at(100)}
	clusters, gone := map[string]proto.Message{}, map[string]proto.Message{}
	for i := range 100 {
		p := probe.Predicate{Op: probe.ClusterAbsent, Resource: svc(i)}
		if i < 64 {
			del.All = append(del.All, p)
		} else {
			del.Rest = append(del.Rest, p)
		}
		clusters[svc(i)] = &clusterv3.Cluster{Name: svc(i)}
		gone[svc(i)] = nil
	}
	m := NewMatcher(MatcherConfig{Now: mtNow})
	c := &mtClient{index: 0, group: "g", ns: "default"}
	m.Track(0, "g", "default")
	c.push(m, cds, at(0), time.Time{}, clusters)
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "scale", T0: at(0), All: []probe.Predicate{count(svc(90), 2)}}); err != nil {
		t.Fatal(err)
	}
	m.touch(c.info())
	c.push(m, cds, at(50), time.Time{}, gone)
	if _, err := m.Expect(del); err != nil {
		t.Fatal(err)
	}
	m.touch(c.info()) // claims the deletion: it holds already
	mtCheck(t, m.Results(), []mtWant{{superseded: 1}, {held: 1}})
}
