package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// TestFleetLargeConfigTogether: clients that connect together to go-control-plane all take a
// config of hundreds of KB, which reaches each in many DATA frames, read where the frames lie
// (the codec's pieces) and resource by resource: go-control-plane orders a SotW response's
// resources as it iterates a map, so no two clients receive the same run and the response
// memo does not answer (readRunPieces and the memo's trial list still run). A second version
// moves one endpoint in the middle of the EDS run, keeping every length: every client must
// see it, and no client NACKs.
func TestFleetLargeConfigTogether(t *testing.T) {
	const n, clusters = 24, 1200
	srv := fetest.NewCPServer(t)
	cfg := flConfig(srv.Addr, n, policy.Nack{Realistic: true})
	cfg.Ramp = 100000 // together
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("outbound|8080||svc-%04d.ns-%d.svc.cluster.local", i, i%5) }
	// Cluster i's endpoint, on net 2 or, moved, on net 3: the same length either way.
	addr := func(net, i int) string { return fmt.Sprintf("10.%d.%d.%d", net, i/200, 10+i%200) }
	res := func(moved int) map[resource.Type][]types.Resource {
		r := fetest.BaseResources(t)
		for i := range clusters {
			a := addr(2, i)
			if i == moved {
				a = addr(3, i)
			}
			r[resource.ClusterType] = append(r[resource.ClusterType], fetest.EDSCluster(name(i)))
			r[resource.EndpointType] = append(r[resource.EndpointType], fetest.CLA(name(i), a, 8080))
		}
		return r
	}
	flSetAll(t, srv, f, "v1", res(-1))
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	flWait(t, "every client has the large config", func() bool { return f.Progress().FullConfig == n })
	if nacks := f.Progress().Nacks; nacks != 0 {
		t.Fatalf("%d NACKs of a valid config", nacks)
	}

	moved := clusters / 2
	_, err = f.Expect(probe.Expectation{EventID: 1, Kind: "endpoint-move", T0: time.Now(),
		All: []probe.Predicate{
			{Op: probe.EndpointPresent, Resource: name(moved), Address: addr(3, moved), Port: 8080},
			{Op: probe.EndpointAbsent, Resource: name(moved), Address: addr(2, moved), Port: 8080},
		}})
	if err != nil {
		t.Fatal(err)
	}
	flSetAll(t, srv, f, "v2", res(moved))
	ctx, cancel := context.WithTimeout(context.Background(), fetest.WaitLimit)
	defer cancel()
	if left, err := f.Matcher().Drain(ctx, 5*time.Millisecond); left != 0 || err != nil {
		t.Fatalf("drain: %d outstanding, %v", left, err)
	}
	e := f.Matcher().Results().Events[0]
	if e.Reached != n || e.Observed != n || e.Missed != 0 {
		t.Errorf("the moved endpoint: reached %d, observed %d, missed %d; want every one of %d clients to see it", e.Reached, e.Observed, e.Missed, n)
	}
	st := f.Observer().Stats()
	if st.Types["EDS"].Nacks != 0 || st.Types["CDS"].Nacks != 0 {
		t.Errorf("NACKs: CDS %d, EDS %d; want none", st.Types["CDS"].Nacks, st.Types["EDS"].Nacks)
	}
}
