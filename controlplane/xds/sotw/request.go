package sotw

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Request is a DiscoveryRequest whose resource_names are decoded lazily. Envoy restates its
// whole subscription on every ACK: with a thousand EDS clusters that is a thousand strings per
// ACK per client, which made decoding ACKs the largest cost of an endpoint push. The codec
// decodes every other field, and only hashes the names (order-independent) and keeps their wire
// bytes; the names are decoded when the hash says the subscription changed. The wire bytes are
// read where the transport left them (a request over 16 KiB arrives in several buffers), never
// copied: the request holds a reference to the transport's buffers until Names or release.
type Request struct {
	discoveryv3.DiscoveryRequest // without ResourceNames, until Names is called

	namesHash  uint64
	namesCount int
	// namesOrder is an order-dependent fingerprint of the names (nameOrderStep over their
	// hashes, never 0): a request naming a set in an order already checked against it name by
	// name is recognised without reading the names again (NameSets.Lookup).
	namesOrder uint64
	raw        []byte          // the request's wire bytes (owned), rescanned by Names
	held       mem.BufferSlice // or the transport's buffers, referenced until Names or release
	decoded    bool
}

var namesSeed = maphash.MakeSeed()

// hashName is one name's contribution to a subscription hash; a subscription's hash is the sum,
// so the order of names does not matter.
func hashName(name []byte) uint64 { return maphash.Bytes(namesSeed, name) }

// nameOrderStep folds the next name's hash into an order-dependent fingerprint (a polynomial
// in the hashes with an odd multiplier: a permutation of the same names gives another value).
func nameOrderStep(order, h uint64) uint64 { return order*0x9e3779b97f4a7c15 + h }

// Decode fills r from the wire bytes of a DiscoveryRequest. owned says whether r may keep b
// (otherwise it is copied, once, and only when there are names to decode later).
func (r *Request) Decode(b []byte, owned bool) error {
	if err := r.scan([][]byte{b}); err != nil {
		return err
	}
	if r.namesCount > 0 {
		if !owned {
			b = bytes.Clone(b)
		}
		r.raw = b
	}
	return nil
}

// DecodeBuffers fills r from a request as the transport received it, without copying it: when
// it has names, r references data until Names or release.
func (r *Request) DecodeBuffers(data mem.BufferSlice) error {
	bufs := make([][]byte, len(data))
	for i, d := range data {
		bufs[i] = d.ReadOnlyData()
	}
	if err := r.scan(bufs); err != nil {
		return err
	}
	if r.namesCount > 0 {
		data.Ref()
		r.held = data
	}
	return nil
}

// Release drops the reference to the transport's buffers (a request whose names were not needed).
func (r *Request) Release() {
	if r.held != nil {
		if len(r.held) == 1 {
			r.raw = nil // it pointed into the buffer
		}
		r.held.Free()
		r.held = nil
	}
}

// scan decodes the fields other than resource_names from the request's bytes, given as
// consecutive pieces, and hashes and counts the names.
func (r *Request) scan(bufs [][]byte) error {
	c := wireCursor{bufs: bufs}
	var rest []byte
	var h maphash.Hash
	h.SetSeed(namesSeed)
	for !c.done() {
		mark := len(rest)
		tag, err := c.varint(&rest) // kept as received, in case the field is not a name
		if err != nil {
			return fmt.Errorf("decode DiscoveryRequest: %w", err)
		}
		num, typ := protowire.DecodeTag(tag)
		if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return fmt.Errorf("decode DiscoveryRequest: %w", errWire)
		}
		switch typ {
		case protowire.BytesType:
			n, err := c.varint(&rest)
			if err != nil || n > uint64(c.left()) {
				return fmt.Errorf("decode DiscoveryRequest field %d: %w", num, errWire)
			}
			if num == 3 {
				rest = rest[:mark]
				var hn uint64
				if p := c.contiguous(int(n)); p != nil {
					hn = hashName(p) // the common case, a name within one piece: no copy
				} else {
					h.Reset()
					c.take(int(n), func(p []byte) { _, _ = h.Write(p) })
					hn = h.Sum64()
				}
				r.namesHash += hn
				r.namesOrder = nameOrderStep(r.namesOrder, hn)
				r.namesCount++
				continue
			}
			c.take(int(n), func(p []byte) { rest = append(rest, p...) })
		case protowire.VarintType:
			if _, err := c.varint(&rest); err != nil {
				return fmt.Errorf("decode DiscoveryRequest field %d: %w", num, err)
			}
		case protowire.Fixed32Type, protowire.Fixed64Type:
			n := 4
			if typ == protowire.Fixed64Type {
				n = 8
			}
			if n > c.left() {
				return fmt.Errorf("decode DiscoveryRequest field %d: %w", num, errWire)
			}
			c.take(n, func(p []byte) { rest = append(rest, p...) })
		default:
			// Groups: no field of DiscoveryRequest is one; let proto decide on the whole message.
			return r.scanWhole(bufs)
		}
	}
	r.namesOrder |= 1 // never 0, the empty slot of NameSet.orders
	return proto.Unmarshal(rest, &r.DiscoveryRequest)
}

