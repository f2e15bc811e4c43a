package machine

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

const S = resource.SecretType

func sdsRef(name string, ift *durationpb.Duration) *tlsv3.SdsSecretConfig {
	src := fetest.ADSSource()
	src.InitialFetchTimeout = ift
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: src}
}

func tlsCommon(ift *durationpb.Duration) *tlsv3.CommonTlsContext {
	return &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsRef("default", ift)},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext: &tlsv3.CertificateValidationContext{}, ValidationContextSdsSecretConfig: sdsRef("ROOTCA", ift),
		}},
	}
}

func tlsSocket(t testing.TB, m proto.Message) *corev3.TransportSocket {
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}

func mtlsCluster(t testing.TB, name string, ift *durationpb.Duration) *clusterv3.Cluster {
	c := fetest.EDSCluster(name)
	c.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: tlsCommon(ift)})
	return c
}

func secret(name string) *tlsv3.Secret {
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "pem"}}}}}
}

// TestSDSWarming: a cluster whose transport socket names SDS secrets asks for them over ADS
// with its EDS request, and stays warming (no LDS yet) after its assignment arrives, and after
// an empty SDS answer, until both secrets are there; a listener with an mTLS chain waits too.
func TestSDSWarming(t *testing.T) {
	for _, delta := range []bool{false, true} {
		m := newTestMachine(t, Config{Delta: delta, Nack: policy.Nack{Realistic: true}})
		m.Start(t0)
		forever := durationpb.New(0)
		var s Step
		if delta {
			s = m.OnDelta(deltaResp(t, C, "a", nil, mtlsCluster(t, "c1", forever)), t0)
			if len(s.Delta) != 3 || s.Delta[1].GetTypeUrl() != S || len(s.Delta[1].GetResourceNamesSubscribe()) != 2 || s.Delta[2].GetResponseNonce() != "a" {
				t.Fatalf("delta CDS step: %v", s.Delta)
			}
		} else {
			s = m.OnSotw(sotwResp(t, C, "1", "a", mtlsCluster(t, "c1", forever)), t0)
			wantReqs(t, "CDS", s.Sotw, "EDS(,,[c1])", "SDS(,,[ROOTCA default])", "CDS(1,a,[])")
		}
		if s.Info.Nacked {
			t.Fatalf("delta=%v: mTLS cluster NACKed: %s", delta, s.Info.Error)
		}
		feed := func(typeURL, nonce string, msgs ...proto.Message) Step {
			if delta {
				return m.OnDelta(deltaResp(t, typeURL, nonce, nil, msgs...), t0)
			}
			return m.OnSotw(sotwResp(t, typeURL, "1", nonce, msgs...), t0)
		}
		feed(E, "b", fetest.CLA("c1", "10.0.0.1", 80))
		if m.init.phase != phaseClusters || m.Effective(C, "c1") != nil {
			t.Fatalf("delta=%v: after EDS the cluster must still wait for its secrets (phase %d)", delta, m.init.phase)
		}
		feed(S, "c")
		if m.init.phase != phaseClusters {
			t.Fatalf("delta=%v: an empty SDS response warmed the cluster", delta)
		}
		s = feed(S, "d", secret("ROOTCA"), secret("default"))
		if m.init.phase != phaseLDS || m.Effective(C, "c1") == nil {
			t.Fatalf("delta=%v: secrets arrived, phase %d, want LDS requested", delta, m.init.phase)
		}
	}
}

// TestSDSBlocker: a client short of secrets names the first missing one (by name) and the
// first resource waiting for it (by kind and name), the same whatever order its maps hold them
// in; once that secret arrives it names the next.
func TestSDSBlocker(t *testing.T) {
	for i := range 20 {
		m := newTestMachine(t, Config{})
		m.Start(t0)
		m.OnSotw(sotwResp(t, C, "1", "a", mtlsCluster(t, "c3", nil), mtlsCluster(t, "c1", nil), mtlsCluster(t, "c2", nil)), t0)
		m.OnSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80), fetest.CLA("c3", "10.0.0.3", 80)), t0)
		want := func(step, secret string) {
			t.Helper()
			b, ok := m.Blocked()
			if !ok || !strings.Contains(b.Reason, "waiting for secret "+strconv.Quote(secret)) || b.Example != "cluster c1" {
				t.Fatalf("run %d, %s: blocker %+v (blocked %v), want secret %q for cluster c1", i, step, b, ok, secret)
			}
		}
		want("no secrets", "ROOTCA")
		m.OnSotw(sotwResp(t, S, "1", "c", secret("ROOTCA")), t0)
		want("ROOTCA held", "default")
	}
}

