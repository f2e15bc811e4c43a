package machine

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
)

// cutEvery splits b into pieces of n bytes, as DATA frames of n bytes would carry it.
func cutEvery(b []byte, n int) mem.BufferSlice {
	var cuts []int
	for c := n; c < len(b); c += n {
		cuts = append(cuts, c)
	}
	return splitBuffers(b, cuts)
}

// TestPiecesRunHash: the hash of a run read in pieces is the memo's hash of the same bytes
// whole, for runs hashed whole and by sample, cut anywhere.
func TestPiecesRunHash(t *testing.T) {
	for _, n := range []int{1, 100, runWhole, runWhole + 1, 100000, 1 << 20} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 13 / 7)
		}
		for _, cut := range []int{1, 7, 4096, 16384, n} {
			if cut == 1 && n > 100000 {
				continue
			}
			p := newPieces(cutEvery(b, cut))
			// The run lies inside the message: a few bytes before and after it.
			if n > 10 {
				if got, want := p.runHash(3, n-5), runHash(b[3:n-5]); got != want {
					t.Errorf("run of %d bytes in pieces of %d: hash %x, want %x", n-8, cut, got, want)
				}
			}
			if got, want := p.runHash(0, n), runHash(b); got != want {
				t.Errorf("run of %d bytes in pieces of %d: hash %x, want %x", n, cut, got, want)
			}
			if !p.equal(0, n, b) || (n > 1 && p.equal(0, n, append(bytes.Clone(b[:n-1]), b[n-1]+1))) {
				t.Errorf("run of %d bytes in pieces of %d: equal is wrong", n, cut)
			}
		}
	}
	if runHash([]byte("abc")) != maphash.Bytes(hashSeed, []byte("abc")) {
		t.Error("a short run is not hashed whole")
	}
}

