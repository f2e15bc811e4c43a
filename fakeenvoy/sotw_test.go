package fakeenvoy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/probe"
)

func sotwWant(typeURL, version, nonce string, names ...string) *discoveryv3.DiscoveryRequest {
	return &discoveryv3.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: version, ResponseNonce: nonce, ResourceNames: names}
}

// checkSotw compares a request with want, ignoring the nonce's value (only its presence) and
// the node (only its presence when wantNode).
func checkSotw(t *testing.T, step string, got, want *discoveryv3.DiscoveryRequest, wantNode bool) {
	t.Helper()
	if (got.GetNode() != nil) != wantNode {
		t.Errorf("%s: node present = %v, want %v", step, got.GetNode() != nil, wantNode)
	}
	g := cloneSotw(got)
	g.Node = nil
	if (g.ResponseNonce != "") != (want.ResponseNonce != "") {
		t.Errorf("%s: nonce %q, want one: %v", step, g.ResponseNonce, want.ResponseNonce != "")
	}
	g.ResponseNonce = want.ResponseNonce
	if g.ErrorDetail != nil && want.ErrorDetail != nil {
		if g.ErrorDetail.Code != want.ErrorDetail.Code || !strings.Contains(g.ErrorDetail.Message, want.ErrorDetail.Message) {
			t.Errorf("%s: error_detail %v, want code %d containing %q", step, g.ErrorDetail, want.ErrorDetail.Code, want.ErrorDetail.Message)
		}
		g.ErrorDetail = want.ErrorDetail
	}
	if d := cmp.Diff(want, g, protocmp.Transform()); d != "" {
		t.Errorf("%s: request mismatch (-want +got):\n%s", step, d)
	}
}

func cloneSotw(r *discoveryv3.DiscoveryRequest) *discoveryv3.DiscoveryRequest {
	return proto.Clone(r).(*discoveryv3.DiscoveryRequest)
}

