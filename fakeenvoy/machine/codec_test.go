package machine

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// TestCodecNode checks that a request carrying the codec's stand-in node decodes exactly as
// the plain encoding of the same request with the client's real node, that other requests are
// encoded as they are, and that Marshal leaves the request unchanged.
func TestCodecNode(t *testing.T) {
	node := fetest.Node("ns-1", 7)
	node.Metadata.Fields["LABELS"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"app": structpb.NewStringValue("a"), "v": structpb.NewStringValue("1")}})
	other := fetest.Node("default", 8)
	errDetail := &status.Status{Code: 13, Message: "bad"}
	c, err := newCodec(node, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.node == node || c.node.GetId() != node.GetId() {
		t.Fatalf("stand-in %v, want a new node with id %s", c.node, node.GetId())
	}
	for _, tc := range []struct {
		name      string
		req, want proto.Message
	}{
		{"SotW with the node",
			&discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: E, VersionInfo: "3", ResponseNonce: "n", ResourceNames: []string{"a", "b"}},
			&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: E, VersionInfo: "3", ResponseNonce: "n", ResourceNames: []string{"a", "b"}}},
		{"SotW NACK with the node",
			&discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: C, ResponseNonce: "n", ErrorDetail: errDetail},
			&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: C, ResponseNonce: "n", ErrorDetail: errDetail}},
		{"SotW without node", &discoveryv3.DiscoveryRequest{TypeUrl: C, VersionInfo: "1"}, nil},
		{"SotW with another node", &discoveryv3.DiscoveryRequest{Node: other, TypeUrl: C}, nil},
		{"Delta with the node",
			&discoveryv3.DeltaDiscoveryRequest{Node: c.node, TypeUrl: E, ResourceNamesSubscribe: []string{"a"}, InitialResourceVersions: map[string]string{"a": "1"}},
			&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: E, ResourceNamesSubscribe: []string{"a"}, InitialResourceVersions: map[string]string{"a": "1"}}},
		{"Delta without node", &discoveryv3.DeltaDiscoveryRequest{TypeUrl: L, ResponseNonce: "x"}, nil},
		{"not a request", &corev3.Node{Id: "x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.req)
			want := tc.want
			if want == nil {
				want = before
			}
			out, err := c.Marshal(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got := tc.req.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(out.Materialize(), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.req, protocmp.Transform()); diff != "" {
				t.Errorf("Marshal changed the request (-before +after):\n%s", diff)
			}
		})
	}
}

// TestCodecRoundTrip checks that a SotW response decodes, in one buffer or several, into the
// response without its resources plus the resources as the codec read them (type, name, hash,
// size, a copy of the bytes), and that nothing it returns aliases the received buffers.
func TestCodecRoundTrip(t *testing.T) {
	want := sotwResp(t, E, "7", "n", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80))
	want.ControlPlane = &corev3.ControlPlane{Identifier: "cp"}
	out, err := (&Codec{}).Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b := out.Materialize()
	wantRest := proto.CloneOf(want)
	wantRest.Resources = nil
	for _, tc := range []struct {
		name  string
		split []int // cut points: the message arrives in several buffers
	}{
		{name: "one buffer"},
		{name: "two buffers", split: []int{len(b) / 2}},
		{name: "every few bytes", split: []int{1, 5, 17, 40, len(b) - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := splitBuffers(b, tc.split)
			c := &Codec{}
			got := &discoveryv3.DiscoveryResponse{}
			if err := c.Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
			read0, read := c.LastRead()
			res := read0.items
			// The decoded message must not alias the received buffers (gRPC recycles them).
			for _, buf := range data {
				clear(buf.ReadOnlyData())
			}
			if !read {
				t.Fatal("the codec did not read the resources itself")
			}
			if diff := cmp.Diff(wantRest, got, protocmp.Transform()); diff != "" {
				t.Errorf("response without resources (-want +got):\n%s", diff)
			}
			if len(res) != len(want.Resources) {
				t.Fatalf("%d resources read, want %d", len(res), len(want.Resources))
			}
			for i, a := range want.Resources {
				w := res[i]
				name, _ := readName(a.GetValue())
				if w.typeURL != a.GetTypeUrl() || w.name != name || !w.nameOK || w.size != len(a.GetValue()) ||
					!bytes.Equal(w.raw, a.GetValue()) || !w.hashed || w.hash != maphash.Bytes(hashSeed, a.GetValue()) || w.hit != nil {
					t.Errorf("resource %d read as %+v, want type %s, name %s, %d bytes equal to the Any's", i, w, a.GetTypeUrl(), name, len(a.GetValue()))
				}
			}
			if _, again := c.LastRead(); again {
				t.Errorf("LastRead did not clear")
			}
		})
	}
}

func splitBuffers(b []byte, cuts []int) mem.BufferSlice {
	var data mem.BufferSlice
	prev := 0
	for _, cut := range append(cuts, len(b)) {
		data = append(data, mem.SliceBuffer(append([]byte(nil), b[prev:cut]...)))
		prev = cut
	}
	return data
}

