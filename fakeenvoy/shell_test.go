package fakeenvoy

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/probe"
)

// shellHooks records, for the hooks of interest, which function of the shell called them, and
// every Disconnected.
type shellHooks struct {
	probe.NopHooks
	mu            sync.Mutex
	responseBy    []string
	timeoutBy     []string
	disconnects   []error
	firstResponse chan struct{}
}

func newShellHooks() *shellHooks { return &shellHooks{firstResponse: make(chan struct{})} }

// caller names the owner function on the calling goroutine's stack.
func caller() string {
	buf := make([]byte, 64<<10)
	st := string(buf[:runtime.Stack(buf, false)])
	for _, f := range []string{"(*owner).runDeadline", "(*owner).runInline", "(*owner).loop"} {
		if strings.Contains(st, f) {
			return f
		}
	}
	return "unknown"
}

func (h *shellHooks) Response(probe.ClientInfo, probe.ResponseInfo) {
	by := caller()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.responseBy = append(h.responseBy, by)
	if len(h.responseBy) == 1 {
		close(h.firstResponse)
	}
}

func (h *shellHooks) WarmingTimeout(probe.ClientInfo, string, time.Time) {
	by := caller()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timeoutBy = append(h.timeoutBy, by)
}

func (h *shellHooks) Disconnected(_ probe.ClientInfo, _ time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.disconnects = append(h.disconnects, err)
}

// TestShellGoroutines: a client with kernel stamps handles its responses on the goroutine that
// reads them and its warming deadline on a goroutine of its own; any other client handles both
// in its owner loop, fed by a receive goroutine.
func TestShellGoroutines(t *testing.T) {
	for _, tc := range []struct {
		shell              string
		response, deadline string
	}{
		{"forwarded", "(*owner).loop", "(*owner).loop"},
		{"inline", "(*owner).runInline", "(*owner).runDeadline"},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			srv := fetest.NewCPServer(t)
			h := newShellHooks()
			c := newTestClient(t, ClientConfig{SourceFetchTimeout: 30 * time.Millisecond}, h)
			res := fetest.BaseResources(t)
			res[resource.EndpointType] = nil // the clusters warm until the timeout
			srv.Set(t, c.NodeID(), "v1", res)
			stop := runClient(t, c, srv.Connector(t))
			deadline := time.Now().Add(fetest.WaitLimit)
			for {
				h.mu.Lock()
				done := len(h.timeoutBy) > 0
				h.mu.Unlock()
				if done {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no warming timeout")
				}
				time.Sleep(5 * time.Millisecond)
			}
			stop()
			h.mu.Lock()
			defer h.mu.Unlock()
			for i, by := range h.responseBy {
				if by != tc.response {
					t.Errorf("response %d handled by %s, want %s", i, by, tc.response)
				}
			}
			for i, by := range h.timeoutBy {
				if by != tc.deadline {
					t.Errorf("warming timeout %d reported by %s, want %s", i, by, tc.deadline)
				}
			}
		})
	}
}

// TestCancelDuringAckDelay: when Run's context ends while the client waits out a scripted ACK
// delay, Run returns at once and the client reports one disconnect, with no error.
func TestCancelDuringAckDelay(t *testing.T) { shells(t, testCancelDuringAckDelay) }

func testCancelDuringAckDelay(t *testing.T) {
	srv := fetest.NewCPServer(t)
	h := newShellHooks()
	c := newTestClient(t, ClientConfig{Ack: policy.Ack{Delay: dist.Constant(3600)}}, h)
	srv.Set(t, c.NodeID(), "v1", fetest.BaseResources(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, srv.Connector(t)) }()
	select {
	case <-h.firstResponse:
	case <-time.After(fetest.WaitLimit):
		t.Fatal("no response")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(fetest.WaitLimit):
		t.Fatal("Run did not return within the wait limit of its context's end")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.disconnects) != 1 || h.disconnects[0] != nil {
		t.Errorf("Disconnected with %v, want once with no error", h.disconnects)
	}
}

// TestInitialFetchTimeoutWithoutResponse: a server that opens the stream and never answers
// still lets the client's initial fetch time out, as Envoy's init manager does.
func TestInitialFetchTimeoutWithoutResponse(t *testing.T) {
	shells(t, testInitialFetchTimeoutWithoutResponse)
}

func testInitialFetchTimeoutWithoutResponse(t *testing.T) {
	srv := fetest.NewCPServer(t) // no snapshot for the client's node: no response ever
	h := newHookLog()
	c := newTestClient(t, ClientConfig{InitialFetchTimeout: 20 * time.Millisecond}, h)
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "warming-timeout envoy.config.cluster.v3.Cluster")
}
