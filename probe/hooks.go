package probe

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// This file is the contract between a fake Envoy client (fakeenvoy: its state machine and gRPC
// shell) and whoever observes it (measure's observer and matcher, a fleet's per-group
// observers, tests). Hooks are called on the client's own goroutine, in protocol order, and
// must not block. Neither side imports the other: both import this package.

// ClientInfo is what an observer knows of the client that reports: who it is, fixed for the
// client's life, and — only during the hook call that passed it — its state.
type ClientInfo struct {
	// Index is the client's position in the fleet; Group its fleet group (scenario client
	// name).
	Index int
	Group string
	// NodeID is the node id the client sends; ProxyType its first field (the Istio proxy
	// type: ProxySidecar, ProxyRouter, ...); Namespace the NAMESPACE of its node metadata.
	NodeID    string
	ProxyType string
	Namespace string
	// NamedOnly: the client subscribes to every type by name (a proxyless gRPC client), so an
	// event on resources it does not watch does not target it.
	NamedOnly bool
	// State reads the client's resources and subscriptions. It is valid only during the hook
	// call, on the goroutine that called it. A client always sets it; an observer that only counts
	// (measure.Observer) does not read it, a matcher of expectations does.
	State ClientState
}

// FailureCode is the gRPC code a connect failure (ConnectFailed's err) counts under: its
// status code, Canceled or DeadlineExceeded for a context's end, Unknown for any other error,
// OK for nil.
func FailureCode(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// ProxyTypeOf is the Istio proxy type of a node id: its first "~"-separated field.
func ProxyTypeOf(nodeID string) string {
	t, _, _ := strings.Cut(nodeID, "~")
	return t
}

// ClientState is a client's state as an observer reads it during a hook call. Resource (View)
// is what the client accepted, warming or not; Effective what is in effect (a warming cluster
// or listener has not replaced the copy held before it).
type ClientState interface {
	View
	Effective(typeURL, name string) proto.Message
	// Subscribed reports whether the client watches resource name of typeURL (an Envoy
	// client's CDS and LDS are wildcard: every name once subscribed).
	Subscribed(typeURL, name string) bool
	// Synced reports whether the client holds an accepted state of typeURL since it
	// (re)started.
	Synced(typeURL string) bool
}

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

	// Touched lists the resources of TypeURL the response added, changed or removed in the
	// client's accepted state, each with the copy held before. It is what lets a matcher tell
	// which subjects a response touched and what the client held before it. Clients that
	// apply the same response alike may report the same list: read it, never change it.
	Touched []Touched
	// Fresh: the client held no accepted state of TypeURL before this response (a new
	// process), so "before" is nothing, not "absent".
	Fresh bool
	// First: this is the first response of TypeURL the client (this process) applied,
	// accepted or not. A Delta stream's later responses are increments even while Fresh.
	First bool
}

// Touched is one resource a response added, changed or removed, with the client's copy from
// before it (nil: absent).
type Touched struct {
	Name string
	Prev proto.Message
}

// Hooks receives a client's observations.
type Hooks interface {
	// Connected is called when a stream is established (attempt counts from 1 per client).
	Connected(c ClientInfo, at time.Time, attempt int)
	// Disconnected is called when a stream ends; err is nil on a clean stop.
	Disconnected(c ClientInfo, at time.Time, err error)
	// ConnectFailed is called when dialing or opening the stream failed (ResourceExhausted
	// included); the client backs off and retries.
	ConnectFailed(c ClientInfo, at time.Time, err error)
	// Response is called for every response after the client decided to ACK or NACK it.
	Response(c ClientInfo, r ResponseInfo)
	// Applied is called after an accepted response changed the client's resources; view is
	// the client's received state after applying it (warming resources included; see
	// ClientState.Effective for what is in effect) and is only valid during the call.
	Applied(c ClientInfo, r ResponseInfo, view View)
	// AckSent is called when the ACK or NACK for response r was written to the stream.
	AckSent(c ClientInfo, r ResponseInfo, at time.Time)
	// WarmingTimeout is called when initial_fetch_timeout expired for typeURL.
	WarmingTimeout(c ClientInfo, typeURL string, at time.Time)
	// FirstFullConfig is called once per client, when it first holds a complete warmed
	// configuration (clusters warmed, listeners and their routes received).
	FirstFullConfig(c ClientInfo, at time.Time)
}

// BacklogHook is an optional interface of Hooks (a client checks for it once, when it is
// built). ReceiveBacklog is called on the client's goroutine once per response, when the client
// has finished with it (hooks run, ACK or NACK written or its delay scheduled), with the
// response's receive backlog: the time from its receive stamp (ResponseInfo.Recv) — or, when it
// arrived while the client was still in a scripted ACK delay, from the end of that delay — to
// now. It is how far the client is behind in reading what the server already sent: near the
// processing time of one response when the harness keeps up, growing when its goroutines wait
// for a CPU or responses queue behind each other. It must not block.
type BacklogHook interface {
	ReceiveBacklog(c ClientInfo, d time.Duration)
}

// ResyncHook is an optional interface of Hooks (a client checks for it once, when it is built).
// Resynced is called when a client that had a full config holds one again after a reconnect:
// every type the server owes an answer on the new stream answered and its configuration is
// complete (a Delta server owes nothing for the versions restated on reconnect: d is then 0);
// d is the time from the stream's start to then. It must not block.
type ResyncHook interface {
	Resynced(c ClientInfo, at time.Time, d time.Duration)
}

// NopHooks ignores every observation; embed it to implement only some hooks.
type NopHooks struct{}

var _ Hooks = NopHooks{}

func (NopHooks) Connected(ClientInfo, time.Time, int)         {}
func (NopHooks) Disconnected(ClientInfo, time.Time, error)    {}
func (NopHooks) ConnectFailed(ClientInfo, time.Time, error)   {}
func (NopHooks) Response(ClientInfo, ResponseInfo)            {}
func (NopHooks) Applied(ClientInfo, ResponseInfo, View)       {}
func (NopHooks) AckSent(ClientInfo, ResponseInfo, time.Time)  {}
func (NopHooks) WarmingTimeout(ClientInfo, string, time.Time) {}
func (NopHooks) FirstFullConfig(ClientInfo, time.Time)        {}
