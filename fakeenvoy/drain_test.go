package fakeenvoy

import (
	"slices"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
)

// TestSotwListenerDrainKeepsRoutes removes a listener on a go-control-plane server: as Envoy,
// the client keeps asking for its route configuration while the listener drains, and leaves it
// out of its RDS request once the drain time has passed, not before.
func TestSotwListenerDrainKeepsRoutes(t *testing.T) { shells(t, testSotwListenerDrainKeepsRoutes) }

func testSotwListenerDrainKeepsRoutes(t *testing.T) {
	const drain = 300 * time.Millisecond
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{ListenerDrain: drain}, h)
	two := fetest.BaseResources(t)
	two[resource.ListenerType] = append(two[resource.ListenerType], fetest.RDSListener(t, "l2", 15002, "r2"))
	two[resource.RouteType] = append(two[resource.RouteType], fetest.Route("r2", "other.example", "c2"))
	srv.Set(t, c.NodeID(), "v1", two)
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")

	// Read what v1 caused, up to its RDS ACK, so that what follows is v2's.
	for r := srv.NextSotw(t); r.TypeUrl != resource.RouteType || r.VersionInfo != "v1"; r = srv.NextSotw(t) {
	}
	one := fetest.BaseResources(t)
	one[resource.RouteType] = append(one[resource.RouteType], fetest.Route("r2", "other.example", "c2"))
	setAt := time.Now() // the client receives v2, and l2 starts draining, after this
	srv.Set(t, c.NodeID(), "v2", one)
	draining := 0
	for {
		r := srv.NextSotw(t)
		if r.TypeUrl != resource.RouteType {
			continue
		}
		if slices.Equal(r.ResourceNames, []string{"r1"}) {
			if since := time.Since(setAt); since < drain {
				t.Errorf("r2 unsubscribed %s after its listener was removed, before the %s drain ended", since, drain)
			}
			break
		}
		if !slices.Equal(r.ResourceNames, []string{"r1", "r2"}) {
			t.Fatalf("RDS request %v while l2 drains, want [r1 r2]", r.ResourceNames)
		}
		draining++
	}
	if draining == 0 {
		t.Errorf("no RDS request naming r2 after l2 was removed: want the LDS change's request to keep it while l2 drains")
	}
}

// TestDeltaListenerDrainKeepsRoutes is the same on Delta: the unsubscribe of r2 comes when
// the drain ends.
func TestDeltaListenerDrainKeepsRoutes(t *testing.T) {
	const drain = 300 * time.Millisecond
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Delta: true, ListenerDrain: drain}, h)
	two := fetest.BaseResources(t)
	two[resource.ListenerType] = append(two[resource.ListenerType], fetest.RDSListener(t, "l2", 15002, "r2"))
	two[resource.RouteType] = append(two[resource.RouteType], fetest.Route("r2", "other.example", "c2"))
	srv.Set(t, c.NodeID(), "v1", two)
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")

	one := map[resource.Type][]types.Resource{}
	for k, v := range two {
		one[k] = v
	}
	one[resource.ListenerType] = fetest.BaseResources(t)[resource.ListenerType]
	setAt := time.Now() // the client receives v2, and l2 starts draining, after this
	srv.Set(t, c.NodeID(), "v2", one)
	for {
		r := srv.NextDelta(t)
		if r.TypeUrl != resource.RouteType || len(r.ResourceNamesUnsubscribe) == 0 {
			continue
		}
		if !slices.Equal(r.ResourceNamesUnsubscribe, []string{"r2"}) {
			t.Errorf("unsubscribed %v, want [r2]", r.ResourceNamesUnsubscribe)
		}
		if since := time.Since(setAt); since < drain {
			t.Errorf("r2 unsubscribed %s after its listener was removed, before the %s drain ended", since, drain)
		}
		return
	}
}
