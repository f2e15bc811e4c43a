package machine

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"sync/atomic"
	"time"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/internal/rxstamp"
)

// Codec is a client's gRPC codec: protobuf, without grpc-go's pooled marshalling buffers, with
// the client's node encoded once, and reading SotW responses against the fleet's Interner.
//
// Requests are small and marshalled once: a plain proto.Marshal into an unpooled slice costs
// one allocation, where the default codec takes a pooled buffer sized to the next tier. Envoy
// sends its node on every request, and a node's metadata is a map of Struct values, the most
// expensive part of a request to encode (reflection, an allocation per entry), and its decoded
// form costs more memory than the rest of an idle client's state. So the client keeps only the
// node's bytes, encoded once by NewCodec: its machine puts a stand-in node (holding just the
// id) in the requests it builds, and the Codec writes the node's bytes in its place, followed
// by the rest of the request. Protobuf fields may come in any order, so the server decodes the
// request the client would have sent with the full node. Likewise a SotW request repeats every
// EDS (or RDS) name on every ACK, tens of KB on a large mesh: when the names are a shared set's
// references (resset.go), the Codec sends the set's encoding of them as a second buffer, shared
// by every client that holds that set, instead of encoding the list again.
//
// Responses are decoded straight from the received buffer: when a message spans one buffer it
// is read in place. A SotW response in several pieces (a full config comes in 16 KiB DATA
// frames) is read where its pieces lie too (readSotwPieces: from the response memo, or resource
// by resource); only a message it cannot read so is gathered into a buffer of the fleet's pool,
// freed when Unmarshal returns. Nothing decoded points into any of these buffers afterwards. A SotW response's
// resources are not unpacked into Anys (readSotw): while the bytes are still in the buffer, the
// Codec hashes each resource and looks it up in the Interner. A resource some client already
// decoded (every client but the first, for the same config) is handed to the machine as that
// shared decoded resource and its bytes are never copied; the first client to read one decodes
// and shares it there and then (one copy of its bytes, the Interner's). Only a resource that
// fails the client's validation is copied out for the machine to reject.
// proto.Unmarshal would have allocated every resource again, a MB per client for a large mesh.
//
// The codec also stamps each response's receive time: Unmarshal is where the transport hands
// over a whole message's bytes, before any decoding, so that is where the push latency ends.
// grpc-go calls it on the goroutine that called RecvMsg (the client's receiving goroutine), which
// reads the stamp with LastRecv right after Recv returns.
type Codec struct {
	node *corev3.Node // the stand-in the client's requests carry; nil when no node
	// nodeField is the encoding of the client's real node as a length-delimited field's
	// value (its length, then its bytes), sent as a buffer of its own after the field's tag
	// (nodeTags): no request copies it.
	nodeField []byte
	nodeBuf   mem.Buffer // nodeField, boxed once
	now       func() time.Time
	recvAt    time.Time // entry of the last Unmarshal; only read by the receiving goroutine
	// rx, when set, gives the kernel's receive time of each message (package
	// internal/rxstamp); recvAt is then that time instead of Unmarshal's.
	rx rxstamp.Source

	// What readSotw needs: the table decoded resources are looked up in, the client's
	// validation mode (part of the key) and the pool messages spanning several buffers are
	// gathered into (nil: grpc-go's default pool).
	interner *Interner
	mode     checkMode
	pool     mem.BufferPool
	// res and read are the resources of the last SotW response Unmarshal read itself (the
	// response then holds none); only used by the receiving goroutine, like recvAt.
	res  []item
	read bool
	run  *respEntry // the memo's run whose items res is (Resources.run)
	// kept: the message being read lies in bytes nothing changes or reuses (immutable), which
	// the memo may keep as they are.
	kept bool
	// spare is the request encoding the transport gave back last (see reqBufs): set by the
	// goroutine that frees it, taken by Marshal.
	spare atomic.Pointer[reqBufs]
}

