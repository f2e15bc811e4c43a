package xds

import (
	"testing"

	"github.com/xdslab/xdslab/controlplane/gen"
)

// TestPushWhileFirstAnswerIsBuilt: a snapshot published after a stream's first answer was built
// and before the stream joined the server's connections must still reach it. Without the
// catch-up push the stream keeps the older clusters until some later change reaches it.
func TestPushWhileFirstAnswerIsBuilt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first bool // the push is the very first snapshot (the request is unanswered until it)
	}{{"newer snapshot", false}, {"first snapshot", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, testOptions())
			if !tc.first {
				ts.push(topology(2, 1), true)
			}
			var newer string
			ts.beforeRegister = func() {
				if newer == "" {
					newer = ts.push(topology(3, 1), true).Version
				}
			}
			c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", "grpc"))
			c.send(gen.ClusterType, "", "", nil, "")
			r := c.recv()
			if !tc.first {
				if r.VersionInfo == newer {
					t.Fatalf("first answer already has the newer version %s: the test did not hit the window", newer)
				}
				c.ack(r)
				r = c.recv()
			}
			if r.VersionInfo != newer {
				t.Fatalf("CDS version %s, want %s (the snapshot published before the stream registered)", r.VersionInfo, newer)
			}
			if len(r.Resources) < 3 {
				t.Fatalf("CDS has %d clusters, want the newer snapshot's (at least 3)", len(r.Resources))
			}
		})
	}
}