func newTestClient(t *testing.T, cfg ClientConfig, h probe.Hooks) *Client {
	t.Helper()
	if cfg.Node == nil {
		cfg.Node = IdentityTemplate{}.Node(cfg.Index)
	}
	if cfg.Backoff == (Backoff{}) {
		cfg.Backoff = Backoff{Base: time.Millisecond, Max: 20 * time.Millisecond}
	}
	if strings.Contains(t.Name(), "/inline") && cfg.Stamps == nil {
		cfg.Stamps = noStamps{}
	}
	c, err := NewClient(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// shells runs test once per way a client runs its stream (see owner): "forwarded", a receive
// goroutine handing each response over, and "inline", the client's goroutine reading each
// itself as a client with kernel receive stamps does. newTestClient picks the way from the
// subtest's name.
func shells(t *testing.T, test func(t *testing.T)) {
	t.Run("forwarded", test)
	t.Run("inline", test)
}

// noStamps is a stamp source with no stamps: on grpc-go's transport it makes a client run its
// streams inline while the codec stamps responses as they are decoded.
type noStamps struct{}

func (noStamps) Take(int) (time.Time, bool) { return time.Time{}, false }

// TestSotwOrderAckAndUpdates follows one SotW client against go-control-plane: Envoy's request
// order and contents, ACKs, warming, a no-op resend, a deletion and a changed cluster.
func TestSotwOrderAckAndUpdates(t *testing.T) { shells(t, testSotwOrderAckAndUpdates) }

func testSotwOrderAckAndUpdates(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	type seen struct{ c2, c1 bool }
	views := make(chan seen, 64)
	h.onApplied = func(c probe.ClientInfo, r probe.ResponseInfo, v probe.View) {
		if r.TypeURL == resource.ClusterType {
			views <- seen{c1: v.Resource(resource.ClusterType, "c1") != nil, c2: v.Resource(resource.ClusterType, "c2") != nil}
		}
	}
	c := newTestClient(t, ClientConfig{}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))

	C, E, L, R := resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType
	steps := []struct {
		name string
		want *discoveryv3.DiscoveryRequest
	}{
		{"CDS wildcard first", sotwWant(C, "", "")},
		{"EDS for all EDS clusters before the CDS ACK", sotwWant(E, "", "", "c1", "c2")},
		{"CDS ACK", sotwWant(C, "v1", "n")},
		{"LDS once clusters warmed, before the EDS ACK", sotwWant(L, "", "")},
		{"EDS ACK", sotwWant(E, "v1", "n", "c1", "c2")},
		{"RDS for the HCM route names before the LDS ACK", sotwWant(R, "", "", "r1")},
		{"LDS ACK", sotwWant(L, "v1", "n")},
		{"RDS ACK", sotwWant(R, "v1", "n", "r1")},
	}
	// Every request carries the whole configured node, as Envoy sends it.
	wantNode := IdentityTemplate{}.Node(0)
	for _, s := range steps {
		got := srv.NextSotw(t)
		if diff := cmp.Diff(wantNode, got.GetNode(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: node (-want +got):\n%s", s.name, diff)
		}
		checkSotw(t, s.name, got, s.want, true)
	}
	h.waitEvent(t, "first-full")
	for range 4 {
		if r := h.nextInfo(t); r.NoOp || r.Nacked || r.Changed == 0 || r.Version != "v1" {
			t.Errorf("initial response %+v: want accepted, changed, version v1", r)
		}
	}
	if v := <-views; !v.c1 || !v.c2 {
		t.Errorf("after CDS v1 the view holds c1=%v c2=%v, want both", v.c1, v.c2)
	}

	// v2: same resources, new version: every type is resent and is a no-op; no EDS/RDS
	// re-request, only ACKs.
	srv.Set(t, c.NodeID(), "v2", fetest.BaseResources(t))
	acks := map[string]*discoveryv3.DiscoveryRequest{}
	for range 4 {
		r := srv.NextSotw(t)
		if r.VersionInfo != "v2" {
			t.Fatalf("after an identical resend got %v, want only v2 ACKs", r)
		}
		acks[r.TypeUrl] = r
	}
	if len(acks) != 4 {
		t.Errorf("ACKs for %d types, want 4", len(acks))
	}
	for range 4 {
		if r := h.nextInfo(t); !r.NoOp || r.Changed != 0 {
			t.Errorf("identical resend %+v: want NoOp", r)
		}
	}

	// v3: c2 deleted from CDS (and its assignment). CDS response drops c2: one EDS request
	// naming c1 before the CDS ACK.
	res := fetest.BaseResources(t)
	res[resource.ClusterType] = []types.Resource{fetest.EDSCluster("c1")}
	res[resource.EndpointType] = []types.Resource{fetest.CLA("c1", "10.1.0.1", 8080)}
	srv.Set(t, c.NodeID(), "v3", res)
	var got []*discoveryv3.DiscoveryRequest
	for len(got) < 3 {
		r := srv.NextSotw(t)
		if r.TypeUrl == C || r.TypeUrl == E {
			got = append(got, r)
		}
	}
	// go-control-plane may answer the EDS watch before or after CDS; find the CDS-driven pair.
	// (When EDS v3 came first, its ACK names [c1 c2] and the CDS-driven request carries v3.)
	idx := -1
	for i, r := range got {
		if r.TypeUrl == E && len(r.ResourceNames) == 1 && i+1 < len(got) && got[i+1].TypeUrl == C {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no EDS request for [c1] followed by the CDS ACK; got %v", got)
	}
	checkSotw(t, "CDS ACK after deletion", got[idx+1], sotwWant(C, "v3", "n"), true)
	if got[idx].ResourceNames[0] != "c1" {
		t.Errorf("EDS after deletion names %v, want [c1]", got[idx].ResourceNames)
	}
	for v := range views {
		if v.c1 && !v.c2 {
			break
		}
	}
}

// TestSotwReconnectRestatesVersions uses DisconnectAfter to force a reconnect: the new stream
// restates every subscription in order with the last accepted versions and no nonces.
func TestSotwReconnectRestatesVersions(t *testing.T) { shells(t, testSotwReconnectRestatesVersions) }

func testSotwReconnectRestatesVersions(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Ack: policy.Ack{DisconnectAfter: 4}, NodeOnFirstOnly: true}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "disconnected policy")
	h.waitEvent(t, "connected")
	C, E, L, R := resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType
	// The first stream's requests come first (its last ACK may be lost to the disconnect, or
	// reach the server's callback after the new stream's first requests: streams are served
	// concurrently); the new stream starts with a CDS request carrying v1 and no nonce.
	var stream int64
	for {
		r := srv.NextSotw(t)
		if r.TypeUrl == C && r.ResponseNonce == "" && r.VersionInfo == "v1" {
			stream = srv.Stream(r)
			break
		}
	}
	next := func() *discoveryv3.DiscoveryRequest {
		for {
			if r := srv.NextSotw(t); srv.Stream(r) == stream {
				return r
			}
		}
	}
	// (go-control-plane fills in the node of later requests itself: node-on-first-only is
	// checked on the core, TestMachineNodeFirstOnly.)
	checkSotw(t, "restate EDS", next(), sotwWant(E, "v1", "", "c1", "c2"), true)
	checkSotw(t, "restate LDS", next(), sotwWant(L, "v1", ""), true)
	checkSotw(t, "restate RDS", next(), sotwWant(R, "v1", "", "r1"), true)
}

// TestSotwRealisticNacksHiddenInvalidCluster: a cluster whose TLS transport socket (inside an
// Any) violates PGV is NACKed with the last accepted version and code 13; the valid cluster is
// still applied and gets its EDS request.
func TestSotwRealisticNacksHiddenInvalidCluster(t *testing.T) {
	shells(t, testSotwRealisticNacksHiddenInvalidCluster)
}

func testSotwRealisticNacksHiddenInvalidCluster(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Nack: policy.Nack{Realistic: true}}, h)
	res := fetest.BaseResources(t)
	res[resource.ClusterType] = []types.Resource{fetest.EDSCluster("c1"), fetest.BadTLSCluster(t, "c2")}
	if err := fetest.BadTLSCluster(t, "x").ValidateAll(); err != nil {
		t.Fatalf("the hidden violation must pass the top-level ValidateAll, got %v", err)
	}
	srv.Set(t, c.NodeID(), "v1", res)
	runClient(t, c, srv.Connector(t))

	C, E := resource.ClusterType, resource.EndpointType
	checkSotw(t, "CDS", srv.NextSotw(t), sotwWant(C, "", ""), true)
	checkSotw(t, "EDS for the valid cluster only", srv.NextSotw(t), sotwWant(E, "", "", "c1"), true)
	nack := sotwWant(C, "", "n")
	nack.ErrorDetail = &status.Status{Code: int32(codes.Internal), Message: "cluster c2"} // Envoy's code 13
	checkSotw(t, "CDS NACK keeps the last accepted version", srv.NextSotw(t), nack, true)
	r := h.nextInfo(t)
	if !r.Nacked || !strings.Contains(r.Error, "UpstreamTlsContext") || r.Changed != 2 {
		t.Errorf("probe.ResponseInfo %+v: want Nacked naming UpstreamTlsContext, 2 changed", r)
	}
	// go-control-plane v0.14 resends the snapshot after every NACK; each NACK echoes the
	// nonce of the response it answers, never a stale one.
	nonces := map[string]bool{}
	for len(nonces) < 5 {
		r := srv.NextSotw(t)
		if r.TypeUrl != C || r.ErrorDetail == nil {
			continue
		}
		if nonces[r.ResponseNonce] {
			t.Fatalf("nonce %q NACKed twice", r.ResponseNonce)
		}
		nonces[r.ResponseNonce] = true
		if r.VersionInfo != "" {
			t.Errorf("NACK carries version %q, want the last accepted (none)", r.VersionInfo)
		}
	}
}