// TestSDSTimeout: secrets that never come end warming at the sds_config's
// initial_fetch_timeout, reported as an SDS timeout.
func TestSDSTimeout(t *testing.T) {
	m := newTestMachine(t, Config{})
	m.Start(t0)
	m.OnSotw(sotwResp(t, C, "1", "a", mtlsCluster(t, "c1", durationpb.New(2*time.Second))), t0)
	m.OnSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80)), t0)
	if d := m.NextDeadline(); !d.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("deadline %v, want the secrets' 2s", d)
	}
	s := m.OnTimer(t0.Add(2 * time.Second))
	if len(s.Timeouts) != 1 || s.Timeouts[0] != S || m.init.phase != phaseLDS {
		t.Fatalf("timeouts %v, phase %d", s.Timeouts, m.init.phase)
	}
}

// TestSDSEachSecretItsOwnTimeout: each secret waits out its own initial_fetch_timeout, as
// Envoy's SDS init targets do: a resource with a secret that waits forever and one that waits
// 2s (istiod's ISTIO_MUTUAL workload certificate and a gateway's certificate files) waits
// forever only while the first is missing; once it arrives, the second's deadline, counted
// from when warming began, ends warming. A secret that waits forever and never arrives keeps
// the resource warming.
func TestSDSEachSecretItsOwnTimeout(t *testing.T) {
	mixed := func(name string) *clusterv3.Cluster {
		c := fetest.EDSCluster(name)
		c.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsRef("default", durationpb.New(0))},
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{}, ValidationContextSdsSecretConfig: sdsRef("file-root:/certs/ca.crt", durationpb.New(2*time.Second)),
			}},
		}})
		return c
	}
	for _, arrives := range []bool{true, false} {
		m := newTestMachine(t, Config{})
		m.Start(t0)
		m.OnSotw(sotwResp(t, C, "1", "a", mixed("c1")), t0)
		m.OnSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80)), t0)
		if d := m.init.secC["c1"]; d != 0 {
			t.Fatalf("deadline %v while the secret that waits forever is missing, want none", d.time())
		}
		if arrives {
			m.OnSotw(sotwResp(t, S, "1", "c", secret("default")), t0.Add(time.Second))
			if d := m.init.secC["c1"]; !d.time().Equal(t0.Add(2 * time.Second)) {
				t.Fatalf("after default arrived: deadline %v, want the CA's 2s from the start", d.time())
			}
		}
		s := m.OnTimer(t0.Add(2 * time.Second))
		if warmed := m.init.phase == phaseLDS; warmed != arrives {
			t.Errorf("default arrives %v: warmed at 2s %v (timeouts %v), want %v", arrives, warmed, s.Timeouts, arrives)
		}
	}
}

// TestSDSStaticSecretRejected: a secret reference without sds_config names a bootstrap secret
// the fake Envoy does not have: NACKed under the realistic policy.
func TestSDSStaticSecretRejected(t *testing.T) {
	m := newTestMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	m.Start(t0)
	c := fetest.EDSCluster("c1")
	c.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "static"}}}})
	if s := m.OnSotw(sotwResp(t, C, "1", "a", c), t0); !s.Info.Nacked {
		t.Fatal("a static secret reference was accepted")
	}
}

// FuzzSecretRefs feeds arbitrary cluster and listener bytes to the secret reference parser:
// it never panics, and every name it returns is sorted and unique.
func FuzzSecretRefs(f *testing.F) {
	f.Add(mustMarshal(f, mtlsCluster(f, "c", durationpb.New(0))), true)
	l := &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{{TransportSocket: tlsSocket(f, &tlsv3.DownstreamTlsContext{CommonTlsContext: tlsCommon(nil)})}}}
	f.Add(mustMarshal(f, l), false)
	f.Fuzz(func(t *testing.T, b []byte, cluster bool) {
		var msg proto.Message = &listenerv3.Listener{}
		if cluster {
			msg = &clusterv3.Cluster{}
		}
		if proto.Unmarshal(b, msg) != nil {
			return
		}
		var r secretRefs
		_ = r.collect(msg)
		names, _ := r.result()
		for i := 1; i < len(names); i++ {
			if cmpSecretRef(names[i-1], names[i]) >= 0 {
				t.Fatalf("names not sorted and unique: %q", names)
			}
		}
	})
}

