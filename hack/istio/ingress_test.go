package istio_test

import (
	"context"
	"testing"
	"time"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/hack/istio/istiodlab"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/units"
)

// TestIngressChurnOnIstio runs the shrunk built-in ingress-churn (12 routers, SotW and Delta,
// beside sidecars) on Istio's DiscoveryServer and on xdslab's control plane: every event is
// observed, superseded or already held by every client it reaches. With seed 13, gateway
// re-binding event 87 re-binds a host event 78 re-bound 420 ms before; istiod's debounce often
// pushes both at once, and the route it generates shows only the later binding: event 78 must
// then be superseded (a route's subject is its virtual host), not missed.
func TestIngressChurnOnIstio(t *testing.T) {
	t.Run("istio", func(t *testing.T) {
		dir := t.TempDir()
		srv, err := istiodlab.Start(t, istiodlab.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ingressChurn(t, run.Options{Target: srv.Addr, SinkDir: dir})
	})
	t.Run("xdslab", func(t *testing.T) { ingressChurn(t, run.Options{}) })
}

func ingressChurn(t *testing.T, opts run.Options) {
	sc, err := scenarios.Builtin("ingress-churn")
	if err != nil {
		t.Fatal(err)
	}
	shrink(sc)
	sc.Duration = units.Duration(8 * time.Second)
	sc.Clients[2].Count = 4
	s, err := run.Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	reached := false
	for _, e := range s.Results.Events {
		if !e.Complete() {
			t.Errorf("event %d (%s): reached %d, observed %d, superseded %d, missed %d by %v, unresolved %d",
				e.ID, e.Kind, e.Reached, e.Observed, e.Superseded, e.Missed, e.MissedBy, e.Unresolved)
		}
		if e.ID == 78 {
			reached = e.Reached > 0
			t.Logf("event 78 (%s): observed %d, superseded %d, convergence %.3fs", e.Kind, e.Observed, e.Superseded, e.ConvergenceSeconds)
		}
	}
	if !reached {
		t.Error("event 78 reached no client: the scenario no longer re-binds a host twice")
	}
	if m, ok := s.Results.Find("xdslab_fleet_nacks_total", nil); !ok || m.Values["count"] != 0 {
		t.Errorf("NACKs: %v", m.Values)
	}
}