// TestConnectFailureAndBackoff: a server that is gone yields ConnectFailed and retries; Run
// returns nil once cancelled.
func TestConnectFailureAndBackoff(t *testing.T) { shells(t, testConnectFailureAndBackoff) }

func testConnectFailureAndBackoff(t *testing.T) {
	srv := fetest.NewCPServer(t)
	srv.Srv.Stop()
	h := newHookLog()
	c := newTestClient(t, ClientConfig{}, h)
	stop := runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "connect-failed")
	h.waitEvent(t, "connect-failed")
	stop()

	t.Run("delays follow the backoff policy", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// In the bubble the clock moves only while every goroutine waits, so the time
			// between two failed connects is exactly the client's sleep between them.
			const attempts = 8
			cfg := ClientConfig{Seed: 7, Index: 3, Backoff: Backoff{Base: time.Millisecond, Max: 8 * time.Millisecond}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := &failLog{stopAfter: attempts, cancel: cancel}
			c := newTestClient(t, cfg, h)
			refused := func(context.Context) (grpc.ClientConnInterface, error) { return nil, errors.New("refused") }
			if err := c.Run(ctx, refused); err != nil {
				t.Fatalf("Run: %v, want nil on cancel", err)
			}
			if len(h.at) != attempts {
				t.Fatalf("%d connect failures, want %d", len(h.at), attempts)
			}
			rng := jitterRand(cfg.Seed, cfg.Index)
			for i := 1; i < attempts; i++ {
				got := h.at[i].Sub(h.at[i-1])
				want := cfg.Backoff.Next(i-1, rng)
				ceil := min(cfg.Backoff.Base<<(i-1), cfg.Backoff.Max)
				if got != want || got >= ceil {
					t.Errorf("wait before attempt %d: %v, want %v (the policy's draw, below %v)", i+1, got, want, ceil)
				}
			}
		})
	})
}

// failLog records when connects failed and cancels the client after stopAfter of them.
type failLog struct {
	probe.NopHooks
	at        []time.Time
	stopAfter int
	cancel    context.CancelFunc
}

