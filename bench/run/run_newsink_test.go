package run

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
)

// countingSink records, for Options.NewSink, whether it was initialised and closed.
type countingSink struct {
	*delayedSink
	inits, closes int
}

func (s *countingSink) Init(ctx context.Context, initial []istioconfig.Config) error {
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
	cache, target, stopSrv := serveSnapshotCache(t, ctx)
	defer stopSrv()

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
	_, err := Run(ctx, sc, Options{Target: target, NewSink: newSink, Repeat: 2,
		OnRun: func(int, *summary.Summary) { runs++ }})
	require.NoError(t, err)
	require.Equal(t, 2, runs)
	require.Len(t, sinks, 2, "one sink per run")
	for i, s := range sinks {
		require.Equal(t, 1, s.inits, "sink %d initialised once", i)
		require.Equal(t, 1, s.closes, "sink %d closed once", i)
	}

	boom := errors.New("no cluster")
	_, err = Run(ctx, sc, Options{Target: target, NewSink: func() (simulator.Sink, error) { return nil, boom }})
	require.ErrorIs(t, err, boom)
}
