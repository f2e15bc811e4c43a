package fakeenvoy

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// codec is every client's gRPC codec: protobuf, without grpc-go's pooled marshalling buffers.
//
// Requests are small and marshalled once: a plain proto.Marshal into an unpooled slice costs
// one allocation, where the default codec takes a pooled buffer sized to the next tier. Responses
// are decoded straight from the received buffer (no MaterializeToBuffer into the pool): when a
// message spans one buffer it is read in place; otherwise it is copied once into a fresh slice.
// proto.Unmarshal copies every bytes and string field, so nothing decoded points into a buffer
// gRPC recycles afterwards.
type codec struct{}

var codecOption = grpc.ForceCodecV2(codec{})

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
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

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("fakeenvoy codec: cannot unmarshal into %T: not a proto message", v)
	}
	if len(data) == 1 {
		return proto.Unmarshal(data[0].ReadOnlyData(), m)
	}
	return proto.Unmarshal(data.Materialize(), m)
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
