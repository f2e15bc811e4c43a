package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/machine"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// BenchmarkMachineFullConfig is a realistic sidecar's own cost of taking a full config, with
// no transport: the responses one client received from xdslab's control plane serving the
// mesh of BenchmarkFleetHeapPerClient (1,000 services × 10 endpoints, 3.1 MB) are replayed,
// as the pieces of a fleet's shared copy, into a new codec and machine per op, which read
// them, validate and apply them, warm, and encode the requests and ACKs they answer with,
// until the machine holds its full config. The fleet's Interner and istio-agent are shared across ops and already hold every
// resource, as for every client of a fleet after the first. An op is one client; allocs and
// B/op are per client, and ns/op is the CPU that BenchmarkFleetHeapPerClient's cpu-ms/client
// spends in the codec and the machine (the rest is the transport, its system calls and the
// runtime).
func BenchmarkMachineFullConfig(b *testing.B) {
	if testing.Short() {
		b.Skip("a 1,000-service mesh: not under -short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _, err := startMeshControlPlane(ctx, *heapServices)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	agent, err := istioagent.New(istioagent.Config{})
	if err != nil {
		b.Fatal(err)
	}
	interner := machine.NewInterner()
	nack, err := policy.Nack{Realistic: true}.Compile()
	if err != nil {
		b.Fatal(err)
	}
	node := fakeenvoy.IdentityTemplate{Namespaces: 10}.Node(0)
	responses := captureFullConfig(b, srv.GRPCAddr(), node, interner, agent)
	var bytes int64
	for _, r := range responses {
		bytes += int64(len(r))
	}

	cfg := machine.Config{Node: node, InitialFetchTimeout: fakeenvoy.DefaultInitialFetchTimeout, Nack: nack,
		Interner: interner, Agent: agent}
	now := time.Now()
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		cd, err := machine.NewCodec(machine.CodecConfig{Machine: cfg, Stamps: sharedCopy{}})
		if err != nil {
			b.Fatal(err)
		}
		mcfg := cfg
		mcfg.Node = cd.Node()
		m, err := machine.New(mcfg)
		if err != nil {
			b.Fatal(err)
		}
		st := m.Start(now)
		encode(b, cd, &st)
		// Responses come a second apart; the timers due meanwhile (the agent's secrets, issued
		// after its delay) fire before each, as the client's owner fires them.
		at, full := now, st.FirstFull
		timers := func(until time.Time) {
			for d := m.NextDeadline(); !d.IsZero() && !d.After(until); d = m.NextDeadline() {
				st = m.OnTimer(d)
				encode(b, cd, &st)
				full = full || st.FirstFull
			}
		}
		for _, raw := range responses {
			at = at.Add(time.Second)
			timers(at)
			var r discoveryv3.DiscoveryResponse
			if err := cd.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &r); err != nil {
				b.Fatal(err)
			}
			if res, read := cd.LastRead(); read {
				st = m.OnSotwRead(&r, res, at)
			} else {
				st = m.OnSotw(&r, at)
			}
			if st.Info.Nacked {
				b.Fatalf("replayed %s NACKed: %s", st.Info.TypeURL, st.Info.Error)
			}
			encode(b, cd, &st)
			full = full || st.FirstFull
		}
		timers(at.Add(time.Second))
		if !full {
			b.Fatalf("%d replayed responses left the machine without a full config", len(responses))
		}
	}
	b.ReportMetric(float64(len(responses)), "responses/op")
}

// sharedCopy tells a codec that every message it reads lies in bytes nothing reuses, as
// h2client says of a message read from a fleet's shared copy (what every client of a fleet
// reads a large response from): the codec's memo keeps the first client's run in place, and
// the next client's identical bytes are found at once.
type sharedCopy struct{}

func (sharedCopy) Take(int) (time.Time, bool) { return time.Time{}, false }
func (sharedCopy) Immutable(int) bool         { return true }

// encode marshals a step's requests as the client's stream would, and frees their buffers.
func encode(b *testing.B, cd *machine.Codec, st *machine.Step) {
	for _, r := range st.Sotw {
		bs, err := cd.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		bs.Free()
	}
}

// captureFullConfig runs one realistic sidecar against the control plane at addr until it
// holds a full config, and returns the encoded responses it received, in order.
func captureFullConfig(b *testing.B, addr string, node *corev3.Node, in *machine.Interner, agent *istioagent.Agent) [][]byte {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	rec := &recordingConn{ClientConn: cc}
	full := make(chan struct{})
	c, err := fakeenvoy.NewClient(fakeenvoy.ClientConfig{Node: node, Nack: policy.Nack{Realistic: true},
		Interner: in, Agent: agent}, fullHook{full: full})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, func(context.Context) (grpc.ClientConnInterface, error) { return rec, nil })
	}()
	select {
	case <-full:
	case err := <-done:
		b.Fatalf("the capturing client stopped before a full config: %v", err)
	case <-ctx.Done():
		b.Fatal("the capturing client had no full config within a minute")
	}
	cancel()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.got
}

// fullHook closes full at the client's first full config.
type fullHook struct {
	probe.NopHooks
	full chan struct{}
}

func (h fullHook) FirstFullConfig(probe.ClientInfo, time.Time) { close(h.full) }

// recordingConn opens streams whose codec keeps a copy of every message it decodes.
type recordingConn struct {
	*grpc.ClientConn
	mu  sync.Mutex
	got [][]byte
}

func (r *recordingConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	for i, o := range opts {
		if f, ok := o.(grpc.ForceCodecV2CallOption); ok {
			opts[i] = grpc.ForceCodecV2(recordingCodec{CodecV2: f.CodecV2, r: r})
		}
	}
	return r.ClientConn.NewStream(ctx, desc, method, opts...)
}

type recordingCodec struct {
	encoding.CodecV2
	r *recordingConn
}

func (c recordingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.r.mu.Lock()
	c.r.got = append(c.r.got, data.Materialize())
	c.r.mu.Unlock()
	return c.CodecV2.Unmarshal(data, v)
}
