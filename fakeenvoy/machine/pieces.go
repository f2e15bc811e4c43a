package machine

import (
	"bytes"
	"hash/maphash"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// pieces is a message held in several pieces (the DATA frames it came in, where the transport
// read them), read mostly forwards: readSotwPieces finds a run the memo keeps without gathering the
// message first. A full config of a MB is 64 frames; gathering it cost every client a copy of
// the MB, and a thousand clients gathering at once a GB of fresh buffers.
type pieces struct {
	parts [][]byte
	total int
	// The cursor: parts[i] starts at offset base.
	i, base int
	scratch [binary64]byte
}

// binary64 is room for the longest tag or length varint.
const binary64 = 10

func newPieces(data mem.BufferSlice) *pieces {
	p := &pieces{parts: make([][]byte, len(data))}
	for i, b := range data {
		p.parts[i] = b.ReadOnlyData()
		p.total += len(p.parts[i])
	}
	return p
}

// seek moves the cursor to the piece holding offset off (< total): forwards from where it is,
// or from the first piece.
func (p *pieces) seek(off int) {
	if off < p.base {
		p.i, p.base = 0, 0
	}
	for off >= p.base+len(p.parts[p.i]) {
		p.base += len(p.parts[p.i])
		p.i++
	}
}

// peek returns up to n (≤ binary64) bytes from off: in place when one piece holds them, else
// copied across pieces.
func (p *pieces) peek(off, n int) []byte {
	if n = min(n, p.total-off); n <= 0 {
		return nil
	}
	p.seek(off)
	if b := p.parts[p.i][off-p.base:]; len(b) >= n {
		return b[:n]
	}
	return p.appendRange(p.scratch[:0], off, off+n)
}

// each calls f with the pieces of [from, to), in order.
func (p *pieces) each(from, to int, f func([]byte)) {
	if from >= to {
		return
	}
	p.seek(from)
	for i, base := p.i, p.base; base < to; base, i = base+len(p.parts[i]), i+1 {
		b := p.parts[i]
		f(b[max(from-base, 0):min(to-base, len(b))])
	}
}

// bytes returns the bytes of [from, to): in place when one piece holds them, else copied into
// scratch (whose storage it may reuse).
func (p *pieces) bytes(from, to int, scratch *[]byte) []byte {
	if from >= to {
		return nil
	}
	p.seek(from)
	if b := p.parts[p.i][from-p.base:]; len(b) >= to-from {
		return b[:to-from]
	}
	*scratch = p.appendRange((*scratch)[:0], from, to)
	return *scratch
}

// appendRange appends the bytes of [from, to) to dst.
func (p *pieces) appendRange(dst []byte, from, to int) []byte {
	p.each(from, to, func(b []byte) { dst = append(dst, b...) })
	return dst
}

// equal reports whether the bytes of [from, to) are b.
func (p *pieces) equal(from, to int, b []byte) bool {
	if to-from != len(b) {
		return false
	}
	eq := true
	p.each(from, to, func(s []byte) {
		eq = eq && bytes.Equal(s, b[:len(s)])
		b = b[len(s):]
	})
	return eq
}

// runHash is runHash of the bytes [from, to).
func (p *pieces) runHash(from, to int) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	write := func(a, b int) { p.each(from+a, from+b, func(s []byte) { h.Write(s) }) }
	n := to - from
	if n <= runWhole {
		write(0, n)
	} else {
		sampleRun(n, write)
	}
	return h.Sum64()
}