// TestCodecInterned checks that a resource the interner holds (same type, mode and bytes) is
// handed over as the shared decoded resource without a copy of its bytes, and that one decoded
// under another validation mode is not; a resource nobody decoded yet is decoded and shared by
// the read itself, so that the next client's read finds it.
func TestCodecInterned(t *testing.T) {
	in := NewInterner()
	resp := sotwResp(t, C, "1", "n", fetest.EDSCluster("c1"), fetest.EDSCluster("c2"))
	raw := resp.Resources[0].GetValue()
	d, err := in.decode(tCDS, checkEnvoy, maphash.Bytes(hashSeed, raw), "c1", raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mode checkMode
		hit  bool
	}{
		{"same mode", checkEnvoy, true},
		{"other mode", checkNone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Codec{interner: in, mode: tc.mode}
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &discoveryv3.DiscoveryResponse{}); err != nil {
				t.Fatal(err)
			}
			read, _ := c.LastRead()
			res := read.items
			if len(res) != 2 {
				t.Fatalf("%d resources read, want 2", len(res))
			}
			if got := res[0].hit == d && res[0].raw == nil && res[0].name == "c1"; got != tc.hit {
				t.Errorf("c1 read as %+v: shared = %v, want %v", res[0], got, tc.hit)
			}
			if res[1].hit == nil || res[1].name != "c2" || res[1].raw != nil {
				t.Errorf("c2 (not interned) read as %+v, want it decoded and shared", res[1])
			}
			again := &Codec{interner: in, mode: tc.mode}
			if err := again.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &discoveryv3.DiscoveryResponse{}); err != nil {
				t.Fatal(err)
			}
			next, _ := again.LastRead()
			if next.items[1].hit != res[1].hit {
				t.Errorf("the next client's read of c2 did not find the first's decoded copy")
			}
		})
	}
	runtime.KeepAlive(d)
}

// TestCodecInvalidNotShared: a resource that fails the client's validation is not shared by
// the read; its bytes go to the machine, which rejects it.
func TestCodecInvalidNotShared(t *testing.T) {
	in := NewInterner()
	bad := fetest.EDSCluster("bad")
	bad.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "static"}}}})
	b, err := proto.Marshal(sotwResp(t, C, "1", "n", fetest.EDSCluster("c1"), bad))
	if err != nil {
		t.Fatal(err)
	}
	c := &Codec{interner: in, mode: checkEnvoy}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &discoveryv3.DiscoveryResponse{}); err != nil {
		t.Fatal(err)
	}
	read, _ := c.LastRead()
	if it := read.items[1]; it.hit != nil || it.raw == nil || it.name != "bad" {
		t.Errorf("invalid resource read as %+v, want its own bytes", it)
	}
	if n := in.Len(); n != 1 {
		t.Errorf("interner holds %d resources, want c1 only", n)
	}
	in.resp.mu.Lock()
	defer in.resp.mu.Unlock()
	if n := len(in.resp.m); n != 0 {
		t.Errorf("memo holds %d runs, want none: a resource was not shared", n)
	}
}

// TestCodecFallback checks what the codec leaves to proto: a malformed response fails as
// proto.Unmarshal fails, and an Any with a field besides type_url and value is decoded by proto
// (the response then holds its resources).
func TestCodecFallback(t *testing.T) {
	good, err := proto.Marshal(sotwResp(t, C, "1", "n", fetest.EDSCluster("c1")))
	if err != nil {
		t.Fatal(err)
	}
	// An Any carrying an unknown field 3 after its value.
	anyExtra := protowire.AppendTag(nil, 1, protowire.BytesType)
	anyExtra = protowire.AppendString(anyExtra, C)
	anyExtra = protowire.AppendTag(anyExtra, 3, protowire.VarintType)
	anyExtra = protowire.AppendVarint(anyExtra, 1)
	extra := protowire.AppendTag(nil, 2, protowire.BytesType)
	extra = protowire.AppendBytes(extra, anyExtra)
	badURL := protowire.AppendTag(nil, 1, protowire.BytesType)
	badURL = protowire.AppendBytes(badURL, []byte{0xff, 0xfe})
	badURLResp := protowire.AppendTag(nil, 2, protowire.BytesType)
	badURLResp = protowire.AppendBytes(badURLResp, badURL)
	for _, tc := range []struct {
		name      string
		b         []byte
		resources int // in the response, when proto decoded it
	}{
		{"truncated", good[:len(good)/2], -1},
		{"type URL not UTF-8", badURLResp, -1},
		{"Any with an unknown field", extra, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr := proto.Unmarshal(tc.b, &discoveryv3.DiscoveryResponse{})
			c := &Codec{}
			got := &discoveryv3.DiscoveryResponse{}
			err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.b)}, got)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("Unmarshal error %v, proto.Unmarshal's %v", err, wantErr)
			}
			if _, read := c.LastRead(); read {
				t.Errorf("the codec read resources it should leave to proto")
			}
			if err == nil && len(got.GetResources()) != tc.resources {
				t.Errorf("%d resources in the response, want %d", len(got.GetResources()), tc.resources)
			}
		})
	}
}

func TestCodecRejectsNonProto(t *testing.T) {
	if _, err := (&Codec{}).Marshal("text"); err == nil {
		t.Errorf("Marshal(string) succeeded")
	}
	var s string
	if err := (&Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{1})}, &s); err == nil {
		t.Errorf("Unmarshal into *string succeeded")
	}
}

