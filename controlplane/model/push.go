package model

import (
	"maps"
	"time"

	"github.com/xdslab/xdslab/istioconfig"
)

// TriggerReason says why a push was requested. The values are Istio's push trigger reasons
// where Istio has one, so that pilot_push_triggers{type} keeps its meaning.
type TriggerReason string

// Push trigger reasons.
const (
	ReasonEndpointUpdate TriggerReason = "endpoint"
	ReasonConfigUpdate   TriggerReason = "config"
	ReasonServiceUpdate  TriggerReason = "service"
	ReasonProxyRequest   TriggerReason = "proxyrequest"
	ReasonGlobalUpdate   TriggerReason = "global"
	ReasonSecretUpdate   TriggerReason = "secret"
	ReasonUnknown        TriggerReason = "unknown"
)

// PushRequest asks for a push. Requests are merged by the debouncer and by the push queue; a
// request is treated as a value once handed over (Merge returns a new one).
type PushRequest struct {
	// Full is true when clusters, listeners and routes may have changed; false means only the
	// endpoints of the services in ConfigsUpdated (KindEndpoint keys) changed: an EDS-only push.
	Full bool
	// ConfigsUpdated is the union of what changed. Empty with Full means "everything".
	ConfigsUpdated map[istioconfig.Key]struct{}
	// Reasons counts the events merged into this request, by reason.
	Reasons map[TriggerReason]int
	// Start is when the earliest merged event happened (debounce delay and convergence run
	// from here).
	Start time.Time
	// Source, when set, is the state right after the newest merged change (an immutable view
	// the aggregate published with it): the snapshot for this request is built from it, so
	// that it holds exactly the changes ConfigsUpdated names. A merge keeps the later
	// request's (the other one's, when set).
	Source SnapshotSource
	// Initial marks the request a control plane makes once its sources have delivered their
	// initial content (a merge carries it): no snapshot is built before it, so that no proxy is
	// served a mesh read in part, as istiod serves none before its caches have synced.
	Initial bool
}

// Count is the number of events merged into the request.
func (pr *PushRequest) Count() int {
	if pr == nil {
		return 0
	}
	n := 0
	for _, c := range pr.Reasons {
		n += c
	}
	return n
}

// Merge returns the union of pr and other: Full if either is, the union of their configs and
// reasons (counts added), the earliest start. Either side may be nil. Neither input is
// modified.
func (pr *PushRequest) Merge(other *PushRequest) *PushRequest {
	if pr == nil {
		return other
	}
	if other == nil {
		return pr
	}
	out := &PushRequest{
		Full:    pr.Full,
		Initial: pr.Initial,
		Reasons: make(map[TriggerReason]int, len(pr.Reasons)+len(other.Reasons)),
		Start:   pr.Start,
		Source:  pr.Source,
	}
	maps.Copy(out.Reasons, pr.Reasons)
	// A full push with an empty ConfigsUpdated means "everything": the union stays empty.
	if !pr.Full || len(pr.ConfigsUpdated) > 0 {
		out.ConfigsUpdated = make(map[istioconfig.Key]struct{}, len(pr.ConfigsUpdated)+len(other.ConfigsUpdated))
		maps.Copy(out.ConfigsUpdated, pr.ConfigsUpdated)
	}
	out.mergeIn(other)
	return out
}

// MergeOwned is Merge for an accumulator acc, such as a connection's pending push: when owned
// says the caller holds acc alone (it came from an earlier MergeOwned that said so), other is
// merged into acc in place; otherwise the result is Merge's. It reports whether the caller
// holds the result alone. A connection that lags behind a stream of pushes would otherwise copy
// everything merged so far into a new request on every push: quadratic in its lag, across
// every lagging connection.
func (pr *PushRequest) MergeOwned(other *PushRequest, owned bool) (*PushRequest, bool) {
	switch {
	case pr == nil:
		return other, false
	case other == nil:
		return pr, owned
	case !owned:
		return pr.Merge(other), true // two requests: a new one
	}
	pr.mergeIn(other)
	return pr, true
}

// mergeIn merges other into pr, which the caller holds alone (Merge's rules).
func (pr *PushRequest) mergeIn(other *PushRequest) {
	everything := (pr.Full && len(pr.ConfigsUpdated) == 0) || (other.Full && len(other.ConfigsUpdated) == 0)
	pr.Full = pr.Full || other.Full
	pr.Initial = pr.Initial || other.Initial
	if pr.Reasons == nil {
		pr.Reasons = make(map[TriggerReason]int, len(other.Reasons))
	}
	for r, n := range other.Reasons {
		pr.Reasons[r] += n
	}
	if other.Source != nil {
		pr.Source = other.Source
	}
	if pr.Start.IsZero() || (!other.Start.IsZero() && other.Start.Before(pr.Start)) {
		pr.Start = other.Start
	}
	switch {
	case everything:
		pr.ConfigsUpdated = nil
	default:
		if pr.ConfigsUpdated == nil {
			pr.ConfigsUpdated = make(map[istioconfig.Key]struct{}, len(other.ConfigsUpdated))
		}
		maps.Copy(pr.ConfigsUpdated, other.ConfigsUpdated)
	}
}

// IsEndpointOnly reports whether the request only changes endpoints (an incremental EDS push).
func (pr *PushRequest) IsEndpointOnly() bool { return pr != nil && !pr.Full }