func (h *failLog) ConnectFailed(_ probe.ClientInfo, at time.Time, _ error) {
	h.at = append(h.at, at)
	if len(h.at) == h.stopAfter {
		h.cancel()
	}
}

// TestSotwWarmingTimeout: with no ClusterLoadAssignment served, LDS waits for
// initial_fetch_timeout, then goes out.
func TestSotwWarmingTimeout(t *testing.T) { shells(t, testSotwWarmingTimeout) }

func testSotwWarmingTimeout(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{InitialFetchTimeout: 50 * time.Millisecond, SourceFetchTimeout: 50 * time.Millisecond}, h)
	res := fetest.BaseResources(t)
	res[resource.EndpointType] = nil
	srv.Set(t, c.NodeID(), "v1", res)
	runClient(t, c, srv.Connector(t))
	C, E, L := resource.ClusterType, resource.EndpointType, resource.ListenerType
	checkSotw(t, "CDS", srv.NextSotw(t), sotwWant(C, "", ""), true)
	checkSotw(t, "EDS", srv.NextSotw(t), sotwWant(E, "", "", "c1", "c2"), true)
	checkSotw(t, "CDS ACK", srv.NextSotw(t), sotwWant(C, "v1", "n"), true)
	checkSotw(t, "EDS ACK of the empty response: clusters still warming, no LDS", srv.NextSotw(t), sotwWant(E, "v1", "n", "c1", "c2"), true)
	h.waitEvent(t, "warming-timeout envoy.config.endpoint.v3.ClusterLoadAssignment")
	checkSotw(t, "LDS after the warming timeout", srv.NextSotw(t), sotwWant(L, "", ""), true)
}

// TestSotwReconnectAfterServerLoss: the server goes away mid-stream; the client reports the
// disconnect, backs off and restates its subscriptions with the versions it accepted to the
// next server the connector returns.
func TestSotwReconnectAfterServerLoss(t *testing.T) { shells(t, testSotwReconnectAfterServerLoss) }

func testSotwReconnectAfterServerLoss(t *testing.T) {
	a, b := fetest.NewCPServer(t), fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{}, h)
	a.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	b.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	var mu sync.Mutex
	target := a.Connector(t)
	runClient(t, c, func(ctx context.Context) (grpc.ClientConnInterface, error) {
		mu.Lock()
		defer mu.Unlock()
		return target(ctx)
	})
	h.waitEvent(t, "first-full")
	mu.Lock()
	target = b.Connector(t)
	mu.Unlock()
	a.Srv.Stop()
	h.waitEvent(t, "disconnected")
	h.waitEvent(t, "connected")
	C, E, L, R := resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType
	checkSotw(t, "restate CDS", b.NextSotw(t), sotwWant(C, "v1", ""), true)
	checkSotw(t, "restate EDS", b.NextSotw(t), sotwWant(E, "v1", "", "c1", "c2"), true)
	checkSotw(t, "restate LDS", b.NextSotw(t), sotwWant(L, "v1", ""), true)
	checkSotw(t, "restate RDS", b.NextSotw(t), sotwWant(R, "v1", "", "r1"), true)
}

type ackHooks struct {
	probe.NopHooks
	acks chan time.Duration // AckSent time minus the response's receive time
}

func (h *ackHooks) AckSent(_ probe.ClientInfo, r probe.ResponseInfo, at time.Time) {
	select {
	case h.acks <- at.Sub(r.Recv):
	default:
	}
}

// TestAckDelayHoldsRequests: with an apply time of 30ms every ACK goes out no earlier than 30ms
// after its response was received, and the exchange still completes in Envoy's order.
func TestAckDelayHoldsRequests(t *testing.T) { shells(t, testAckDelayHoldsRequests) }

func testAckDelayHoldsRequests(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := &ackHooks{acks: make(chan time.Duration, 16)}
	c := newTestClient(t, ClientConfig{Ack: policy.Ack{Delay: dist.Constant(0.03)}}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	runClient(t, c, srv.Connector(t))
	want := []string{resource.ClusterType, resource.EndpointType, resource.ClusterType, resource.ListenerType,
		resource.EndpointType, resource.RouteType, resource.ListenerType, resource.RouteType}
	for i, typ := range want {
		if r := srv.NextSotw(t); r.TypeUrl != typ {
			t.Fatalf("request %d is %s, want %s", i, r.TypeUrl, typ)
		}
	}
	for range 4 {
		select {
		case d := <-h.acks:
			if d < 30*time.Millisecond {
				t.Errorf("ACK sent %v after receive, want >= 30ms", d)
			}
		case <-time.After(fetest.WaitLimit):
			t.Fatal("AckSent not called")
		}
	}
}