// TestCodecSharedNames checks that a SotW request naming a shared set's references (the EDS
// names every request of a client repeats) is sent with the set's encoding of the names, and
// decodes exactly as the plain encoding of the same request; a list that is not a set's refs is
// encoded as usual.
func TestCodecSharedNames(t *testing.T) {
	in := NewInterner()
	ed := newEdits(nil, 0)
	for i := range 20 {
		raw := mustMarshal(t, fetest.EDSCluster(fmt.Sprintf("c%02d", i)))
		d, err := in.decode(tCDS, checkNone, maphash.Bytes(hashSeed, raw), fmt.Sprintf("c%02d", i), raw)
		if err != nil {
			t.Fatal(err)
		}
		ed.put(d.name, entry{d: d})
	}
	set := in.applyEdits(tCDS, nil, ed, true)
	if len(set.refs) != 20 || set.refsWire == nil {
		t.Fatalf("set refs %v (wire %d bytes), want 20 names kept encoded", set.refs, len(set.refsWire))
	}
	node := fetest.Node("ns-1", 1)
	c, err := newCodec(node, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.interner = in
	for _, tc := range []struct {
		name    string
		names   []string
		buffers int
	}{
		// The node's tag and the node (two buffers every request of the client shares), the
		// rest, and the names when shared.
		{"shared refs", set.refs, 4},
		{"a copy of them", slices.Clone(set.refs), 3},
		{"a prefix of them", set.refs[:18], 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: E, VersionInfo: "2", ResponseNonce: "n", ResourceNames: tc.names}
			want := &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: E, VersionInfo: "2", ResponseNonce: "n", ResourceNames: slices.Clone(tc.names)}
			out, err := c.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != tc.buffers {
				t.Errorf("encoded in %d buffers, want %d", len(out), tc.buffers)
			}
			got := &discoveryv3.DiscoveryRequest{}
			if err := proto.Unmarshal(out.Materialize(), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded request (-want +got):\n%s", diff)
			}
			if req.Node != c.node || len(req.ResourceNames) != len(tc.names) {
				t.Errorf("Marshal did not restore the request: node %v, %d names", req.Node, len(req.ResourceNames))
			}
		})
	}
	runtime.KeepAlive(set)
}

// FuzzCodecResponse: the codec's own read of a DiscoveryResponse, in any number of buffers,
// accepts what proto.Unmarshal accepts and yields the same message (its resources as items with
// the Any's type URL and bytes); it never panics.
func FuzzCodecResponse(f *testing.F) {
	for _, r := range []*discoveryv3.DiscoveryResponse{
		sotwResp(f, E, "7", "n", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)),
		sotwResp(f, C, "1", "x", fetest.EDSCluster("c1")),
		{VersionInfo: "3", TypeUrl: "t"},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{3, 40}, b...)) // the first two bytes say where to cut the rest
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		b := in[2:]
		cut1, cut2 := min(int(in[0]), len(b)), min(int(in[0])+int(in[1]), len(b))
		var want discoveryv3.DiscoveryResponse
		werr := proto.Unmarshal(b, &want)
		c := &Codec{}
		got := &discoveryv3.DiscoveryResponse{}
		gerr := c.Unmarshal(splitBuffers(b, []int{cut1, cut2}), got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("proto.Unmarshal: %v; codec: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		read0, read := c.LastRead()
		res := read0.items
		if !read {
			if d := cmp.Diff(&want, got, protocmp.Transform()); d != "" {
				t.Fatalf("fallback decode differs:\n%s", d)
			}
			return
		}
		wantRes := want.Resources
		want.Resources = nil
		if d := cmp.Diff(&want, got, protocmp.Transform()); d != "" {
			t.Fatalf("response without resources differs:\n%s", d)
		}
		if len(res) != len(wantRes) {
			t.Fatalf("%d resources read, proto has %d", len(res), len(wantRes))
		}
		for i, a := range wantRes {
			if res[i].typeURL != a.GetTypeUrl() || res[i].size != len(a.GetValue()) || !bytes.Equal(res[i].raw, a.GetValue()) {
				t.Fatalf("resource %d: %q %d bytes, proto %q %d bytes", i, res[i].typeURL, res[i].size, a.GetTypeUrl(), len(a.GetValue()))
			}
		}
	})
}

