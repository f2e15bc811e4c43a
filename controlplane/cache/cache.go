package cache

import (
	"hash/fnv"
	"strconv"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// Resource is one marshalled resource, ready to be placed in a DiscoveryResponse.
type Resource struct {
	Name string
	// Framed is the resource encoded as field 2 (resources) of a DiscoveryResponse: the tag, the
	// length and the google.protobuf.Any message (type_url, value). Responses are built by
	// concatenating Framed bytes, so the bytes are never copied per client.
	Framed []byte
	// Size is the length of the resource's own encoding (the Any's value).
	Size int
	// Hash identifies the resource's bytes (FNV-1a, stable across processes): no-op detection,
	// and the Delta version.
	Hash uint64

	deltaOnce   sync.Once
	deltaFramed []byte

	// batch is the array the resources of one NewResources call are framed into, end to end;
	// Framed is batch[off:off+len(Framed)]. Nil for a resource framed alone.
	batch []byte
	off   int
}

// Version is the resource's Delta xDS version: its hash in hex.
func (r *Resource) Version() string { return strconv.FormatUint(r.Hash, 16) }

// DeltaFramed is the resource encoded as field 2 (resources) of a DeltaDiscoveryResponse: an
// envoy.service.discovery.v3.Resource with name, version and the Any. It is built on first use
// and then shared like Framed.
func (r *Resource) DeltaFramed() []byte {
	r.deltaOnce.Do(func() {
		anyBytes := r.anyBytes()
		version := r.Version()
		inner := protowire.SizeTag(3) + protowire.SizeBytes(len(r.Name)) +
			protowire.SizeTag(1) + protowire.SizeBytes(len(version)) +
			protowire.SizeTag(2) + protowire.SizeBytes(len(anyBytes))
		b := make([]byte, 0, protowire.SizeTag(2)+protowire.SizeBytes(inner))
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(inner))
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, r.Name)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, version)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, anyBytes)
		r.deltaFramed = b
	})
	return r.deltaFramed
}

// anyBytes is the Any message inside Framed (after its field tag and length).
func (r *Resource) anyBytes() []byte {
	_, _, n := protowire.ConsumeTag(r.Framed)
	_, m := protowire.ConsumeVarint(r.Framed[n:])
	return r.Framed[n+m:]
}

// NewResource frames value (the marshalled resource of typeURL) for a DiscoveryResponse.
func NewResource(name, typeURL string, value []byte) *Resource {
	b := appendFramed(make([]byte, 0, framedLen(typeURL, len(value))), typeURL, value)
	return &Resource{Name: name, Framed: b, Size: len(value), Hash: hashValue(value)}
}

// NewResources frames a batch of resources of typeURL (names[i] with values[i]), as NewResource
// does, end to end in one array: the resources of a batch that a response carries in their
// batch order are written as one buffer (FramedRuns), not one per resource. The array lives as
// long as any of them does.
func NewResources(typeURL string, names []string, values [][]byte) []*Resource {
	total := 0
	for _, v := range values {
		total += framedLen(typeURL, len(v))
	}
	batch := make([]byte, 0, total)
	out := make([]*Resource, len(values))
	for i, v := range values {
		off := len(batch)
		batch = appendFramed(batch, typeURL, v) // never grows: framedLen is exact
		out[i] = &Resource{Name: names[i], Framed: batch[off:len(batch):len(batch)], Size: len(v), Hash: hashValue(v), off: off}
	}
	for _, r := range out {
		r.batch = batch
	}
	return out
}

// FramedRuns calls yield with the framing of rs in order, one call per run of resources framed
// next to each other in one batch (NewResources), so their bytes go out as one buffer.
func FramedRuns(rs []*Resource, yield func([]byte)) {
	for i := 0; i < len(rs); {
		r := rs[i]
		if r.batch == nil {
			yield(r.Framed)
			i++
			continue
		}
		start, end := r.off, r.off+len(r.Framed)
		j := i + 1
		for ; j < len(rs); j++ {
			n := rs[j]
			if n.batch == nil || &n.batch[0] != &r.batch[0] || n.off != end {
				break
			}
			end += len(n.Framed)
		}
		yield(r.batch[start:end:end])
		i = j
	}
}

// anyLen is the length of the Any holding a value of n bytes of typeURL.
func anyLen(typeURL string, n int) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(len(typeURL)) + protowire.SizeTag(2) + protowire.SizeBytes(n)
}

// framedLen is the length of a resource of typeURL with a value of n bytes, framed.
func framedLen(typeURL string, n int) int {
	return protowire.SizeTag(2) + protowire.SizeBytes(anyLen(typeURL, n))
}

func appendFramed(b []byte, typeURL string, value []byte) []byte {
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(anyLen(typeURL, len(value))))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, typeURL)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, value)
}

// hashValue is a fixed function of the bytes, so Delta versions survive a control-plane restart.
func hashValue(value []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(value)
	return h.Sum64()
}

// Key names a cache entry.
type Key struct {
	TypeURL string
	Class   string
	// Name is the resource name, or "" for a wildcard list.
	Name string
}

// Result says how a read was served.
type Result string

// Read results.
const (
	Hit    Result = "hit"
	Miss   Result = "miss"
	Bypass Result = "bypass"
)

// Counter counts cache reads (xds_cache_reads{type,result}).
type Counter interface {
	CacheRead(typeURL string, r Result)
}

// Stats is a snapshot of the cache's counters.
type Stats struct {
	Hits, Misses, Bypasses uint64
	Entries                int
	Bytes                  int64
}