// immutable is what a stamp source (Config.Stamps) may also say of the message being decoded:
// that its n bytes lie where nothing changes or reuses them (h2client's shared copies).
type immutable interface{ Immutable(n int) bool }

// CodecConfig configures a client's Codec.
type CodecConfig struct {
	// Machine is the configuration of the client's machine, with the client's real node: the
	// codec encodes that node once, and looks resources up in its Interner under its
	// validation mode.
	Machine Config
	// Now stamps receive times (nil: time.Now).
	Now func() time.Time
	// Pool is where a message spanning several buffers is gathered (nil: grpc-go's default
	// pool).
	Pool mem.BufferPool
	// Stamps, when set, gives the kernel's receive time of each message (package
	// internal/rxstamp).
	Stamps rxstamp.Source
}

// NewCodec returns the codec of one client; the client's machine must be given Node, the
// stand-in, instead of the real node.
func NewCodec(cfg CodecConfig) (*Codec, error) {
	c, err := newCodec(cfg.Machine.Node, cfg.Now)
	if err != nil {
		return nil, err
	}
	c.interner, c.mode, c.pool, c.rx = cfg.Machine.Interner, cfg.Machine.checkMode(), cfg.Pool, cfg.Stamps
	return c, nil
}

// Node is the stand-in for the client's node that its machine must put in its requests (nil
// when there is no node): the codec writes the real node's bytes in its place.
func (c *Codec) Node() *corev3.Node { return c.node }

// newCodec encodes node (which may be nil) for the Codec of one client; the client's machine
// must put c.node, the stand-in, in its requests.
func newCodec(node *corev3.Node, now func() time.Time) (*Codec, error) {
	if now == nil {
		now = time.Now
	}
	c := &Codec{now: now}
	if node != nil {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(node)
		if err != nil {
			return nil, fmt.Errorf("encode node: %w", err)
		}
		c.node = &corev3.Node{Id: node.GetId()}
		c.nodeField = protowire.AppendBytes(make([]byte, 0, protowire.SizeBytes(len(b))), b)
		c.nodeBuf = mem.SliceBuffer(c.nodeField)
	}
	return c, nil
}

// CallOption makes a stream use the codec.
func (c *Codec) CallOption() grpc.CallOption { return grpc.ForceCodecV2(c) }

// Name is the codec's content subtype: proto.
func (*Codec) Name() string { return "proto" }