// TestCodecResponseMemo: once a run of resources was read with every resource shared, the next
// client reading the same bytes (another version and nonce) gets equal items from the memo,
// its own copy; other bytes, another validation mode or a resource not shared are read as
// before.
func TestCodecResponseMemo(t *testing.T) {
	in := NewInterner()
	clusters := []proto.Message{fetest.EDSCluster("c1"), fetest.EDSCluster("c2"), fetest.EDSCluster("c3")}
	resp := sotwResp(t, C, "1", "n1", clusters...)
	var ds []*decoded
	for _, a := range resp.Resources[:2] {
		raw := a.GetValue()
		name, _ := readNameBytes(raw)
		d, err := in.decode(tCDS, checkEnvoy, maphash.Bytes(hashSeed, raw), string(name), raw)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	read := func(mode checkMode, version, nonce string, ms ...proto.Message) ([]item, *discoveryv3.DiscoveryResponse) {
		t.Helper()
		b, err := proto.Marshal(sotwResp(t, C, version, nonce, ms...))
		if err != nil {
			t.Fatal(err)
		}
		c := &Codec{interner: in, mode: mode}
		var r discoveryv3.DiscoveryResponse
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &r); err != nil {
			t.Fatal(err)
		}
		res, ok := c.LastRead()
		if !ok {
			t.Fatal("the codec did not read the resources")
		}
		return res.items, &r
	}
	memoLen := func() (proven, trial int) {
		in.resp.mu.Lock()
		defer in.resp.mu.Unlock()
		return len(in.resp.proven.runs), len(in.resp.trial.runs)
	}
	// c3 was not shared: the read decodes and shares it, and keeps the run on trial (a run
	// one client receives is not worth keeping among the others); the next client's read of
	// the same run takes it from the memo and proves it.
	read(checkEnvoy, "1", "n1", clusters...)
	if p, tr := memoLen(); p != 0 || tr != 1 {
		t.Fatalf("memo holds %d proven runs and %d on trial after a first read, want 0 and 1", p, tr)
	}
	again, _ := read(checkEnvoy, "1", "n1", clusters...)
	if p, tr := memoLen(); p != 1 || tr != 0 {
		t.Fatalf("memo holds %d proven runs and %d on trial after a second read, want 1 and 0", p, tr)
	}
	if len(again) != 3 || again[2].name != "c3" || again[2].hit == nil {
		t.Fatalf("second read of the run on trial: %+v", again)
	}
	// c1 and c2 are: the run is kept, and the next read (another version and nonce) takes it.
	first, _ := read(checkEnvoy, "1", "n1", clusters[:2]...)
	if p, tr := memoLen(); p != 2 || tr != 0 {
		t.Fatalf("memo holds %d proven runs and %d on trial, want 2 and 0", p, tr)
	}
	first, _ = read(checkEnvoy, "1", "n1", clusters[:2]...)
	second, r := read(checkEnvoy, "2", "n2", clusters[:2]...)
	if r.GetVersionInfo() != "2" || r.GetNonce() != "n2" || len(r.GetResources()) != 0 {
		t.Fatalf("response fields %v", r)
	}
	if len(second) != 2 || second[0].hit != ds[0] || second[1].hit != ds[1] || second[0].name != "c1" ||
		second[1].name != "c2" || &second[0] != &first[0] || !second[0].hashed || second[0].hash != ds[0].hash {
		t.Fatalf("items from the memo: %+v", second)
	}
	// Another mode is another key: read afresh (c1 and c2 are decoded again in it).
	other, _ := read(checkNone, "1", "n1", clusters[:2]...)
	if other[0].hit == ds[0] || other[0].hit == nil {
		t.Fatalf("checkNone read %+v from checkEnvoy's memo", other[0])
	}
	runtime.KeepAlive(ds)
}

// TestResponseMemoBounded: the memo keeps at most respMemoMaxRuns runs, the newest.
func TestResponseMemoBounded(t *testing.T) {
	var r respMemo
	hit := &decoded{name: "x"}
	for i := range respMemoMaxRuns + 10 {
		region := []byte(fmt.Sprint("run-", i))
		r.put(respKey{hash: uint64(i), n: len(region)}, region, []item{{name: "x", hit: hit}}, false)
	}
	if len(r.m) != respMemoMaxRuns || len(r.proven.runs) != respMemoMaxRuns {
		t.Fatalf("memo holds %d runs (%d in order), want %d", len(r.m), len(r.proven.runs), respMemoMaxRuns)
	}
	if got, _ := r.get(respKey{hash: 0, n: len("run-0")}, []byte("run-0")); got != nil {
		t.Error("the oldest run is still kept")
	}
	last := respMemoMaxRuns + 9
	region := []byte(fmt.Sprint("run-", last))
	if got, e := r.get(respKey{hash: uint64(last), n: len(region)}, region); got == nil || !e.distinct {
		t.Error("the newest run is not kept")
	}
	if got, _ := r.get(respKey{hash: uint64(last), n: len(region)}, []byte(fmt.Sprint("nur-", last))); got != nil {
		t.Error("a run with other bytes under the same key was taken")
	}
}

// TestResponseMemoTrial: runs that one client decoded some of are kept on trial. Many of them
// (each client's own listeners) push out only one another, never a proven run; one that a
// second client reads is proven, and then stays when the trial list turns over.
func TestResponseMemoTrial(t *testing.T) {
	var r respMemo
	hit := &decoded{name: "x"}
	items := []item{{name: "x", hit: hit}}
	run := func(s string) (respKey, []byte) {
		b := []byte(s)
		return respKey{hash: maphash.Bytes(hashSeed, b), n: len(b)}, b
	}
	pk, proven := run("proven")
	r.put(pk, proven, items, false)
	ck, cds := run("full config")
	r.put(ck, cds, items, true)
	if e := r.find(ck, cds); e == nil {
		t.Fatal("a run on trial was not found by the next client")
	}
	for i := range respMemoTrialRuns + 5 {
		k, b := run(fmt.Sprint("own listeners ", i))
		r.put(k, b, items, true)
	}
	if len(r.trial.runs) != respMemoTrialRuns || len(r.proven.runs) != 2 {
		t.Fatalf("%d runs on trial and %d proven, want %d and 2", len(r.trial.runs), len(r.proven.runs), respMemoTrialRuns)
	}
	for _, tc := range []struct {
		name string
		k    respKey
		b    []byte
		kept bool
	}{
		{"proven", pk, proven, true},
		{"proven by a second read", ck, cds, true},
		{"oldest on trial", func() respKey { k, _ := run("own listeners 0"); return k }(), []byte("own listeners 0"), false},
		{"newest on trial", func() respKey { k, _ := run(fmt.Sprint("own listeners ", respMemoTrialRuns+4)); return k }(), []byte(fmt.Sprint("own listeners ", respMemoTrialRuns+4)), true},
	} {
		if got := r.find(tc.k, tc.b) != nil; got != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.name, got, tc.kept)
		}
	}
	// Finding the newest run on trial proved it.
	if len(r.trial.runs) != respMemoTrialRuns-1 || len(r.proven.runs) != 3 {
		t.Fatalf("after the finds: %d runs on trial and %d proven, want %d and 3", len(r.trial.runs), len(r.proven.runs), respMemoTrialRuns-1)
	}
	// A second client's put of a run on trial proves it too.
	k, b := run(fmt.Sprint("own listeners ", respMemoTrialRuns+3))
	r.put(k, b, items, false)
	if len(r.trial.runs) != respMemoTrialRuns-2 || len(r.proven.runs) != 4 {
		t.Fatalf("after a second put: %d runs on trial and %d proven, want %d and 4", len(r.trial.runs), len(r.proven.runs), respMemoTrialRuns-2)
	}
	// The trial list is bounded by bytes too.
	big := bytes.Repeat([]byte("b"), respMemoTrialBytes/2)
	for i := range 3 {
		big[0] = byte(i)
		r.put(respKey{hash: uint64(i), n: len(big)}, big, items, true)
	}
	if r.trial.bytes > respMemoTrialBytes {
		t.Errorf("%d bytes on trial, above %d", r.trial.bytes, respMemoTrialBytes)
	}
	n := 0
	for _, e := range r.trial.runs {
		n += len(e.region)
	}
	if n != r.trial.bytes {
		t.Errorf("trial bytes %d, counted %d", r.trial.bytes, n)
	}
}

