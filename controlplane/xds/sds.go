package xds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Secrets serves SDS over ADS (gen.SecretType): the workload certificate ("default") and the
// root ("ROOTCA") of the identity a stream authenticated as. Streams without a verified
// identity (the plaintext listener) get no secrets: their responses are empty, so an Envoy
// whose clusters or listeners reference SDS secrets keeps them warming.
type Secrets interface {
	// Identity returns the verified SPIFFE id of the stream whose context is ctx; ok is false
	// for a stream nobody authenticated.
	Identity(ctx context.Context) (id string, ok bool)
	// Material returns the identity's current certificate, key and root.
	Material(identity string, now time.Time) (gen.SDSMaterial, error)
}

// streamIdentity returns the verified identity of the stream whose context is ctx ("" when
// there is none). The identity never comes from the node, which the client writes; the session
// stamps it on the proxy of the stream's first request.
func (s *Server) streamIdentity(ctx context.Context) string {
	if s.opts.Secrets == nil || ctx == nil {
		return ""
	}
	id, ok := s.opts.Secrets.Identity(ctx)
	if !ok {
		return ""
	}
	return id
}

// secretResources builds p's secrets (names nil: all). They bypass the shared cache (a private
// key must never be shared across identities) and are built per response; Material returns
// the same certificate until it is rotated, so an unchanged secret hashes the same and is not
// re-sent.
func (s *Server) secretResources(p *model.Proxy, names []string, now time.Time) ([]*cache.Resource, error) {
	if s.opts.Secrets == nil || p.Identity == "" {
		return nil, nil
	}
	s.metrics.CacheRead(gen.SecretType, cache.Bypass)
	m, err := s.opts.Secrets.Material(p.Identity, now)
	if err != nil {
		return nil, fmt.Errorf("sds: certificate for %s: %w", p.Identity, err)
	}
	secs, err := gen.SDSSecrets(m, names)
	out := make([]*cache.Resource, 0, len(secs))
	for _, sec := range secs {
		b, merr := gen.Marshal(sec)
		if merr != nil {
			err = errors.Join(err, fmt.Errorf("marshal secret %s: %w", sec.GetName(), merr))
			continue
		}
		out = append(out, cache.NewResource(sec.GetName(), gen.SecretType, b))
	}
	return out, err
}

// secretKey is the push key of one identity's rotated certificate.
func secretKey(identity string) istioconfig.Key {
	return istioconfig.Key{Kind: model.KindSecret, Name: identity}
}

// PushSecrets pushes fresh secrets to every stream authenticated as one of identities (their
// certificate was rotated). Only streams subscribed to SDS receive anything, and only the
// secrets whose bytes changed.
func (s *Server) PushSecrets(identities []string) {
	if len(identities) == 0 {
		return
	}
	want := make(map[string]struct{}, len(identities))
	req := &model.PushRequest{ConfigsUpdated: make(map[istioconfig.Key]struct{}, len(identities)),
		Reasons: map[model.TriggerReason]int{model.ReasonSecretUpdate: len(identities)}, Start: s.now()}
	for _, id := range identities {
		want[id] = struct{}{}
		req.ConfigsUpdated[secretKey(id)] = struct{}{}
	}
	s.mu.Lock()
	var conns []*conn
	for c := range s.conns {
		if _, ok := want[c.proxy().Identity]; ok {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		s.queue.Enqueue(c, req)
		if c.isClosed() {
			s.queue.Remove(c) // see Push
		}
	}
}

// pushSecrets is the SDS part of a push turn: after a rotation of the stream's identity, or
// with a push of everything (a merged rotation is then part of it). It reports whether the
// request asked for nothing else.
func (s *session) pushSecrets(req *model.PushRequest, now time.Time) (only bool) {
	only = !req.Full && len(req.ConfigsUpdated) > 0
	rotated := false
	for k := range req.ConfigsUpdated {
		if k.Kind != model.KindSecret {
			only = false
		} else if k.Name == s.proxy.Identity {
			rotated = true
		}
	}
	if rotated || (req.Full && len(req.ConfigsUpdated) == 0) {
		s.pushType(gen.SecretType, req, nil, now)
	}
	return only
}
