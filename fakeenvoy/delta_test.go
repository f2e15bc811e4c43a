package fakeenvoy

import (
	"sort"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/measure"
)

type deltaWant struct {
	typeURL    string
	nonce      bool
	sub, unsub []string
	initial    map[string]bool // names expected in initial_resource_versions (non-empty versions)
	errorHas   string
}

func checkDelta(t *testing.T, step string, got *discoveryv3.DeltaDiscoveryRequest, w deltaWant) {
	t.Helper()
	if got.GetTypeUrl() != w.typeURL {
		t.Errorf("%s: type %s, want %s (request %v)", step, got.GetTypeUrl(), w.typeURL, got)
		return
	}
	if (got.GetResponseNonce() != "") != w.nonce {
		t.Errorf("%s: nonce %q, want one: %v", step, got.GetResponseNonce(), w.nonce)
	}
	sorted := func(s []string) []string { s = append([]string(nil), s...); sort.Strings(s); return s }
	if d := cmp.Diff(sorted(w.sub), sorted(got.GetResourceNamesSubscribe())); d != "" {
		t.Errorf("%s: subscribe (-want +got):\n%s", step, d)
	}
	if d := cmp.Diff(sorted(w.unsub), sorted(got.GetResourceNamesUnsubscribe())); d != "" {
		t.Errorf("%s: unsubscribe (-want +got):\n%s", step, d)
	}
	gotInit := map[string]bool{}
	for n, v := range got.GetInitialResourceVersions() {
		gotInit[n] = v != ""
	}
	if len(w.initial) == 0 {
		w.initial = map[string]bool{}
	}
	if d := cmp.Diff(w.initial, gotInit); d != "" {
		t.Errorf("%s: initial_resource_versions (-want +got):\n%s", step, d)
	}
	switch {
	case w.errorHas == "" && got.GetErrorDetail() != nil:
		t.Errorf("%s: unexpected error_detail %v", step, got.GetErrorDetail())
	case w.errorHas != "" && (got.GetErrorDetail().GetCode() != 13 || !strings.Contains(got.GetErrorDetail().GetMessage(), w.errorHas)):
		t.Errorf("%s: error_detail %v, want code 13 containing %q", step, got.GetErrorDetail(), w.errorHas)
	}
}

// TestDeltaOrderAckDeletionReconnect follows one Delta client against go-control-plane: legacy
// wildcard CDS/LDS, EDS/RDS subscriptions driven by CDS/LDS before their ACKs, ACK = nonce,
// removal driving an unsubscribe, and initial_resource_versions after a reconnect.
func TestDeltaOrderAckDeletionReconnect(t *testing.T) { shells(t, testDeltaOrderAckDeletionReconnect) }

func testDeltaOrderAckDeletionReconnect(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Delta: true}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))
	C, E, L, R := resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType
	steps := []struct {
		name string
		want deltaWant
	}{
		// Envoy's Delta mux queues a response's ACK once it is applied: the subscriptions
		// the update made go first.
		{"CDS legacy wildcard", deltaWant{typeURL: C}},
		{"EDS subscribe", deltaWant{typeURL: E, sub: []string{"c1", "c2"}}},
		{"CDS ACK after the EDS subscribe", deltaWant{typeURL: C, nonce: true}},
		{"LDS legacy wildcard once warmed", deltaWant{typeURL: L}},
		{"EDS ACK after the LDS subscribe", deltaWant{typeURL: E, nonce: true}},
		{"RDS subscribe", deltaWant{typeURL: R, sub: []string{"r1"}}},
		{"LDS ACK after the RDS subscribe", deltaWant{typeURL: L, nonce: true}},
		{"RDS ACK", deltaWant{typeURL: R, nonce: true}},
	}
	wantNode := IdentityTemplate{}.Node(0)
	for _, s := range steps {
		got := srv.NextDelta(t)
		if diff := cmp.Diff(wantNode, got.GetNode(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: node (-want +got):\n%s", s.name, diff)
		}
		checkDelta(t, s.name, got, s.want)
	}
	h.waitEvent(t, "first-full")

	// Deleting c2: removed_resources drives an EDS unsubscribe before the CDS ACK.
	res := fetest.BaseResources(t)
	res[resource.ClusterType] = []types.Resource{fetest.EDSCluster("c1")}
	srv.Set(t, c.NodeID(), "v2", res)
	checkDelta(t, "EDS unsubscribe c2", srv.NextDelta(t), deltaWant{typeURL: E, unsub: []string{"c2"}})
	checkDelta(t, "CDS ACK of the removal", srv.NextDelta(t), deltaWant{typeURL: C, nonce: true})
	for {
		r := h.nextInfo(t)
		if r.TypeURL == C && r.Seq > 4 {
			if r.Removed != 1 || r.NoOp || r.Nacked || !r.Delta {
				t.Errorf("removal response %+v: want Removed 1, accepted", r)
			}
			break
		}
	}
}