// TestResponseMemoSharedKey: a long run is keyed by a sample of its bytes, so runs of one
// length that differ only between the samples share a key. Both are kept and each is found by
// its own bytes; the older leaves the memo without taking the newer with it.
func TestResponseMemoSharedKey(t *testing.T) {
	a := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB
	b := bytes.Clone(a)
	b[runEnds+runWindow+100] ^= 1 // between the first two windows
	if runHash(a) != runHash(b) {
		t.Fatal("a byte outside every sampled window changed the run's hash: the test no longer tests a shared key")
	}
	c := bytes.Clone(a)
	c[runEnds+10] ^= 1 // inside the first window
	if runHash(a) == runHash(c) {
		t.Error("a byte inside a sampled window did not change the run's hash")
	}
	if small := []byte("short run"); runHash(small) != maphash.Bytes(hashSeed, small) {
		t.Error("a short run is not hashed whole")
	}
	var r respMemo
	k := respKey{hash: runHash(a), n: len(a)}
	ia := []item{{name: "a", hit: &decoded{name: "a"}}}
	ib := []item{{name: "b", hit: &decoded{name: "b"}}}
	r.put(k, a, ia, false)
	r.put(k, b, ib, false)
	r.put(k, b, ib, false) // kept already
	if got := len(r.m[k]); got != 2 || len(r.proven.runs) != 2 {
		t.Fatalf("memo holds %d runs under the shared key (%d in order), want 2", got, len(r.proven.runs))
	}
	for _, tc := range []struct {
		region []byte
		want   string
	}{{a, "a"}, {b, "b"}} {
		got, e := r.get(k, tc.region)
		if len(got) != 1 || got[0].name != tc.want || !bytes.Equal(e.region, tc.region) {
			t.Errorf("run %s: got %+v", tc.want, got)
		}
	}
	if got, _ := r.get(k, c); got != nil {
		t.Error("a run with other bytes was taken")
	}
	// Fill the memo past its bound: a and then b leave, in order.
	for i := range respMemoMaxRuns - 1 {
		region := []byte(fmt.Sprint("run-", i))
		r.put(respKey{hash: uint64(i), n: len(region)}, region, ia, false)
	}
	if got, _ := r.get(k, a); got != nil {
		t.Error("the oldest run is still kept")
	}
	if got, _ := r.get(k, b); len(got) != 1 || got[0].name != "b" {
		t.Error("the run that shares the oldest one's key left with it")
	}
}

// TestResponseMemoPutOnce: clients that read a run the memo already keeps (they read it before
// the first one kept it) copy nothing.
func TestResponseMemoPutOnce(t *testing.T) {
	var r respMemo
	region := bytes.Repeat([]byte("x"), 64<<10)
	k := respKey{hash: 1, n: len(region)}
	items := []item{{name: "x", hit: &decoded{name: "x"}}}
	r.put(k, region, items, false)
	if n := testing.AllocsPerRun(10, func() { r.put(k, region, items, false) }); n != 0 {
		t.Errorf("a put of a kept run allocates %v times, want 0", n)
	}
}

// TestResponseMemoSharesItems: every client that gets a kept run gets the run's own items,
// with no copy.
func TestResponseMemoSharesItems(t *testing.T) {
	var r respMemo
	hit := &decoded{name: "a"}
	want := []item{{name: "a", hit: hit, hashed: true, hash: 1}, {name: "b", hit: hit, hashed: true, hash: 2}}
	region := []byte("ab")
	k := respKey{hash: 7, n: len(region)}
	r.put(k, region, want, false)
	first, e := r.get(k, region)
	if e == nil || len(first) != 2 || &first[0] != &e.items[0] {
		t.Fatalf("get returned %d items of run %p, want the run's own 2", len(first), e)
	}
	if n := testing.AllocsPerRun(10, func() { r.get(k, region) }); n != 0 {
		t.Errorf("a get allocates %v times, want 0", n)
	}
}