// TestHasSecretsMemo: hasSecrets remembers its last answer for a list of local secrets, and
// that answer moves with every local secret that arrives; a list with a secret on ADS is looked
// up each time, as an SDS response may take one away.
func TestHasSecretsMemo(t *testing.T) {
	def := secretRef{name: istioagent.SecretWorkload, kind: srcCluster, arg: istioagent.SDSCluster}
	root := secretRef{name: istioagent.SecretRoot, kind: srcCluster, arg: istioagent.SDSCluster}
	file := secretRef{name: "file-root:/etc/ca.pem", kind: srcFile, arg: "/etc/ca.pem"}
	ads := secretRef{name: "kube-cert", kind: srcADS}
	m := &Machine{local: map[secretRef]*localSecret{
		root: {ready: t0.Add(time.Millisecond)},
		def:  {ready: t0.Add(2 * time.Millisecond)},
		file: {err: errors.New("no such file")},
	}, localPending: 2}
	both := []secretRef{root, def}
	check := func(step string, refs []secretRef, want bool) {
		t.Helper()
		if got := m.hasSecrets(refs); got != want {
			t.Fatalf("%s: hasSecrets(%v) = %v, want %v", step, refs, got, want)
		}
	}
	check("none issued", both, false)
	check("none issued, asked again", both, false)
	m.deliverLocal(t0.Add(time.Millisecond))
	check("ROOTCA issued", both, false)
	check("ROOTCA issued", []secretRef{root}, true)
	check("ROOTCA issued, the pair again", both, false)
	m.deliverLocal(t0.Add(2 * time.Millisecond))
	check("both issued", both, true)
	check("both issued, an equal list", slices.Clone(both), true)
	check("a file that failed", []secretRef{root, file}, false)
	check("both issued, after another list", both, true)
	check("no secrets", nil, true)

	m.types[tSDS].res = map[string]entry{ads.name: {}}
	check("on ADS, held", []secretRef{root, ads}, true)
	delete(m.types[tSDS].res, ads.name)
	check("on ADS, removed", []secretRef{root, ads}, false)
}

