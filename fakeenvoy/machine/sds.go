package machine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
)

// SDS, as Envoy does it: a cluster or listener whose TLS transport socket names SDS secrets
// (tls_certificate_sds_secret_configs, validation_context_sds_secret_config, also inside a
// combined_validation_context) warms until every one of them has arrived, up to the
// initial_fetch_timeout of their sds_config (0s: forever, as Istio sets it). Where a secret
// comes from is decided by its sds_config, as Envoy and the istio-agent decide it:
//
//   - ads (or self, or an API config source on the control plane's bootstrap cluster xds-grpc):
//     asked of the control plane, as one SDS subscription naming every such secret, right
//     after the CDS or LDS response that changed them;
//   - an API config source on the agent's cluster (sds-grpc): served by the emulated
//     istio-agent (package istioagent), after its issue delay, without network traffic;
//   - a path config source: read from the file (a DiscoveryResponse holding the Secret);
//   - an API config source on any other cluster: Envoy rejects the resource ("unknown
//     cluster"; NACK under the realistic policy, else the secret never arrives);
//   - no sds_config: a static bootstrap secret, which a fake Envoy has none of: rejected under
//     the realistic policy.
//
// A secret that cannot arrive (refused, unreadable) is recorded with its reason, and the
// resource warms until its timeout: Machine.Blocked names it, so a run can say why a client never
// reached full config instead of warming silently.

const (
	upstreamTLSType   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
	proxyProtocolType = "type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport"
	downstreamTLSType = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
)

// srcKind is where a secret's sds_config says it comes from.
type srcKind uint8

const (
	srcADS     srcKind = iota // ads or self
	srcCluster                // an API config source on a bootstrap cluster (arg)
	srcFile                   // a path config source (arg)
)

// secretRef is one SDS secret a resource names, with its config source. Comparable: it keys
// the client's local secrets.
type secretRef struct {
	name string
	kind srcKind
	arg  string
}

// source describes where ref comes from, for messages.
func (r secretRef) source() string {
	switch r.kind {
	case srcCluster:
		return "config source cluster " + r.arg
	case srcFile:
		return "file " + r.arg
	}
	return "ADS"
}

// overADS reports whether ref is asked of the control plane on the ADS stream.
func (r secretRef) overADS() bool {
	return r.kind == srcADS || (r.kind == srcCluster && r.arg == istioagent.XDSCluster)
}

// sourceOf classifies an sds_config; ok is false when it names no source Envoy knows.
func sourceOf(cs *corev3.ConfigSource) (kind srcKind, arg string, ok bool) {
	switch {
	case cs.GetAds() != nil, cs.GetSelf() != nil:
		return srcADS, "", true
	case cs.GetPathConfigSource() != nil:
		return srcFile, cs.GetPathConfigSource().GetPath(), true
	case cs.GetPath() != "":
		return srcFile, cs.GetPath(), true
	case cs.GetApiConfigSource() != nil:
		for _, g := range cs.GetApiConfigSource().GetGrpcServices() {
			if c := g.GetEnvoyGrpc().GetClusterName(); c != "" {
				return srcCluster, c, true
			}
			if u := g.GetGoogleGrpc().GetTargetUri(); u != "" {
				return srcCluster, u, true
			}
		}
		if cn := cs.GetApiConfigSource().GetClusterNames(); len(cn) > 0 {
			return srcCluster, cn[0], true
		}
	}
	return 0, "", false
}

// secretRefs collects the SDS secrets of one resource.
type secretRefs struct {
	refs  []secretRef
	waits []secretWait
}

// secretWait is the initial_fetch_timeout a secret's sds_config gives (0: wait forever). Envoy
// makes each secret's subscription an init target of its own, shared by the resources that name
// it (secretSub): a resource warms until each of its secrets has arrived or its subscription
// has timed out.
type secretWait struct {
	ref  secretRef
	wait time.Duration
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
	case proxyProtocolType:
		// The upstream PROXY protocol socket wraps another (a DestinationRule's
		// proxyProtocol): Envoy builds the wrapped one, secrets included.
		c := &proxyprotocolv3.ProxyProtocolUpstreamTransport{}
		if err := a.UnmarshalTo(c); err != nil {
			return fmt.Errorf("transport socket %s: %w", ts.GetName(), err)
		}
		return r.socket(c.GetTransportSocket())
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
		kind, arg, ok := sourceOf(sc.GetSdsConfig())
		if !ok {
			return fmt.Errorf("transport socket %s: secret %q: sds_config names no config source (ads, api_config_source or path)", ts.GetName(), sc.GetName())
		}
		ref := secretRef{name: sc.GetName(), kind: kind, arg: arg}
		r.refs = append(r.refs, ref)
		if ift := sc.GetSdsConfig().GetInitialFetchTimeout(); ift != nil {
			r.waits = append(r.waits, secretWait{ref: ref, wait: max(ift.AsDuration(), 0)})
		}
	}
	return nil
}