// TestItemStatesPooled: apply's per-item states come back from the Interner's pool cleared,
// in a class of a power of two; a nil Interner allocates them.
func TestItemStatesPooled(t *testing.T) {
	in := NewInterner()
	st := in.itemStates(3)
	if len(st) != 3 || cap(st) != 4 {
		t.Fatalf("%d states with room for %d, want 3 in a class of 4", len(st), cap(st))
	}
	st[0], st[2] = itemState{d: &decoded{}}, itemState{err: errIgnored}
	in.putItemStates(st)
	in.putItemStates(make([]itemState, 3)) // not the pool's: dropped
	for range 3 {
		got := in.itemStates(4)
		for i, s := range got {
			if s != (itemState{}) {
				t.Fatalf("state %d of a reused slice: %+v, want zero", i, s)
			}
		}
		in.putItemStates(got)
	}
	if n := testing.AllocsPerRun(100, func() { in.putItemStates(in.itemStates(5)) }); n != 0 {
		t.Errorf("taking and giving back states allocates %v times, want 0", n)
	}
	var none *Interner
	if got := none.itemStates(3); len(got) != 3 {
		t.Fatalf("a nil Interner gave %d states, want 3", len(got))
	}
	if got := in.itemStates(0); len(got) != 0 {
		t.Fatalf("%d states for no item", len(got))
	}
}

// TestApplyLeavesItemsAlone: applying a run the memo keeps changes nothing of its items, for a
// client that rejects some of them by policy, one that holds some already and one that
// applies it to nothing; each decides on its own.
func TestApplyLeavesItemsAlone(t *testing.T) {
	in := NewInterner()
	b := mustMarshal(t, sotwResp(t, C, "1", "a", fetest.EDSCluster("c1"), fetest.EDSCluster("c2"), fetest.EDSCluster("c3")))
	// Three reads: the second keeps the run, the third reads it from the memo.
	var res Resources
	var r *discoveryv3.DiscoveryResponse
	for range 3 {
		res, r = codecRead(t, in, b)
	}
	if res.run == nil {
		t.Fatal("the run is not kept")
	}
	before := slices.Clone(res.run.items)

	rejecting := newTestMachine(t, Config{Interner: in, Nack: policy.Nack{Realistic: true, NamePattern: "c2"}})
	rejecting.Start(t0)
	if s := rejecting.OnSotwRead(r, res, t0); !s.Info.Nacked || rejecting.Resource(C, "c1") == nil {
		t.Fatalf("policy client: nacked %v, c1 held %v; want a NACK with c1 applied", s.Info.Nacked, rejecting.Resource(C, "c1") != nil)
	}
	holding := newTestMachine(t, Config{Interner: in, Nack: policy.Nack{Realistic: true}})
	holding.Start(t0)
	holding.OnSotw(sotwResp(t, C, "0", "z", fetest.EDSCluster("c1")), t0)
	if s := holding.OnSotwRead(r, res, t0); s.Info.Nacked || s.Info.Changed != 2 {
		t.Fatalf("holding client: nacked %v, %d changed; want an ACK with 2 changed", s.Info.Nacked, s.Info.Changed)
	}
	fresh := newTestMachine(t, Config{Interner: in, Nack: policy.Nack{Realistic: true}})
	fresh.Start(t0)
	if s := fresh.OnSotwRead(r, res, t0); s.Info.Nacked || s.Info.Changed != 3 {
		t.Fatalf("fresh client: nacked %v, %d changed; want an ACK with 3 changed", s.Info.Nacked, s.Info.Changed)
	}
	for i := range before {
		if !reflect.DeepEqual(res.run.items[i], before[i]) {
			t.Errorf("item %d of the run changed: %+v, was %+v", i, res.run.items[i], before[i])
		}
	}
}

// codecRead reads the encoded SotW response b as a new Envoy client's codec (Envoy's checks)
// of the fleet whose Interner is in does.
func codecRead(t *testing.T, in *Interner, b []byte) (Resources, *discoveryv3.DiscoveryResponse) {
	t.Helper()
	c := &Codec{interner: in, mode: checkEnvoy}
	r := &discoveryv3.DiscoveryResponse{}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, r); err != nil {
		t.Fatal(err)
	}
	res, _ := c.LastRead()
	return res, r
}

