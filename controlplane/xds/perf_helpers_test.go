package xds

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/pprofcpu"
)

// The performance benchmarks (perf_bench_test.go) drive thousands of in-process ADS clients.
// The clients must cost little next to the server, so they never decode resources: a client
// codec scans only the envelope of each response (type_url, version, nonce, the count of
// resources and, for Delta, their names), and SotW requests are written from pre-encoded
// resource names. Harness goroutines carry the pprof label side=harness and the server's carry
// side=server, so a CPU profile (the benchmarks take one per measured window) splits the
// process's CPU between them; what carries neither label is the runtime (GC workers, timers).

// perfTypes is the order in which Envoy subscribes at startup: clusters, then their
// assignments, then listeners, then their routes.
var perfTypes = [...]string{gen.ClusterType, gen.EndpointType, gen.ListenerType, gen.RouteType}

// perfRoutes is what the sidecar listeners of topology() reference (one HTTP port, 8080).
var perfRoutes = []string{"8080"}

var encodedRoutes = encodeNames(perfRoutes)

func typeIndex(typeURL []byte) int {
	switch string(typeURL) {
	case gen.ClusterType:
		return 0
	case gen.EndpointType:
		return 1
	case gen.ListenerType:
		return 2
	case gen.RouteType:
		return 3
	}
	return -1
}

// leanResponse is the envelope of a SotW DiscoveryResponse or a DeltaDiscoveryResponse.
type leanResponse struct {
	// Set by the receiver before RecvMsg.
	delta    bool
	keepRaw  bool // keep a copy of the wire bytes (to replay them from the floor server)
	keepName bool // Delta: decode the names of the resources
	// want, when it holds a name, is looked for among the resources (hasWant); read while
	// the response is scanned, so a name set during a blocked receive still counts.
	want *atomic.Pointer[string]

	typ       int // index in perfTypes, -1 for any other type
	version   string
	nonce     string
	resources int
	removed   int
	names     []string
	hasWant   bool
	size      int
	raw       []byte
}

// scan reads the envelope from the wire bytes of a response, which arrive in several buffers
// (one per HTTP/2 frame or so): it walks them in place and copies only the small fields, so a
// client costs little next to the server. Field numbers: SotW version_info 1, resources 2,
// type_url 4, nonce 5; Delta system_version_info 1, resources 2 (a Resource, whose name is
// field 3), type_url 4, nonce 5, removed_resources 6.
func (r *leanResponse) scan(data mem.BufferSlice) error {
	r.typ, r.version, r.nonce, r.resources, r.removed, r.names, r.hasWant, r.size = -1, "", "", 0, 0, r.names[:0], false, data.Len()
	want := ""
	if r.want != nil {
		if p := r.want.Load(); p != nil {
			want = *p
		}
	}
	if r.keepRaw {
		r.raw = data.Materialize()
	}
	c := cursor{bufs: data}
	for !c.done() {
		tag, err := c.varint()
		if err != nil {
			return fmt.Errorf("scan response: %w", err)
		}
		num, typ := protowire.DecodeTag(tag)
		if typ != protowire.BytesType {
			if err := c.skipValue(typ); err != nil {
				return fmt.Errorf("scan response field %d: %w", num, err)
			}
			continue
		}
		l, err := c.varint()
		if err != nil {
			return fmt.Errorf("scan response field %d: %w", num, err)
		}
		n := int(l)
		switch num {
		case 1, 4, 5:
			v, err := c.take(n)
			if err != nil {
				return fmt.Errorf("scan response field %d: %w", num, err)
			}
			switch num {
			case 1:
				r.version = string(v)
			case 4:
				r.typ = typeIndex(v)
			case 5:
				r.nonce = string(v)
			}
		case 2:
			r.resources++
			switch {
			case r.delta && r.keepName:
				name, err := c.nameIn(n, 3) // Resource.name
				if err != nil {
					return fmt.Errorf("scan response resource: %w", err)
				}
				r.names = append(r.names, string(name))
				r.hasWant = r.hasWant || string(name) == want
			case want != "" && !r.hasWant:
				// Any.value (2), whose name is field 1 in Cluster, ClusterLoadAssignment,
				// Listener and RouteConfiguration.
				name, err := c.nameIn(n, 2, 1)
				if err != nil {
					return fmt.Errorf("scan response resource: %w", err)
				}
				r.hasWant = string(name) == want
			default:
				if err := c.skip(n); err != nil {
					return fmt.Errorf("scan response resource: %w", err)
				}
			}
		case 6:
			if r.delta {
				r.removed++
			}
			fallthrough
		default:
			if err := c.skip(n); err != nil {
				return fmt.Errorf("scan response field %d: %w", num, err)
			}
		}
	}
	return nil
}