func (r *secretRefs) result() ([]secretRef, []secretWait) {
	if len(r.refs) == 0 {
		return nil, nil
	}
	slices.SortFunc(r.refs, cmpSecretRef)
	// One secret named twice with different timeouts (two filter chains) waits the longest
	// of them, 0 (forever) most.
	slices.SortFunc(r.waits, func(a, b secretWait) int {
		if c := cmpSecretRef(a.ref, b.ref); c != 0 {
			return c
		}
		return cmpWait(b.wait, a.wait)
	})
	waits := slices.CompactFunc(r.waits, func(a, b secretWait) bool { return a.ref == b.ref })
	if len(waits) == 0 {
		waits = nil
	}
	return slices.Compact(r.refs), waits
}

// cmpWait orders timeouts from the shortest to forever (0).
func cmpWait(a, b time.Duration) int {
	switch {
	case a == b:
		return 0
	case a == 0:
		return 1
	case b == 0:
		return -1
	case a < b:
		return -1
	}
	return 1
}

// secretWait returns how long resource d waits for its secret ref: its sds_config's
// initial_fetch_timeout, else Envoy's default; 0 is forever.
func (m *Machine) secretWait(d *decoded, ref secretRef) time.Duration {
	for _, w := range d.secretWaits {
		if w.ref == ref {
			return w.wait
		}
	}
	return max(m.srcIft, 0)
}

// subKey names one SDS subscription as Envoy keeps it: one per secret name and whole
// sds_config (the secret manager's findOrCreate keys its providers by both, the config's
// initial_fetch_timeout included), shared by every cluster and listener that names it.
type subKey struct {
	ref  secretRef
	wait time.Duration // the effective initial_fetch_timeout; 0: forever
}

// secretSub is a subscription's init target, shared the way Envoy shares it (a shared init
// target): its timeout runs from when the first resource naming it started warming, once; once
// it is ready (the secret arrived, or that timeout passed) every resource that names it later is
// ready at once, and one naming it while it is pending waits for the same deadline.
type secretSub struct {
	key     subKey
	start   due  // when the first resource naming it started warming
	arrived bool // the secret arrived (it stays ready even if taken away later)
}

func cmpSubKey(a, b subKey) int {
	if c := cmpSecretRef(a.ref, b.ref); c != 0 {
		return c
	}
	return cmp.Compare(a.wait, b.wait)
}

// ready reports whether sub is ready at now: arrived, or timed out.
func (s *secretSub) ready(now time.Time) bool {
	return s.arrived || s.key.wait > 0 && !now.Before(s.start.time().Add(s.key.wait))
}

// sub returns the subscription of k, started at now when there was none.
func (m *Machine) sub(k subKey, now time.Time) *secretSub {
	i, ok := slices.BinarySearchFunc(m.subs, k, func(s secretSub, k subKey) int { return cmpSubKey(s.key, k) })
	if !ok {
		if m.subs == nil {
			m.subs = make([]secretSub, 0, 2) // a sidecar's workload certificate and root
		}
		m.subs = slices.Insert(m.subs, i, secretSub{key: k, start: dueAt(now)})
	}
	return &m.subs[i]
}

// secretDeadlines returns, for resource d warming at now, whether one of its secrets whose
// subscription is pending waits forever (forever), and the latest deadline of its pending
// subscriptions that do not (finite, zero for none): when both are false/zero, d does not wait
// (every subscription it names is ready). A subscription d is the first to name starts at now.
func (m *Machine) secretDeadlines(d *decoded, now time.Time) (forever bool, finite time.Time) {
	for _, r := range d.secrets {
		sub := m.sub(subKey{ref: r, wait: m.secretWait(d, r)}, now)
		if !sub.arrived && m.holdsSecret(r) {
			sub.arrived = true
		}
		if sub.ready(now) {
			continue
		}
		if sub.key.wait == 0 {
			forever = true
			continue
		}
		if dl := sub.start.time().Add(sub.key.wait); dl.After(finite) {
			finite = dl
		}
	}
	return forever, finite
}

