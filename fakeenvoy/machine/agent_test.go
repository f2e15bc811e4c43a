package machine

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// agentSource is the config source istiod gives its auto-mTLS secrets: the istio-agent's SDS
// server, reached through the bootstrap cluster sds-grpc, initial_fetch_timeout 0s.
func agentSource(cluster string, ift *durationpb.Duration) *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:  corev3.ApiVersion_V3,
		InitialFetchTimeout: ift,
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType: corev3.ApiConfigSource_GRPC, TransportApiVersion: corev3.ApiVersion_V3,
			SetNodeOnFirstMessageOnly: true,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: cluster}}}},
		}},
	}
}

// autoMTLSCluster is an EDS cluster as istiod builds it with auto-mTLS: a
// transport_socket_matches entry for tlsMode istio with TLS whose secrets are on src.
func autoMTLSCluster(t testing.TB, name string, cert, root *corev3.ConfigSource, certName, rootName string) *clusterv3.Cluster {
	c := fetest.EDSCluster(name)
	up := &tlsv3.UpstreamTlsContext{Sni: "outbound_.80_._." + name, CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: certName, SdsConfig: cert}},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         &tlsv3.CertificateValidationContext{},
			ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: rootName, SdsConfig: root},
		}},
	}}
	c.TransportSocketMatches = []*clusterv3.Cluster_TransportSocketMatch{
		{Name: "tlsMode-istio", TransportSocket: tlsSocket(t, up)},
		{Name: "tlsMode-disabled", TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.raw_buffer"}},
	}
	return c
}

func testAgent(t testing.TB, cfg istioagent.Config) *istioagent.Agent {
	t.Helper()
	a, err := istioagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func nodeWithSA(ns, sa string) *corev3.Node {
	n := fetest.Node(ns, 3)
	n.Metadata.Fields["SERVICE_ACCOUNT"] = structpb.NewStringValue(sa)
	return n
}

// TestAgentSecretsBySource: istiod's auto-mTLS cluster names default and ROOTCA on sds-grpc.
// The client never asks the control plane for them (no SDS request on ADS); the emulated agent
// issues them after its delay, and only then does the cluster warm and LDS follow. The
// workload certificate is real X.509: SPIFFE SAN from the node's namespace and service account,
// serverAuth and clientAuth, signed by the agent's root.
func TestAgentSecretsBySource(t *testing.T) {
	for _, delta := range []bool{false, true} {
		agent := testAgent(t, istioagent.Config{IssueDelay: 7 * time.Millisecond, Now: func() time.Time { return t0 }})
		m := newTestMachine(t, Config{Delta: delta, Nack: policy.Nack{Realistic: true}, Agent: agent, Node: nodeWithSA("shop", "cart")})
		m.Start(t0)
		src := agentSource(istioagent.SDSCluster, durationpb.New(0))
		c := autoMTLSCluster(t, "outbound|80||a.shop.svc.cluster.local", src, src, istioagent.SecretWorkload, istioagent.SecretRoot)
		var s Step
		if delta {
			s = m.OnDelta(deltaResp(t, C, "a", nil, c), t0)
			for _, r := range s.Delta {
				if r.GetTypeUrl() == S {
					t.Fatalf("delta=%v: secrets on sds-grpc were asked over ADS: %v", delta, r)
				}
			}
		} else {
			s = m.OnSotw(sotwResp(t, C, "1", "a", c), t0)
			wantReqs(t, "CDS", s.Sotw, "EDS(,,[outbound|80||a.shop.svc.cluster.local])", "CDS(1,a,[])")
		}
		if s.Info.Nacked {
			t.Fatalf("delta=%v: NACK %s", delta, s.Info.Error)
		}
		feed := func(typeURL, nonce string, msgs ...proto.Message) Step {
			if delta {
				return m.OnDelta(deltaResp(t, typeURL, nonce, nil, msgs...), t0)
			}
			return m.OnSotw(sotwResp(t, typeURL, "1", nonce, msgs...), t0)
		}
		feed(E, "b", fetest.CLA(c.Name, "10.0.0.1", 80))
		if m.init.phase != phaseClusters {
			t.Fatalf("delta=%v: cluster warmed before the agent issued its secrets", delta)
		}
		b := m.blocker()
		if !strings.Contains(b.Reason, `secret "ROOTCA" from config source cluster sds-grpc: being issued`) {
			t.Fatalf("delta=%v: blocker %+v", delta, b)
		}
		if d := m.NextDeadline(); !d.Equal(t0.Add(7 * time.Millisecond)) {
			t.Fatalf("delta=%v: next deadline %v, want the issue delay", delta, d.Sub(t0))
		}
		st := m.OnTimer(t0.Add(7 * time.Millisecond))
		if m.init.phase != phaseLDS || len(st.Timeouts) != 0 {
			t.Fatalf("delta=%v: after the agent issued: phase %d timeouts %v", delta, m.init.phase, st.Timeouts)
		}
		if m.types[tSDS].subscribed {
			t.Fatalf("delta=%v: SDS subscribed on ADS", delta)
		}
		checkWorkloadCert(t, agent, m, "spiffe://cluster.local/ns/shop/sa/cart")
	}
}

// parseCert reads the first certificate of a PEM chain.
func parseCert(chain string) (*x509.Certificate, error) {
	b, _ := pem.Decode([]byte(chain))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

func checkWorkloadCert(t *testing.T, agent *istioagent.Agent, m *Machine, wantID string) {
	t.Helper()
	wl := m.LocalSecret(istioagent.SecretWorkload)
	root := m.LocalSecret(istioagent.SecretRoot)
	if wl == nil || root == nil {
		t.Fatalf("secrets held: default %v ROOTCA %v", wl != nil, root != nil)
	}
	cert, err := parseCert(wl.GetTlsCertificate().GetCertificateChain().GetInlineString())
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.URIs) != 1 || cert.URIs[0].String() != wantID {
		t.Fatalf("SAN %v, want %s", cert.URIs, wantID)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(root.GetValidationContext().GetTrustedCa().GetInlineString())) {
		t.Fatal("ROOTCA holds no certificate")
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}, CurrentTime: t0}); err != nil {
			t.Fatalf("workload certificate for usage %v: %v", usage, err)
		}
	}
	if root.GetValidationContext().GetTrustedCa().GetInlineString() != agent.RootPEM() {
		t.Fatal("ROOTCA is not the agent's root")
	}
	if !strings.Contains(wl.GetTlsCertificate().GetPrivateKey().GetInlineString(), "PRIVATE KEY") {
		t.Fatal("workload secret has no private key")
	}
}