// TestSDSWrappedSocket: a transport socket wrapped in the upstream PROXY protocol socket (a
// DestinationRule's proxyProtocol) names the secrets of the socket it wraps, which Envoy fetches
// as for the bare socket; each transport socket match is followed alike.
func TestSDSWrappedSocket(t *testing.T) {
	wrapped := func(inner *corev3.TransportSocket) *corev3.TransportSocket {
		a, err := anypb.New(&proxyprotocolv3.ProxyProtocolUpstreamTransport{Config: &corev3.ProxyProtocolConfig{}, TransportSocket: inner})
		if err != nil {
			t.Fatal(err)
		}
		return &corev3.TransportSocket{Name: "envoy.transport_sockets.upstream_proxy_protocol", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
	}
	forever := durationpb.New(0)
	c := mtlsCluster(t, "c1", forever)
	c.TransportSocketMatches = []*clusterv3.Cluster_TransportSocketMatch{{Name: "m", TransportSocket: wrapped(c.TransportSocket)}}
	c.TransportSocket = nil
	var r secretRefs
	if err := r.collect(c); err != nil {
		t.Fatal(err)
	}
	refs, _ := r.result()
	var names []string
	for _, ref := range refs {
		names = append(names, ref.name)
	}
	if !slices.Equal(names, []string{"ROOTCA", "default"}) {
		t.Errorf("secrets %v, want ROOTCA and default from the wrapped socket", names)
	}
}

// TestSDSSharedSubscriptions: Envoy keeps one SDS subscription per secret and sds_config, its
// init target shared by every cluster and listener that names it. Its initial_fetch_timeout
// runs once, from when the first of them started warming; a resource naming it once it is
// ready (arrived or timed out) does not wait, one naming it while it is pending waits for the
// same deadline; a subscription nothing names any more is dropped, and a resource naming that
// secret later starts a new one. A resource's deadline is that of the subscriptions it still
// waits for, recomputed as secrets arrive, and a secret that waits forever arriving after the
// others timed out ends warming at once, with no SDS timeout reported later.
func TestSDSSharedSubscriptions(t *testing.T) {
	type sec struct {
		name string
		ift  time.Duration // 0: forever
	}
	cluster := func(name string, secs ...sec) *clusterv3.Cluster {
		c := fetest.EDSCluster(name)
		if len(secs) == 0 {
			return c
		}
		common := &tlsv3.CommonTlsContext{}
		for _, s := range secs {
			common.TlsCertificateSdsSecretConfigs = append(common.TlsCertificateSdsSecretConfigs, sdsRef(s.name, durationpb.New(s.ift)))
		}
		c.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: common})
		return c
	}
	const (
		none    = time.Duration(-1) // not warming on secrets
		forever = time.Duration(0)  // warming, no deadline
	)
	type step struct {
		at         time.Duration
		cds        []*clusterv3.Cluster // a CDS response (the whole set) when non-nil
		sds        []string             // else an SDS response (the whole set) when non-nil
		want       map[string]time.Duration
		sdsTimeout bool // a timer step reports an SDS timeout
		subs       int  // subscriptions held after the step; -1: unchecked
	}
	x15 := sec{"gw-cert", 15 * time.Second}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a resource naming a timed-out subscription does not wait", []step{
			{at: 0, cds: []*clusterv3.Cluster{cluster("c1", x15)}, want: map[string]time.Duration{"c1": 15 * time.Second}, subs: 1},
			{at: 15 * time.Second, want: map[string]time.Duration{"c1": none}, sdsTimeout: true, subs: 1},
			{at: 20 * time.Second, cds: []*clusterv3.Cluster{cluster("c1", x15), cluster("c2", x15)}, want: map[string]time.Duration{"c1": none, "c2": none}, subs: 1},
		}},
		{"a resource joining a pending subscription waits for its deadline", []step{
			{at: 0, cds: []*clusterv3.Cluster{cluster("c1", x15)}, want: map[string]time.Duration{"c1": 15 * time.Second}, subs: 1},
			{at: 5 * time.Second, cds: []*clusterv3.Cluster{cluster("c1", x15), cluster("c2", x15)}, want: map[string]time.Duration{"c1": 15 * time.Second, "c2": 15 * time.Second}, subs: 1},
			{at: 15 * time.Second, want: map[string]time.Duration{"c1": none, "c2": none}, sdsTimeout: true, subs: 1},
		}},
		{"another timeout is another subscription", []step{
			{at: 0, cds: []*clusterv3.Cluster{cluster("c1", x15)}, want: map[string]time.Duration{"c1": 15 * time.Second}, subs: 1},
			{at: 15 * time.Second, want: map[string]time.Duration{"c1": none}, sdsTimeout: true, subs: 1},
			{at: 20 * time.Second, cds: []*clusterv3.Cluster{cluster("c1", x15), cluster("c2", sec{"gw-cert", 30 * time.Second})}, want: map[string]time.Duration{"c2": 50 * time.Second}, subs: 2},
		}},
		{"a subscription nothing names is dropped", []step{
			{at: 0, cds: []*clusterv3.Cluster{cluster("c1", x15)}, want: map[string]time.Duration{"c1": 15 * time.Second}, subs: 1},
			{at: 15 * time.Second, want: map[string]time.Duration{"c1": none}, sdsTimeout: true, subs: 1},
			{at: 20 * time.Second, cds: []*clusterv3.Cluster{cluster("c0")}, subs: 0},
			{at: 30 * time.Second, cds: []*clusterv3.Cluster{cluster("c0"), cluster("c2", x15)}, want: map[string]time.Duration{"c2": 45 * time.Second}, subs: 1},
		}},
		{"the deadline is recomputed over the secrets still missing", []step{
			{at: 0, cds: []*clusterv3.Cluster{cluster("c1", sec{"a", 2 * time.Second}, sec{"b", 5 * time.Second})}, want: map[string]time.Duration{"c1": 5 * time.Second}, subs: 2},
			{at: time.Second, sds: []string{"b"}, want: map[string]time.Duration{"c1": 2 * time.Second}, subs: 2},
			{at: 2 * time.Second, want: map[string]time.Duration{"c1": none}, sdsTimeout: true, subs: 2},
		}},
		{"a secret waiting forever arriving after the others timed out ends warming", []step{
			{at: 0, cds: []*clusterv3.Cluster{cluster("c1", sec{"default", 0}, sec{"a", 2 * time.Second})}, want: map[string]time.Duration{"c1": forever}, subs: 2},
			{at: 2 * time.Second, want: map[string]time.Duration{"c1": forever}, subs: 2},
			{at: 3 * time.Second, sds: []string{"default"}, want: map[string]time.Duration{"c1": none}, subs: 2},
			{at: 4 * time.Second, want: map[string]time.Duration{"c1": none}, subs: 2},
		}},
		{"a secret waiting forever arriving first leaves the others' deadline", []step{
			{at: 0, cds: []*clusterv3.Cluster{cluster("c1", sec{"default", 0}, sec{"a", 2 * time.Second})}, want: map[string]time.Duration{"c1": forever}, subs: 2},
			{at: time.Second, sds: []string{"default"}, want: map[string]time.Duration{"c1": 2 * time.Second}, subs: 2},
			{at: 2 * time.Second, want: map[string]time.Duration{"c1": none}, sdsTimeout: true, subs: 2},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(t, Config{})
			m.Start(t0)
			for i, st := range tc.steps {
				now := t0.Add(st.at)
				nonce := strconv.Itoa(i)
				var s Step
				switch {
				case st.cds != nil:
					msgs := make([]proto.Message, len(st.cds))
					for j, c := range st.cds {
						msgs[j] = c
					}
					s = m.OnSotw(sotwResp(t, C, nonce, nonce, msgs...), now)
				case st.sds != nil:
					msgs := make([]proto.Message, len(st.sds))
					for j, n := range st.sds {
						msgs[j] = secret(n)
					}
					s = m.OnSotw(sotwResp(t, S, nonce, nonce, msgs...), now)
				default:
					s = m.OnTimer(now)
					if got := slices.Contains(s.Timeouts, S); got != st.sdsTimeout {
						t.Errorf("step %d (%v): SDS timeout %v (timeouts %v), want %v", i, st.at, got, s.Timeouts, st.sdsTimeout)
					}
				}
				if s.Info.Nacked {
					t.Fatalf("step %d: NACK %s", i, s.Info.Error)
				}
				for c, w := range st.want {
					d, ok := m.init.secC[c]
					switch {
					case w == none && ok:
						t.Errorf("step %d (%v): cluster %s warms on secrets until %v, want not", i, st.at, c, d.time().Sub(t0))
					case w == forever && (!ok || d != 0):
						t.Errorf("step %d (%v): cluster %s: deadline %v (warming %v), want forever", i, st.at, c, d.time().Sub(t0), ok)
					case w > 0 && (!ok || !d.time().Equal(t0.Add(w))):
						t.Errorf("step %d (%v): cluster %s: deadline %v (warming %v), want %v", i, st.at, c, d.time().Sub(t0), ok, w)
					}
				}
				if st.subs >= 0 && len(m.subs) != st.subs {
					t.Errorf("step %d (%v): %d subscriptions, want %d", i, st.at, len(m.subs), st.subs)
				}
			}
		})
	}
}

