package xds

import (
	"bytes"
	"fmt"
	"hash/maphash"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// sotwRequest is a DiscoveryRequest whose resource_names are decoded lazily. Envoy restates its
// whole subscription on every ACK: with a thousand EDS clusters that is a thousand strings per
// ACK per client, which made decoding ACKs the largest cost of an endpoint push. The codec
// decodes every other field, and only hashes the names (order-independent) and keeps their wire
// bytes; the names are decoded when the hash says the subscription changed.
type sotwRequest struct {
	discoveryv3.DiscoveryRequest // without ResourceNames, until Names is called

	namesHash  uint64
	namesCount int
	raw        []byte // the request's wire bytes (owned), rescanned by Names
	decoded    bool
}

var namesSeed = maphash.MakeSeed()

// hashName is one name's contribution to a subscription hash; a subscription's hash is the sum,
// so the order of names does not matter.
func hashName(name []byte) uint64 { return maphash.Bytes(namesSeed, name) }

// decode fills r from the wire bytes of a DiscoveryRequest. owned says whether r may keep b
// (otherwise it is copied, once, and only when there are names to decode later).
func (r *sotwRequest) decode(b []byte, owned bool) error {
	raw := b
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
		field := b[:n+m]
		if num == 3 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			r.namesHash += hashName(v)
			r.namesCount++
		} else {
			rest = append(rest, field...)
		}
		b = b[n+m:]
	}
	if r.namesCount > 0 {
		if !owned {
			raw = bytes.Clone(raw)
		}
		r.raw = raw
	}
	return proto.Unmarshal(rest, &r.DiscoveryRequest)
}

// Names decodes and returns the resource names.
func (r *sotwRequest) Names() []string {
	if !r.decoded {
		r.decoded = true
		r.ResourceNames = make([]string, 0, r.namesCount)
		b := r.raw
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if num == 3 && typ == protowire.BytesType {
				v, _ := protowire.ConsumeBytes(b[n:])
				r.ResourceNames = append(r.ResourceNames, string(v))
			}
			b = b[n+m:]
		}
		r.raw = nil
	}
	return r.ResourceNames
}

// restates reports whether the request names exactly the subscription whose hash and size are
// given (a hash collision would only skip a subscription diff, never misroute a resource, and
// needs 2^64 luck).
func (r *sotwRequest) restates(hash uint64, count int) bool {
	return r.namesHash == hash && r.namesCount == count
}
