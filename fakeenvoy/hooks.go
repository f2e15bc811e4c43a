package fakeenvoy

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/probe"
)

// This file is the contract between a client (the per-connection state machine and its gRPC
// shell) and whoever observes it (the fleet's observer, probe matching). Hooks are called on the
// client's own goroutine, in protocol order, and must not block.

// ResponseInfo describes one DiscoveryResponse (SotW) or DeltaDiscoveryResponse as the client saw
// it.
type ResponseInfo struct {
	// Seq numbers the client's responses from 1 (across reconnects).
	Seq     uint64
	TypeURL string
	Version string // SotW system version; empty for Delta
	Nonce   string
	Delta   bool
	// Recv is taken when the transport handed the client the message's bytes, before they are
	// decoded (the client codec's Unmarshal entry); it carries the monotonic clock reading.
	Recv time.Time
	// Bytes is the encoded size of the resources in the response.
	Bytes int
	// Resources is the number of resources in the response; Removed the number of Delta
	// removed_resources (or CDS/LDS resources that a SotW response dropped).
	Resources int
	Removed   int
	// Changed is the number of resources whose bytes differ from what the client held.
	Changed int
	// NoOp is true when no resource changed for this client (the response was wasted).
	NoOp bool
	// Nacked is true when the client rejected the response; Error is its error_detail message.
	Nacked bool
	Error  string

	// changed lists the resources of TypeURL the response added, changed or removed in the
	// client's accepted state, each with the copy held before (nil: absent). It is what lets
	// the matcher tell which subjects a response touched and what the client held before it.
	changed []changedRes
	// fresh: the client held no accepted state of TypeURL before this response (a new
	// process), so "before" is nothing, not "absent".
	fresh bool
}

// changedRes is one resource a response changed, with the client's copy from before it.
type changedRes struct {
	name string
	prev proto.Message
}

// Hooks receives a client's observations.
type Hooks interface {
	// Connected is called when a stream is established (attempt counts from 1 per client).
	Connected(c *Client, at time.Time, attempt int)
	// Disconnected is called when a stream ends; err is nil on a clean stop.
	Disconnected(c *Client, at time.Time, err error)
	// ConnectFailed is called when dialing or opening the stream failed (ResourceExhausted
	// included); the client backs off and retries.
	ConnectFailed(c *Client, at time.Time, err error)
	// Response is called for every response after the client decided to ACK or NACK it.
	Response(c *Client, r ResponseInfo)
	// Applied is called after an accepted response changed the client's resources; view is
	// the client's received state after applying it (warming resources included; see
	// Client.Effective for what is in effect) and is only valid during the call.
	Applied(c *Client, r ResponseInfo, view probe.View)
	// AckSent is called when the ACK or NACK for response r was written to the stream.
	AckSent(c *Client, r ResponseInfo, at time.Time)
	// WarmingTimeout is called when initial_fetch_timeout expired for typeURL.
	WarmingTimeout(c *Client, typeURL string, at time.Time)
	// FirstFullConfig is called once per client, when it first holds a complete warmed
	// configuration (clusters warmed, listeners and their routes received).
	FirstFullConfig(c *Client, at time.Time)
}

// BacklogHook is an optional interface of Hooks (a client checks for it once, in NewClient).
// ReceiveBacklog is called on the client's goroutine once per response, when the client has
// finished with it (hooks run, ACK or NACK written or its delay scheduled), with the response's
// receive backlog: the time from its receive stamp (ResponseInfo.Recv) — or, when it arrived
// while the client was still in a scripted ACK delay, from the end of that delay — to now. It
// is how far the client is behind in reading what the server already sent: near the
// processing time of one response when the harness keeps up, growing when its goroutines wait
// for a CPU or responses queue behind each other. It must not block.
type BacklogHook interface {
	ReceiveBacklog(c *Client, d time.Duration)
}

// ResyncHook is an optional interface of Hooks (a client checks for it once, in NewClient).
// Resynced is called when a client that had a full config holds one again after a reconnect:
// every type it subscribes to answered on the new stream and its configuration is complete;
// d is the time from the stream's start to then. It must not block.
type ResyncHook interface {
	Resynced(c *Client, at time.Time, d time.Duration)
}

// Resynced passes the resync on to every hook that takes it.
func (t teeHooks) Resynced(c *Client, at time.Time, d time.Duration) {
	for _, h := range t {
		if r, ok := h.(ResyncHook); ok {
			r.Resynced(c, at, d)
		}
	}
}

// ReceiveBacklog passes the backlog on to every hook that takes it.
func (t teeHooks) ReceiveBacklog(c *Client, d time.Duration) {
	for _, h := range t {
		if b, ok := h.(BacklogHook); ok {
			b.ReceiveBacklog(c, d)
		}
	}
}

// NopHooks ignores every observation; embed it to implement only some hooks.
type NopHooks struct{}

var _ Hooks = NopHooks{}

func (NopHooks) Connected(*Client, time.Time, int)         {}
func (NopHooks) Disconnected(*Client, time.Time, error)    {}
func (NopHooks) ConnectFailed(*Client, time.Time, error)   {}
func (NopHooks) Response(*Client, ResponseInfo)            {}
func (NopHooks) Applied(*Client, ResponseInfo, probe.View) {}
func (NopHooks) AckSent(*Client, ResponseInfo, time.Time)  {}
func (NopHooks) WarmingTimeout(*Client, string, time.Time) {}
func (NopHooks) FirstFullConfig(*Client, time.Time)        {}
