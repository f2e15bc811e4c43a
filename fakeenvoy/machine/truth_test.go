package machine

import (
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/probe"
)

// Issue 11 fidelity: scripted server responses against the pure machine, no network.

// clusterFetch is an EDS cluster whose eds_config sets initial_fetch_timeout ift (nil: unset)
// and whose connect timeout distinguishes versions.
func clusterFetch(name string, ift *durationpb.Duration, connect time.Duration) *clusterv3.Cluster {
	c := fetest.EDSCluster(name)
	c.ConnectTimeout = durationpb.New(connect)
	c.EdsClusterConfig.EdsConfig.InitialFetchTimeout = ift
	return c
}

// listenerFetch is a listener whose RDS config_source sets initial_fetch_timeout ift.
func listenerFetch(t *testing.T, name string, port uint32, ift *durationpb.Duration, route string) *listenerv3.Listener {
	l := fetest.RDSListener(t, name, port)
	src := fetest.ADSSource()
	src.InitialFetchTimeout = ift
	l.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{fetest.HCMFilter(t, &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: src, RouteConfigName: route}},
	})}}}
	return l
}

// TestMachineFetchTimeoutFromConfigSource: a warming cluster or listener waits for the
// initial_fetch_timeout its config source gives (0s: forever, as Istio sets it), and for the
// client's default only when none is given.
func TestMachineFetchTimeoutFromConfigSource(t *testing.T) {
	const def = 10 * time.Second
	t1 := t0.Add(time.Minute)
	cases := []struct {
		name     string
		cluster  *durationpb.Duration
		listener *durationpb.Duration
		want     time.Time // the warming deadline; zero waits forever
	}{
		{name: "none given: the client's default", want: t1.Add(def)},
		{name: "0s waits forever", cluster: durationpb.New(0), listener: durationpb.New(0)},
		{name: "3s", cluster: durationpb.New(3 * time.Second), listener: durationpb.New(3 * time.Second), want: t1.Add(3 * time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := warmedMachine(t, Config{InitialFetchTimeout: def})
			m.OnSotw(sotwResp(t, C, "2", "e", clusterFetch("c1", tc.cluster, 2*time.Second), fetest.EDSCluster("c2")), t1)
			if d, ok := m.init.warmC["c1"]; !ok || !d.time().Equal(tc.want) {
				t.Errorf("cluster deadline %v (warming %v), want %v", d, ok, tc.want)
			}
			m.OnSotw(sotwResp(t, L, "2", "f", listenerFetch(t, "l1", 80, tc.listener, "r-new")), t1)
			if d, ok := m.init.warmL["l1"]; !ok || !d.time().Equal(tc.want) {
				t.Errorf("listener deadline %v (warming %v), want %v", d, ok, tc.want)
			}
			if got := m.NextDeadline(); !got.Equal(tc.want) {
				t.Errorf("next deadline %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMachineInEffectWhileWarming: an updated cluster is received at once but the copy it
// replaces stays in effect until its assignment arrives (SotW) or, in Delta, until its
// initial_fetch_timeout lets it use the assignment it holds (Envoy's EDS cache is used on
// FetchTimedout only).
func TestMachineInEffectWhileWarming(t *testing.T) {
	t1 := t0.Add(time.Minute)
	for _, delta := range []bool{false, true} {
		name := "sotw"
		if delta {
			name = "delta"
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{Delta: delta, InitialFetchTimeout: 15 * time.Second}
			var m *Machine
			updated := clusterFetch("c1", nil, 2*time.Second)
			var s Step
			if delta {
				m = newTestMachine(t, cfg)
				m.Start(t0)
				m.OnDelta(deltaResp(t, C, "n1", nil, fetest.EDSCluster("c1")), t0)
				m.OnDelta(deltaResp(t, E, "n2", nil, fetest.CLA("c1", "10.0.0.1", 80)), t0)
				m.OnDelta(deltaResp(t, L, "n2l", nil), t0) // no listeners: initialized
				s = m.OnDelta(deltaResp(t, C, "n3", nil, updated), t1)
			} else {
				m = warmedMachine(t, cfg)
				s = m.OnSotw(sotwResp(t, C, "2", "e", updated, fetest.EDSCluster("c2")), t1)
			}
			if !proto.Equal(m.Resource(C, "c1"), updated) {
				t.Fatalf("the update was not received")
			}
			if proto.Equal(m.Effective(C, "c1"), updated) || m.Effective(C, "c1") == nil {
				t.Errorf("a warming cluster must keep its previous copy in effect, got %v", m.Effective(C, "c1"))
			}
			if i := slices.IndexFunc(s.Info.Touched, func(c probe.Touched) bool { return c.Name == "c1" }); i < 0 || !proto.Equal(s.Info.Touched[i].Prev, fetest.EDSCluster("c1")) {
				t.Errorf("touched %v: want c1 with its previous copy", s.Info.Touched)
			}
			if delta {
				// No fresh assignment comes (a server that sends only changed resources):
				// the held one is used only at the timeout.
				if st := m.OnTimer(t1.Add(14 * time.Second)); len(st.Timeouts) != 0 {
					t.Errorf("timed out early: %v", st.Timeouts)
				}
				if !proto.Equal(m.Effective(C, "c1"), fetest.EDSCluster("c1")) {
					t.Errorf("delta warmed from its cached assignment before the timeout")
				}
				st := m.OnTimer(t1.Add(15 * time.Second))
				if !slices.Equal(st.Timeouts, []string{E}) {
					t.Errorf("timeouts %v, want EDS", st.Timeouts)
				}
			} else {
				m.OnSotw(sotwResp(t, E, "2", "g", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)), t1.Add(time.Second))
			}
			if !proto.Equal(m.Effective(C, "c1"), updated) {
				t.Errorf("warmed cluster not in effect")
			}
		})
	}
}

// TestMachineDeltaSubscriptionBeforeAck: a Delta response that changes the clusters is ACKed
// after the EDS subscription it causes, as in SotW (Envoy's Delta mux queues the ACK once the
// update is applied, and the EDS subscription resumed at the end of CDS's onConfigUpdate went
// out before); the EDS response that warms the clusters starts LDS before its ACK.
func TestMachineDeltaSubscriptionBeforeAck(t *testing.T) {
	m := newTestMachine(t, Config{Delta: true})
	m.Start(t0)
	s := m.OnDelta(deltaResp(t, C, "n1", nil, fetest.EDSCluster("c1")), t0)
	if len(s.Delta) != 2 || s.Delta[0].TypeUrl != E || s.Delta[1].ResponseNonce != "n1" || s.Delta[1].TypeUrl != C {
		t.Fatalf("requests %v: want EDS subscribe, then CDS ACK", s.Delta)
	}
	s = m.OnDelta(deltaResp(t, E, "n2", nil, fetest.CLA("c1", "10.0.0.1", 80)), t0)
	if len(s.Delta) != 2 || s.Delta[0].TypeUrl != L || s.Delta[1].ResponseNonce != "n2" {
		t.Fatalf("requests %v: want LDS subscribe, then EDS ACK", s.Delta)
	}
}
