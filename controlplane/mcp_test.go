package controlplane_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/security"
	"github.com/xdslab/xdslab/istioconfig"
)

func mcpEntry(name string, port uint32) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Namespace: "default", Name: name},
		Spec: &networking.ServiceEntry{Hosts: []string{name + ".default.svc.cluster.local"}, Location: networking.ServiceEntry_MESH_INTERNAL,
			Resolution: networking.ServiceEntry_STATIC, Ports: []*networking.ServicePort{{Number: port, Name: "http", Protocol: "HTTP"}},
			Endpoints: []*networking.WorkloadEntry{{Address: "10.0.0.1"}}}}
}

func waitHosts(t *testing.T, srv *controlplane.Server, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := srv.WaitForSnapshot(ctx, func(s *model.Snapshot) bool {
		if s.ServiceCount() != len(want) {
			return false
		}
		for _, h := range want {
			if s.Service(h) == nil {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("snapshot never held exactly %v: %v", want, err)
	}
}

// TestControlPlaneOverMCP: a control plane serving MCP (istiod's api generator) feeds a second
// one whose only config source is xds://, over the plaintext listener and over the secure one
// with a client certificate; adds, updates and deletes reach the second.
func TestControlPlaneOverMCP(t *testing.T) {
	caDir := t.TempDir()
	up := controlplanetest.Options(t)
	up.ServeMCP = true
	up.Secure.Addr, up.Secure.CADir = "127.0.0.1:0", caDir
	upstream := controlplanetest.NewServer(t, up)
	if err := upstream.ConfigStore().Apply([]*istioconfig.Config{mcpEntry("a", 80), mcpEntry("b", 80)}, nil); err != nil {
		t.Fatal(err)
	}
	ca, err := security.LoadOrCreateCA(caDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueWorkload(security.Identity{TrustDomain: "cluster.local", Namespace: "istio-system", ServiceAccount: "xdslab"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy on the same listener is still served as a proxy (CDS), not over MCP.
	waitHosts(t, upstream, "a.default.svc.cluster.local", "b.default.svc.cluster.local")
	cc, err := grpc.NewClient(upstream.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "sidecar~10.0.0.9~p.default~default.svc.cluster.local"}, TypeUrl: gen.ClusterType}); err != nil {
		t.Fatal(err)
	}
	resp, err := ads.Recv()
	if err != nil || resp.GetTypeUrl() != gen.ClusterType || len(resp.GetResources()) == 0 {
		t.Fatalf("a proxy beside MCP: %v, %s with %d resources; want clusters", err, resp.GetTypeUrl(), len(resp.GetResources()))
	}
	for _, tc := range []struct {
		name string
		src  mcpsource.Options
	}{
		{"plaintext", mcpsource.Options{Addr: upstream.GRPCAddr()}},
		{"mTLS", mcpsource.Options{Addr: upstream.SecureGRPCAddr(), TLS: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost",
			Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := controlplanetest.Options(t)
			down.MCP = []mcpsource.Options{tc.src}
			downstream := controlplanetest.NewServer(t, down)
			select {
			case <-downstream.Synced():
			case <-time.After(waitTimeout):
				t.Fatal("downstream never synced")
			}
			waitHosts(t, downstream, "a.default.svc.cluster.local", "b.default.svc.cluster.local")
			if err := upstream.ConfigStore().Apply([]*istioconfig.Config{mcpEntry("c", 80)}, []istioconfig.Key{mcpEntry("a", 80).Key()}); err != nil {
				t.Fatal(err)
			}
			waitHosts(t, downstream, "b.default.svc.cluster.local", "c.default.svc.cluster.local")
			if err := upstream.ConfigStore().Apply([]*istioconfig.Config{mcpEntry("a", 80)}, []istioconfig.Key{mcpEntry("c", 80).Key()}); err != nil {
				t.Fatal(err)
			}
			waitHosts(t, downstream, "a.default.svc.cluster.local", "b.default.svc.cluster.local")
		})
	}
}

// TestMCPSecureListenerRefusesAnonymous: without a client certificate the secure listener
// refuses the MCP stream, and the source never syncs.
func TestMCPSecureListenerRefusesAnonymous(t *testing.T) {
	caDir := t.TempDir()
	up := controlplanetest.Options(t)
	up.ServeMCP = true
	up.Secure.Addr, up.Secure.CADir = "127.0.0.1:0", caDir
	upstream := controlplanetest.NewServer(t, up)
	ca, err := security.LoadOrCreateCA(caDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	src, err := mcpsource.New(mcpsource.Options{Addr: upstream.SecureGRPCAddr(), BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		TLS: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS13}})
	if err != nil {
		t.Fatal(err)
	}
	down := controlplanetest.Options(t)
	down.Sources = []controlplane.Source{src}
	controlplanetest.NewServer(t, down)
	deadline := time.Now().Add(waitTimeout)
	for src.Status().Disconnects < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the source was never refused")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-src.Synced():
		t.Fatal("an anonymous MCP client synced from the secure listener")
	default:
	}
	if st := src.Status(); st.Objects != 0 || st.Connected || !strings.Contains(st.LastError, "Unauthenticated") {
		t.Errorf("status %+v", st)
	}
}
