package push

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
)

// FlowOptions configures ACK-gated flow control.
type FlowOptions struct {
	// Enabled holds a type's pushes while its last response is unanswered. When false every
	// push passes through at once (Istio's behaviour since 1.14); ACK waits are still measured.
	Enabled bool
	// AckTimeout releases a type whose response got no ACK or NACK for this long, so a client
	// that never answers cannot stall it forever. Zero waits forever.
	AckTimeout time.Duration
}

// DefaultAckTimeout matches Envoy's default initial_fetch_timeout: a client still warming
// clusters or listeners may legitimately take that long to answer.
const DefaultAckTimeout = 15 * time.Second

// DefaultFlowOptions enables ACK gating with DefaultAckTimeout.
func DefaultFlowOptions() FlowOptions {
	return FlowOptions{Enabled: true, AckTimeout: DefaultAckTimeout}
}

// Validate reports a problem with the options and how to fix it.
func (o FlowOptions) Validate() error {
	if o.AckTimeout < 0 {
		return fmt.Errorf("flow control ackTimeout is %v: it must be zero (wait forever) or positive, e.g. %v", o.AckTimeout, DefaultAckTimeout)
	}
	return nil
}

// AckResult is what Flow.Ack found.
type AckResult struct {
	// Matched is true when the nonce is the one of the type's outstanding response: the wait
	// ended. A stale or unknown nonce changes nothing.
	Matched bool
	// Wait is response sent → answer received, when Matched.
	Wait time.Duration
	// Release, when not nil, is the request held while waiting, to send now.
	Release *model.PushRequest
}

// Release is a held request let go by a timeout.
type Release struct {
	TypeURL string
	Req     *model.PushRequest
}

// FlowStats counts what a Flow did, for metrics.
type FlowStats struct {
	// Held counts pushes held because a response of their type was unanswered.
	Held uint64
	// Released counts held (merged) requests let go, by an answer or a timeout.
	Released uint64
	// Timeouts counts responses that got no answer within AckTimeout.
	Timeouts uint64
	// StaleAcks counts answers whose nonce was not the outstanding one.
	StaleAcks uint64
}

// Flow is ACK-gated flow control for one connection: a pure core (no clock, no goroutine; the
// connection's owner goroutine feeds it the time), keyed by type URL. See the package
// documentation for how the ADS server drives it.
//
// Per type:
//
//	idle       no response outstanding. Push → passes through.
//	awaiting   a response sent (Sent), no answer yet. Push → held, merged with earlier held
//	           pushes; Ack with the response's nonce → idle, returning the held request;
//	           AckTimeout passed (Push, Expire) → idle, returning the held request.
type Flow struct {
	opts  FlowOptions
	types map[string]*flowType
	stats FlowStats
}

type flowType struct {
	awaiting bool
	nonce    string
	sentAt   time.Time
	held     *model.PushRequest
	owned    bool // held was merged here: merged into in place (model.PushRequest.MergeOwned)
}

// NewFlow returns the flow control of a new connection. A negative AckTimeout (see
// FlowOptions.Validate) counts as zero.
func NewFlow(opts FlowOptions) *Flow {
	opts.AckTimeout = max(opts.AckTimeout, 0)
	return &Flow{opts: opts, types: make(map[string]*flowType)}
}

func (f *Flow) state(typeURL string) *flowType {
	t, ok := f.types[typeURL]
	if !ok {
		t = &flowType{}
		f.types[typeURL] = t
	}
	return t
}

func (f *Flow) expired(t *flowType, now time.Time) bool {
	return t.awaiting && f.opts.AckTimeout > 0 && !now.Before(t.sentAt.Add(f.opts.AckTimeout))
}

// Push asks to send typeURL for req at now. It returns the request to send now (req, merged
// with anything held for the type if its wait just timed out), or nil when the push is held:
// it then comes back, merged with later ones, from Ack or Expire.
func (f *Flow) Push(typeURL string, req *model.PushRequest, now time.Time) *model.PushRequest {
	if !f.opts.Enabled || req == nil {
		return req
	}
	t := f.state(typeURL)
	if f.expired(t, now) {
		f.stats.Timeouts++
		t.awaiting = false
	}
	if !t.awaiting {
		if t.held != nil { // held, then timed out without an Expire call
			f.stats.Released++
		}
		out := t.held.Merge(req)
		t.held, t.owned = nil, false
		return out
	}
	f.stats.Held++
	t.held, t.owned = t.held.MergeOwned(req, t.owned)
	return nil
}

// Sent records that a response of typeURL with nonce went out at now; the type then awaits
// its answer. A newer response replaces an unanswered one (the client's answer to the old
// nonce is then stale).
func (f *Flow) Sent(typeURL, nonce string, now time.Time) {
	t := f.state(typeURL)
	t.awaiting, t.nonce, t.sentAt = true, nonce, now
}

// Ack records the client's ACK or NACK (both end the wait) of typeURL carrying nonce,
// received at now.
func (f *Flow) Ack(typeURL, nonce string, now time.Time) AckResult {
	t, ok := f.types[typeURL]
	if !ok || !t.awaiting || t.nonce != nonce {
		f.stats.StaleAcks++
		return AckResult{}
	}
	res := AckResult{Matched: true, Wait: max(now.Sub(t.sentAt), 0), Release: t.held}
	t.awaiting, t.held, t.owned = false, nil, false
	if res.Release != nil {
		f.stats.Released++
	}
	return res
}

// Expire ends the waits that reached AckTimeout by now and returns the held requests they
// release, sorted by type URL. Call it when the Deadline passes.
func (f *Flow) Expire(now time.Time) []Release {
	if !f.opts.Enabled {
		return nil
	}
	var out []Release
	for url, t := range f.types {
		if !f.expired(t, now) {
			continue
		}
		f.stats.Timeouts++
		t.awaiting = false
		if t.held != nil {
			out = append(out, Release{TypeURL: url, Req: t.held})
			t.held, t.owned = nil, false
			f.stats.Released++
		}
	}
	slices.SortFunc(out, func(a, b Release) int { return cmp.Compare(a.TypeURL, b.TypeURL) })
	return out
}

// Deadline is when the earliest wait with a held request times out: the time to call
// Expire. The zero time means no timer is needed (nothing held, or no timeout). A wait with
// nothing held needs no timer: the next Push checks its timeout itself.
func (f *Flow) Deadline() time.Time {
	var first time.Time
	if !f.opts.Enabled || f.opts.AckTimeout == 0 {
		return first
	}
	for _, t := range f.types {
		if t.awaiting && t.held != nil {
			if at := t.sentAt.Add(f.opts.AckTimeout); first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	return first
}

// Awaiting reports whether a response of typeURL is unanswered.
func (f *Flow) Awaiting(typeURL string) bool {
	t, ok := f.types[typeURL]
	return ok && t.awaiting
}

// Holding reports whether a push of typeURL is held.
func (f *Flow) Holding(typeURL string) bool {
	t, ok := f.types[typeURL]
	return ok && t.held != nil
}

// Stats returns the counters so far.
func (f *Flow) Stats() FlowStats { return f.stats }
