package fakeenvoy

import (
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// codec is a client's gRPC codec: protobuf, without grpc-go's pooled marshalling buffers, and
// with the client's node encoded once.
//
// Requests are small and marshalled once: a plain proto.Marshal into an unpooled slice costs
// one allocation, where the default codec takes a pooled buffer sized to the next tier. Envoy
// sends its node on every request, and a node's metadata is a map of Struct values, the most
// expensive part of a request to encode (reflection, an allocation per entry), and its decoded
// form costs more memory than the rest of an idle client's state. So the client keeps only the
// node's bytes, encoded once by newCodec: its machine puts a stand-in node (holding just the
// id) in the requests it builds, and the codec writes the node's bytes in its place, followed
// by the rest of the request. Protobuf fields may come in any order, so the server decodes the
// request the client would have sent with the full node. Responses
// are decoded straight from the received buffer (no MaterializeToBuffer into the pool): when a
// message spans one buffer it is read in place; otherwise it is copied once into a fresh slice.
// proto.Unmarshal copies every bytes and string field, so nothing decoded points into a buffer
// gRPC recycles afterwards.
//
// The codec also stamps each response's receive time: Unmarshal is where the transport hands
// over a whole message's bytes, before any decoding, so that is where the push latency ends.
// grpc-go calls it on the goroutine that called RecvMsg (the client's receive goroutine), which
// reads the stamp with lastRecv right after Recv returns.
type codec struct {
	node      *corev3.Node // the stand-in the client's requests carry; nil when no node
	nodeBytes []byte       // the encoding of the client's real node
	now       func() time.Time
	recvAt    time.Time // entry of the last Unmarshal; only read by the receiving goroutine
}

// newCodec encodes node (which may be nil) for the codec of one client; the client's machine
// must put c.node, the stand-in, in its requests.
func newCodec(node *corev3.Node, now func() time.Time) (*codec, error) {
	if now == nil {
		now = time.Now
	}
	c := &codec{now: now}
	if node != nil {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(node)
		if err != nil {
			return nil, fmt.Errorf("encode node: %w", err)
		}
		c.node, c.nodeBytes = &corev3.Node{Id: node.GetId()}, b
	}
	return c, nil
}

func (c *codec) callOption() grpc.CallOption { return grpc.ForceCodecV2(c) }

func (*codec) Name() string { return "proto" }

func (c *codec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := c.marshal(v)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

// Field numbers of node in DiscoveryRequest and DeltaDiscoveryRequest.
const (
	sotwNodeField  protowire.Number = 2
	deltaNodeField protowire.Number = 1
)

func (c *codec) marshal(v any) ([]byte, error) {
	// The request belongs to the client goroutine that is sending it (Send marshals on the
	// caller's goroutine), so its node can be taken out while the rest is encoded.
	switch r := v.(type) {
	case *discoveryv3.DiscoveryRequest:
		if c.nodeBytes != nil && r.Node == c.node {
			r.Node = nil
			defer func() { r.Node = c.node }()
			return c.withNode(sotwNodeField, r)
		}
	case *discoveryv3.DeltaDiscoveryRequest:
		if c.nodeBytes != nil && r.Node == c.node {
			r.Node = nil
			defer func() { r.Node = c.node }()
			return c.withNode(deltaNodeField, r)
		}
	}
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("fakeenvoy codec: cannot marshal %T: not a proto message", v)
	}
	return proto.Marshal(m)
}

// withNode encodes the node as field, then m (which has no node).
func (c *codec) withNode(field protowire.Number, m proto.Message) ([]byte, error) {
	size := proto.Size(m)
	b := make([]byte, 0, protowire.SizeTag(field)+protowire.SizeBytes(len(c.nodeBytes))+size)
	b = protowire.AppendTag(b, field, protowire.BytesType)
	b = protowire.AppendBytes(b, c.nodeBytes)
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}

func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	if c.now != nil {
		c.recvAt = c.now()
	} else {
		c.recvAt = time.Now()
	}
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("fakeenvoy codec: cannot unmarshal into %T: not a proto message", v)
	}
	if len(data) == 1 {
		return proto.Unmarshal(data[0].ReadOnlyData(), m)
	}
	return proto.Unmarshal(data.Materialize(), m)
}

// lastRecv returns the receive stamp of the message the last Recv returned, and clears it (a
// zero time means the message did not pass through this codec).
func (c *codec) lastRecv() time.Time {
	t := c.recvAt
	c.recvAt = time.Time{}
	return t
}

// newBufferPool returns the pool a fleet's connections read frames and messages into: a tier at
// every power of two from 256 B to 16 MiB. grpc-go's default pool jumps from 32 KiB to 1 MiB,
// so every message just over 32 KiB (a CDS response of a few hundred clusters) would take, and
// clear, a 1 MiB buffer.
func newBufferPool() mem.BufferPool {
	exps := make([]uint8, 0, 17)
	for e := uint8(8); e <= 24; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		// Only exponents above 63 fail; these are constants.
		return mem.DefaultBufferPool()
	}
	return p
}

// bufferPoolOption is the dial option that installs a fleet's buffer pool.
func bufferPoolOption(p mem.BufferPool) grpc.DialOption { return experimental.WithBufferPool(p) }