// cursor reads a message that is split over buffers without joining them.
type cursor struct {
	bufs    mem.BufferSlice
	i, off  int
	pos     int // bytes consumed
	scratch []byte
}

func (c *cursor) cur() []byte {
	for c.i < len(c.bufs) {
		if b := c.bufs[c.i].ReadOnlyData(); c.off < len(b) {
			return b[c.off:]
		}
		c.i, c.off = c.i+1, 0
	}
	return nil
}

func (c *cursor) done() bool { return c.cur() == nil }

func (c *cursor) varint() (uint64, error) {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b := c.cur()
		if b == nil {
			return 0, io.ErrUnexpectedEOF
		}
		c.off++
		c.pos++
		x |= uint64(b[0]&0x7f) << shift
		if b[0] < 0x80 {
			return x, nil
		}
	}
	return 0, fmt.Errorf("varint overflow")
}

func (c *cursor) skip(n int) error {
	for n > 0 {
		b := c.cur()
		if b == nil {
			return io.ErrUnexpectedEOF
		}
		k := min(n, len(b))
		c.off, c.pos, n = c.off+k, c.pos+k, n-k
	}
	return nil
}

// take returns the next n bytes: in place when one buffer holds them, else a copy (valid
// until the next take).
func (c *cursor) take(n int) ([]byte, error) {
	if b := c.cur(); len(b) >= n {
		c.off += n
		c.pos += n
		return b[:n], nil
	}
	c.scratch = c.scratch[:0]
	for len(c.scratch) < n {
		b := c.cur()
		if b == nil {
			return nil, io.ErrUnexpectedEOF
		}
		k := min(n-len(c.scratch), len(b))
		c.scratch = append(c.scratch, b[:k]...)
		c.off += k
		c.pos += k
	}
	return c.scratch, nil
}

// nameIn walks the next n bytes as a message and returns the bytes field found by following
// path (field numbers, outermost first), consuming all n bytes; nil when there is none. The
// result is valid until the next take.
func (c *cursor) nameIn(n int, path ...protowire.Number) ([]byte, error) {
	end := c.pos + n
	var found []byte
	for c.pos < end {
		tag, err := c.varint()
		if err != nil {
			return nil, err
		}
		num, typ := protowire.DecodeTag(tag)
		if typ != protowire.BytesType {
			if err := c.skipValue(typ); err != nil {
				return nil, err
			}
			continue
		}
		l, err := c.varint()
		if err != nil {
			return nil, err
		}
		switch {
		case c.pos+int(l) > end:
			return nil, fmt.Errorf("field %d overruns its message", num)
		case num != path[0] || found != nil:
			err = c.skip(int(l))
		case len(path) == 1:
			found, err = c.take(int(l))
		default:
			found, err = c.nameIn(int(l), path[1:]...)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.pos != end {
		return nil, fmt.Errorf("a field overruns its message")
	}
	return found, nil
}

func (c *cursor) skipValue(typ protowire.Type) error {
	switch typ {
	case protowire.VarintType:
		_, err := c.varint()
		return err
	case protowire.Fixed32Type:
		return c.skip(4)
	case protowire.Fixed64Type:
		return c.skip(8)
	}
	return fmt.Errorf("unexpected wire type %d", typ)
}

// leanRequest is a SotW DiscoveryRequest written from parts: names is the pre-encoded
// resource_names (field 3, shared by every client), node the pre-marshalled Node (field 2,
// first request only).
type leanRequest struct {
	typeURL, version, nonce string
	names, node             []byte
}

func (r *leanRequest) tail() []byte {
	b := make([]byte, 0, len(r.node)+len(r.typeURL)+len(r.version)+len(r.nonce)+16)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, r.version)
	if r.node != nil {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, r.node)
	}
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendString(b, r.typeURL)
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	return protowire.AppendString(b, r.nonce)
}

// encodeNames pre-encodes resource_names (field 3 of a DiscoveryRequest).
func encodeNames(names []string) []byte {
	var b []byte
	for _, n := range names {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, n)
	}
	return b
}

// leanCodec is the harness clients' codec: leanRequest and proto messages out, leanResponse in.
type leanCodec struct{}

