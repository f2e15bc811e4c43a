package istioagent

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/xdslab/xdslab/internal/pki"
)

// Defaults of Config.
const (
	DefaultIssueDelay  = 5 * time.Millisecond
	DefaultTrustDomain = "cluster.local"
	DefaultCertTTL     = 24 * time.Hour
	// SDSCluster is the bootstrap cluster of the istio-agent's SDS server.
	SDSCluster = "sds-grpc"
	// XDSCluster is the bootstrap cluster of the control plane; a secret on an API config
	// source naming it is asked over ADS.
	XDSCluster = "xds-grpc"
)

// The secrets the istio-agent serves by name: the workload certificate, the mesh root, and
// certificates mounted as files ("file-cert:CERT~KEY", "file-root:CA").
const (
	SecretWorkload     = "default"
	SecretRoot         = "ROOTCA"
	fileCertPrefix     = "file-cert:"
	fileRootPrefix     = "file-root:"
	fileCertKeySeparer = "~"
	// SecretSystemRoot is the root istiod names for a DestinationRule's SIMPLE or MUTUAL TLS
	// without caCertificates: the agent serves the operating system's CA bundle under it.
	SecretSystemRoot = fileRootPrefix + "system"
)

// DefaultOSRoots returns where the agent looks for the operating system's CA bundle, the
// first that reads: Debian and Ubuntu, Fedora and RHEL, openSUSE, Alpine, RHEL 7 and later.
func DefaultOSRoots() []string {
	return []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem",
		"/etc/ssl/cert.pem",
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	}
}

