package fakeenvoy

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
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
		m := newTestMachine(t, ClientConfig{Delta: delta, Nack: policy.Nack{Realistic: true}})
		m.start(t0)
		forever := durationpb.New(0)
		var s step
		if delta {
			s = m.onDelta(deltaResp(t, C, "a", nil, mtlsCluster(t, "c1", forever)), t0)
			if len(s.delta) != 3 || s.delta[2].GetTypeUrl() != S || len(s.delta[2].GetResourceNamesSubscribe()) != 2 {
				t.Fatalf("delta CDS step: %v", s.delta)
			}
		} else {
			s = m.onSotw(sotwResp(t, C, "1", "a", mtlsCluster(t, "c1", forever)), t0)
			wantReqs(t, "CDS", s.sotw, "EDS(,,[c1])", "SDS(,,[ROOTCA default])", "CDS(1,a,[])")
		}
		if s.info.Nacked {
			t.Fatalf("delta=%v: mTLS cluster NACKed: %s", delta, s.info.Error)
		}
		feed := func(typeURL, nonce string, msgs ...proto.Message) step {
			if delta {
				return m.onDelta(deltaResp(t, typeURL, nonce, nil, msgs...), t0)
			}
			return m.onSotw(sotwResp(t, typeURL, "1", nonce, msgs...), t0)
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

// TestSDSTimeout: secrets that never come end warming at the sds_config's
// initial_fetch_timeout, reported as an SDS timeout.
func TestSDSTimeout(t *testing.T) {
	m := newTestMachine(t, ClientConfig{})
	m.start(t0)
	m.onSotw(sotwResp(t, C, "1", "a", mtlsCluster(t, "c1", durationpb.New(2*time.Second))), t0)
	m.onSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80)), t0)
	if d := m.nextDeadline(); !d.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("deadline %v, want the secrets' 2s", d)
	}
	s := m.onTimer(t0.Add(2 * time.Second))
	if len(s.timeouts) != 1 || s.timeouts[0] != S || m.init.phase != phaseLDS {
		t.Fatalf("timeouts %v, phase %d", s.timeouts, m.init.phase)
	}
}

// TestSDSStaticSecretRejected: a secret reference without sds_config names a bootstrap secret
// the fake Envoy does not have: NACKed under the realistic policy.
func TestSDSStaticSecretRejected(t *testing.T) {
	m := newTestMachine(t, ClientConfig{Nack: policy.Nack{Realistic: true}})
	m.start(t0)
	c := fetest.EDSCluster("c1")
	c.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "static"}}}})
	if s := m.onSotw(sotwResp(t, C, "1", "a", c), t0); !s.info.Nacked {
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
		names, _, _ := r.result()
		for i := 1; i < len(names); i++ {
			if cmpSecretRef(names[i-1], names[i]) >= 0 {
				t.Fatalf("names not sorted and unique: %q", names)
			}
		}
	})
}