// TestDeltaReconnectInitialVersions forces a reconnect with DisconnectAfter: the new stream
// restates every type with its names and initial_resource_versions.
func TestDeltaReconnectInitialVersions(t *testing.T) { shells(t, testDeltaReconnectInitialVersions) }

func testDeltaReconnectInitialVersions(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Delta: true, Ack: policy.Ack{DisconnectAfter: 4}}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "disconnected policy")
	C, E, L, R := resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType
	// The old stream's last requests may reach the server's callback after the new stream's
	// first ones (streams are served concurrently): follow the new stream only.
	var stream int64
	for {
		r := srv.NextDelta(t)
		if r.TypeUrl == C && len(r.InitialResourceVersions) > 0 {
			checkDelta(t, "restate CDS", r, deltaWant{typeURL: C, initial: map[string]bool{"c1": true, "c2": true}})
			stream = srv.Stream(r)
			break
		}
	}
	next := func() *discoveryv3.DeltaDiscoveryRequest {
		for {
			if r := srv.NextDelta(t); srv.Stream(r) == stream {
				return r
			}
		}
	}
	checkDelta(t, "restate EDS", next(), deltaWant{typeURL: E, sub: []string{"c1", "c2"}, initial: map[string]bool{"c1": true, "c2": true}})
	checkDelta(t, "restate LDS", next(), deltaWant{typeURL: L, initial: map[string]bool{"l1": true}})
	checkDelta(t, "restate RDS", next(), deltaWant{typeURL: R, sub: []string{"r1"}, initial: map[string]bool{"r1": true}})
	// go-control-plane owes nothing for the versions restated (it answers CDS and LDS with
	// no-ops, EDS and RDS not at all): the client holds its full config again.
	h.waitEvent(t, "resynced")
}

// TestDeltaRealisticNack: an HCM whose inline route config is invalid inside its Any gets the
// listener NACKed (nonce + error_detail), and versions are not recorded.
func TestDeltaRealisticNack(t *testing.T) { shells(t, testDeltaRealisticNack) }

func testDeltaRealisticNack(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Delta: true, Nack: policy.Nack{Realistic: true}}, h)
	res := fetest.BaseResources(t)
	res[resource.ListenerType] = append(res[resource.ListenerType], fetest.BadInlineRouteListener(t, "bad"))
	srv.Set(t, c.NodeID(), "v1", res)
	runClient(t, c, srv.Connector(t))
	L := resource.ListenerType
	for {
		r := srv.NextDelta(t)
		if r.TypeUrl == L && r.ResponseNonce != "" {
			checkDelta(t, "LDS NACK", r, deltaWant{typeURL: L, nonce: true, errorHas: "listener bad"})
			break
		}
	}
	for {
		r := h.nextInfo(t)
		if r.TypeURL == L {
			if !r.Nacked || !strings.Contains(r.Error, "VirtualHost") {
				t.Errorf("LDS response %+v: want NACK naming the VirtualHost violation", r)
			}
			break
		}
	}
}

// TestDeltaResyncCountsFullConfig: a Delta client reconnecting to go-control-plane, which owes
// it nothing, counts again among the connected clients holding a full config (the
// observer's gauge), with one resync observed for the one reconnect.
func TestDeltaResyncCountsFullConfig(t *testing.T) { shells(t, testDeltaResyncCountsFullConfig) }

func testDeltaResyncCountsFullConfig(t *testing.T) {
	srv := fetest.NewCPServer(t)
	o := measure.NewObserver(measure.ObserverConfig{})
	c := newTestClient(t, ClientConfig{Delta: true, Ack: policy.Ack{DisconnectAfter: 4}}, o)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))
	deadline := time.Now().Add(fetest.WaitLimit)
	for {
		st := o.Stats()
		if st.Resync != nil && st.Resync.TotalCount() == 1 && st.FullConfigNow == 1 {
			break
		}
		if time.Now().After(deadline) {
			n := int64(0)
			if st.Resync != nil {
				n = st.Resync.TotalCount()
			}
			t.Fatalf("after a reconnect: %d resyncs, %d clients with a full config now; want 1 and 1", n, st.FullConfigNow)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // no second resync for the same reconnect
	if st := o.Stats(); st.Resync.TotalCount() != 1 || st.Reconnects != 1 {
		t.Errorf("%d resyncs for %d reconnects, want 1 for 1", st.Resync.TotalCount(), st.Reconnects)
	}
}
