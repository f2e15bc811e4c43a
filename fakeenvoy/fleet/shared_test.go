package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// TestFleetSharesLargeResponses: clients on connections of their own that receive the same
// large responses read them as one shared copy (h2client.Shared), and still hold their full
// config, without a NACK.
func TestFleetSharesLargeResponses(t *testing.T) {
	if testing.Short() {
		t.Skip("a mesh of 600 clusters: not under -short")
	}
	const n = 6
	mesh := newPushMesh(t, 600) // CDS and EDS responses of well over 64 KiB, the same bytes to every client
	srv := startPushServer(t, mesh)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := New(Config{
		Target: srv.addr,
		Groups: []Group{{Name: "sidecars", Count: n, Identity: fakeenvoy.IdentityTemplate{Namespaces: 2},
			Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}},
		Ramp: 1000, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	deadline := time.Now().Add(time.Minute)
	for f.Progress().FullConfig < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clients hold their full config", f.Progress().FullConfig, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if nacks := f.Progress().Nacks; nacks != 0 {
		t.Fatalf("%d NACKs of a valid mesh", nacks)
	}
	st := f.shared.Stats()
	// Two large responses (CDS, EDS) per client, each read to its end from a copy: the same
	// bytes to every client, nonces included.
	if st.Followed != 2*n || st.Started != 2 || st.Diverged != 0 {
		t.Fatalf("shared copies %+v: want 2 started and %d messages read from them", st, 2*n)
	}
}