// scanWhole is scan for messages it does not take apart itself: the bytes in one piece, every
// field but the names decoded by proto.
func (r *Request) scanWhole(bufs [][]byte) error {
	b := bytes.Join(bufs, nil)
	r.namesHash, r.namesCount, r.namesOrder = 0, 0, 0
	r.DiscoveryRequest = discoveryv3.DiscoveryRequest{}
	var rest []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("decode DiscoveryRequest: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("decode DiscoveryRequest field %d: %w", num, protowire.ParseError(m))
		}
		if num == 3 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			hn := hashName(v)
			r.namesHash += hn
			r.namesOrder = nameOrderStep(r.namesOrder, hn)
			r.namesCount++
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	r.namesOrder |= 1
	return proto.Unmarshal(rest, &r.DiscoveryRequest)
}

var errWire = errors.New("malformed protobuf wire data")

// wireCursor reads protobuf wire data laid out in consecutive pieces.
type wireCursor struct {
	bufs [][]byte
	i    int // current piece
	off  int // offset in it
}

func (c *wireCursor) skipEmpty() {
	for c.i < len(c.bufs) && c.off == len(c.bufs[c.i]) {
		c.i, c.off = c.i+1, 0
	}
}

func (c *wireCursor) done() bool { c.skipEmpty(); return c.i == len(c.bufs) }

func (c *wireCursor) left() int {
	n := -c.off
	for _, b := range c.bufs[c.i:] {
		n += len(b)
	}
	return n
}

// varint reads a varint and appends its bytes, as they were, to raw.
func (c *wireCursor) varint(raw *[]byte) (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c.skipEmpty()
		if c.i == len(c.bufs) {
			return 0, errWire
		}
		b := c.bufs[c.i][c.off]
		c.off++
		*raw = append(*raw, b)
		if shift == 63 && b > 1 {
			return 0, errWire // overflows 64 bits
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errWire
}

// contiguous returns the next n bytes and moves past them when they lie in one piece; nil (and
// no move) otherwise, or when n is 0.
func (c *wireCursor) contiguous(n int) []byte {
	c.skipEmpty()
	if n == 0 || c.i == len(c.bufs) || len(c.bufs[c.i])-c.off < n {
		return nil
	}
	p := c.bufs[c.i][c.off : c.off+n]
	c.off += n
	return p
}

// take passes the next n bytes to f, piece by piece (n must not exceed left()).
func (c *wireCursor) take(n int, f func([]byte)) {
	for n > 0 {
		c.skipEmpty()
		p := c.bufs[c.i][c.off:]
		k := min(n, len(p))
		f(p[:k])
		c.off += k
		n -= k
	}
}

// Names decodes and returns the resource names.
func (r *Request) Names() []string {
	if !r.decoded {
		names := make([]string, 0, r.namesCount)
		r.eachName(func(v []byte) bool {
			names = append(names, string(v))
			return true
		})
		r.ResourceNames, r.decoded = names, true
		r.Release()
		r.raw = nil
	}
	return r.ResourceNames
}

// eachName calls f with the wire bytes of every resource name, in order, until f returns false;
// it reports whether every call returned true. It decodes no strings: before Names it reads the
// request's bytes, copying a request that came in several buffers together once (and letting
// the transport's buffers go).
func (r *Request) eachName(f func([]byte) bool) bool {
	if r.decoded {
		for _, n := range r.ResourceNames {
			if !f([]byte(n)) {
				return false
			}
		}
		return true
	}
	if r.held != nil {
		if len(r.held) == 1 {
			r.raw = r.held[0].ReadOnlyData() // valid until release, which drops it too
		} else {
			r.raw = r.held.Materialize()
			r.Release()
		}
	}
	b := r.raw
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if n < 0 || m < 0 {
			return false // cannot happen after scan accepted the bytes
		}
		if num == 3 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			if !f(v) {
				return false
			}
		}
		b = b[n+m:]
	}
	return true
}

// Restates reports whether the request names exactly the subscription whose hash and size are
// given (a hash collision would only skip a subscription diff, never misroute a resource, and
// needs 2^64 luck).
func (r *Request) Restates(hash uint64, count int) bool {
	return r.namesHash == hash && r.namesCount == count
}

// NamesHash is the order-independent hash of the request's resource names, taken without
// decoding them: with NamesCount, what Restates compares.
func (r *Request) NamesHash() uint64 { return r.namesHash }

// NamesCount is the number of the request's resource names ("*" and duplicates included).
func (r *Request) NamesCount() int { return r.namesCount }