type entry struct {
	gen   uint64
	ready chan struct{} // closed once res/err are set
	res   []*Resource
	err   error
	bytes int64
}

// Cache is safe for concurrent use.
type Cache struct {
	counter Counter

	mu      sync.Mutex
	entries map[Key]*entry
	stats   Stats
}

// New returns an empty cache that reports reads to counter (nil: not reported).
func New(counter Counter) *Cache {
	return &Cache{counter: counter, entries: make(map[Key]*entry)}
}

// BuildFunc builds the resources of a missed entry.
type BuildFunc func() ([]*Resource, error)

// Get returns the resources stored under key at generation gen, building them with build on a
// miss. Errors are returned and never cached. The returned slice must not be modified.
func (c *Cache) Get(key Key, gen uint64, build BuildFunc) ([]*Resource, Result, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	switch {
	case ok && e.gen == gen:
		c.mu.Unlock()
		<-e.ready
		if e.err != nil {
			// The builder failed; build again for this caller rather than share an error.
			res, err := build()
			c.note(key.TypeURL, Bypass)
			return res, Bypass, err
		}
		c.note(key.TypeURL, Hit)
		return e.res, Hit, nil
	case ok && e.gen > gen:
		c.mu.Unlock()
		res, err := build()
		c.note(key.TypeURL, Bypass)
		return res, Bypass, err
	}
	ne := &entry{gen: gen, ready: make(chan struct{})}
	if ok {
		c.stats.Bytes -= e.bytes
		c.stats.Entries--
	}
	c.entries[key] = ne
	c.stats.Entries++
	c.mu.Unlock()

	res, err := build()
	var size int64
	for _, r := range res {
		size += int64(len(r.Framed))
	}
	ne.res, ne.err = res, err
	close(ne.ready)
	c.mu.Lock()
	ne.bytes = size // under the lock: a concurrent replacement reads it there
	if err != nil {
		if c.entries[key] == ne {
			delete(c.entries, key)
			c.stats.Entries--
		}
	} else if c.entries[key] == ne {
		c.stats.Bytes += ne.bytes
	}
	c.mu.Unlock()
	c.note(key.TypeURL, Miss)
	return res, Miss, err
}

// CountHits counts n reads served without the cache's lock from resources it handed out
// earlier (a whole-subscription answer shared by the streams that ask the same names), so the
// hit ratio means what it meant when each of them read every name.
func (c *Cache) CountHits(typeURL string, n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.stats.Hits += uint64(n)
	c.mu.Unlock()
	switch k := c.counter.(type) {
	case nil:
	case BulkCounter:
		k.CacheReads(typeURL, Hit, n)
	default:
		for range n {
			k.CacheRead(typeURL, Hit)
		}
	}
}

// BulkCounter is a Counter that can count n reads at once.
type BulkCounter interface {
	Counter
	CacheReads(typeURL string, r Result, n int)
}

// note counts one read.
func (c *Cache) note(typeURL string, r Result) {
	c.mu.Lock()
	switch r {
	case Hit:
		c.stats.Hits++
	case Miss:
		c.stats.Misses++
	case Bypass:
		c.stats.Bypasses++
	}
	c.mu.Unlock()
	if c.counter != nil {
		c.counter.CacheRead(typeURL, r)
	}
}

// Peek returns the resources stored under key at generation gen, counting a hit; on a miss it
// counts nothing (the caller builds and calls Put, which counts the miss). An entry still being
// built by Get is not waited for: Peek reports it missing.
func (c *Cache) Peek(key Key, gen uint64) ([]*Resource, bool) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok && e.gen == gen {
		select {
		case <-e.ready:
			if e.err == nil {
				c.mu.Unlock()
				c.note(key.TypeURL, Hit)
				return e.res, true
			}
		default:
		}
	}
	c.mu.Unlock()
	return nil, false
}

// Put stores resources built after a Peek miss and counts the miss. A stored entry of a newer
// generation is kept (the read counts as a bypass).
func (c *Cache) Put(key Key, gen uint64, res []*Resource) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		if e.gen > gen {
			c.mu.Unlock()
			c.note(key.TypeURL, Bypass)
			return
		}
		select {
		case <-e.ready:
		default:
			c.mu.Unlock() // a concurrent Get is building it; let it finish
			c.note(key.TypeURL, Miss)
			return
		}
		c.stats.Bytes -= e.bytes
		c.stats.Entries--
	}
	ne := &entry{gen: gen, ready: closedChan, res: res}
	for _, r := range res {
		ne.bytes += int64(len(r.Framed))
	}
	c.entries[key] = ne
	c.stats.Entries++
	c.stats.Bytes += ne.bytes
	c.mu.Unlock()
	c.note(key.TypeURL, Miss)
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// EvictOlder removes every entry of typeURL ("" = all types) whose generation is below gen.
func (c *Cache) EvictOlder(typeURL string, gen uint64) int {
	return c.Evict(func(k Key, g uint64) bool { return (typeURL == "" || k.TypeURL == typeURL) && g < gen })
}

// Evict removes every built entry for which stale(key, generation) is true (entries still being
// built belong to their builders and stay).
func (c *Cache) Evict(stale func(k Key, gen uint64) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, e := range c.entries {
		if !stale(k, e.gen) {
			continue
		}
		select {
		case <-e.ready:
		default:
			continue // still being built; its builder owns it
		}
		delete(c.entries, k)
		c.stats.Entries--
		c.stats.Bytes -= e.bytes
		n++
	}
	return n
}

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