func (leanCodec) Name() string { return "proto" }

func (leanCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *leanRequest:
		if len(m.names) == 0 {
			return mem.BufferSlice{mem.SliceBuffer(m.tail())}, nil
		}
		return mem.BufferSlice{mem.SliceBuffer(m.names), mem.SliceBuffer(m.tail())}, nil
	case proto.Message:
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return nil, fmt.Errorf("lean codec: cannot marshal %T", v)
}

func (leanCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*leanResponse)
	if !ok {
		return fmt.Errorf("lean codec: cannot unmarshal into %T", v)
	}
	return r.scan(data)
}

// perfObserver sees every response a harness client receives, on that client's goroutine.
type perfObserver func(c *perfClient, r *leanResponse, at time.Time)

// perfClient is one harness ADS client (SotW or Delta). It subscribes like Envoy at startup
// (CDS, then EDS for every cluster, LDS, then RDS) and ACKs every response; when the fleet's
// cluster list changes it restates its EDS subscription after the next CDS response.
type perfClient struct {
	idx   int
	fleet *leanFleet
	sotw  grpc.ClientStream
	node  []byte
	// seen counts the responses received per type (the first of each drives the startup order).
	seen [len(perfTypes)]int
	// edsNames is the EDS subscription last sent (SotW: the fleet's encoded list it named).
	edsNames             *[]byte
	edsVersion, edsNonce string
	// Delta: the clusters subscribed in EDS.
	deltaEDS map[string]struct{}
}

// leanFleet is a set of harness clients spread over ClientConns.
type leanFleet struct {
	delta   bool
	observe perfObserver
	keepRaw bool
	// eds is the SotW EDS subscription (every cluster), pre-encoded; SetEDS replaces it.
	eds atomic.Pointer[[]byte]
	// want is a resource name responses are searched for (leanResponse.hasWant).
	want atomic.Pointer[string]

	conns   []*grpc.ClientConn
	clients []*perfClient
	cancel  context.CancelFunc
	closing atomic.Bool
	wg      sync.WaitGroup
	errs    chan error
}

// fleetOptions configures dialFleet.
type fleetOptions struct {
	clients        int
	streamsPerConn int
	delta          bool
	eds            []string // SotW: the clusters to watch
	observe        perfObserver
	keepRaw        bool
	// firstProxy offsets the proxies' IPs and ids (benchProxy(firstProxy+i)).
	firstProxy int
}

// dialFleet connects o.clients harness clients to addr; each sends its first request before
// dialFleet returns. Everything client-side runs under the label side=harness.
func dialFleet(tb testing.TB, addr string, o fleetOptions) *leanFleet {
	tb.Helper()
	if o.streamsPerConn == 0 {
		o.streamsPerConn = 100
	}
	f := &leanFleet{delta: o.delta, observe: o.observe, keepRaw: o.keepRaw, errs: make(chan error, 1)}
	f.SetEDS(o.eds)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	var err error
	pprof.Do(ctx, pprof.Labels("side", "harness"), func(ctx context.Context) {
		for i := range o.clients {
			if i%o.streamsPerConn == 0 {
				var cc *grpc.ClientConn
				cc, err = grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.ForceCodecV2(leanCodec{})),
					experimental.WithBufferPool(FineBufferPool()))
				if err != nil {
					return
				}
				f.conns = append(f.conns, cc)
			}
			p := benchProxy(o.firstProxy + i)
			node, merr := proto.Marshal(&corev3.Node{Id: "sidecar~" + p.IP() + "~" + p.ID + "~ns-0.svc.cluster.local"})
			if merr != nil {
				err = merr
				return
			}
			c := &perfClient{idx: i, fleet: f, node: node}
			cc := f.conns[len(f.conns)-1]
			if o.delta {
				c.sotw, err = discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(ctx)
				c.deltaEDS = make(map[string]struct{})
			} else {
				c.sotw, err = discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
			}
			if err != nil {
				return
			}
			if err = c.subscribe(0); err != nil {
				return
			}
			f.clients = append(f.clients, c)
			f.wg.Go(c.run)
		}
	})
	if err != nil {
		f.close()
		tb.Fatalf("dial harness client %d: %v", len(f.clients), err)
	}
	return f
}

// SetEDS replaces the SotW EDS subscription; clients restate it after their next CDS response.
func (f *leanFleet) SetEDS(names []string) {
	b := encodeNames(names)
	f.eds.Store(&b)
}