// Marshal encodes a request, writing the client's node and a shared set's names as kept
// encoded (see Codec): each is a buffer of its own, beside the rest of the request, so that a
// request encodes only its own few fields, in one allocation (reqBufs) when they are short.
func (c *Codec) Marshal(v any) (mem.BufferSlice, error) {
	// The request belongs to the client goroutine that is sending it (Send marshals on the
	// caller's goroutine), so its node and names can be taken out while the rest is encoded.
	switch r := v.(type) {
	case *discoveryv3.DiscoveryRequest:
		node := c.nodeField != nil && r.Node == c.node
		names := c.interner.namesWire(r.ResourceNames)
		if !node && names == nil {
			break
		}
		saved, savedNames := r.Node, r.ResourceNames
		if node {
			r.Node = nil
		}
		if names != nil {
			r.ResourceNames = nil
		}
		rb := c.reqBufs()
		err := rb.marshal(r)
		r.Node, r.ResourceNames = saved, savedNames
		if err != nil {
			return nil, err
		}
		// Protobuf fields may come in any order: the node first, the shared encoding of the
		// names last.
		out := rb.bufs[:0]
		if node {
			out = append(out, sotwNodeTag, c.nodeBuf)
		}
		out = append(out, &rb.rest)
		rb.refs.Store(1)
		if names != nil {
			rb.names.SliceBuffer = names
			out = append(out, &rb.names)
			rb.refs.Store(2)
		}
		return out, nil
	case *discoveryv3.DeltaDiscoveryRequest:
		if c.nodeField != nil && r.Node == c.node {
			r.Node = nil
			rb := c.reqBufs()
			err := rb.marshal(r)
			r.Node = c.node
			if err != nil {
				return nil, err
			}
			rb.refs.Store(1)
			return append(rb.bufs[:0], deltaNodeTag, c.nodeBuf, &rb.rest), nil
		}
	}
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("fakeenvoy codec: cannot marshal %T: not a proto message", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

// Field numbers of node in DiscoveryRequest and DeltaDiscoveryRequest, and of resource_names in
// DiscoveryRequest.
const (
	sotwNodeField  protowire.Number = 2
	deltaNodeField protowire.Number = 1
	sotwNamesField protowire.Number = 3
)

// The tags of the node field, each a buffer every request shares (read only).
var (
	sotwNodeTag  mem.Buffer = mem.SliceBuffer(protowire.AppendTag(nil, sotwNodeField, protowire.BytesType))
	deltaNodeTag mem.Buffer = mem.SliceBuffer(protowire.AppendTag(nil, deltaNodeField, protowire.BytesType))
)

// reqBufs is one request's encoding as Marshal returns it, in one allocation: the buffers
// (bufs backs the BufferSlice; rest and names are pointed to, so not boxed one by one) and room
// for the request's own fields (version, type URL, nonce: tens of bytes; big when they do not
// fit, an ACK restating many names no shared set holds).
//
// The transport owns it from Marshal until it has freed every buffer of it (mem.Buffer's Free,
// once each, and once more for each Ref): it may keep them until they are written (h2client
// queues a request the windows hold back; grpc-go's writer goroutine writes every one later).
// The last Free gives it back to its codec, whose next Marshal reuses it (h2client frees each
// once its bytes are written or copied; grpc-go v1.85's SendMsg and writer free each once it
// is written, its retry buffer once the stream commits); a transport that never frees them
// all leaves it to the GC, and the codec makes another.
type reqBufs struct {
	codec *Codec
	refs  atomic.Int32 // the transport's references to rest and names
	bufs  [4]mem.Buffer
	rest  ownedBuf
	names ownedBuf
	big   []byte
	space [112]byte
}

// ownedBuf is a buffer of a reqBufs: its Ref and Free count the transport's references to
// the reqBufs.
type ownedBuf struct {
	mem.SliceBuffer
	rb *reqBufs
}

// Ref implements mem.Buffer.
func (b *ownedBuf) Ref() { b.rb.refs.Add(1) }

// Free implements mem.Buffer: the last reference freed gives the reqBufs back to its codec,
// without a room larger than maxKeptRequest (a private client's ACK of many names: each of
// thousands of clients would keep its own).
func (b *ownedBuf) Free() {
	if rb := b.rb; rb.refs.Add(-1) == 0 {
		if cap(rb.big) > maxKeptRequest {
			rb.big = nil
		}
		rb.codec.spare.Store(rb)
	}
}

// maxKeptRequest bounds the room for a request's own fields a codec keeps between requests: an
// ACK's names below minWireNames (those of a shared set are sent as the set's encoding).
const maxKeptRequest = 4 << 10

// reqBufs returns the reqBufs the transport last gave back, or a new one.
func (c *Codec) reqBufs() *reqBufs {
	if rb := c.spare.Swap(nil); rb != nil {
		return rb
	}
	rb := &reqBufs{codec: c}
	rb.rest.rb, rb.names.rb = rb, rb
	return rb
}

// vtMarshaler is a message with vtprotobuf's generated encoder (built with the vtprotobuf tag).
type vtMarshaler interface {
	SizeVT() int
	MarshalToSizedBufferVTStrict([]byte) (int, error)
}

// marshal encodes m (a request without its node and shared names: a few short fields) into
// rb.rest: with the generated encoder when there is one, else proto's.
func (rb *reqBufs) marshal(m proto.Message) error {
	vt, ok := m.(vtMarshaler)
	if !ok {
		// proto's encoder, appending to the room the last request left (a larger one is
		// kept for the next).
		buf := rb.space[:0]
		if cap(rb.big) > len(rb.space) {
			buf = rb.big[:0]
		}
		b, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
		if cap(b) > len(rb.space) {
			rb.big = b[:cap(b)]
		}
		rb.rest.SliceBuffer = b
		return err
	}
	size := vt.SizeVT()
	b := rb.space[:]
	if size > len(rb.space) {
		if cap(rb.big) < size {
			rb.big = make([]byte, size)
		}
		b = rb.big
	}
	b = b[:size]
	n, err := vt.MarshalToSizedBufferVTStrict(b)
	if err != nil {
		return err
	}
	rb.rest.SliceBuffer = b[size-n:]
	return nil
}

// Unmarshal stamps the receive time and decodes a response, reading a SotW response's
// resources itself (see Codec and LastRead).
func (c *Codec) Unmarshal(data mem.BufferSlice, v any) error {
	if c.now != nil {
		c.recvAt = c.now()
	} else {
		c.recvAt = time.Now()
	}
	if c.rx != nil {
		// The kernel's arrival time of the message's last byte, carried to the monotonic
		// clock as how long before now it was (see package internal/rxstamp).
		if at, ok := c.rx.Take(data.Len()); ok {
			if age := c.recvAt.Round(0).Sub(at); age > 0 {
				c.recvAt = c.recvAt.Add(-age)
			}
		}
	}
	c.res, c.read, c.run = nil, false, nil
	c.kept = c.immutable(data)
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("fakeenvoy codec: cannot unmarshal into %T: not a proto message", v)
	}
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		if r, ok := v.(*discoveryv3.DiscoveryResponse); ok && c.interner.responses() != nil {
			// Read where the pieces lie, without gathering them.
			if res, ok := c.readSotwPieces(newPieces(data), r); ok {
				c.res, c.read = res, true
				return nil
			}
		}
		pool := c.pool
		if pool == nil {
			pool = mem.DefaultBufferPool()
		}
		buf := data.MaterializeToBuffer(pool)
		defer buf.Free()
		b = buf.ReadOnlyData()
	}
	if r, ok := v.(*discoveryv3.DiscoveryResponse); ok {
		if res, ok := c.readSotw(b, r); ok {
			c.res, c.read = res, true
			return nil
		}
		proto.Reset(r)
	}
	return proto.Unmarshal(b, m)
}