// Config configures the emulated istio-agent. Zero values take the defaults.
type Config struct {
	// IssueDelay is how long the agent takes to serve a client's first request for a secret
	// (the agent signs a CSR with its CA); default 5ms. Negative: at once.
	IssueDelay time.Duration
	// TrustDomain of the SPIFFE identities; default cluster.local.
	TrustDomain string
	// CertTTL is the workload certificates' lifetime; default 24h.
	CertTTL time.Duration
	// Clusters are the bootstrap clusters that are the agent's SDS server; default sds-grpc.
	Clusters []string
	// ReadFile reads file-based secrets; nil means os.ReadFile.
	ReadFile func(path string) ([]byte, error)
	// OSRoots are the paths tried, in order, for the operating system's CA bundle
	// (SecretSystemRoot); default DefaultOSRoots().
	OSRoots []string
	// Now is the clock certificates are dated from; nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.IssueDelay == 0 {
		c.IssueDelay = DefaultIssueDelay
	}
	if c.IssueDelay < 0 {
		c.IssueDelay = 0
	}
	if c.TrustDomain == "" {
		c.TrustDomain = DefaultTrustDomain
	}
	if c.CertTTL <= 0 {
		c.CertTTL = DefaultCertTTL
	}
	if len(c.Clusters) == 0 {
		c.Clusters = []string{SDSCluster}
	}
	if c.ReadFile == nil {
		c.ReadFile = os.ReadFile
	}
	if len(c.OSRoots) == 0 {
		c.OSRoots = DefaultOSRoots()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Agent is the emulated istio-agent shared by a fleet's clients: one lab CA, one workload
// certificate per identity (namespace and service account), shared by the clients of that
// identity and issued again once half its lifetime has passed, as istio-agent rotates. It is
// safe for concurrent use.
type Agent struct {
	cfg   Config
	ca    *pki.CA
	certs *certCache
}

// certCache holds the workload certificate issued for each identity. Signing one costs more
// than a client's whole share of a small push (a P-256 key and a signature, 0.1–1 ms), and a
// fleet's clients are replicas of a few dozen workloads: a certificate per client made the
// emulated agent a tenth of the fleet's CPU while it took its full config.
type certCache struct {
	mu sync.Mutex
	m  map[Workload]*issued
}

// issued is one identity's certificate: ready is closed once secret and err are set; renewAt
// is set before the entry is shared.
type issued struct {
	ready   chan struct{}
	secret  *tlsv3.Secret
	err     error
	renewAt time.Time
}

// New creates the lab CA (a self-signed ECDSA P-256 root, in memory) and the agent around
// it.
func New(cfg Config) (*Agent, error) {
	cfg = cfg.withDefaults()
	ca, err := pki.NewCA(cfg.Now())
	if err != nil {
		return nil, fmt.Errorf("fakeenvoy: agent CA: %w", err)
	}
	return &Agent{cfg: cfg, ca: ca, certs: &certCache{m: make(map[Workload]*issued)}}, nil
}

// WithIssueDelay returns an agent with the same CA and certificates that takes d to serve a
// first request (negative: at once).
func (a *Agent) WithIssueDelay(d time.Duration) *Agent {
	b := &Agent{cfg: a.cfg, ca: a.ca, certs: a.certs}
	b.cfg.IssueDelay = max(d, 0)
	return b
}

// RootPEM is the lab CA's certificate, PEM-encoded.
func (a *Agent) RootPEM() string { return string(a.ca.CertPEM()) }

// SPIFFEID is the identity the agent certifies for a workload.
func (a *Agent) SPIFFEID(namespace, serviceAccount string) string {
	return pki.Identity{TrustDomain: a.cfg.TrustDomain, Namespace: namespace, ServiceAccount: serviceAccount}.String()
}

// Serves reports whether cluster is one of the agent's SDS server clusters.
func (a *Agent) Serves(cluster string) bool { return slices.Contains(a.cfg.Clusters, cluster) }

// Clusters are the bootstrap clusters of the agent's SDS server.
func (a *Agent) Clusters() []string { return a.cfg.Clusters }

// Workload identifies the client the agent serves: its namespace and service account
// (WorkloadOf reads them from a node).
type Workload struct {
	namespace      string
	serviceAccount string
}

// WorkloadOf reads the namespace and service account of a node (Istio's NAMESPACE and
// SERVICE_ACCOUNT metadata; "default" when absent).
func WorkloadOf(n *corev3.Node) Workload {
	f := n.GetMetadata().GetFields()
	w := Workload{namespace: f["NAMESPACE"].GetStringValue(), serviceAccount: f["SERVICE_ACCOUNT"].GetStringValue()}
	if w.namespace == "" {
		w.namespace = "default"
	}
	if w.serviceAccount == "" {
		w.serviceAccount = "default"
	}
	return w
}

// errUnservable marks a secret the agent can never serve (an unknown name): the client's
// resource waits for it until its initial_fetch_timeout, as Envoy does.
var errUnservable = errors.New("the istio-agent serves default, ROOTCA, file-root:system, file-cert:CERT~KEY and file-root:CA only")

// Serve returns the secret name on one of the agent's clusters for workload w, and how long
// the agent takes to serve it.
func (a *Agent) Serve(w Workload, name string) (*tlsv3.Secret, time.Duration, error) {
	switch {
	case name == SecretWorkload:
		s, err := a.workloadSecret(w)
		return s, a.cfg.IssueDelay, err
	case name == SecretRoot:
		return rootSecret(name, a.RootPEM()), a.cfg.IssueDelay, nil
	case name == SecretSystemRoot:
		return a.systemRoot()
	case strings.HasPrefix(name, fileRootPrefix):
		if strings.Contains(name, fileCertKeySeparer) {
			return nil, 0, fmt.Errorf("want file-root:CA (no %s)", fileCertKeySeparer)
		}
		b, err := a.cfg.ReadFile(strings.TrimPrefix(name, fileRootPrefix))
		if err != nil {
			return nil, 0, err
		}
		if _, err := parseCertPEM(b); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", strings.TrimPrefix(name, fileRootPrefix), err)
		}
		return rootSecret(name, string(b)), 0, nil
	case strings.HasPrefix(name, fileCertPrefix):
		// The agent splits the name at every separator and wants exactly two paths.
		paths := strings.Split(strings.TrimPrefix(name, fileCertPrefix), fileCertKeySeparer)
		if len(paths) != 2 {
			return nil, 0, fmt.Errorf("want file-cert:CERT%sKEY (one %s)", fileCertKeySeparer, fileCertKeySeparer)
		}
		certPath, keyPath := paths[0], paths[1]
		cert, err := a.cfg.ReadFile(certPath)
		if err != nil {
			return nil, 0, err
		}
		key, err := a.cfg.ReadFile(keyPath)
		if err != nil {
			return nil, 0, err
		}
		if _, err := parseCertPEM(cert); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", certPath, err)
		}
		// The agent serves the pair only once it loads as one: a key that is no PEM private
		// key, or not the certificate's, is refused.
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return nil, 0, fmt.Errorf("%s with key %s: %w", certPath, keyPath, err)
		}
		return certSecret(name, string(cert), string(key)), 0, nil
	}
	return nil, 0, errUnservable
}

