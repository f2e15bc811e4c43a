package fleet

import (
	"context"
	"testing"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/measure"
)

// TestBacklogEveryResponse: the fleet's observer gets one backlog per response a client
// received, through the fleet's hooks.
func TestBacklogEveryResponse(t *testing.T) {
	srv := fetest.NewCPServer(t)
	o := measure.NewObserver(measure.ObserverConfig{})
	c, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Node: fakeenvoy.IdentityTemplate{}.Node(0), Ack: policy.Ack{Delay: dist.Constant(0.005)}},
		fakeenvoy.Tee{o, measure.NewMatcher(measure.MatcherConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, srv.Connector(t)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	flWait(t, "full config", func() bool { return o.Stats().FullConfig == 1 })
	flWait(t, "a backlog per response", func() bool {
		st := o.Stats()
		return st.Total.Responses >= 4 && uint64(st.ReceiveBacklog.TotalCount()) == st.Total.Responses
	})
}