// TestMachineDistinctRun: a client that reads its CDS responses from the codec's memo (names
// known distinct) still deletes a cluster a full response lacks, and still NACKs duplicates (a
// run with a duplicate name is not known distinct).
func TestMachineDistinctRun(t *testing.T) {
	in := NewInterner()
	cfg := Config{Interner: in, Nack: policy.Nack{Realistic: true}}
	// Reads resp as the third of three clients, interning in between, so that it comes
	// from the memo when its resources are all shared.
	viaMemo := func(resp *discoveryv3.DiscoveryResponse) (Resources, *discoveryv3.DiscoveryResponse) {
		t.Helper()
		b := mustMarshal(t, resp)
		var res Resources
		var r *discoveryv3.DiscoveryResponse
		for range 3 {
			res, r = codecRead(t, in, b)
			for _, it := range res.items {
				if it.hit == nil {
					raw := it.raw
					if _, err := in.decode(tCDS, checkEnvoy, it.hash, it.name, raw); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		return res, r
	}
	m := newTestMachine(t, cfg)
	m.Start(t0)
	res, r := viaMemo(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1"), fetest.EDSCluster("c2"), fetest.EDSCluster("c3")))
	if res.run == nil || !res.run.distinct {
		t.Fatal("a run of three shared clusters is not known distinct")
	}
	m.OnSotwRead(r, res, t0)
	res, r = viaMemo(sotwResp(t, C, "2", "b", fetest.EDSCluster("c1"), fetest.EDSCluster("c3")))
	if res.run == nil || !res.run.distinct {
		t.Fatal("the second run is not known distinct")
	}
	s := m.OnSotwRead(r, res, t0)
	if s.Info.Nacked || s.Info.Removed != 1 || m.Resource(C, "c2") != nil || m.Resource(C, "c1") == nil {
		t.Fatalf("after a full CDS without c2: nacked %v, removed %d, c2 held %v", s.Info.Nacked, s.Info.Removed, m.Resource(C, "c2") != nil)
	}
	res, r = viaMemo(sotwResp(t, C, "3", "c", fetest.EDSCluster("c1"), fetest.EDSCluster("c1")))
	if res.run != nil && res.run.distinct {
		t.Fatal("a run with a duplicate name is known distinct")
	}
	if s := m.OnSotwRead(r, res, t0); !s.Info.Nacked {
		t.Fatal("a CDS response naming c1 twice was not NACKed")
	}
}

// BenchmarkCodecMemoHit reads a full config of 2,000 clusters (about 0.3 MB of resources) that
// the memo keeps, as every client after the first does: the cost of finding the run (bytes/s
// is the response's size over that). In sub-benchmark "frames" the response comes in the
// pieces of the 16 KiB DATA frames that carried it.
func BenchmarkCodecMemoHit(b *testing.B) {
	b.Run("whole", func(b *testing.B) { benchMemoHit(b, 0) })
	b.Run("frames", func(b *testing.B) { benchMemoHit(b, 16384) })
}

func benchMemoHit(b *testing.B, frame int) {
	in := NewInterner()
	var ms []proto.Message
	for i := range 2000 {
		ms = append(ms, fetest.EDSCluster(fmt.Sprintf("outbound|8080||svc-%04d.ns-%02d.svc.cluster.local", i, i%50)))
	}
	raw, err := proto.Marshal(sotwResp(b, C, "1", "n1", ms...))
	if err != nil {
		b.Fatal(err)
	}
	data := mem.BufferSlice{mem.SliceBuffer(raw)}
	if frame > 0 {
		data = cutEvery(raw, frame)
	}
	read := func() {
		c := &Codec{interner: in, mode: checkEnvoy}
		var r discoveryv3.DiscoveryResponse
		if err := c.Unmarshal(data, &r); err != nil {
			b.Fatal(err)
		}
		res, ok := c.LastRead()
		if !ok || len(res.items) != len(ms) {
			b.Fatalf("read %d items (%v), want %d", len(res.items), ok, len(ms))
		}
	}
	read()
	read() // the second read keeps the run
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		read()
	}
}

// immutableStamps is a stamp source that says every message lies in bytes nothing reuses (as
// h2client does for a shared copy).
type immutableStamps struct{ yes bool }

func (immutableStamps) Take(int) (time.Time, bool) { return time.Time{}, false }
func (s immutableStamps) Immutable(int) bool       { return s.yes }

// TestCodecKeepsImmutableRun: a run read from a message in immutable bytes (a transport's
// shared copy) is kept in the memo as those bytes, not copied, so that the next client of the
// same copy compares its run with it in place; from a receive buffer it is copied.
func TestCodecKeepsImmutableRun(t *testing.T) {
	for _, yes := range []bool{true, false} {
		in := NewInterner()
		b, err := proto.Marshal(sotwResp(t, C, "1", "n1", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")))
		if err != nil {
			t.Fatal(err)
		}
		c := &Codec{interner: in, mode: checkEnvoy, rx: immutableStamps{yes}}
		var r discoveryv3.DiscoveryResponse
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &r); err != nil {
			t.Fatal(err)
		}
		in.resp.mu.Lock()
		runs := append(slices.Clone(in.resp.trial.runs), in.resp.proven.runs...)
		in.resp.mu.Unlock()
		if len(runs) != 1 {
			t.Fatalf("immutable %v: %d runs kept, want 1", yes, len(runs))
		}
		region := runs[0].region
		p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(region))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		inPlace := p >= lo && p+uintptr(len(region)) <= lo+uintptr(len(b))
		if inPlace != yes {
			t.Errorf("immutable %v: the memo keeps the run in the message's bytes: %v", yes, inPlace)
		}
	}
}

// TestCodecReadsRunOnce: clients that receive the same new run at once read it resource by
// resource in one of them only; the others wait for that read and take the run from the memo
// (respMemo.lead), in one piece or in the frames' pieces.
func TestCodecReadsRunOnce(t *testing.T) {
	var ms []proto.Message
	for i := range 1500 {
		ms = append(ms, mtlsCluster(t, fmt.Sprintf("outbound|8080||svc-%04d.ns.svc.cluster.local", i), nil))
	}
	raw := mustMarshal(t, sotwResp(t, C, "1", "n1", ms...))
	for _, frame := range []int{0, 16384} {
		in := NewInterner()
		const clients = 6
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			mu    sync.Mutex
			read  int // reads that walked the run themselves
		)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data := mem.BufferSlice{mem.SliceBuffer(raw)}
				if frame > 0 {
					data = cutEvery(raw, frame)
				}
				c := &Codec{interner: in, mode: checkEnvoy}
				var r discoveryv3.DiscoveryResponse
				<-start
				if err := c.Unmarshal(data, &r); err != nil {
					t.Error(err)
					return
				}
				res, ok := c.LastRead()
				if !ok || len(res.items) != len(ms) {
					t.Errorf("frame %d: read %d items (%v), want %d", frame, len(res.items), ok, len(ms))
				}
				mu.Lock()
				defer mu.Unlock()
				if res.run == nil {
					read++
				}
			}()
		}
		close(start)
		wg.Wait()
		if read != 1 {
			t.Errorf("frame %d: %d of %d clients read the run themselves, want 1", frame, read, clients)
		}
	}
}

