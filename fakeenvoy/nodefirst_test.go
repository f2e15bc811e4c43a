package fakeenvoy

import (
	"fmt"
	"testing"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// TestNodeOnFirstOnlyOnEveryStream: with NodeOnFirstOnly (Istio's bootstrap), against a
// go-control-plane server, the node goes on the first request of every stream (the first one,
// each reconnect's, a restarted process's) and on no other request, SotW and Delta, as the
// requests come off the wire; the server, which learns the node from that request only, serves
// every stream (each ends after the response DisconnectAfter waits for).
func TestNodeOnFirstOnlyOnEveryStream(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			srv := fetest.NewCPServer(t)
			h := newHookLog()
			c := newTestClient(t, ClientConfig{Delta: delta, NodeOnFirstOnly: true, Ack: policy.Ack{DisconnectAfter: 1}}, h)
			version := 0
			next := func() { // a new snapshot: the current stream gets a response, and ends
				version++
				srv.Set(t, c.NodeID(), fmt.Sprintf("v%d", version), fetest.BaseResources(t))
			}
			streams := func() int {
				n := 0
				for _, r := range srv.Wire() {
					n = max(n, r.Stream)
				}
				return n
			}
			waitStreams := func(n int) {
				t.Helper()
				deadline := time.Now().Add(fetest.WaitLimit)
				for streams() < n {
					if time.Now().After(deadline) {
						t.Fatalf("%d streams, want %d: the server did not answer a stream", streams(), n)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			next()
			stop := runClient(t, c, srv.Connector(t))
			for n := 2; n <= 4; n++ { // reconnects of the same process
				waitStreams(n)
				next()
			}
			waitStreams(5)
			stop()
			if err := c.Restart(); err != nil { // a new process, on a new stream
				t.Fatal(err)
			}
			before := streams()
			next()
			runClient(t, c, srv.Connector(t))
			waitStreams(before + 1)
			next() // its first response ends it: the server knew its node

			waitStreams(before + 2)
			seen := map[int]bool{}
			for _, r := range srv.Wire() {
				if first := !seen[r.Stream]; r.Node != first {
					t.Errorf("stream %d: %s request with node=%v, want the node on the stream's first request only", r.Stream, r.TypeURL, r.Node)
				}
				seen[r.Stream] = true
			}
		})
	}
}
