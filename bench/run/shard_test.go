package run

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/scenarios"
)

// TestShardTargetMetricsUnreachable: a shard told to read the control plane's metrics where
// nothing answers says it waits, then gives up with an error naming the flag and the address,
// before any client starts.
func TestShardTargetMetricsUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	sc, err := scenarios.Builtin("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = RunShard(ctx, sc, ShardOptions{Target: addr, TargetMetrics: addr, MetricsWait: 300 * time.Millisecond,
		Retry: 50 * time.Millisecond, Progress: &progress})
	if err == nil || !strings.Contains(err.Error(), "--target-metrics") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("RunShard: %v, want an error naming --target-metrics and %s", err, addr)
	}
	if !strings.Contains(progress.String(), "waiting up to 300ms for the control plane's metrics") {
		t.Errorf("progress %q does not say it waits", progress.String())
	}
}

// TestShardProbesUnreachable: a shard whose --probes address is not the simulator's gives up
// with an error naming it: at once when something else answers there, after ProbesWait when
// nothing does (before, it retried for ever, silently).
func TestShardProbesUnreachable(t *testing.T) {
	notSim := httptest.NewServer(http.NotFoundHandler())
	defer notSim.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + l.Addr().String()
	l.Close()
	sc, err := scenarios.Builtin("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, url, want string }{
		{"something else answers", notSim.URL, "HTTP 404: GET " + notSim.URL + "/time: not a simulator's probe stream"},
		{"nothing answers", nobody, "the simulator did not answer within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progress bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := RunShard(ctx, sc, ShardOptions{Target: "127.0.0.1:1", Probes: tc.url, ProbesWait: 300 * time.Millisecond,
				Retry: 50 * time.Millisecond, Progress: &progress})
			if err == nil || !strings.Contains(err.Error(), "--probes "+tc.url) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunShard: %v, want an error naming --probes %s and %q", err, tc.url, tc.want)
			}
		})
	}
}