// TestReadRest checks that readRest decodes a response's other fields as
// proto.UnmarshalOptions{Merge: true} does, its own way (version, type URL, nonce) or by proto
// (any other field), and fails where proto fails.
func TestReadRest(t *testing.T) {
	field := func(num protowire.Number, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	canary := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1)
	cp := protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), field(1, "cp"))
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"usual", cat(field(1, "v1"), field(4, E), field(5, "n1"))},
		{"unknown type URL", cat(field(4, "type.googleapis.com/x.Y"), field(5, "n"))},
		{"repeated: the last counts", cat(field(1, "a"), field(1, "b"), field(5, "n1"), field(5, ""))},
		{"empty strings", cat(field(1, ""), field(4, ""), field(5, ""))},
		{"canary", cat(field(1, "v"), canary)},
		{"control plane", cat(cp, field(5, "n"))},
		{"unknown field", cat(field(1, "v"), unknown)},
		{"invalid UTF-8", cat(field(1, "v\xff"), field(5, "n"))},
		{"truncated", field(1, "v1")[:3]},
		{"version as a varint", protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)},
		{"more fields than kept in place", cat(field(1, "a"), field(4, E), field(5, "n"), field(1, "b"), field(5, "m"), field(4, C))},
		{"more fields, one unknown", cat(field(1, "a"), field(4, E), field(5, "n"), field(1, "b"), unknown, field(4, C))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := &discoveryv3.DiscoveryResponse{}
			wantErr := proto.UnmarshalOptions{Merge: true}.Unmarshal(tc.b, want)
			got := &discoveryv3.DiscoveryResponse{}
			err := readRest(tc.b, got)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("readRest error %v, proto's %v", err, wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
					t.Errorf("readRest (-proto +readRest):\n%s", diff)
				}
			}
			// The same fields where they lie among resources (readSotw's fieldRanges), when
			// they can be walked.
			res := field(2, "resource")
			b := slices.Clone(res)
			var f fieldRanges
			for off := 0; off < len(tc.b); {
				num, typ, n := protowire.ConsumeTag(tc.b[off:])
				if n < 0 {
					return
				}
				m := protowire.ConsumeFieldValue(num, typ, tc.b[off+n:])
				if m < 0 {
					return
				}
				f.add(len(b), len(b)+n+m)
				b = append(append(b, tc.b[off:off+n+m]...), res...)
				off += n + m
			}
			got = &discoveryv3.DiscoveryResponse{}
			if err := f.read(b, got); (err != nil) != (wantErr != nil) {
				t.Fatalf("fieldRanges.read error %v, proto's %v", err, wantErr)
			} else if err == nil {
				if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
					t.Errorf("fieldRanges.read (-proto +read):\n%s", diff)
				}
			}
		})
	}
}

// TestCodecReusesFreedRequest: a request's encoding is reused by the next Marshal only once the
// transport freed every buffer of it (and once more for each Ref); until then the next request
// is encoded apart, and the first one's bytes stay as they were.
func TestCodecReusesFreedRequest(t *testing.T) {
	c, err := newCodec(fetest.Node("ns-1", 7), nil)
	if err != nil {
		t.Fatal(err)
	}
	long := make([]string, 20) // an ACK of many names: its fields do not fit reqBufs.space
	for i := range long {
		long[i] = fmt.Sprintf("outbound|80||svc%d.ns.svc.cluster.local", i)
	}
	for _, tc := range []struct {
		name  string
		names []string
		refs  int  // Refs taken by the transport
		frees int  // Frees it makes of the BufferSlice
		reuse bool // the next Marshal reuses the first one's encoding
	}{
		{"freed", nil, 0, 1, true},
		{"freed, many names", long, 0, 1, true},
		{"not freed", nil, 0, 0, false},
		{"referenced once more, freed once", nil, 1, 1, false},
		{"referenced once more, freed twice", long, 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: E, VersionInfo: "v1", ResponseNonce: "n1", ResourceNames: tc.names}
			out, err := c.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			first := out.Materialize()
			for range tc.refs {
				out.Ref()
			}
			for range tc.frees {
				out.Free()
			}
			req2 := &discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: E, VersionInfo: "v2", ResponseNonce: "n2", ResourceNames: tc.names}
			next, err := c.Marshal(req2)
			if err != nil {
				t.Fatal(err)
			}
			if reused := &out[0] == &next[0]; reused != tc.reuse {
				t.Errorf("the second request reuses the first's encoding: %v, want %v", reused, tc.reuse)
			}
			// What the reused (or new) room holds is the second request, nothing of the first
			// (the node is the codec's own encoding of it, compared apart).
			got := &discoveryv3.DiscoveryRequest{}
			if err := proto.Unmarshal(next.Materialize(), got); err != nil {
				t.Fatal(err)
			}
			if got.GetNode().GetId() != req2.GetNode().GetId() {
				t.Errorf("the second request's node %q, want %q", got.GetNode().GetId(), req2.GetNode().GetId())
			}
			got.Node, req2.Node = nil, nil
			if !proto.Equal(got, req2) {
				t.Errorf("the second request decodes as %v, want %v", got, req2)
			}
			if !tc.reuse && !bytes.Equal(out.Materialize(), first) {
				t.Error("the first request's bytes changed while the transport held them")
			}
			if !tc.reuse {
				for range 1 + tc.refs - tc.frees {
					out.Free() // what the transport still held
				}
			}
			next.Free()
		})
	}
}
