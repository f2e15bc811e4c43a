package xds

import (
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// reconnects counts each client's streams that ended by its ACK policy.
type reconnects struct {
	*recorder
	mu sync.Mutex
	n  map[int]int
}

func (r *reconnects) Disconnected(c probe.ClientInfo, _ time.Time, _ error) {
	r.mu.Lock()
	r.n[c.Index]++
	r.mu.Unlock()
}

// TestFakeEnvoysNodeOnFirstOnlyAcrossReconnects: fake Envoys with Istio's bootstrap (the node
// on a stream's first request only), SotW and Delta, that close their stream after every fifth
// response get a full config from our server and observe two endpoint changes, the second on
// a stream after a reconnect: the server identifies each new stream from its first request.
func TestFakeEnvoysNodeOnFirstOnlyAcrossReconnects(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(30, 2)
	ts.push(in, true)

	const n = 4
	rec := &recorder{full: map[int]bool{}, ready: make(chan int, n), seen: map[int]chan struct{}{}}
	hooks := &reconnects{recorder: rec, n: map[int]int{}}
	tmpl := fakeenvoy.IdentityTemplate{Type: "sidecar", Namespace: "ns-0", IPBase: "10.200.0.1"}
	runFakeEnvoys(t, ts, rec, n, 20*time.Second, func(i int) fakeEnvoy {
		return fakeEnvoy{node: tmpl.Node(i), delta: i%2 == 1, hooks: hooks, nodeFirstOnly: true, ack: policy.Ack{DisconnectAfter: 5}}
	})

	host := "svc-7.ns-1.svc.cluster.local"
	cluster := gen.ClusterName(gen.Outbound, 8080, "", host)
	for round, addr := range []string{"10.77.0.1", "10.77.0.2"} {
		want := probe.Expectation{EventID: uint64(round + 1), Kind: "endpoint-add", All: []probe.Predicate{{Op: probe.EndpointPresent,
			Resource: cluster, Address: addr, Port: 8080}}}
		rec.mu.Lock()
		rec.want = &want
		chans := make([]chan struct{}, n)
		for i := range n {
			chans[i] = make(chan struct{})
			rec.seen[i] = chans[i]
		}
		rec.mu.Unlock()
		in.Endpoints[host] = append(in.Endpoints[host], endpoint(host, addr))
		ts.push(in, false, host)
		for i, ch := range chans {
			select {
			case <-ch:
			case <-time.After(20 * time.Second):
				t.Fatalf("client %d (delta=%v) never observed %s", i, i%2 == 1, want.All[0])
			}
		}
	}
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	for i := range n {
		if hooks.n[i] == 0 {
			t.Errorf("client %d (delta=%v) never reconnected: the test did not cover a second stream", i, i%2 == 1)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.nacks != 0 {
		t.Errorf("%d NACKs: %v", rec.nacks, rec.errors)
	}
}