// close ends every client and waits for their goroutines.
func (f *leanFleet) close() {
	f.closing.Store(true)
	f.cancel()
	for _, cc := range f.conns {
		_ = cc.Close()
	}
	f.wg.Wait()
}

// err returns the first client error other than the end of the stream, if any.
func (f *leanFleet) err() error {
	select {
	case err := <-f.errs:
		return err
	default:
		return nil
	}
}

// subscribe sends the startup request of perfTypes[t].
func (c *perfClient) subscribe(t int) error {
	typeURL := perfTypes[t]
	if c.fleet.delta {
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL}
		switch t {
		case 0:
			req.Node = &corev3.Node{}
			if err := proto.Unmarshal(c.node, req.Node); err != nil {
				return err
			}
		case 3:
			req.ResourceNamesSubscribe = perfRoutes
		}
		// CDS and LDS: the wildcard (no names); EDS is subscribed from the CDS responses.
		return c.sotw.SendMsg(req)
	}
	req := &leanRequest{typeURL: typeURL}
	switch t {
	case 0:
		req.node = c.node
	case 1:
		c.edsNames = c.fleet.eds.Load()
		req.names = *c.edsNames
	case 3:
		req.names = encodedRoutes
	}
	return c.sotw.SendMsg(req)
}

func (c *perfClient) run() {
	r := &leanResponse{delta: c.fleet.delta, keepRaw: c.fleet.keepRaw, keepName: c.fleet.delta, want: &c.fleet.want}
	for {
		if err := c.sotw.RecvMsg(r); err != nil {
			if err != io.EOF && !c.fleet.closing.Load() {
				select {
				case c.fleet.errs <- fmt.Errorf("harness client %d: %w", c.idx, err):
				default:
				}
			}
			return
		}
		now := time.Now()
		if r.typ < 0 {
			continue
		}
		c.seen[r.typ]++
		if c.fleet.observe != nil {
			c.fleet.observe(c, r, now)
		}
		var err error
		if c.fleet.delta {
			err = c.answerDelta(r)
		} else {
			err = c.answerSotW(r)
		}
		if err != nil {
			return // the stream ended; RecvMsg reports why
		}
	}
}

// answerSotW ACKs r (restating the type's subscription) and, at startup, subscribes to the
// next type; after a CDS response it restates EDS when the fleet's cluster list changed.
func (c *perfClient) answerSotW(r *leanResponse) error {
	ack := &leanRequest{typeURL: perfTypes[r.typ], version: r.version, nonce: r.nonce}
	switch r.typ {
	case 1:
		ack.names = *c.edsNames
		c.edsVersion, c.edsNonce = r.version, r.nonce
	case 3:
		ack.names = encodedRoutes
	}
	if err := c.sotw.SendMsg(ack); err != nil {
		return err
	}
	switch {
	case r.typ == 0 && c.seen[0] > 1:
		if eds := c.fleet.eds.Load(); eds != c.edsNames && c.seen[1] > 0 {
			c.edsNames = eds
			return c.sotw.SendMsg(&leanRequest{typeURL: gen.EndpointType, version: c.edsVersion, nonce: c.edsNonce, names: *eds})
		}
	case r.typ < 3 && c.seen[r.typ] == 1:
		return c.subscribe(r.typ + 1)
	}
	return nil
}

// answerDelta ACKs r and subscribes EDS to the clusters a CDS response adds (at startup: all
// of them, then LDS and RDS in turn).
func (c *perfClient) answerDelta(r *leanResponse) error {
	if err := c.sotw.SendMsg(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: perfTypes[r.typ], ResponseNonce: r.nonce}); err != nil {
		return err
	}
	switch {
	case r.typ == 0:
		var add []string
		for _, n := range r.names {
			if _, ok := c.deltaEDS[n]; !ok && isOutbound(n) {
				c.deltaEDS[n] = struct{}{}
				add = append(add, n)
			}
		}
		if len(add) > 0 {
			return c.sotw.SendMsg(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: gen.EndpointType, ResourceNamesSubscribe: add})
		}
	case r.typ < 3 && c.seen[r.typ] == 1:
		return c.subscribe(r.typ + 1)
	}
	return nil
}

// isOutbound reports whether a cluster is an EDS cluster of the mesh (Envoy subscribes to the
// assignments of EDS clusters only).
func isOutbound(cluster string) bool {
	p, err := gen.ParseClusterName(cluster)
	return err == nil && p.Direction == gen.Outbound
}