// deadlineMemo is memoDeadlines' last answer: secretDeadlines of a resource naming refs with
// waits, at at.
type deadlineMemo struct {
	refs    []secretRef
	waits   []secretWait
	at      time.Time
	forever bool
	finite  time.Time
}

// memoDeadlines is secretDeadlines, remembered for the last list of secrets (a full config's
// thousands of clusters share one or two): the answer holds for the same lists at the same
// instant until a secret arrives or a subscription is dropped (rewarmSecrets, pruneSubs
// forget it).
func (m *Machine) memoDeadlines(d *decoded, now time.Time) (forever bool, finite time.Time) {
	mm := &m.deadlineMemo
	if mm.refs != nil && now.Equal(mm.at) && sameList(d.secrets, mm.refs) && sameList(d.secretWaits, mm.waits) {
		return mm.forever, mm.finite
	}
	forever, finite = m.secretDeadlines(d, now)
	*mm = deadlineMemo{refs: d.secrets, waits: d.secretWaits, at: now, forever: forever, finite: finite}
	return forever, finite
}

// pruneSubs drops the SDS subscriptions no cluster or listener names any more (as Envoy
// destroys a secret provider its last owner let go of): a resource that names that secret
// again later starts a new one. Those on ADS that draining listeners still use are kept.
func (m *Machine) pruneSubs() {
	if len(m.subs) == 0 {
		return
	}
	m.deadlineMemo = deadlineMemo{}
	c, l := &m.types[tCDS], &m.types[tLDS]
	cr, lr := c.set.secretRefsOr(c.res), l.set.secretRefsOr(l.res)
	m.subs = slices.DeleteFunc(m.subs, func(s secretSub) bool {
		if isMissing(s.key.ref, cr) || isMissing(s.key.ref, lr) {
			return false
		}
		_, draining := m.drain[tSDS][s.key.ref.name]
		return !draining || !s.key.ref.overADS()
	})
	if len(m.subs) == 0 {
		m.subs = nil
	}
}

func cmpSecretRef(a, b secretRef) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	if a.kind != b.kind {
		return int(a.kind) - int(b.kind)
	}
	return strings.Compare(a.arg, b.arg)
}

// localSecret is a secret the client gets from outside the control plane (the agent, a file):
// issued at ready (zero: failed, err says why).
type localSecret struct {
	ready  time.Time
	secret *tlsv3.Secret
	err    error
	held   bool
}

// secretSourceErr reports a secret source Envoy would reject the resource for: an API config
// source on a cluster the bootstrap lacks (neither the control plane's nor the agent's).
func (m *Machine) secretSourceErr(d *decoded) error {
	if m.agentServesAll(d.secretClusters) { // usually one (the agent's), for every secret
		return nil
	}
	for _, r := range d.secretList() {
		if r.kind == srcCluster && !r.overADS() && !m.agentServes(r.arg) {
			return fmt.Errorf("secret %q: sds_config names cluster %q, which is not in the bootstrap (%s, %s)", r.name, r.arg, istioagent.XDSCluster, m.agentClusters())
		}
	}
	return nil
}

// agentServesAll reports whether the agent serves every one of clusters.
func (m *Machine) agentServesAll(clusters []string) bool {
	for _, c := range clusters {
		if !m.agentServes(c) {
			return false
		}
	}
	return true
}

func (m *Machine) agentServes(cluster string) bool {
	if m.agent == nil {
		return cluster == istioagent.SDSCluster
	}
	return m.agent.Serves(cluster)
}

func (m *Machine) agentClusters() string {
	if m.agent == nil {
		return istioagent.SDSCluster
	}
	return strings.Join(m.agent.Clusters(), ", ")
}

// holdsSecret reports whether ref has arrived.
func (m *Machine) holdsSecret(r secretRef) bool {
	if r.overADS() {
		_, ok := m.types[tSDS].res[r.name]
		return ok
	}
	l, ok := m.local[r]
	return ok && l.held
}