// TestSDSGatewayUpdateAfterTimeout: a gateway listener naming a credentialName the control
// plane does not serve (its sds_config gives no initial_fetch_timeout: Envoy's 15s) warms 15s
// once; a later update of that listener, naming the same secret, applies at once, as the
// subscription it shares with the first copy has timed out already (Envoy's shared SDS init
// target), instead of warming another 15s.
func TestSDSGatewayUpdateAfterTimeout(t *testing.T) {
	m := warmedMachine(t, Config{})
	gw := func(routes ...string) *listenerv3.Listener {
		l := fetest.RDSListener(t, "gw", 443, routes...)
		for _, fc := range l.FilterChains {
			fc.TransportSocket = tlsSocket(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
				TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsRef("kubernetes://gw-cred", nil)}}})
		}
		return l
	}
	l1 := fetest.RDSListener(t, "l1", 80, "r1")
	m.OnSotw(sotwResp(t, L, "2", "e", l1, gw("r1")), t0.Add(time.Second))
	if !m.warming(tLDS, "gw") {
		t.Fatal("the gateway listener does not warm on its missing secret")
	}
	if s := m.OnTimer(t0.Add(16 * time.Second)); !slices.Contains(s.Timeouts, S) || m.warming(tLDS, "gw") {
		t.Fatalf("at 16s: timeouts %v, warming %v; want an SDS timeout and the listener active", s.Timeouts, m.warming(tLDS, "gw"))
	}
	m.OnSotw(sotwResp(t, L, "3", "f", l1, gw("r1", "r1")), t0.Add(30*time.Second))
	if m.warming(tLDS, "gw") {
		d := m.init.secL["gw"]
		t.Fatalf("the updated gateway listener warms again until %v, want it applied at once", d.time().Sub(t0))
	}
}