// readSotw decodes a DiscoveryResponse from b into r, except its resources, which it returns
// (see Codec). ok is false when b holds something readSotw leaves to proto.Unmarshal (a
// malformed message, an Any with unknown fields or a type URL that is not UTF-8): the caller
// then decodes b as usual, so errors stay proto's.
func (c *Codec) readSotw(b []byte, r *discoveryv3.DiscoveryResponse) (res []item, ok bool) {
	// One pass over the top-level fields: where the resources lie, and the rest (every field
	// but the resources: where each lies, decoded below).
	var rest fieldRanges
	first, end, k := -1, -1, 0
	contiguous := true
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return nil, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
		if m < 0 {
			return nil, false
		}
		if num == 2 && typ == protowire.BytesType {
			if first < 0 {
				first = off
			} else if end != off {
				contiguous = false
			}
			end = off + n + m
			k++
		} else {
			rest.add(off, off+n+m)
		}
		off += n + m
	}
	// The fleet's clients receive the same resources' bytes (only the version and nonce
	// differ): a run of resources some client already read is taken from the memo whole.
	memo := c.interner.responses()
	var key respKey
	c.run = nil
	if memo != nil && contiguous && k > 0 {
		region := b[first:end]
		key = respKey{hash: runHash(region), n: len(region), mode: c.mode}
		if res, c.run = memo.get(key, region); res == nil {
			if done := memo.lead(key); done != nil {
				defer done()
			} else {
				res, c.run = memo.get(key, region)
			}
		}
	}
	if res == nil {
		res = make([]item, 0, k)
		fresh := false // this read decoded a resource no client had
		for off := max(first, 0); off < len(b) && len(res) < k; {
			num, typ, n := protowire.ConsumeTag(b[off:])
			m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
			if num == 2 && typ == protowire.BytesType {
				v, _ := protowire.ConsumeBytes(b[off+n:])
				w, decoded, ok := c.readAny(v)
				if !ok {
					return nil, false
				}
				res = append(res, w)
				fresh = fresh || decoded
			}
			off += n + m
		}
		// A run this read decoded some of is new to the fleet: kept on trial, proven when a
		// second client reads it (see respMemo).
		if memo != nil && contiguous && k > 0 {
			c.keep(memo, key, b[first:end:end], res, fresh)
		}
	}
	if err := rest.read(b, r); err != nil {
		return nil, false
	}
	return res, true
}

