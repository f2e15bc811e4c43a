package controlplane_test

import (
	"path/filepath"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/gen"
)

func dnsServiceEntry(addr string) string {
	return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: ext
  namespace: shop
spec:
  hosts: [ext.example.com]
  location: MESH_EXTERNAL
  resolution: DNS
  ports:
  - {number: 80, name: http, protocol: HTTP}
  endpoints:
  - {address: ` + addr + `}
`
}

// A DNS-resolution ServiceEntry's endpoints live in its STRICT_DNS cluster (CDS), not EDS: when
// they change, a connected sidecar gets a CDS response with the new address.
func TestDNSEndpointChangePushesCDS(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ext.yaml")
	writeAtomic(t, file, dnsServiceEntry("a.example.com"))
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	srv := controlplanetest.NewServer(t, opts)

	stream := openADS(t, srv.GRPCAddr(), insecure.NewCredentials())
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": "shop"})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: "sidecar~10.9.0.1~pod.shop~shop.svc.cluster.local", Metadata: md}
	// address returns the inline address of ext's cluster in a CDS response ("" if absent).
	address := func(r *discoveryv3.DiscoveryResponse) string {
		for _, a := range r.GetResources() {
			c := &clusterv3.Cluster{}
			if err := a.UnmarshalTo(c); err != nil {
				t.Fatal(err)
			}
			if c.GetName() == "outbound|80||ext.example.com" {
				if c.GetType() != clusterv3.Cluster_STRICT_DNS && c.GetType() != clusterv3.Cluster_LOGICAL_DNS {
					t.Fatalf("cluster type %v, want a DNS cluster", c.GetType())
				}
				return c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress()
			}
		}
		return ""
	}
	send := func(nonce string) {
		t.Helper()
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: gen.ClusterType, ResponseNonce: nonce}); err != nil {
			t.Fatal(err)
		}
	}
	// next waits for the CDS response that carries want as ext's address.
	next := func(want string) {
		t.Helper()
		for {
			r, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for CDS with %s: %v", want, err)
			}
			send(r.GetNonce()) // ACK
			if r.GetTypeUrl() == gen.ClusterType && address(r) == want {
				return
			}
		}
	}
	send("")
	next("a.example.com")
	writeAtomic(t, file, dnsServiceEntry("b.example.com"))
	next("b.example.com")
}