// systemRoot serves SecretSystemRoot: the first of the operating system's CA bundles that
// reads, as istio-agent does; none is an error (the agent has nothing to serve).
func (a *Agent) systemRoot() (*tlsv3.Secret, time.Duration, error) {
	for _, p := range a.cfg.OSRoots {
		b, err := a.cfg.ReadFile(p)
		if err != nil {
			continue
		}
		if _, err := parseCertPEM(b); err != nil {
			return nil, 0, fmt.Errorf("%s (the operating system's CA bundle): %w", p, err)
		}
		return rootSecret(SecretSystemRoot, string(b)), 0, nil
	}
	return nil, 0, fmt.Errorf("no operating system CA bundle to serve as %s (tried %s)", SecretSystemRoot, strings.Join(a.cfg.OSRoots, ", "))
}

// workloadSecret returns w's workload certificate: the one issued for its identity while less
// than half its lifetime has passed, else a new one. Clients asking for the same identity at
// once wait for one signature. The secret is shared: read-only.
func (a *Agent) workloadSecret(w Workload) (*tlsv3.Secret, error) {
	now := a.cfg.Now()
	c := a.certs
	c.mu.Lock()
	e, ok := c.m[w]
	if !ok || !now.Before(e.renewAt) {
		e = &issued{ready: make(chan struct{}), renewAt: now.Add(a.cfg.CertTTL / 2)}
		c.m[w] = e
		c.mu.Unlock()
		e.secret, e.err = a.issue(w, now)
		if e.err != nil { // not kept: the next client tries again
			c.mu.Lock()
			if c.m[w] == e {
				delete(c.m, w)
			}
			c.mu.Unlock()
		}
		close(e.ready)
		return e.secret, e.err
	}
	c.mu.Unlock()
	<-e.ready
	return e.secret, e.err
}

// issue signs a new workload certificate for w: SPIFFE URI SAN, serverAuth and clientAuth
// (it serves both as a client certificate and as the inbound listener's server certificate).
func (a *Agent) issue(w Workload, now time.Time) (*tlsv3.Secret, error) {
	id, err := url.Parse(a.SPIFFEID(w.namespace, w.serviceAccount))
	if err != nil {
		return nil, fmt.Errorf("workload identity: %w", err)
	}
	c, err := a.ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{Organization: []string{a.cfg.TrustDomain}},
		URIs:        []*url.URL{id},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, now, a.cfg.CertTTL)
	if err != nil {
		return nil, fmt.Errorf("sign workload certificate: %w", err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
	return certSecret(SecretWorkload, string(certPEM), string(keyPEM)), nil
}

func certSecret(name, cert, key string) *tlsv3.Secret {
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: cert}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: key}},
	}}}
}

func rootSecret(name, ca string) *tlsv3.Secret {
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: ca}},
	}}}
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}

// FileSecret reads secret name from the file of a path config source: a DiscoveryResponse
// holding Secret resources, in YAML or JSON, as Envoy reads it.
func (a *Agent) FileSecret(path, name string) (*tlsv3.Secret, error) {
	b, err := a.cfg.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return secretFromFile(b, name)
}

// secretFromFile finds secret name in the DiscoveryResponse (YAML or JSON) b.
func secretFromFile(b []byte, name string) (*tlsv3.Secret, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var r discoveryv3.DiscoveryResponse
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(j, &r); err != nil {
		return nil, fmt.Errorf("not a DiscoveryResponse: %w", err)
	}
	for i, res := range r.GetResources() {
		s := &tlsv3.Secret{}
		if err := res.UnmarshalTo(s); err != nil {
			return nil, fmt.Errorf("resource %d: %w", i, err)
		}
		if s.GetName() == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("holds no secret %q", name)
}
