package xds

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
)

// fakeSecrets authenticates every stream as one identity and serves a new certificate
// generation after each rotate.
type fakeSecrets struct {
	id  string
	mu  sync.Mutex
	gen int
}

func (f *fakeSecrets) Identity(context.Context) (string, bool) { return f.id, true }

func (f *fakeSecrets) Material(identity string, _ time.Time) (gen.SDSMaterial, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return gen.SDSMaterial{CertChainPEM: fmt.Appendf(nil, "cert %s %d", identity, f.gen), PrivateKeyPEM: []byte("key"), RootCAPEM: []byte("root")}, nil
}

func (f *fakeSecrets) rotate() {
	f.mu.Lock()
	f.gen++
	f.mu.Unlock()
}

func secretChain(t *testing.T, b []byte) string {
	t.Helper()
	s := &tlsv3.Secret{}
	if err := proto.Unmarshal(b, s); err != nil {
		t.Fatal(err)
	}
	return string(s.GetTlsCertificate().GetCertificateChain().GetInlineBytes())
}

// TestSecretsServedAndPushed: the stream's identity comes from Secrets (not the node); its
// secrets never enter the shared cache; PushSecrets of another identity sends nothing, of its
// own sends only the changed secret.
func TestSecretsServedAndPushed(t *testing.T) {
	sec := &fakeSecrets{id: "spiffe://cluster.local/ns/a/sa/x"}
	c := cache.New(nil)
	opts := DefaultOptions(2)
	opts.Secrets, opts.Cache = sec, c
	ts := startServer(t, opts)
	ts.push(topology(1, 1), true)
	cl := dial(t, ts.addr, sidecarNode(t, "10.9.0.1", "a", ""))
	cl.send(gen.SecretType, "", "", []string{gen.SecretDefault, gen.SecretRootCA}, "")
	r := cl.recv()
	if len(r.Resources) != 2 {
		t.Fatalf("SDS response with %d secrets, want 2", len(r.Resources))
	}
	if got := secretChain(t, r.Resources[1].Value); got != "cert "+sec.id+" 0" {
		t.Fatalf("default secret %q", got)
	}
	if st := c.Stats(); st.Entries != 0 {
		t.Fatalf("cache after SDS: %+v, want no entries", st)
	}
	cl.ack(r)
	ts.PushSecrets([]string{"spiffe://cluster.local/ns/b/sa/x"})
	ts.settle(t)
	cl.barrier()
	sec.rotate()
	ts.PushSecrets([]string{sec.id})
	r = cl.recv()
	if r.TypeUrl != gen.SecretType || len(r.Resources) != 1 || secretChain(t, r.Resources[0].Value) != "cert "+sec.id+" 1" {
		t.Fatalf("rotation push: type %s, %d resources", r.TypeUrl, len(r.Resources))
	}
	if c.Stats().Entries != 0 {
		t.Fatal("a secret entered the shared cache")
	}
}