// requestLocal asks the agent (or the file) for a secret not on ADS, once per client process.
func (m *Machine) requestLocal(r secretRef, now time.Time) {
	if _, ok := m.local[r]; ok {
		return
	}
	if m.local == nil {
		m.local = make(map[secretRef]*localSecret)
	}
	l := &localSecret{}
	m.local[r] = l
	var delay time.Duration
	switch {
	case m.agent == nil:
		l.err = errors.New("no istio-agent in this fleet")
	case r.kind == srcFile:
		l.secret, l.err = m.agent.FileSecret(r.arg, r.name)
	case m.agent.Serves(r.arg):
		l.secret, delay, l.err = m.agent.Serve(m.workload, r.name)
	default:
		l.err = fmt.Errorf("cluster %q is not the istio-agent's (%s)", r.arg, m.agentClusters())
	}
	if l.err != nil {
		return
	}
	l.ready = now.Add(delay)
	if delay <= 0 {
		l.held = true
		m.localGen++
		m.secretsGained = true
		return
	}
	m.localPending++
}

// deliverLocal hands over the local secrets issued by now; it reports whether any arrived.
func (m *Machine) deliverLocal(now time.Time) bool {
	if m.localPending == 0 {
		return false
	}
	any := false
	for _, l := range m.local {
		if !l.held && l.err == nil && !now.Before(l.ready) {
			l.held = true
			m.localGen++
			m.localPending--
			m.secretsGained = true
			any = true
		}
	}
	return any
}

// LocalSecret returns a secret the client got outside ADS (from the emulated istio-agent or a
// file), nil when it does not hold it.
func (m *Machine) LocalSecret(name string) *tlsv3.Secret {
	for r, l := range m.local {
		if r.name == name && l.held {
			return l.secret
		}
	}
	return nil
}

// secretMemo is whether every secret of refs, all local, was held when localGen was gen.
type secretMemo struct {
	refs []secretRef
	gen  uint32
	held bool
}

// hasSecrets reports whether every named secret has arrived.
//
// A full config's thousands of clusters name the same one or two secrets of the agent, and
// each cluster applied asks. A local secret, once held, stays held (the client asks for it
// once per process), and one arrives only with localGen counting it: so the last answer for
// the same local refs holds while it was yes or while localGen has not moved. Refs on ADS are
// looked up each time (an SDS response may remove a secret).
func (m *Machine) hasSecrets(refs []secretRef) bool {
	if mm := &m.secretMemo; len(refs) > 0 && (mm.held || mm.gen == m.localGen) && sameList(refs, mm.refs) {
		return mm.held
	}
	held, local := true, true
	for _, r := range refs {
		if r.overADS() {
			local = false
		}
		if held && !m.holdsSecret(r) {
			held = false
		}
	}
	if local && len(refs) > 0 {
		m.secretMemo = secretMemo{refs: refs, gen: m.localGen, held: held}
	}
	return held
}

