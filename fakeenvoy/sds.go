package fakeenvoy

import (
	"fmt"
	"slices"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
)

// SDS, as Envoy does it: a cluster or listener whose TLS transport socket names SDS secrets
// (tls_certificate_sds_secret_configs, validation_context_sds_secret_config, also inside a
// combined_validation_context) warms until every one of them has arrived, up to the
// initial_fetch_timeout of their sds_config (0s: forever, as Istio sets it). The client asks
// for the secrets over ADS, as one SDS subscription naming every secret its clusters and
// listeners reference, right after the CDS or LDS response that changed them. A secret
// reference without sds_config names a static bootstrap secret, which a fake Envoy has none of:
// rejected under the realistic NACK policy.

const (
	upstreamTLSType   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
	downstreamTLSType = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
)

// secretRefs collects the SDS secrets of one resource.
type secretRefs struct {
	names   []string
	timeout time.Duration
	hasTO   bool
}

// collect adds the secrets msg's transport sockets reference (clusters: transport_socket and
// transport_socket_matches; listeners: every filter chain and the default chain).
func (r *secretRefs) collect(msg proto.Message) error {
	var sockets []*corev3.TransportSocket
	switch v := msg.(type) {
	case *clusterv3.Cluster:
		sockets = append(sockets, v.GetTransportSocket())
		for _, tm := range v.GetTransportSocketMatches() {
			sockets = append(sockets, tm.GetTransportSocket())
		}
	case *listenerv3.Listener:
		for _, fc := range v.GetFilterChains() {
			sockets = append(sockets, fc.GetTransportSocket())
		}
		sockets = append(sockets, v.GetDefaultFilterChain().GetTransportSocket())
	}
	var first error
	for _, ts := range sockets {
		if err := r.socket(ts); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (r *secretRefs) socket(ts *corev3.TransportSocket) error {
	a := ts.GetTypedConfig()
	var common *tlsv3.CommonTlsContext
	switch a.GetTypeUrl() {
	case upstreamTLSType:
		c := &tlsv3.UpstreamTlsContext{}
		if err := a.UnmarshalTo(c); err != nil {
			return fmt.Errorf("transport socket %s: %w", ts.GetName(), err)
		}
		common = c.GetCommonTlsContext()
	case downstreamTLSType:
		c := &tlsv3.DownstreamTlsContext{}
		if err := a.UnmarshalTo(c); err != nil {
			return fmt.Errorf("transport socket %s: %w", ts.GetName(), err)
		}
		common = c.GetCommonTlsContext()
	default:
		return nil
	}
	cfgs := slices.Clone(common.GetTlsCertificateSdsSecretConfigs())
	if v := common.GetValidationContextSdsSecretConfig(); v != nil {
		cfgs = append(cfgs, v)
	}
	if v := common.GetCombinedValidationContext().GetValidationContextSdsSecretConfig(); v != nil {
		cfgs = append(cfgs, v)
	}
	for _, sc := range cfgs {
		if sc.GetSdsConfig() == nil {
			return fmt.Errorf("transport socket %s: unknown static secret %q (no sds_config, and no bootstrap secrets)", ts.GetName(), sc.GetName())
		}
		r.names = append(r.names, sc.GetName())
		if ift := sc.GetSdsConfig().GetInitialFetchTimeout(); ift != nil {
			// The resource waits for all of its secrets: the longest wait wins, 0 (forever) most.
			d := ift.AsDuration()
			switch {
			case !r.hasTO:
				r.timeout, r.hasTO = d, true
			case r.timeout > 0 && (d <= 0 || d > r.timeout):
				r.timeout = d
			}
		}
	}
	return nil
}

func (r *secretRefs) result() ([]string, time.Duration, bool) {
	if len(r.names) == 0 {
		return nil, 0, false
	}
	slices.Sort(r.names)
	return slices.Compact(r.names), r.timeout, r.hasTO
}

// hasSecrets reports whether every named secret has arrived.
func (m *machine) hasSecrets(names []string) bool {
	for _, n := range names {
		if _, ok := m.types[tSDS].res[n]; !ok {
			return false
		}
	}
	return true
}

// warming reports whether cluster (t tCDS) or listener (tLDS) name is warming, on its
// dependencies or on its SDS secrets.
func (m *machine) warming(t int, name string) bool {
	warm, sec := m.warmC, m.secC
	if t == tLDS {
		warm, sec = m.warmL, m.secL
	}
	_, w := warm[name]
	_, ws := sec[name]
	return w || ws
}

// keepPrev records, for a cluster or listener that starts warming, the copy that stays in
// effect meanwhile (nil: it is new, kept as no entry: a whole new config warms without a map of
// nils). A resource already warming keeps its first copy.
func (m *machine) keepPrev(t int, name string, old *decoded) {
	prev := &m.prevC
	if t == tLDS {
		prev = &m.prevL
	}
	if m.warming(t, name) {
		return
	}
	if old == nil {
		delete(*prev, name)
		return
	}
	if *prev == nil {
		*prev = make(map[string]*decoded)
	}
	(*prev)[name] = old
}

// warmSecrets puts a new or changed cluster or listener d into SDS warming when it names a
// secret the client does not hold.
func (m *machine) warmSecrets(t int, name string, d, old *decoded, now time.Time) {
	if t != tCDS && t != tLDS {
		return
	}
	sec := &m.secC
	if t == tLDS {
		sec = &m.secL
	}
	if len(d.secrets) == 0 || m.hasSecrets(d.secrets) {
		delete(*sec, name)
		return
	}
	m.keepPrev(t, name, old)
	if *sec == nil {
		*sec = make(map[string]time.Time)
	}
	deadline := m.deadline(now)
	if d.hasSecretTimeout {
		deadline = time.Time{}
		if d.secretTimeout > 0 {
			deadline = now.Add(d.secretTimeout)
		}
	}
	(*sec)[name] = deadline
}

// rewarmSecrets ends the SDS warming of the clusters and listeners whose secrets have all
// arrived.
func (m *machine) rewarmSecrets() {
	for c := range m.secC {
		if m.hasSecrets(m.types[tCDS].res[c].d.secretNames()) {
			delete(m.secC, c)
		}
	}
	for l := range m.secL {
		if m.hasSecrets(m.types[tLDS].res[l].d.secretNames()) {
			delete(m.secL, l)
		}
	}
}

func (d *decoded) secretNames() []string {
	if d == nil {
		return nil
	}
	return d.secrets
}

// followUpSecrets subscribes SDS to every secret the clusters and listeners now reference,
// when that set changed (gRPC clients take no SDS).
func (m *machine) followUpSecrets(s *step) {
	if m.grpc {
		return
	}
	var names []string
	for _, t := range []int{tCDS, tLDS} {
		for _, e := range m.types[t].res {
			names = append(names, e.d.secretNames()...)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if ts := &m.types[tSDS]; slices.Equal(ts.names, names) && (ts.subscribed || len(names) == 0) {
		return
	}
	m.subscribeNames(s, tSDS, names)
}