// perfServer is an ADS server on 127.0.0.1:0 whose goroutines carry the label side=server.
type perfServer struct {
	*Server
	addr    string
	metrics *perfMetrics
	stop    func()
	seq     uint64
}

func startPerfServer(tb testing.TB, opts Options) *perfServer {
	tb.Helper()
	m := &perfMetrics{}
	opts.Metrics = m
	s, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	g := grpc.NewServer(ServerOptions()...)
	s.Register(g)
	ps := &perfServer{Server: s, metrics: m}
	ps.addr, ps.stop = serveLabelled(tb, g, s.Run)
	return ps
}

// serveLabelled serves g on 127.0.0.1:0 (and runs run, when not nil) under side=server until
// the returned stop is called.
func serveLabelled(tb testing.TB, g *grpc.Server, run func(context.Context)) (string, func()) {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	pprof.Do(ctx, pprof.Labels("side", "server"), func(ctx context.Context) {
		wg.Go(func() { _ = g.Serve(lis) })
		if run != nil {
			wg.Go(func() { run(ctx) })
		}
	})
	return lis.Addr().String(), func() { cancel(); g.Stop(); wg.Wait() }
}

// snapshot builds the next snapshot of in.
func (ps *perfServer) snapshot(in model.SnapshotInput) *model.Snapshot {
	ps.seq++
	return model.NewSnapshot(ps.seq, in)
}

// publish pushes snap from a goroutine labelled side=server, as the debouncer's would be.
func (ps *perfServer) publish(snap *model.Snapshot, req *model.PushRequest) {
	pprof.Do(context.Background(), pprof.Labels("side", "server"), func(context.Context) { ps.Push(snap, req) })
}

// quiesce waits (untimed, bounded) until the server has nothing queued and its response and
// ACK counters have not moved for 20 ms, so that a measurement starts from a quiet server.
func (ps *perfServer) quiesce(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last, stable := ps.metrics.activity(), time.Now()
	for time.Since(stable) < 20*time.Millisecond || ps.queue.Len() > 0 || ps.queue.Processing() > 0 {
		if time.Now().After(deadline) {
			tb.Fatal("the server did not quiesce within 60s")
		}
		time.Sleep(2 * time.Millisecond)
		if a := ps.metrics.activity(); a != last {
			last, stable = a, time.Now()
		}
	}
}

// perfMetrics counts what quiesce watches.
type perfMetrics struct {
	NopMetrics
	sent, answered atomic.Int64
}

func (m *perfMetrics) ResponseSent(string, int, time.Duration) { m.sent.Add(1) }
func (m *perfMetrics) Acked(string, time.Duration)             { m.answered.Add(1) }
func (m *perfMetrics) ExpiredNonce(string)                     { m.answered.Add(1) }
func (m *perfMetrics) activity() int64                         { return m.sent.Load()<<32 + m.answered.Load() }

// floorServer is the wire floor: an ADS server that answers the first request of each type on a
// stream with a fixed, pre-marshalled DiscoveryResponse and ignores everything else.
type floorServer struct {
	discoverygrpc.UnimplementedAggregatedDiscoveryServiceServer
	blobs [len(perfTypes)][]byte
}

// rawMsg is a message in wire form: a request's type (decoded by floorCodec) or a response's
// bytes.
type rawMsg struct {
	typ int
	b   []byte
}

func (f *floorServer) StreamAggregatedResources(stream discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	var sent [len(perfTypes)]bool
	for {
		var req rawMsg
		if err := stream.RecvMsg(&req); err != nil {
			return nil
		}
		if req.typ < 0 || sent[req.typ] {
			continue
		}
		sent[req.typ] = true
		if err := stream.SendMsg(&rawMsg{b: f.blobs[req.typ]}); err != nil {
			return err
		}
	}
}

// floorCodec passes responses through and reads only type_url (field 4) of requests.
type floorCodec struct{}

func (floorCodec) Name() string { return "proto" }

func (floorCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*rawMsg)
	if !ok {
		return nil, fmt.Errorf("floor codec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
}

func (floorCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMsg)
	if !ok {
		return fmt.Errorf("floor codec: cannot unmarshal into %T", v)
	}
	b := data.Materialize()
	m.typ = -1
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		k := protowire.ConsumeFieldValue(num, typ, b[n:])
		if k < 0 {
			return protowire.ParseError(k)
		}
		if num == 4 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			m.typ = typeIndex(v)
		}
		b = b[n+k:]
	}
	return nil
}

