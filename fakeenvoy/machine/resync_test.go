package machine

import (
	"testing"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
)

// deltaFull runs a Delta client's initial exchange to its first full config.
func deltaFull(t *testing.T, cfg Config) *Machine {
	t.Helper()
	cfg.Delta = true
	m := newTestMachine(t, cfg)
	m.Start(t0)
	m.OnDelta(deltaResp(t, C, "a", nil, fetest.EDSCluster("c1")), t0)
	m.OnDelta(deltaResp(t, E, "b", nil, fetest.CLA("c1", "10.0.0.1", 80)), t0)
	m.OnDelta(deltaResp(t, L, "c", nil, fetest.RDSListener(t, "l1", 80, "r1")), t0)
	if s := m.OnDelta(deltaResp(t, R, "d", nil, fetest.Route("r1", "h", "c1")), t0); !s.FirstFull {
		t.Fatal("no first full config")
	}
	return m
}

// TestDeltaResyncNothingOwed: after a Delta reconnect whose initial_resource_versions restate
// every resource held, the server owes nothing (go-control-plane answers only CDS and LDS, with
// no-ops). The client holds its full config at the new stream's start, once.
func TestDeltaResyncNothingOwed(t *testing.T) {
	m := deltaFull(t, Config{})
	at := t0.Add(time.Second)
	start := m.Start(at)
	if !start.Resynced || start.Resync != 0 {
		t.Fatalf("start: resynced %v after %v, want at once", start.Resynced, start.Resync)
	}
	n := 0
	for _, s := range []Step{
		m.OnDelta(deltaResp(t, C, "1", nil), at.Add(time.Millisecond)),
		m.OnDelta(deltaResp(t, L, "2", nil), at.Add(2*time.Millisecond)),
		m.OnTimer(at.Add(time.Hour)),
	} {
		if s.Resynced {
			n++
		}
	}
	if n != 0 {
		t.Errorf("%d more resyncs for one reconnect", n)
	}
	if !m.NextDeadline().IsZero() {
		t.Errorf("deadline %v armed", m.NextDeadline())
	}
}

// TestDeltaResyncOwed: a type the restated versions do not cover (a resource held without a
// version, from a NACKed response, or a subscribed name not held) must answer first.
func TestDeltaResyncOwed(t *testing.T) {
	m := deltaFull(t, Config{})
	// c2's assignment is subscribed but never arrives before the reconnect.
	m.OnDelta(deltaResp(t, C, "e", nil, fetest.EDSCluster("c2")), t0)
	at := t0.Add(time.Second)
	if s := m.Start(at); s.Resynced {
		t.Fatal("resynced at the start while c2's assignment is owed")
	}
	if s := m.OnDelta(deltaResp(t, C, "1", nil), at.Add(time.Millisecond)); s.Resynced {
		t.Fatal("resynced before EDS answered")
	}
	s := m.OnDelta(deltaResp(t, E, "2", nil, fetest.CLA("c2", "10.0.0.2", 80)), at.Add(3*time.Millisecond))
	if !s.Resynced || s.Resync != 3*time.Millisecond {
		t.Fatalf("EDS answer: resynced %v after %v, want after 3ms", s.Resynced, s.Resync)
	}
}

// TestSotwResyncEmptyWildcard: a SotW client that holds no listeners is owed no LDS answer on a
// new stream (go-control-plane sends none for an empty type at the version restated): it holds
// its full config again once CDS and EDS have answered.
func TestSotwResyncEmptyWildcard(t *testing.T) {
	m := newTestMachine(t, Config{})
	m.Start(t0)
	m.OnSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1")), t0)
	m.OnSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80)), t0)
	if s := m.OnSotw(sotwResp(t, L, "1", "c"), t0); !s.FirstFull {
		t.Fatal("no first full config")
	}
	at := t0.Add(time.Second)
	if s := m.Start(at); s.Resynced {
		t.Fatal("resynced before CDS answered")
	}
	m.OnSotw(sotwResp(t, C, "1", "d", fetest.EDSCluster("c1")), at)
	s := m.OnSotw(sotwResp(t, E, "1", "e", fetest.CLA("c1", "10.0.0.1", 80)), at.Add(2*time.Millisecond))
	if !s.Resynced || s.Resync != 2*time.Millisecond {
		t.Errorf("EDS answer: resynced %v after %v, want after 2ms without LDS", s.Resynced, s.Resync)
	}
}
