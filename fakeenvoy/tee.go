package fakeenvoy

import (
	"time"

	"github.com/xdslab/xdslab/probe"
)

// Tee is hooks that calls every one of its hooks in order, the optional ones
// (probe.BacklogHook, probe.ResyncHook) on those that take them: a fleet tees its clients' hooks
// into its observers and matcher.
type Tee []probe.Hooks

var (
	_ probe.Hooks       = Tee(nil)
	_ probe.BacklogHook = Tee(nil)
	_ probe.ResyncHook  = Tee(nil)
)

// Connected calls Connected on every hook.
func (t Tee) Connected(c probe.ClientInfo, at time.Time, attempt int) {
	for _, h := range t {
		h.Connected(c, at, attempt)
	}
}

// Disconnected calls Disconnected on every hook.
func (t Tee) Disconnected(c probe.ClientInfo, at time.Time, err error) {
	for _, h := range t {
		h.Disconnected(c, at, err)
	}
}

// ConnectFailed calls ConnectFailed on every hook.
func (t Tee) ConnectFailed(c probe.ClientInfo, at time.Time, err error) {
	for _, h := range t {
		h.ConnectFailed(c, at, err)
	}
}

// Response calls Response on every hook.
func (t Tee) Response(c probe.ClientInfo, r probe.ResponseInfo) {
	for _, h := range t {
		h.Response(c, r)
	}
}

// Applied calls Applied on every hook.
func (t Tee) Applied(c probe.ClientInfo, r probe.ResponseInfo, v probe.View) {
	for _, h := range t {
		h.Applied(c, r, v)
	}
}

// AckSent calls AckSent on every hook.
func (t Tee) AckSent(c probe.ClientInfo, r probe.ResponseInfo, at time.Time) {
	for _, h := range t {
		h.AckSent(c, r, at)
	}
}

// WarmingTimeout calls WarmingTimeout on every hook.
func (t Tee) WarmingTimeout(c probe.ClientInfo, typeURL string, at time.Time) {
	for _, h := range t {
		h.WarmingTimeout(c, typeURL, at)
	}
}

// FirstFullConfig calls FirstFullConfig on every hook.
func (t Tee) FirstFullConfig(c probe.ClientInfo, at time.Time) {
	for _, h := range t {
		h.FirstFullConfig(c, at)
	}
}

// Resynced passes the resync on to every hook that takes it.

// Resynced calls Resynced on every hook that takes it.
func (t Tee) Resynced(c probe.ClientInfo, at time.Time, d time.Duration) {
	for _, h := range t {
		if r, ok := h.(probe.ResyncHook); ok {
			r.Resynced(c, at, d)
		}
	}
}

// ReceiveBacklog passes the backlog on to every hook that takes it.

// ReceiveBacklog calls ReceiveBacklog on every hook that takes it.
func (t Tee) ReceiveBacklog(c probe.ClientInfo, d time.Duration) {
	for _, h := range t {
		if b, ok := h.(probe.BacklogHook); ok {
			b.ReceiveBacklog(c, d)
		}
	}
}