// sameList reports whether a and b hold the same elements: at once when they are the same list
// (the Interner's secret references and timeouts, shared by every resource that names them).
func sameList[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

// warmSecrets puts a new or changed cluster or listener d into SDS warming when it names a
// secret the client does not hold whose subscription is not ready (secretDeadlines).
func (m *Machine) warmSecrets(t rtype, name string, d, old *decoded, now time.Time) {
	if !t.wildcard() {
		return
	}
	_, sec, _ := m.init.warmMaps(t)
	fin := m.init.finiteMap(t)
	if len(d.secrets) == 0 || m.hasSecrets(d.secrets) {
		delete(*sec, name)
		delete(*fin, name)
		return
	}
	// Each secret waits out its own subscription's timeout: the resource waits for the last
	// of them, and forever while a secret that waits forever is missing; once those have
	// arrived, the others' deadlines apply (rewarmSecrets).
	forever, finite := m.memoDeadlines(d, now)
	if !forever && finite.IsZero() {
		delete(*sec, name)
		delete(*fin, name)
		return
	}
	m.keepPrev(t, name, old)
	if *sec == nil {
		*sec = make(map[string]due)
	}
	m.setSecretDeadline(sec, fin, name, forever, finite)
}

// setSecretDeadline records the SDS warming deadline of a resource: none while a secret that
// waits forever is missing (the finite one then kept in fin), else finite.
func (m *Machine) setSecretDeadline(sec, fin *map[string]due, name string, forever bool, finite time.Time) {
	if !forever {
		(*sec)[name] = dueAt(finite)
		delete(*fin, name)
		return
	}
	(*sec)[name] = 0
	if finite.IsZero() {
		delete(*fin, name)
		return
	}
	if *fin == nil {
		*fin = make(map[string]due)
	}
	(*fin)[name] = dueAt(finite)
}

// rewarmSecrets, at now, ends the SDS warming of the clusters and listeners whose secrets have
// all arrived or whose subscriptions are otherwise ready, and moves the deadline of the others
// to that of the subscriptions they still wait for.
func (m *Machine) rewarmSecrets(now time.Time) {
	m.secretsGained = false
	m.deadlineMemo = deadlineMemo{}
	if len(m.init.secC) == 0 && len(m.init.secL) == 0 {
		return
	}
	miss := m.missingSecrets()
	if len(miss) == 0 {
		// Every secret referenced is held: every waiting resource has its secrets.
		clear(m.init.secC)
		clear(m.init.secL)
		clear(m.init.finC)
		clear(m.init.finL)
		return
	}
	// Resources share their secret lists (interned): the last answer holds for the same list.
	var last struct {
		refs    []secretRef
		waits   []secretWait
		forever bool
		finite  time.Time
	}
	for _, t := range []rtype{tCDS, tLDS} {
		_, sec, _ := m.init.warmMaps(t)
		fin := m.init.finiteMap(t)
		for name := range *sec {
			d := m.types[t].res[name].d
			if !anyMissing(d.secretList(), miss) {
				delete(*sec, name)
				delete(*fin, name)
				continue
			}
			if last.refs == nil || !sameList(d.secrets, last.refs) || !sameList(d.secretWaits, last.waits) {
				last.refs, last.waits = d.secrets, d.secretWaits
				last.forever, last.finite = m.secretDeadlines(d, now)
			}
			if !last.forever && last.finite.IsZero() {
				delete(*sec, name)
				delete(*fin, name)
				continue
			}
			m.setSecretDeadline(sec, fin, name, last.forever, last.finite)
		}
		if len(*sec) == 0 {
			clear(*fin)
		}
	}
}

// missingSecrets is the secret references of the client's clusters and listeners that it does
// not hold, sorted and unique: the unique references of a shared set are derived once, so this
// asks about each secret once instead of once per resource that names it.
func (m *Machine) missingSecrets() []secretRef {
	var miss []secretRef
	for _, t := range []rtype{tCDS, tLDS} {
		ts := &m.types[t]
		for _, r := range ts.set.secretRefsOr(ts.res) {
			if !m.holdsSecret(r) {
				miss = append(miss, r)
			}
		}
	}
	slices.SortFunc(miss, cmpSecretRef)
	return slices.Compact(miss)
}

// anyMissing reports whether refs names one of miss (sorted).
func anyMissing(refs, miss []secretRef) bool {
	for _, r := range refs {
		if isMissing(r, miss) {
			return true
		}
	}
	return false
}

func isMissing(r secretRef, miss []secretRef) bool {
	_, ok := slices.BinarySearchFunc(miss, r, cmpSecretRef)
	return ok
}

func (d *decoded) secretList() []secretRef {
	if d == nil {
		return nil
	}
	return d.secrets
}

// followUpSecrets subscribes SDS to every secret on ADS that the clusters and listeners now
// reference, when that set changed, and asks the agent for those it serves (gRPC clients take
// no SDS). The secrets of listeners the change removed or replaced stay subscribed while they
// drain (drain.go).
func (m *Machine) followUpSecrets(s *Step, now time.Time) {
	if m.grpc {
		return
	}
	names := m.adsSecretNames(now)
	if m.drainFor > 0 {
		dropped := m.drainedSecrets
		m.drainedSecrets = nil
		names = m.draining(tSDS, names, func(n string) bool { return slices.Contains(dropped, n) }, now)
	}
	m.pruneSubs()
	if ts := &m.types[tSDS]; slices.Equal(ts.names, names) && (ts.subscribed || len(names) == 0) {
		return
	}
	m.subscribeNames(s, tSDS, names)
}

// adsSecretNames is the secrets on ADS that the clusters and listeners reference, sorted and
// unique; it asks the agent for the others (once per client process).
func (m *Machine) adsSecretNames(now time.Time) []string {
	var names []string
	for _, t := range []rtype{tCDS, tLDS} {
		// The references of a shared set are derived once for every client that holds it.
		ts := &m.types[t]
		refs := ts.set.secretRefsOr(ts.res)
		for _, r := range refs {
			if r.overADS() {
				names = append(names, r.name)
			} else {
				m.requestLocal(r, now)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
