package controlplane_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/syncbuf"
)

const clusterType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// TestServerDrain: stopping the server (SIGTERM in xdslab controlplane) sends GOAWAY and ends
// every xDS stream with the drain status, which a client sees as a clean stream end, not the
// transport error of a crash; a client that does not read and a connection that never speaks
// HTTP/2 cannot hold the stop beyond the drain timeout.
func TestServerDrain(t *testing.T) {
	for _, hung := range []bool{false, true} {
		t.Run(fmt.Sprintf("hung=%v", hung), func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			opts := controlplanetest.Options(t)
			// Long enough for the healthy client to read the pushes queued for it (several CDS
			// responses of 3,000 clusters) under -race on a loaded machine; 1s was not (the drain
			// timed out with both streams left and the healthy one saw EOF).
			opts.DrainTimeout = 3 * time.Second
			opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 0, 0
			opts.FlowControl = false // pushes do not wait for ACKs: the second one blocks on the hung client
			opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
			s := controlplanetest.NewServer(t, opts)
			<-s.Synced()
			// Enough clusters that one CDS response outgrows a non-reading client's windows.
			const services = 3000
			for i := range services {
				s.Registry().SetService(&model.Service{Hostname: fmt.Sprintf("svc-%d.ns.svc.cluster.local", i), Namespace: "ns",
					Ports: []model.Port{{Name: "http", Number: 80, Protocol: "HTTP"}}})
			}
			waitSnap(t, s, "the services", func(sn *model.Snapshot) bool { return sn.ServiceCount() == services })

			healthy := openADS(t, s.GRPCAddr(), insecure.NewCredentials())
			if err := healthy.Send(&discovery.DiscoveryRequest{Node: sdsNode("ns"), TypeUrl: clusterType}); err != nil {
				t.Fatal(err)
			}
			first, err := healthy.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if size := proto.Size(first); size < 256<<10 {
				t.Fatalf("the CDS response is %d bytes: too small to block a client that does not read", size)
			}
			if hung {
				// A client that asks and never reads, with flow-control windows that do not grow.
				cc, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
				if err != nil {
					t.Fatal(err)
				}
				defer cc.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Send(&discovery.DiscoveryRequest{Node: sdsNode("ns"), TypeUrl: clusterType}); err != nil {
					t.Fatal(err)
				}
				// And a connection that never finishes the HTTP/2 handshake.
				raw, err := net.Dial("tcp", s.GRPCAddr())
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				// One response fits the stream's write quota however large; a later push blocks:
				// push until the server's send to the hung client is blocked on flow control.
				more := 0
				eventually(t, "a send blocked on the hung client", func() bool {
					more++
					s.Registry().SetService(&model.Service{Hostname: fmt.Sprintf("more-%d.ns.svc.cluster.local", more), Namespace: "ns",
						Ports: []model.Port{{Name: "http", Number: 80, Protocol: "HTTP"}}})
					buf := make([]byte, 1<<22)
					return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*writeQuota).get")
				})
			}
			ended := make(chan error, 1)
			go func() {
				for {
					if _, err := healthy.Recv(); err != nil {
						ended <- err
						return
					}
				}
			}()
			stopped := make(chan struct{})
			go func() { s.Stop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(waitTimeout):
				t.Fatalf("Stop did not return within %v with a drain timeout of %v:\n%s", waitTimeout, opts.DrainTimeout, logs.String())
			}
			err = <-ended
			if st, _ := status.FromError(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "shutting down (drained)") {
				t.Errorf("the healthy client's stream ended with %v, want the drain status", err)
			}
			out := logs.String()
			if hung {
				if !strings.Contains(out, "drain timed out") || !strings.Contains(out, "streamsLeft=1") || !strings.Contains(out, "connsClosed=") {
					t.Errorf("no log of the timed-out drain:\n%s", out)
				}
			} else if !strings.Contains(out, "gRPC server drained") || !strings.Contains(out, "streams=1") {
				t.Errorf("no log of the drain:\n%s", out)
			}
		})
	}
}