// readSotwPieces is readSotw for a response in pieces: the items of its resources, from the
// memo when it keeps their run (or once it does, readRunPieces), else read resource by
// resource where they lie (a resource split between two pieces is copied), and the
// response's other fields decoded into r. ok is false, and r untouched, when the bytes are
// not a response it can read so (a field it cannot walk, resources not in one run, a resource
// it cannot read): the caller then gathers the message and reads it whole, and decides.
//
// A miss reads in place too: the clients of a push read its full config at about the same
// time, and those that find the run not kept yet would otherwise each gather a copy of the MB
// (push-1k's slow runs held 1.3 GB of such copies at once).
func (c *Codec) readSotwPieces(p *pieces, r *discoveryv3.DiscoveryResponse) (res []item, ok bool) {
	memo := c.interner.responses()
	if memo == nil {
		return nil, false
	}
	var rest []byte
	first, end, k := -1, -1, 0
	for off := 0; off < p.total; {
		num, typ, n := protowire.ConsumeTag(p.peek(off, binary64))
		if n < 0 {
			return nil, false
		}
		var m int
		switch typ {
		case protowire.BytesType:
			l, ln := protowire.ConsumeVarint(p.peek(off+n, binary64))
			if ln < 0 || l > uint64(p.total-off-n-ln) {
				return nil, false
			}
			m = ln + int(l)
		case protowire.VarintType:
			_, m = protowire.ConsumeVarint(p.peek(off+n, binary64))
		case protowire.Fixed32Type:
			m = 4
		case protowire.Fixed64Type:
			m = 8
		default:
			return nil, false
		}
		if m < 0 || m > p.total-off-n {
			return nil, false
		}
		if num == 2 && typ == protowire.BytesType {
			if first >= 0 && end != off {
				return nil, false // resources not in one run: the whole read decides
			}
			if first < 0 {
				first = off
			}
			end = off + n + m
			k++
		} else {
			rest = p.appendRange(rest, off, off+n+m)
		}
		off += n + m
	}
	if k == 0 {
		return nil, false
	}
	key := respKey{hash: p.runHash(first, end), n: end - first, mode: c.mode}
	same := func(region []byte) bool { return p.equal(first, end, region) }
	e := memo.findFunc(key, same)
	if e == nil {
		if done := memo.lead(key); done != nil {
			defer done()
		} else {
			e = memo.findFunc(key, same)
		}
	}
	if e == nil {
		var ok bool
		if res, e, ok = c.readRunPieces(p, first, end, k, key, same); !ok {
			return nil, false
		}
	}
	if e != nil {
		res = e.items // shared: read-only
	}
	if len(rest) > 0 {
		if err := readRest(rest, r); err != nil {
			proto.Reset(r)
			return nil, false
		}
	}
	c.run = e
	return res, true
}

// recheckEvery is how many bytes of a run readRunPieces reads between two looks in the memo.
const recheckEvery = 64 << 10

// readRunPieces reads the run [first, end) of k resources resource by resource where the
// pieces lie (a resource split between two pieces is copied), and keeps it in the memo under
// key. Every recheckEvery bytes it looks in the memo again, and stops when another client has
// kept the run meanwhile (e, with no items): when a fleet connects together, its clients finish
// receiving the same full config at about the same time, and each that started reading it
// before the first kept it would otherwise read all of it (720 of the 948 misses of one push-1k
// run stopped early). ok is false when a resource cannot be read so.
func (c *Codec) readRunPieces(p *pieces, first, end, k int, key respKey, same func([]byte) bool) (res []item, e *respEntry, ok bool) {
	memo := c.interner.responses()
	res = make([]item, 0, k)
	fresh := false // this read decoded a resource no client had
	var scratch []byte
	next := first + recheckEvery
	for off := first; off < end; {
		if off >= next {
			if kept := memo.findFunc(key, same); kept != nil {
				return nil, kept, true
			}
			next = off + recheckEvery
		}
		// Every field of the run is a resource, walked once already.
		_, _, n := protowire.ConsumeTag(p.peek(off, binary64))
		l, ln := protowire.ConsumeVarint(p.peek(off+n, binary64))
		from := off + n + ln
		w, decoded, ok := c.readAny(p.bytes(from, from+int(l), &scratch))
		if !ok {
			return nil, nil, false
		}
		res = append(res, w)
		fresh = fresh || decoded
		off = from + int(l)
	}
	// On trial when this read decoded some of it (see readSotw).
	memo.putFunc(key, same, func() []byte { return p.appendRange(make([]byte, 0, end-first), first, end) }, res, fresh)
	return res, nil, true
}