// TestCodecPiecesMemo: a response in pieces is read where its pieces lie, never gathered:
// from the memo when it keeps the run, else resource by resource, with the same items and
// fields as the same bytes read whole; resources not in one run are gathered and read whole.
func TestCodecPiecesMemo(t *testing.T) {
	in := NewInterner()
	var ms []proto.Message
	for i := range 300 {
		ms = append(ms, fetest.EDSCluster(fmt.Sprintf("outbound|80||svc-%03d.default.svc.cluster.local", i)))
	}
	wire := func(version, nonce string, ms ...proto.Message) []byte {
		b, err := proto.Marshal(sotwResp(t, C, version, nonce, ms...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gathered := &countPool{BufferPool: mem.DefaultBufferPool()}
	var held []Resources
	defer runtime.KeepAlive(&held)
	read := func(data mem.BufferSlice) (Resources, *discoveryv3.DiscoveryResponse) {
		t.Helper()
		c := &Codec{interner: in, mode: checkEnvoy, pool: gathered}
		var r discoveryv3.DiscoveryResponse
		if err := c.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		res, ok := c.LastRead()
		if !ok {
			t.Fatal("the codec did not read the resources")
		}
		held = append(held, res) // the Interner holds what clients hold (weakly)
		return res, &r
	}
	same := func(what string, got, want Resources, gr, wr *discoveryv3.DiscoveryResponse) {
		t.Helper()
		if got.run != want.run {
			t.Errorf("%s: run %p, want %p", what, got.run, want.run)
		}
		if len(got.items) != len(want.items) {
			t.Fatalf("%s: %d items, want %d", what, len(got.items), len(want.items))
		}
		for i := range got.items {
			g, w := got.items[i], want.items[i]
			if g.name != w.name || g.hit != w.hit || g.hash != w.hash || g.typeURL != w.typeURL || g.size != w.size {
				t.Fatalf("%s: item %d is %+v, want %+v", what, i, g, w)
			}
		}
		if d := cmp.Diff(wr, gr, protocmp.Transform()); d != "" {
			t.Errorf("%s: response fields differ:\n%s", what, d)
		}
	}
	b := wire("1", "n1", ms...)
	if len(b) < 2*runWhole {
		t.Fatalf("a response of %d bytes: too short to be hashed by sample", len(b))
	}
	read(mem.BufferSlice{mem.SliceBuffer(b)})
	read(mem.BufferSlice{mem.SliceBuffer(b)}) // kept now
	b2 := wire("2", "n2", ms...)              // the same run, another version and nonce
	want, wr := read(mem.BufferSlice{mem.SliceBuffer(b2)})
	if want.run == nil {
		t.Fatal("the memo does not keep the run")
	}
	for _, cut := range []int{1, 2, 3, 5, 100, 16384, len(b2) - 1} {
		gathered.gets = 0
		got, gr := read(cutEvery(b2, cut))
		same(fmt.Sprintf("pieces of %d", cut), got, want, gr, wr)
		if gathered.gets != 0 {
			t.Errorf("pieces of %d: the message was gathered to read a run the memo keeps", cut)
		}
	}
	// Not kept: another run (one cluster fewer, every resource shared already), read whole
	// and in pieces alike; the read in pieces keeps it, as a whole read would.
	b3 := wire("3", "n3", ms[1:]...)
	gathered.gets = 0
	gotMiss, gr := read(cutEvery(b3, 1000))
	if gotMiss.run != nil {
		t.Fatal("a run read for the first time came from the memo")
	}
	if gathered.gets != 0 {
		t.Error("a run the memo does not keep was gathered to be read")
	}
	wantMiss, wr3 := read(mem.BufferSlice{mem.SliceBuffer(b3)})
	if wantMiss.run == nil {
		t.Error("a run whose resources were all shared was not kept by its read in pieces")
	}
	wantMiss.run = nil
	same("a run not kept", gotMiss, wantMiss, gr, wr3)
	// Resources not in one run (a field between them) are read whole.
	split := append(wire("4", "", ms[:2]...), protowire4(4, "t")...)
	split = append(split, wire("", "", ms[2:4]...)...)
	got, _ := read(cutEvery(split, 64))
	if got.run != nil || len(got.items) != 4 {
		t.Errorf("resources in two runs: %d items, run %p; want 4, none", len(got.items), got.run)
	}
}

// TestCodecPiecesRecheck: a client reading a run resource by resource looks in the memo again
// as it goes, and stops once another client has kept the run meanwhile: when a fleet connects
// together, its clients read the same full config at about the same time.
func TestCodecPiecesRecheck(t *testing.T) {
	in := NewInterner()
	c := &Codec{interner: in, mode: checkEnvoy}
	any1 := func(num int, val []byte) []byte {
		b := protowire.AppendTag(nil, protowire.Number(num), protowire.BytesType)
		return protowire.AppendBytes(b, val)
	}
	cl, err := proto.Marshal(fetest.EDSCluster("c1"))
	if err != nil {
		t.Fatal(err)
	}
	good := append(any1(1, []byte(C)), any1(2, cl)...)
	// A run longer than recheckEvery, whose last resource readAny cannot read (an Any with a
	// third field): a read that reaches it fails.
	var run []byte
	k := 0
	for len(run) < 2*recheckEvery {
		run, k = append(run, any1(2, good)...), k+1
	}
	run, k = append(run, any1(2, append(slices.Clone(good), any1(3, []byte("x"))...))...), k+1
	p := newPieces(cutEvery(run, 16<<10))
	key := respKey{hash: p.runHash(0, len(run)), n: len(run), mode: c.mode}
	same := func(region []byte) bool { return p.equal(0, len(run), region) }
	if _, _, ok := c.readRunPieces(p, 0, len(run), k, key, same); ok {
		t.Fatal("the run was read to its end though its last resource cannot be read: the test tests nothing")
	}
	// Kept by another client meanwhile: found at the first look, the rest not read.
	items := make([]item, k)
	for i := range items {
		items[i] = item{name: "c1", hit: &decoded{name: "c1"}}
	}
	in.responses().put(key, run, items, false)
	res, e, ok := c.readRunPieces(p, 0, len(run), k, key, same)
	if !ok || e == nil || res != nil || len(e.items) != k {
		t.Fatalf("read with the run kept meanwhile: ok %v, run %p, %d items read; want the kept run", ok, e, len(res))
	}
}

// countPool counts the buffers taken from it.
type countPool struct {
	mem.BufferPool
	gets int
}

func (p *countPool) Get(n int) *[]byte {
	p.gets++
	return p.BufferPool.Get(n)
}

// protowire4 is field num as a string: a DiscoveryResponse field other than the resources.
func protowire4(num int, s string) []byte {
	return append([]byte{byte(num<<3 | 2), byte(len(s))}, s...)
}

// FuzzCodecPieces reads arbitrary bytes in pieces (cut where the first three bytes say) with a
// memo that has seen them whole twice: the read must agree with the whole read, never panic.
func FuzzCodecPieces(f *testing.F) {
	for _, r := range []*discoveryv3.DiscoveryResponse{
		sotwResp(f, E, "7", "n", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)),
		sotwResp(f, C, "1", "x", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")),
		{VersionInfo: "3", TypeUrl: "t"},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{1, 3, 40}, b...))
		f.Add(append([]byte{20, 1, 1}, b...))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 3 {
			return
		}
		b := in[3:]
		c1 := min(int(in[0]), len(b))
		c2 := min(c1+int(in[1]), len(b))
		c3 := min(c2+int(in[2]), len(b))
		it := NewInterner()
		var held []Resources
		defer runtime.KeepAlive(&held)
		read := func(data mem.BufferSlice) (Resources, bool, *discoveryv3.DiscoveryResponse, error) {
			c := &Codec{interner: it, mode: checkEnvoy}
			r := &discoveryv3.DiscoveryResponse{}
			err := c.Unmarshal(data, r)
			res, ok := c.LastRead()
			held = append(held, res) // the Interner holds what clients hold (weakly)
			return res, ok, r, err
		}
		read(mem.BufferSlice{mem.SliceBuffer(b)})
		read(mem.BufferSlice{mem.SliceBuffer(b)})
		want, wok, wr, werr := read(mem.BufferSlice{mem.SliceBuffer(b)})
		got, gok, gr, gerr := read(splitBuffers(b, []int{c1, c2, c3}))
		if (werr == nil) != (gerr == nil) || wok != gok {
			t.Fatalf("whole: read %v, %v; in pieces: read %v, %v", wok, werr, gok, gerr)
		}
		if werr != nil {
			return
		}
		if d := cmp.Diff(wr, gr, protocmp.Transform()); d != "" {
			t.Fatalf("response fields differ:\n%s", d)
		}
		if got.run != want.run || len(got.items) != len(want.items) {
			t.Fatalf("in pieces: %d items, run %p; whole: %d, %p", len(got.items), got.run, len(want.items), want.run)
		}
		for i := range got.items {
			if g, w := got.items[i], want.items[i]; g.name != w.name || g.hit != w.hit || g.hash != w.hash || g.size != w.size {
				t.Fatalf("item %d in pieces %+v, whole %+v", i, g, w)
			}
		}
	})
}
