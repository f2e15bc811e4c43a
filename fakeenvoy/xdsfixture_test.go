package fakeenvoy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/validate"
	"github.com/xdslab/xdslab/probe"
)

// hookLog records hook calls in order, as short strings, plus the response infos.
type hookLog struct {
	probe.NopHooks
	events chan string
	infos  chan probe.ResponseInfo
	// onApplied runs inside Applied, on the client goroutine; set it before Run.
	onApplied func(c probe.ClientInfo, r probe.ResponseInfo, v probe.View)
}

func newHookLog() *hookLog {
	return &hookLog{events: make(chan string, 4096), infos: make(chan probe.ResponseInfo, 4096)}
}

func (h *hookLog) add(s string) {
	select {
	case h.events <- s:
	default:
	}
}

func (h *hookLog) Connected(c probe.ClientInfo, _ time.Time, attempt int) { h.add("connected") }
func (h *hookLog) Disconnected(c probe.ClientInfo, _ time.Time, err error) {
	if err == ErrPolicyDisconnect {
		h.add("disconnected policy")
		return
	}
	h.add("disconnected")
}
func (h *hookLog) ConnectFailed(probe.ClientInfo, time.Time, error) { h.add("connect-failed") }
func (h *hookLog) Response(c probe.ClientInfo, r probe.ResponseInfo) {
	select {
	case h.infos <- r:
	default:
	}
}
func (h *hookLog) Applied(c probe.ClientInfo, r probe.ResponseInfo, v probe.View) {
	if h.onApplied != nil {
		h.onApplied(c, r, v)
	}
}
func (h *hookLog) WarmingTimeout(c probe.ClientInfo, typeURL string, _ time.Time) {
	h.add("warming-timeout " + validate.ShortType(typeURL))
}
func (h *hookLog) FirstFullConfig(probe.ClientInfo, time.Time)         { h.add("first-full") }
func (h *hookLog) Resynced(probe.ClientInfo, time.Time, time.Duration) { h.add("resynced") }

func (h *hookLog) nextInfo(t *testing.T) probe.ResponseInfo {
	t.Helper()
	select {
	case r := <-h.infos:
		return r
	case <-time.After(fetest.WaitLimit):
		t.Fatalf("no response observed within %s", fetest.WaitLimit)
		return probe.ResponseInfo{}
	}
}

// waitEvent reads hook events until want arrives.
func (h *hookLog) waitEvent(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(fetest.WaitLimit)
	for {
		select {
		case e := <-h.events:
			if e == want {
				return
			}
		case <-timeout:
			t.Fatalf("hook event %q not seen within %s", want, fetest.WaitLimit)
		}
	}
}

// runClient starts c against connect and stops it (waiting for Run) when the test ends.
func runClient(t *testing.T, c *Client, connect Connector) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, connect) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v, want nil on cancel", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
