package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// ProbeTimeout bounds each probe of a target before a run (ProbeADS, ProbeMetrics).
const ProbeTimeout = 5 * time.Second

// probeAnswerWait is how long ProbeADS waits for a response once its request is sent.
const probeAnswerWait = time.Second

// ProbeResult says what a probe of an ADS target found.
type ProbeResult struct {
	// Answered: the server sent a DiscoveryResponse to the probe's CDS request.
	Answered bool
	// Silent: the stream opened on a ready HTTP/2 connection but nothing came back within the
	// probe's time (a control plane with no config for the probe's node yet); not an error.
	Silent bool
	// Refused: the server answered the stream with a gRPC status that says it serves ADS but
	// would not serve the probe (PermissionDenied, Unauthenticated, ResourceExhausted, ...).
	Refused error
}

// ProbeADS checks, before a run, that addr serves the ADS API in plaintext: it opens an
// aggregated stream and sends a CDS request for a probe node, and waits (at most timeout) for a
// response, a gRPC status, or the connection's failure. A closed port, a server that does not
// speak gRPC, or a gRPC server without ADS (Unimplemented) is an error saying what was tried and
// what came back; a stream that stays open but silent is not.
func ProbeADS(ctx context.Context, addr string, timeout time.Duration) (ProbeResult, error) {
	tried := fmt.Sprintf("probe of %s (an ADS stream, plaintext gRPC, CDS request)", addr)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A plain TCP dial first: a closed port says so at once, in words anyone recognises.
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("%s: nothing accepts TCP connections there: %w", tried, err)
	}
	c.Close()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return ProbeResult{}, fmt.Errorf("%s: %w", tried, err)
	}
	defer conn.Close()
	sctx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	stream, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx, grpc.WaitForReady(false))
	if err == nil {
		err = stream.Send(&discoverygrpc.DiscoveryRequest{
			Node:    &corev3.Node{Id: "sidecar~127.0.0.1~xdslab-probe.xdslab-probe~xdslab-probe.svc.cluster.local", Cluster: "xdslab-probe"},
			TypeUrl: resource.ClusterType,
		})
		if errors.Is(err, io.EOF) {
			// Send reports only that the stream has ended; Recv returns the status it ended
			// with (Unimplemented, Unavailable, …), which is what the probe must name.
			_, err = stream.Recv()
		}
		if err == nil {
			// The request is out on a ready connection: wait briefly for an answer (a control
			// plane with no config for the probe's node stays silent, which is not an error).
			got := make(chan error, 1)
			go func() {
				_, err := stream.Recv()
				got <- err
			}()
			wait := time.NewTimer(min(timeout, probeAnswerWait))
			defer wait.Stop()
			select {
			case err = <-got:
			case <-wait.C:
				stopStream()
				<-got
				return ProbeResult{Silent: true}, nil
			}
			if err == nil {
				return ProbeResult{Answered: true}, nil
			}
		}
	}
	if errors.Is(err, io.EOF) {
		return ProbeResult{}, fmt.Errorf("%s: the server closed the stream without a response or a status", tried)
	}
	st, _ := status.FromError(err)
	switch {
	case ctx.Err() != nil && conn.GetState() == connectivity.Ready:
		return ProbeResult{Silent: true}, nil
	case ctx.Err() != nil:
		return ProbeResult{}, fmt.Errorf("%s: no gRPC connection within %s (the server accepts TCP but does not speak HTTP/2 gRPC; connection state %s)", tried, timeout, conn.GetState())
	case st.Code() == codes.Unimplemented:
		return ProbeResult{}, fmt.Errorf("%s: a gRPC server, but it does not serve envoy.service.discovery.v3.AggregatedDiscoveryService: %s", tried, st.Message())
	case st.Code() == codes.Unavailable || st.Code() == codes.Unknown || st.Code() == codes.Internal:
		return ProbeResult{}, fmt.Errorf("%s: not a gRPC server (or not plaintext): %s: %s", tried, st.Code(), st.Message())
	default:
		// The server speaks ADS and answered with a status of its own: it is there.
		return ProbeResult{Refused: fmt.Errorf("%s: %s", st.Code(), st.Message())}, nil
	}
}

// ProbeMetrics checks, before a run, that url serves a Prometheus text exposition with at least
// one metric family, or says what came back instead.
func ProbeMetrics(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("--target-metrics %s: %w", url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("--target-metrics: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("--target-metrics: GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("--target-metrics: GET %s: %s (want 200 with Prometheus text): %s", url, resp.Status, snippet(body))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil || len(fams) == 0 {
		why := "no metric in it"
		if err != nil {
			why = err.Error()
		}
		return fmt.Errorf("--target-metrics: GET %s served no Prometheus text (Content-Type %q: %s); it began %s: pass the control plane's metrics endpoint (istiod: :15014/metrics)",
			url, resp.Header.Get("Content-Type"), why, snippet(body))
	}
	return nil
}

// snippet is the start of body on one line, quoted.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body[:min(len(body), 80)])), " ")
	return fmt.Sprintf("%q", s)
}