// startFloor serves blobs with the ADS server's own gRPC options (buffer pool, stream limits),
// only the codec differs.
func startFloor(tb testing.TB, blobs [len(perfTypes)][]byte) (addr string, stop func()) {
	tb.Helper()
	g := grpc.NewServer(append(ServerOptions(), grpc.ForceServerCodecV2(floorCodec{}))...)
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, &floorServer{blobs: blobs})
	return serveLabelled(tb, g, nil)
}

// arrivals records one time per client and signals when every client has one.
type arrivals struct {
	start time.Time
	at    []time.Duration // since start; written once by each client's goroutine
	got   []bool
	left  atomic.Int64
	done  chan struct{}
}

func newArrivals(n int) *arrivals {
	a := &arrivals{at: make([]time.Duration, n), got: make([]bool, n), done: make(chan struct{})}
	a.left.Store(int64(n))
	return a
}

// mark records client i's arrival (only its first); call it from the client's goroutine.
func (a *arrivals) mark(i int, now time.Time) {
	if a.got[i] {
		return
	}
	a.got[i], a.at[i] = true, now.Sub(a.start)
	if a.left.Add(-1) == 0 {
		close(a.done)
	}
}

// wait blocks until every client arrived (a hang fails after limit: not a timing assertion).
func (a *arrivals) wait(tb testing.TB, f *leanFleet, limit time.Duration) {
	tb.Helper()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-a.done:
	case <-t.C:
		tb.Fatalf("%d of %d clients did not arrive within %v (client error: %v)", a.left.Load(), len(a.at), limit, f.err())
	}
}

// last and quantile are over the clients' arrival times.
func (a *arrivals) last() time.Duration { return slices.Max(a.at) }

func (a *arrivals) quantile(q float64) time.Duration {
	s := slices.Clone(a.at)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// cpuSplit divides the process's CPU time in a window between the server (side=server), the
// harness (side=harness) and the rest (the runtime's GC workers and timers), from a CPU profile
// of the window. The split is unavailable when a profile is already running (go test
// -cpuprofile); the totals are then still measured.
type cpuSplit struct {
	total, server, harness, other time.Duration // accumulated over windows
	split                         bool
	buf                           bytes.Buffer
	profiling                     bool
	cpu0                          time.Duration
}

func (s *cpuSplit) start() {
	s.buf.Reset()
	s.profiling = pprof.StartCPUProfile(&s.buf) == nil
	s.cpu0 = cpuTime()
}

// stop ends the window; call it right after the measured work.
func (s *cpuSplit) stop(tb testing.TB) {
	total := cpuTime() - s.cpu0
	s.total += total
	if !s.profiling {
		return
	}
	pprof.StopCPUProfile()
	bySide, err := pprofcpu.ByLabel(s.buf.Bytes(), "side")
	if err != nil {
		tb.Fatalf("read CPU profile: %v", err)
	}
	srv, har := bySide["server"], bySide["harness"]
	var oth time.Duration
	for side, d := range bySide {
		if side != "server" && side != "harness" {
			oth += d
		}
	}
	sum := srv + har + oth
	if sum == 0 {
		return
	}
	s.split = true
	s.server += time.Duration(float64(total) * float64(srv) / float64(sum))
	s.harness += time.Duration(float64(total) * float64(har) / float64(sum))
	s.other += time.Duration(float64(total) * float64(oth) / float64(sum))
}

// report adds cpu-µs/client and, when split, server-, harness- and runtime-cpu-µs/client, per
// client and iteration.
func (s *cpuSplit) report(b *testing.B, prefix string, clients int) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) / float64(clients) }
	b.ReportMetric(per(s.total), prefix+"cpu-µs/client")
	if s.split {
		b.ReportMetric(per(s.server), prefix+"server-cpu-µs/client")
		b.ReportMetric(per(s.harness), prefix+"harness-cpu-µs/client")
		b.ReportMetric(per(s.other), prefix+"runtime-cpu-µs/client")
	}
}

// meshClusters names the outbound clusters of topology's services (port 8080).
func meshClusters(svcs []*model.Service) []string {
	out := make([]string, 0, len(svcs))
	for _, svc := range svcs {
		out = append(out, gen.ClusterName(gen.Outbound, 8080, "", svc.Hostname))
	}
	return out
}