// readRest decodes a response's fields other than its resources (rest) into r, as
// proto.UnmarshalOptions{Merge: true} does. The usual ones, version_info, type_url and nonce,
// are read here (every response carries them, and proto's reflection costs more than the rest
// of a small push's read); a response with any other field, or a string that is not UTF-8, is
// left to proto whole, so that its errors stay proto's.
func readRest(rest []byte, r *discoveryv3.DiscoveryResponse) error {
	var f restFields
	for b := rest; len(b) > 0; {
		n := f.take(b)
		if n < 0 {
			return proto.UnmarshalOptions{Merge: true}.Unmarshal(rest, r)
		}
		b = b[n:]
	}
	f.set(r)
	return nil
}

// restFields are the usual fields of a response other than its resources (see readRest).
type restFields struct {
	version, typeURL, nonce []byte
	has                     uint8
}

// take reads the field b starts with when it is one of the usual ones, valid, and returns its
// length; -1 when proto must read the fields.
func (f *restFields) take(b []byte) int {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || typ != protowire.BytesType || (num != 1 && num != 4 && num != 5) {
		return -1
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || !utf8.Valid(v) {
		return -1
	}
	switch num { // a repeated field: the last one counts
	case 1:
		f.version = v
		f.has |= 1
	case 4:
		f.typeURL = v
		f.has |= 2
	case 5:
		f.nonce = v
		f.has |= 4
	}
	return n + m
}

// set sets the fields f read in r. The version and nonce, when both came, are one string's
// halves: one allocation, not two (the client keeps both, as the last ones of the type).
func (f *restFields) set(r *discoveryv3.DiscoveryResponse) {
	switch f.has & 5 {
	case 5:
		both := string(f.version) + string(f.nonce)
		r.VersionInfo, r.Nonce = both[:len(f.version)], both[len(f.version):]
	case 1:
		r.VersionInfo = string(f.version)
	case 4:
		r.Nonce = string(f.nonce)
	}
	if f.has&2 != 0 {
		if t, ok := typeOfBytes(f.typeURL); ok {
			r.TypeUrl = t.url() // no copy of a known type's URL
		} else {
			r.TypeUrl = string(f.typeURL)
		}
	}
}

// fieldRanges are where a response's fields other than its resources lie in its bytes (one
// field each), the first few without an allocation.
type fieldRanges struct {
	n     int
	at    [4][2]int
	extra [][2]int
}

func (f *fieldRanges) add(from, to int) {
	if f.n < len(f.at) {
		f.at[f.n] = [2]int{from, to}
	} else {
		f.extra = append(f.extra, [2]int{from, to})
	}
	f.n++
}

func (f *fieldRanges) get(i int) (from, to int) {
	if i < len(f.at) {
		return f.at[i][0], f.at[i][1]
	}
	x := f.extra[i-len(f.at)]
	return x[0], x[1]
}

// read decodes the fields of b they locate into r, as readRest does, gathering them only when
// proto must read them.
func (f *fieldRanges) read(b []byte, r *discoveryv3.DiscoveryResponse) error {
	var rf restFields
	fast := true
	for i := range f.n {
		from, to := f.get(i)
		if rf.take(b[from:to]) != to-from {
			fast = false
			break
		}
	}
	if fast {
		rf.set(r)
		return nil
	}
	var rest []byte
	for i := range f.n {
		from, to := f.get(i)
		rest = append(rest, b[from:to]...)
	}
	return proto.UnmarshalOptions{Merge: true}.Unmarshal(rest, r)
}

// immutable says whether data lies in bytes nothing changes or reuses (the stamp source says
// so). Not inlined, for Unmarshal's frame (see keep).
//
//go:noinline
func (c *Codec) immutable(data mem.BufferSlice) bool {
	im, ok := c.rx.(immutable)
	return ok && im.Immutable(data.Len())
}

// keep gives the memo the run region read into res. When the message lies in immutable bytes
// (a copy shared by the clients that received it), the memo keeps those bytes, and the next
// of those clients compares its run with the same bytes in place (bytes.Equal's first test).
//
// Not inlined: its closures would widen readSotw's frame, which is on the fleet's deepest
// stacks (the decoding below it), whose size is part of every client's memory.
//
//go:noinline
func (c *Codec) keep(memo *respMemo, key respKey, region []byte, res []item, fresh bool) {
	if !c.kept {
		memo.put(key, region, res, fresh)
		return
	}
	memo.putFunc(key, func(kept []byte) bool { return bytes.Equal(kept, region) }, func() []byte { return region }, res, fresh)
}

// readAny reads one google.protobuf.Any (type_url, value) of a response; decoded says it
// decoded the resource for the Interner (no client had).
func (c *Codec) readAny(b []byte) (w item, decoded, ok bool) {
	var url, val []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || (num != 1 && num != 2) {
			return item{}, false, false
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return item{}, false, false
		}
		if num == 1 {
			url = v
		} else {
			val = v
		}
		b = b[n+m:]
	}
	if !utf8.Valid(url) {
		return item{}, false, false
	}
	w = item{size: len(val), hashed: true, hash: maphash.Bytes(hashSeed, val)}
	nb, ok := readNameBytes(val)
	w.nameOK = ok
	if t, tok := typeOfBytes(url); tok {
		w.typeURL = t.url() // no per-resource copy of the type URL
		w.hit = c.interner.lookup(internKey{hash: w.hash, t: t, mode: c.mode}, val)
		if w.hit == nil && c.interner != nil && ok {
			// The first client to read a resource decodes and shares it now, not when its
			// machine applies it: when a fleet connects at once, every client reads its first
			// response before any applies one, and each would copy out the same MB (a GB for
			// 1,000 clients) only to find the resources shared when it applies them.
			raw := bytes.Clone(val)
			if d, err := c.interner.decode(t, c.mode, w.hash, string(nb), raw); err == nil {
				w.hit, decoded = d, true
			} else {
				w.raw = raw // the machine decodes it again and rejects it
			}
		}
	} else {
		w.typeURL = string(url)
	}
	switch {
	case !ok:
	case w.hit != nil && string(nb) == w.hit.name:
		w.name = w.hit.name
	default:
		w.name = string(nb)
	}
	if w.hit == nil && w.raw == nil {
		w.raw = bytes.Clone(val)
	}
	return w, decoded, true
}

// LastRead returns the resources of the last response if Unmarshal read them itself (read
// false: they are in the response), and clears them: the owner passes them to
// Machine.OnSotwRead.
func (c *Codec) LastRead() (res Resources, read bool) {
	res, read = Resources{items: c.res, run: c.run}, c.read
	c.res, c.read, c.run = nil, false, nil
	return res, read
}

// LastRecv returns the receive stamp of the message the last Recv returned, and clears it (a
// zero time means the message did not pass through this Codec).
func (c *Codec) LastRecv() time.Time {
	t := c.recvAt
	c.recvAt = time.Time{}
	return t
}
