package bench

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/simulator"
)

// countingSink records, for RunOptions.NewSink, whether it was initialised and closed.
type countingSink struct {
	*delayedSink
	inits, closes int
}

func (s *countingSink) Init(ctx context.Context, initial []model.Config) error {
	s.inits++
	return s.delayedSink.Init(ctx, initial)
}

func (s *countingSink) Close() error {
	s.closes++
	return s.delayedSink.Close()
}

// Repeated runs against a target each get a sink of their own from NewSink (a run closes its
// sink, as the kube sink refuses writes once closed), and a NewSink error ends the run.
func TestRunNewSinkPerRepeat(t *testing.T) {
	sc := loadScenario(t, `
name: newsink
seed: 3
duration: 300ms
topology: {namespaces: 1, services: 2, endpointsPerService: 1, virtualServices: 0, destinationRules: 0}
churn:
  - {kind: scale, at: [100ms], delta: 1}
clients:
  - {name: sidecars, count: 1, ramp: 0}
phases:
  connect: {timeout: 30s}
  drain: {timeout: 500ms}
`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cache := cachev3.NewSnapshotCache(true, allNodes{}, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	srvCtx, stopSrv := context.WithCancel(ctx)
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, serverv3.NewServer(srvCtx, cache, nil))
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	defer func() {
		stopSrv()
		g.Stop()
		<-done
	}()

	var sinks []*countingSink
	newSink := func() (simulator.Sink, error) {
		for _, s := range sinks {
			require.Equal(t, 1, s.closes, "the previous run closed its sink before the next is built")
		}
		s := &countingSink{delayedSink: &delayedSink{cache: cache, drop: func(simulator.Event) bool { return false }}}
		sinks = append(sinks, s)
		return s, nil
	}
	runs := 0
	_, err = Run(ctx, sc, RunOptions{Target: lis.Addr().String(), NewSink: newSink, Repeat: 2,
		OnRun: func(int, *summary.Summary) { runs++ }})
	require.NoError(t, err)
	require.Equal(t, 2, runs)
	require.Len(t, sinks, 2, "one sink per run")
	for i, s := range sinks {
		require.Equal(t, 1, s.inits, "sink %d initialised once", i)
		require.Equal(t, 1, s.closes, "sink %d closed once", i)
	}

	boom := errors.New("no cluster")
	_, err = Run(ctx, sc, RunOptions{Target: lis.Addr().String(), NewSink: func() (simulator.Sink, error) { return nil, boom }})
	require.ErrorIs(t, err, boom)
}
