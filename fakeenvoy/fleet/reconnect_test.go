package fleet

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// startMesh starts an in-process control plane on addr with a few services.
func startMesh(t *testing.T, addr string) *controlplane.Server {
	t.Helper()
	o := controlplanetest.Options(t)
	o.GRPCAddr = addr
	o.Debounce.MinQuiet, o.Debounce.MaxDelay = 0, 0
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s := controlplanetest.NewServer(t, o)
	for _, h := range []string{"a.ns-0.svc.cluster.local", "b.ns-0.svc.cluster.local"} {
		s.Registry().SetService(&model.Service{Hostname: h, Namespace: "ns-0", Ports: []model.Port{{Name: "http", Number: 80, Protocol: "HTTP"}}})
		s.Registry().SetEndpoints(h, []*model.Endpoint{{Address: "10.0.0.1"}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetest.WaitLimit)
	defer cancel()
	if _, err := s.WaitForSnapshot(ctx, func(sn *model.Snapshot) bool { return sn.ServiceCount() == 2 }); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFleetReconnectAfterOutage kills the control plane under a connected fleet and starts it
// again on the same address: while it is down no client counts as holding a full config;
// afterwards every client reconnects, the reconnects are counted, and each one's time from
// the new stream to a full config again is in the resync trend.
func TestFleetReconnectAfterOutage(t *testing.T) {
	const n = 5
	cp := startMesh(t, "127.0.0.1:0")
	addr := cp.GRPCAddr()
	f, err := New(flConfig(addr, n, policy.Nack{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	flWait(t, "every client has a full config", func() bool { return f.Progress().FullConfig == n })

	cp.Stop()
	flWait(t, "every client disconnected", func() bool { return f.Progress().Connected == 0 })
	if p := f.Progress(); p.FullConfig != 0 || p.FullConfigEver != n {
		t.Errorf("while the control plane is down: %s; want 0 full config", p)
	}
	if st := f.Observer().Stats(); st.FullConfigNow != 0 || st.FullConfig != n {
		t.Errorf("down: full config now %d (want 0), ever %d (want %d)", st.FullConfigNow, st.FullConfig, n)
	}

	startMesh(t, addr)
	flWait(t, "every client has a full config again", func() bool { return f.Progress().FullConfig == n })
	st := f.Observer().Stats()
	if st.Reconnects != n || st.Resync.TotalCount() != n {
		t.Errorf("reconnects %d, resyncs %d; want %d each", st.Reconnects, st.Resync.TotalCount(), n)
	}
	f.Stop()
	fig := f.Figures() // what the report is built from (bench checks the rows)
	if fig.Stats.Reconnects != n {
		t.Errorf("reconnects = %d, want %d", fig.Stats.Reconnects, n)
	}
	if h := fig.Stats.Resync; h == nil || h.TotalCount() != n || h.Max() <= 0 {
		t.Errorf("resync histogram %v, want %d values above 0", h, n)
	}
	if fig.Stats.FullConfigNow != n || fig.Stats.FullConfig != n {
		t.Errorf("full config clients at Stop %d, ever %d, want %d each", fig.Stats.FullConfigNow, fig.Stats.FullConfig, n)
	}
}
