package xds

import (
	"slices"
	"strconv"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/controlplane/model"
)

// handleDeltaRequest applies one DeltaDiscoveryRequest. Subscription changes are honoured even
// when the nonce is stale; ACK and NACK are judged by the nonce alone.
func (c *conn) handleDeltaRequest(req *discoveryv3.DeltaDiscoveryRequest, now time.Time) error {
	if c.proxy == nil {
		p, err := model.ParseProxy(req.GetNode())
		if err != nil {
			return status.Error(codes.InvalidArgument, "first request: "+err.Error())
		}
		c.register(p)
	}
	typeURL := req.GetTypeUrl()
	if typeURL == "" {
		return status.Error(codes.InvalidArgument, "request without type_url: ADS requests must name their type")
	}
	ts := c.types[typeURL]
	first := ts == nil
	if first {
		ts = &typeState{typeURL: typeURL, sent: map[string]uint64{}, names: map[string]struct{}{}}
		c.types[typeURL] = ts
		// What the client already holds (after a reconnect): not re-sent while unchanged.
		for name, v := range req.GetInitialResourceVersions() {
			if h, err := strconv.ParseUint(v, 16, 64); err == nil {
				ts.sent[name] = h
			} else {
				ts.sent[name] = 0 // unknown version: sent again
			}
		}
		// Legacy wildcard: the first CDS/LDS request subscribes to nothing in particular.
		ts.wildcard = allRequired(typeURL) && len(req.GetResourceNamesSubscribe()) == 0
	}

	// added: names to answer now. A name the client subscribes to again while the server thinks
	// it is subscribed (Envoy does this after removing and re-adding interest) must still be
	// sent: the client may have forgotten its copy (force). Only the first request's names may
	// be skipped when initial_resource_versions says the client holds them.
	var added []string
	force := map[string]struct{}{}
	wildcardOn := false
	for _, n := range req.GetResourceNamesSubscribe() {
		if n == "*" {
			wildcardOn = wildcardOn || !ts.wildcard
			ts.wildcard = true
			continue
		}
		if _, ok := ts.names[n]; !ok {
			ts.names[n] = struct{}{}
		}
		added = appendUnique(added, n)
		if !first {
			force[n] = struct{}{}
		}
	}
	unsub := req.GetResourceNamesUnsubscribe()
	if slices.Contains(unsub, "*") {
		ts.wildcard = false
	}
	for _, n := range unsub {
		if n == "*" {
			continue
		}
		delete(ts.names, n)
		if ts.wildcard {
			// Still covered by the wildcard: the protocol asks for a response carrying it in
			// resources (it exists) or removed_resources (it does not).
			added = appendUnique(added, n)
			force[n] = struct{}{}
			continue
		}
		delete(ts.sent, n)
	}
	var release *model.PushRequest
	if nonce := req.GetResponseNonce(); nonce != "" {
		if req.GetErrorDetail() != nil {
			c.rejected(ts, nonce, req.GetErrorDetail())
		}
		if nonce != ts.nonce {
			c.srv.metrics.ExpiredNonce(typeURL)
		} else {
			release = c.answered(ts, req.GetErrorDetail() != nil, now)
		}
	}
	if err := c.release(ts, release, now); err != nil {
		return err
	}

	var err error
	switch {
	case first || wildcardOn:
		_, err = c.respond(ts, nil, nil, true, now)
	case len(added) > 0:
		slices.Sort(added)
		_, err = c.respond(ts, added, force, true, now)
	}
	return err
}
