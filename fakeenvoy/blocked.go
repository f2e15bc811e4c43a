package fakeenvoy

import (
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslab/xdslab/fakeenvoy/machine"
	"github.com/xdslab/xdslab/probe"
)

// Why a client has no full config (the machine says why: machine.Blocker), published for
// other goroutines: a run that reaches its end with clients short of a full config must say
// why, in terms a user can act on.

// blockedState is what a client publishes of its blocker for other goroutines.
type blockedState struct {
	b    machine.Blocker
	done bool // the client reached full config at least once
}

// publishBlocked records, on the client's goroutine, why it has no full config (nothing once
// it has one).
func (c *Client) publishBlocked() {
	b, blocked := c.m.Blocked()
	if !blocked {
		if s := c.blocked.Load(); s == nil || !s.done {
			c.blocked.Store(&blockedState{done: true})
		}
		return
	}
	if s := c.blocked.Load(); s != nil && s.b == b {
		return
	}
	c.blocked.Store(&blockedState{b: b})
}

// Blocked reports why the client has not reached a full config (ok false once it has). It is
// safe to call from any goroutine; a client that never got a response reports the gRPC code of
// its last failed connect ("not connected: … ResourceExhausted"), or "no response from the
// control plane" when its stream is open and silent.
func (c *Client) Blocked() (machine.Blocker, bool) {
	s := c.blocked.Load()
	if s == nil {
		if code := c.connErr.Load(); code != nil {
			return machine.Blocker{Reason: "not connected: its connects fail with " + code.String() + " (see the connect failures)"}, true
		}
		return machine.Blocker{Reason: "no response from the control plane"}, true
	}
	if s.done {
		return machine.Blocker{}, false
	}
	return s.b, true
}

// blockedCell is the client's published blocker.
type blockedCell = atomic.Pointer[blockedState]

// connErrCell is the gRPC code of the client's last failed connect (nil once connected).
type connErrCell = atomic.Pointer[codes.Code]

// connectFailed records a failed connect (dial, stream open, or a stream that ended before its
// headers) and reports it to the hooks.
func (c *Client) connectFailed(at time.Time, err error) {
	code := probe.FailureCode(err)
	c.connErr.Store(&code)
	c.hooks.ConnectFailed(c.info, at, err)
}
