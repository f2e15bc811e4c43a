package xds

import (
	"fmt"
	"sync"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/controlplane/gen"
)

func TestAdmissionReserve(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		at       time.Duration // after t0
		maxWait  time.Duration
		wantWait time.Duration
		wantOK   bool
	}
	for _, tc := range []struct {
		name  string
		rate  float64
		burst int
		steps []step
	}{
		{"burst then refuse without wait", 10, 2, []step{
			{0, 0, 0, true}, {0, 0, 0, true}, {0, 0, 0, false},
		}},
		{"burst then queue within the wait", 10, 2, []step{
			{0, time.Second, 0, true}, {0, time.Second, 0, true},
			{0, time.Second, 100 * time.Millisecond, true},
			{0, time.Second, 200 * time.Millisecond, true},
		}},
		{"a refused stream takes no token", 10, 1, []step{
			{0, 0, 0, true},
			{0, 50 * time.Millisecond, 0, false},
			{0, 150 * time.Millisecond, 100 * time.Millisecond, true},
		}},
		{"tokens refill with time up to the burst", 10, 2, []step{
			{0, 0, 0, true}, {0, 0, 0, true},
			{time.Hour, 0, 0, true}, {time.Hour, 0, 0, true}, {time.Hour, 0, 0, false},
		}},
		{"reservations ahead are paid back before new tokens", 10, 1, []step{
			{0, time.Second, 0, true},
			{0, time.Second, 100 * time.Millisecond, true},
			{100 * time.Millisecond, time.Second, 100 * time.Millisecond, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmission(tc.rate, tc.burst)
			for i, s := range tc.steps {
				wait, ok := a.reserve(t0.Add(s.at), s.maxWait)
				if ok != s.wantOK || (wait-s.wantWait).Abs() > time.Millisecond {
					t.Fatalf("step %d: reserve = %v, %v; want %v, %v", i, wait, ok, s.wantWait, s.wantOK)
				}
			}
		})
	}
	if wait, ok := (*admission)(nil).reserve(t0, 0); !ok || wait != 0 {
		t.Fatalf("nil admission: %v, %v; want 0, true", wait, ok)
	}
}

// TestAdmissionWaitServesABurst opens more concurrent streams than the burst: with a wait bound
// all are served (later ones after their token comes); without it the extra ones are refused.
func TestAdmissionWaitServesABurst(t *testing.T) {
	const streams = 8
	for _, tc := range []struct {
		name        string
		rate        float64
		wait        time.Duration
		wantRefused int
	}{
		{"wait admits all", 50, 5 * time.Second, 0},
		// One token per 100 s: however slowly the streams are dialled (a loaded machine), no
		// token comes back during the test, so the streams beyond the burst are refused.
		{"no wait refuses beyond the burst", 0.01, 0, streams - 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions()
			o.AdmissionRate, o.AdmissionBurst, o.AdmissionWait = tc.rate, 2, tc.wait
			ts := startServer(t, o)
			ts.push(topology(1, 1), true)
			var wg sync.WaitGroup
			codesSeen := make([]codes.Code, streams)
			for i := range streams {
				c := dial(t, ts.addr, sidecarNode(t, fmt.Sprintf("10.200.0.%d", i+1), "ns-0", ""))
				wg.Add(1)
				go func() {
					defer wg.Done()
					// A refused stream may end before this is written (io.EOF): its status
					// comes from Recv.
					_ = c.stream.Send(&discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: gen.ClusterType})
					select {
					case <-c.resps:
						codesSeen[i] = codes.OK
					case err := <-c.errc:
						codesSeen[i] = status.Code(err)
					case <-time.After(10 * time.Second):
						codesSeen[i] = codes.DeadlineExceeded
					}
				}()
			}
			wg.Wait()
			refused := 0
			for i, c := range codesSeen {
				switch c {
				case codes.OK:
				case codes.ResourceExhausted:
					refused++
				default:
					t.Fatalf("stream %d: %v", i, c)
				}
			}
			if refused != tc.wantRefused {
				t.Fatalf("%d of %d streams refused, want %d", refused, streams, tc.wantRefused)
			}
		})
	}
}