// TestSecretSources: each sds_config, one table row: which secrets go on the ADS subscription,
// whether the resource is NACKed (realistic policy), and why it waits when it does.
func TestSecretSources(t *testing.T) {
	files := map[string]string{
		"/etc/sds/secret.yaml": `resources:
- "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
  name: filecert
  tls_certificate:
    certificate_chain: {inline_string: "cert"}
    private_key: {inline_string: "key"}
`,
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	ads := fetest.ADSSource()
	pathSrc := func(p string) *corev3.ConfigSource {
		return &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{Path: p}}}
	}
	forever := durationpb.New(0)
	for _, tc := range []struct {
		name           string
		cert, root     *corev3.ConfigSource
		certN, rootN   string
		noAgent        bool
		realistic      bool
		wantSDS        string // the ADS SDS request, "" when none
		wantNack       string
		wantWarm       bool   // still warming once the assignment and the agent's delay passed
		wantBlockedHas string // part of the blocker's reason
	}{
		{name: "both on ADS", cert: ads, root: ads, certN: "default", rootN: "ROOTCA", wantSDS: "SDS(,,[ROOTCA default])", wantWarm: true,
			wantBlockedHas: `secret "ROOTCA" from ADS: asked of the control plane over ADS, not received`},
		{name: "mixed: root on ADS, cert on the agent", cert: agentSource(istioagent.SDSCluster, forever), root: ads, certN: "default", rootN: "ROOTCA",
			wantSDS: "SDS(,,[ROOTCA])", wantWarm: true, wantBlockedHas: `secret "ROOTCA" from ADS`},
		{name: "on the control plane's bootstrap cluster", cert: agentSource(istioagent.XDSCluster, forever), root: agentSource(istioagent.XDSCluster, forever),
			certN: "default", rootN: "ROOTCA", wantSDS: "SDS(,,[ROOTCA default])", wantWarm: true},
		{name: "both on the agent", cert: agentSource(istioagent.SDSCluster, forever), root: agentSource(istioagent.SDSCluster, forever), certN: "default", rootN: "ROOTCA"},
		{name: "agent refuses an unknown name", cert: agentSource(istioagent.SDSCluster, forever), root: agentSource(istioagent.SDSCluster, forever),
			certN: "kubernetes://other", rootN: "ROOTCA", wantWarm: true,
			wantBlockedHas: `secret "kubernetes://other" from config source cluster sds-grpc: cannot arrive: the istio-agent serves`},
		{name: "no agent in the fleet", cert: agentSource(istioagent.SDSCluster, forever), root: agentSource(istioagent.SDSCluster, forever),
			certN: "default", rootN: "ROOTCA", noAgent: true, wantWarm: true, wantBlockedHas: "cannot arrive: no istio-agent in this fleet"},
		{name: "unknown cluster, realistic: NACK", cert: agentSource("vault", forever), root: agentSource(istioagent.SDSCluster, forever),
			certN: "default", rootN: "ROOTCA", realistic: true, wantNack: `sds_config names cluster "vault", which is not in the bootstrap`},
		{name: "unknown cluster, lenient: never arrives", cert: agentSource("vault", forever), root: agentSource(istioagent.SDSCluster, forever),
			certN: "default", rootN: "ROOTCA", wantWarm: true, wantBlockedHas: `from config source cluster vault: cannot arrive: cluster "vault" is not the istio-agent's`},
		{name: "file source", cert: pathSrc("/etc/sds/secret.yaml"), root: agentSource(istioagent.SDSCluster, forever), certN: "filecert", rootN: "ROOTCA"},
		{name: "file source, missing file", cert: pathSrc("/etc/sds/gone.yaml"), root: agentSource(istioagent.SDSCluster, forever), certN: "filecert", rootN: "ROOTCA",
			wantWarm: true, wantBlockedHas: `secret "filecert" from file /etc/sds/gone.yaml: cannot arrive: open /etc/sds/gone.yaml: file does not exist`},
		{name: "file source, secret not in file", cert: pathSrc("/etc/sds/secret.yaml"), root: agentSource(istioagent.SDSCluster, forever), certN: "other", rootN: "ROOTCA",
			wantWarm: true, wantBlockedHas: `holds no secret "other"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Nack: policy.Nack{Realistic: tc.realistic}}
			if !tc.noAgent {
				cfg.Agent = testAgent(t, istioagent.Config{IssueDelay: 3 * time.Millisecond, ReadFile: read})
			}
			m := newTestMachine(t, cfg)
			m.Start(t0)
			c := autoMTLSCluster(t, "c1", tc.cert, tc.root, tc.certN, tc.rootN)
			s := m.OnSotw(sotwResp(t, C, "1", "a", c), t0)
			if tc.wantNack != "" {
				if !s.Info.Nacked || !strings.Contains(s.Info.Error, tc.wantNack) {
					t.Fatalf("NACK %v %q, want %q", s.Info.Nacked, s.Info.Error, tc.wantNack)
				}
				return
			}
			if s.Info.Nacked {
				t.Fatalf("NACK: %s", s.Info.Error)
			}
			var sds []string
			for _, r := range reqSummary(s.Sotw) {
				if strings.HasPrefix(r, "SDS") {
					sds = append(sds, r)
				}
			}
			if got := strings.Join(sds, " "); got != tc.wantSDS {
				t.Fatalf("SDS requests %q, want %q", got, tc.wantSDS)
			}
			m.OnSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80)), t0)
			m.OnTimer(t0.Add(3 * time.Millisecond))
			warming := m.init.phase == phaseClusters
			if warming != tc.wantWarm {
				t.Fatalf("warming %v, want %v (blocker %+v)", warming, tc.wantWarm, m.blocker())
			}
			if tc.wantBlockedHas != "" {
				b := m.blocker()
				if !strings.Contains(b.Reason, tc.wantBlockedHas) || b.Example != "cluster c1" {
					t.Fatalf("blocker %+v, want it to contain %q (example cluster c1)", b, tc.wantBlockedHas)
				}
			}
		})
	}
}

// TestAgentRefusedSecretTimesOut: a secret the agent cannot serve, on a source with a finite
// initial_fetch_timeout, ends warming at that timeout (Envoy then uses the cluster without it).
func TestAgentRefusedSecretTimesOut(t *testing.T) {
	m := newTestMachine(t, Config{Agent: testAgent(t, istioagent.Config{})})
	m.Start(t0)
	src := agentSource(istioagent.SDSCluster, durationpb.New(2*time.Second))
	m.OnSotw(sotwResp(t, C, "1", "a", autoMTLSCluster(t, "c1", src, src, "nope", istioagent.SecretRoot)), t0)
	m.OnSotw(sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80)), t0)
	if d := m.NextDeadline(); !d.Equal(t0.Add(istioagent.DefaultIssueDelay)) {
		t.Fatalf("first deadline %v, want the agent's issue delay", d.Sub(t0))
	}
	m.OnTimer(t0.Add(istioagent.DefaultIssueDelay))
	if d := m.NextDeadline(); !d.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("deadline %v, want the secret's 2s", d.Sub(t0))
	}
	s := m.OnTimer(t0.Add(2 * time.Second))
	if len(s.Timeouts) != 1 || s.Timeouts[0] != S || m.init.phase != phaseLDS {
		t.Fatalf("timeouts %v, phase %d", s.Timeouts, m.init.phase)
	}
}
