package controlplane_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/procstat"
)

// The directory path's latency, measured at the control plane: a ServiceEntry file replaced the
// way the simulator's dir sink and kubectl-style tools do it (a temp file in the watched
// directory renamed over the old one), t0 when the rename returned.

// dirMesh writes services ServiceEntry files (one per file) into dir; service i has one
// endpoint whose address carries gen.
func dirMesh(tb testing.TB, dir string, services int) {
	tb.Helper()
	for i := range services {
		writeDirService(tb, dir, i, 0)
	}
}

func dirHost(i int) string { return fmt.Sprintf("svc-%03d.default.svc.cluster.local", i) }

// dirAddr is the endpoint address of service i at generation g.
func dirAddr(g int) string { return fmt.Sprintf("10.%d.%d.%d", 1+g/65536%200, g/256%256, g%256) }

// writeDirService replaces service i's file by a rename into place and returns when the rename
// returned (t0).
func writeDirService(tb testing.TB, dir string, i, g int) time.Time {
	tb.Helper()
	yaml := fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: svc-%03d
  namespace: default
spec:
  hosts: [%s]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {name: http, number: 80, protocol: HTTP}
  endpoints:
  - {address: %s}
`, i, dirHost(i), dirAddr(g))
	name := fmt.Sprintf("svc-%03d.yaml", i)
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		tb.Fatal(err)
	}
	return time.Now()
}

// pushTimes is a Pusher that hands the time of every push to whoever waits for a snapshot
// holding an address.
type pushTimes struct {
	mu   sync.Mutex
	host string
	want string
	at   chan time.Time
}

func (p *pushTimes) expect(host, addr string) {
	p.mu.Lock()
	p.host, p.want = host, addr
	p.mu.Unlock()
}

func (p *pushTimes) Push(snap *model.Snapshot, _ *model.PushRequest, _ model.ChangeReport) {
	now := time.Now()
	p.mu.Lock()
	host, want := p.host, p.want
	p.mu.Unlock()
	if want == "" {
		return
	}
	for _, ep := range snap.Endpoints(host) {
		if ep.Address == want {
			p.expect("", "")
			p.at <- now
			return
		}
	}
}

func quantileMs(ds []time.Duration, q float64) float64 {
	s := slices.Sorted(slices.Values(ds))
	return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / float64(time.Millisecond)
}

// BenchmarkDirRenameToDebounce measures a renamed file's way into the debouncer: t0 (the rename
// returned) → fsnotify → file source → config store → aggregate → debouncer → the push starts.
// With minQuiet 0 the push starts when the change reaches the debouncer, so the figure is the
// file event → config change → debounce start latency (plus building the snapshot of a
// 100-service mesh, which the Pusher sees). Reported as rename-to-debounce-p50-ms and -p99-ms.
//
//	go test -tags vtprotobuf -run '^$' -bench DirRenameToDebounce -benchtime 200x ./controlplane
func BenchmarkDirRenameToDebounce(b *testing.B) {
	const services = 100
	dir := b.TempDir()
	dirMesh(b, dir, services)
	pt := &pushTimes{at: make(chan time.Time, 1)}
	opts := controlplanetest.Options(b)
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 0, 0
	opts.Pusher = pt
	srv := controlplanetest.NewServer(b, opts)
	waitServices(b, srv, services)
	var lat []time.Duration
	g := 0
	for b.Loop() {
		g++
		i := g % services
		pt.expect(dirHost(i), dirAddr(g))
		t0 := writeDirService(b, dir, i, g)
		select {
		case at := <-pt.at:
			lat = append(lat, at.Sub(t0))
		case <-time.After(10 * time.Second):
			b.Fatalf("op %d: no push within 10s", g)
		}
	}
	b.ReportMetric(quantileMs(lat, 0.5), "rename-to-debounce-p50-ms")
	b.ReportMetric(quantileMs(lat, 0.99), "rename-to-debounce-p99-ms")
}

func waitServices(tb testing.TB, srv *controlplane.Server, n int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.WaitForSnapshot(ctx, func(s *model.Snapshot) bool { return s.ServiceCount() == n }); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkDirPathBeyondMinQuiet measures the directory path end to end at 100 services × 500
// SotW clients with minQuiet 100ms: t0 (an endpoint change renamed into place) → the last of
// the clients received the assignment holding it, minus minQuiet. Each client subscribes to the
// changed service's assignment only and ACKs every response; the clients read responses raw
// (rawCodec), so that the instrument costs little beside the fan-out it measures. Reported as
// beyond-minquiet-p50-ms and -p99-ms (of the last client), last-receive-p50-ms, cpu-ms/op (the
// process's CPU per change: control plane and clients), push-start-beyond-minquiet-p50-ms (t0
// → the snapshot was built and handed to the ADS server, minus minQuiet: the input path's
// share) and first-receive-beyond-minquiet-p50-ms (the first client's receive): the rest, up
// to the last client, is the fan-out to the clients.
//
//	go test -tags vtprotobuf -run '^$' -bench DirPathBeyondMinQuiet -benchtime 30x ./controlplane
func BenchmarkDirPathBeyondMinQuiet(b *testing.B) {
	const (
		services = 100
		clients  = 500
		minQuiet = 100 * time.Millisecond
	)
	dir := b.TempDir()
	dirMesh(b, dir, services)
	opts := controlplanetest.Options(b)
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = minQuiet, 10*time.Second
	opts.AdmissionRate = -1
	pt := &pushTimes{at: make(chan time.Time, 1)}
	opts.Pusher = pt
	srv := controlplanetest.NewServer(b, opts)
	waitServices(b, srv, services)

	cluster := gen.ClusterName(gen.Outbound, 80, "", dirHost(0))
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		want  string
		got   = map[int]time.Time{}
		done  = make(chan struct{}, 1)
		wg    sync.WaitGroup
		ready sync.WaitGroup
	)
	defer wg.Wait()
	defer cancel()
	ready.Add(clients)
	for c := range clients {
		wg.Go(func() {
			first := true
			defer func() {
				if first {
					ready.Done()
				}
			}()
			stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, adsMethod, grpc.ForceCodecV2(rawCodec{}))
			if err != nil {
				return
			}
			meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "default"})
			node := &corev3.Node{Id: fmt.Sprintf("sidecar~10.200.%d.%d~c-%d.default~default.svc.cluster.local", c/256, c%256, c), Metadata: meta}
			req := &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: gen.EndpointType, ResourceNames: []string{cluster}}
			if err := stream.SendMsg(req); err != nil {
				return
			}
			for {
				var raw []byte
				if err := stream.RecvMsg(&raw); err != nil {
					return
				}
				at := time.Now()
				resp, err := readRawResponse(raw)
				if err != nil {
					b.Errorf("client %d: %v", c, err)
					return
				}
				mu.Lock()
				w := want
				mu.Unlock()
				if w != "" && resp.holds(w) {
					mu.Lock()
					if want == w {
						if _, ok := got[c]; !ok {
							got[c] = at
							if len(got) == clients {
								done <- struct{}{}
							}
						}
					}
					mu.Unlock()
				}
				if first {
					first = false
					ready.Done()
				}
				if err := stream.SendMsg(&discoveryv3.DiscoveryRequest{TypeUrl: gen.EndpointType, ResourceNames: []string{cluster},
					VersionInfo: resp.version, ResponseNonce: resp.nonce}); err != nil {
					return
				}
			}
		})
	}
	ready.Wait()
	var beyond, last, first, pushed []time.Duration
	g := 0
	cpu0 := procstat.CPU()
	for b.Loop() {
		g++
		mu.Lock()
		want = dirAddr(g)
		clear(got)
		mu.Unlock()
		pt.expect(dirHost(0), dirAddr(g))
		t0 := writeDirService(b, dir, 0, g)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Fatalf("op %d: not every client received the change within 30s", g)
		}
		pushed = append(pushed, (<-pt.at).Sub(t0)-minQuiet)
		mu.Lock()
		var l, f time.Time
		for _, at := range got {
			if at.After(l) {
				l = at
			}
			if f.IsZero() || at.Before(f) {
				f = at
			}
		}
		want = ""
		mu.Unlock()
		last = append(last, l.Sub(t0))
		first = append(first, f.Sub(t0)-minQuiet)
		beyond = append(beyond, l.Sub(t0)-minQuiet)
		// Let the push's ACKs settle before the next change.
		time.Sleep(50 * time.Millisecond)
	}
	// The process's CPU per change (control plane and clients: the fan-out's cost, which on a
	// loaded machine the wall-clock figures mostly wait for).
	if cpu := procstat.CPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
	b.ReportMetric(quantileMs(beyond, 0.5), "beyond-minquiet-p50-ms")
	b.ReportMetric(quantileMs(beyond, 0.99), "beyond-minquiet-p99-ms")
	b.ReportMetric(quantileMs(last, 0.5), "last-receive-p50-ms")
	b.ReportMetric(quantileMs(pushed, 0.5), "push-start-beyond-minquiet-p50-ms")
	b.ReportMetric(quantileMs(first, 0.5), "first-receive-beyond-minquiet-p50-ms")
}

const adsMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"

// rawCodec hands the benchmark's clients a response's bytes undecoded (requests are marshalled
// as usual): the clients are the instrument, and decoding every response whole would spend on
// the same two cores CPU that the measured fan-out needs. readRawResponse takes out what they
// use.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

// rawResponse is what a benchmark client reads of a DiscoveryResponse: its version and nonce
// (to ACK) and its resources' serialized bytes.
type rawResponse struct {
	version, nonce string
	resources      [][]byte
}

// readRawResponse reads a DiscoveryResponse's version_info (1), resources (2: Any, whose value
// is field 2) and nonce (5) with protowire.
func readRawResponse(b []byte) (rawResponse, error) {
	var r rawResponse
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return r, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
		switch num {
		case 1:
			r.version = string(v)
		case 5:
			r.nonce = string(v)
		case 2:
			for len(v) > 0 {
				anum, atyp, an := protowire.ConsumeTag(v)
				if an < 0 {
					return r, protowire.ParseError(an)
				}
				v = v[an:]
				an = protowire.ConsumeFieldValue(anum, atyp, v)
				if an < 0 {
					return r, protowire.ParseError(an)
				}
				if anum == 2 && atyp == protowire.BytesType {
					val, _ := protowire.ConsumeBytes(v)
					r.resources = append(r.resources, val)
				}
				v = v[an:]
			}
		}
	}
	return r, nil
}

// holds reports whether one of the response's ClusterLoadAssignments carries an endpoint at
// addr: a SocketAddress's address field (2) holding exactly addr, found in the serialized
// bytes (TestRawHolds checks it against a decoded assignment).
func (r rawResponse) holds(addr string) bool {
	pat := protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), addr)
	for _, res := range r.resources {
		if bytes.Contains(res, pat) {
			return true
		}
	}
	return false
}

// TestRawHolds checks the benchmark clients' raw reading against the decoded response.
func TestRawHolds(t *testing.T) {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "outbound|80||a", Endpoints: []*endpointv3.LocalityLbEndpoints{{
		LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "10.1.0.55", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}}}}}}}}}}
	res, err := anypb.New(cla)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&discoveryv3.DiscoveryResponse{VersionInfo: "v7", Nonce: "n3", TypeUrl: gen.EndpointType, Resources: []*anypb.Any{res, res}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := readRawResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.version != "v7" || r.nonce != "n3" || len(r.resources) != 2 {
		t.Fatalf("read %q %q %d resources", r.version, r.nonce, len(r.resources))
	}
	for addr, want := range map[string]bool{"10.1.0.55": true, "10.1.0.5": false, "10.1.0.555": false, "0.1.0.55": false} {
		if got := r.holds(addr); got != want {
			t.Errorf("holds(%s) = %v, want %v", addr, got, want)
		}
	}
	if _, err := readRawResponse([]byte{0x12, 0x05, 0x01}); err == nil {
		t.Error("a truncated response was read without an error")
	}
}
