package cache

import (
	"bytes"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) CacheRead(typeURL string, r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[typeURL+"/"+string(r)]++
}

func build(n *atomic.Int32, names ...string) BuildFunc {
	return func() ([]*Resource, error) {
		n.Add(1)
		var out []*Resource
		for _, name := range names {
			out = append(out, NewResource(name, "type.googleapis.com/test", []byte(name)))
		}
		return out, nil
	}
}

func TestGenerations(t *testing.T) {
	var built atomic.Int32
	cnt := &counts{}
	c := New(cnt)
	k := Key{TypeURL: "T", Class: "ns-1", Name: ""}
	steps := []struct {
		gen       uint64
		want      Result
		wantBuilt int32
	}{
		{1, Miss, 1},
		{1, Hit, 1},
		{2, Miss, 2},   // newer generation replaces
		{1, Bypass, 3}, // older generation bypasses, keeps the newer entry
		{2, Hit, 3},
	}
	for i, s := range steps {
		res, r, err := c.Get(k, s.gen, build(&built, "a", "b"))
		if err != nil || r != s.want || built.Load() != s.wantBuilt || len(res) != 2 {
			t.Fatalf("step %d: result %s err %v built %d, want %s built %d", i, r, err, built.Load(), s.want, s.wantBuilt)
		}
	}
	st := c.Stats()
	if st.Hits != 2 || st.Misses != 2 || st.Bypasses != 1 || st.Entries != 1 {
		t.Errorf("stats %+v", st)
	}
	if cnt.m["T/hit"] != 2 || cnt.m["T/miss"] != 2 || cnt.m["T/bypass"] != 1 {
		t.Errorf("counter %v", cnt.m)
	}
	if n := c.EvictOlder("T", 3); n != 1 || c.Stats().Entries != 0 || c.Stats().Bytes != 0 {
		t.Errorf("evicted %d, stats %+v", n, c.Stats())
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	c := New(nil)
	k := Key{TypeURL: "T", Name: "x"}
	boom := errors.New("boom")
	if _, _, err := c.Get(k, 1, func() ([]*Resource, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	var built atomic.Int32
	if _, r, _ := c.Get(k, 1, build(&built, "x")); r != Miss {
		t.Fatalf("after an error, got %s, want a miss", r)
	}
}

func TestConcurrentMissesCollapse(t *testing.T) {
	c := New(nil)
	var built atomic.Int32
	release := make(chan struct{})
	slow := func() ([]*Resource, error) {
		<-release
		return build(&built, "a")()
	}
	var wg sync.WaitGroup
	results := make([]Result, 20)
	for i := range results {
		wg.Go(func() {
			_, results[i], _ = c.Get(Key{TypeURL: "T", Name: "a"}, 7, slow)
		})
	}
	// Wait until the first caller has registered its entry, then let it build.
	for c.Stats().Entries == 0 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if built.Load() != 1 {
		t.Fatalf("built %d times, want once", built.Load())
	}
	misses := 0
	for _, r := range results {
		if r == Miss {
			misses++
		}
	}
	if misses != 1 {
		t.Errorf("%d misses, want 1 (others wait and hit)", misses)
	}
}

// Framed resources concatenated with a tail are a valid DiscoveryResponse.
func TestFramedResourcesDecode(t *testing.T) {
	const typeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	r1 := NewResource("a", typeURL, []byte{0x0a, 0x01, 'a'}) // Cluster{name:"a"}
	r2 := NewResource("b", typeURL, []byte{0x0a, 0x01, 'b'})
	tail, _ := proto.Marshal(&discoveryv3.DiscoveryResponse{VersionInfo: "3", TypeUrl: typeURL, Nonce: "n1"})
	buf := append(append(append([]byte{}, r1.Framed...), r2.Framed...), tail...)
	var got discoveryv3.DiscoveryResponse
	if err := proto.Unmarshal(buf, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Resources) != 2 || got.Resources[1].TypeUrl != typeURL || string(got.Resources[1].Value) != "\x0a\x01b" ||
		got.VersionInfo != "3" || got.Nonce != "n1" {
		t.Fatalf("decoded %v", &got)
	}
	if r1.Hash == r2.Hash || r1.Size != 3 {
		t.Errorf("hash/size: %+v %+v", r1, r2)
	}
}

func TestPeekPut(t *testing.T) {
	c := New(nil)
	k := Key{TypeURL: "E", Name: "c1"}
	if _, ok := c.Peek(k, 1); ok {
		t.Fatal("hit on empty cache")
	}
	c.Put(k, 1, []*Resource{NewResource("c1", "E", []byte("x"))})
	if res, ok := c.Peek(k, 1); !ok || res[0].Name != "c1" {
		t.Fatal("miss after Put")
	}
	if _, ok := c.Peek(k, 2); ok {
		t.Fatal("hit at a newer generation")
	}
	c.Put(k, 3, []*Resource{NewResource("c1", "E", []byte("y"))})
	c.Put(k, 2, []*Resource{NewResource("c1", "E", []byte("old"))}) // older: kept out
	if res, ok := c.Peek(k, 3); !ok || res[0].Size != 1 || string(res[0].Framed[len(res[0].Framed)-1]) != "y" {
		t.Fatal("newer entry replaced by an older Put")
	}
	st := c.Stats()
	if st.Hits != 2 || st.Misses != 2 || st.Bypasses != 1 || st.Entries != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestDeltaFramedDecodes(t *testing.T) {
	const typeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	r := NewResource("a", typeURL, []byte{0x0a, 0x01, 'a'})
	tail, _ := proto.Marshal(&discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: "3", TypeUrl: typeURL, Nonce: "n", RemovedResources: []string{"gone"}})
	var got discoveryv3.DeltaDiscoveryResponse
	if err := proto.Unmarshal(append(append([]byte{}, r.DeltaFramed()...), tail...), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Resources) != 1 || got.Resources[0].Name != "a" || got.Resources[0].Version != r.Version() ||
		got.Resources[0].Resource.TypeUrl != typeURL || string(got.Resources[0].Resource.Value) != "\x0a\x01a" ||
		got.RemovedResources[0] != "gone" || got.Nonce != "n" {
		t.Fatalf("decoded %v", &got)
	}
}

func TestEvictPredicate(t *testing.T) {
	c := New(nil)
	build := func() ([]*Resource, error) { return []*Resource{NewResource("r", "T", []byte("x"))}, nil }
	for i, k := range []Key{{TypeURL: "A", Name: "a"}, {TypeURL: "A", Name: "b"}, {TypeURL: "B", Name: "a"}} {
		if _, _, err := c.Get(k, uint64(i+1), build); err != nil {
			t.Fatal(err)
		}
	}
	n := c.Evict(func(k Key, g uint64) bool { return k.TypeURL == "A" && g < 2 })
	if n != 1 || c.Stats().Entries != 2 {
		t.Fatalf("evicted %d, %d left; want 1 evicted, 2 left", n, c.Stats().Entries)
	}
	if _, ok := c.Peek(Key{TypeURL: "A", Name: "a"}, 1); ok {
		t.Error("the stale entry is still there")
	}
	if _, ok := c.Peek(Key{TypeURL: "A", Name: "b"}, 2); !ok {
		t.Error("a current entry was evicted")
	}
}

func TestCountHits(t *testing.T) {
	cnt := &counts{}
	c := New(cnt)
	c.CountHits("T", 3)
	c.CountHits("T", 0)
	if got := c.Stats().Hits; got != 3 {
		t.Errorf("hits = %d, want 3", got)
	}
	cnt.mu.Lock()
	got := cnt.m["T/hit"]
	cnt.mu.Unlock()
	if got != 3 {
		t.Errorf("counted %d hits, want 3", got)
	}
}

// TestNewResourcesBatch: a batch frames each resource exactly as NewResource does, and
// FramedRuns writes runs of batch neighbours as one buffer, never joining what is not adjacent.
func TestNewResourcesBatch(t *testing.T) {
	const typeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	names := []string{"a", "b", "c", "d"}
	values := [][]byte{[]byte("1"), bytes.Repeat([]byte("x"), 300), {}, []byte("4444")}
	batch := NewResources(typeURL, names, values)
	other := NewResources(typeURL, []string{"e", "f"}, [][]byte{[]byte("5"), []byte("6")})
	alone := NewResource("g", typeURL, []byte("7"))
	for i, r := range batch {
		want := NewResource(names[i], typeURL, values[i])
		if r.Name != want.Name || !bytes.Equal(r.Framed, want.Framed) || r.Hash != want.Hash || r.Size != want.Size {
			t.Fatalf("%s: batch framing differs from NewResource's", r.Name)
		}
		if cap(r.Framed) != len(r.Framed) {
			t.Fatalf("%s: Framed may be appended to over its neighbour", r.Name)
		}
	}
	a, b, c, d := batch[0], batch[1], batch[2], batch[3]
	e, f := other[0], other[1]
	for _, tc := range []struct {
		name string
		list []*Resource
		runs int
	}{
		{"the batch in order", batch, 1},
		{"a contiguous part", []*Resource{b, c, d}, 1},
		{"a gap", []*Resource{a, c, d}, 2},
		{"reordered", []*Resource{b, a}, 2},
		{"repeated", []*Resource{a, a}, 2},
		{"two batches", []*Resource{a, b, e, f}, 2},
		{"framed alone in between", []*Resource{a, alone, b, c}, 3},
		{"empty", nil, 0},
	} {
		var got []byte
		runs := 0
		FramedRuns(tc.list, func(p []byte) { got = append(got, p...); runs++ })
		var want []byte
		for _, r := range tc.list {
			want = append(want, r.Framed...)
		}
		if !bytes.Equal(got, want) || runs != tc.runs {
			t.Errorf("%s: %d runs (want %d), bytes equal %v", tc.name, runs, tc.runs, bytes.Equal(got, want))
		}
	}
}
