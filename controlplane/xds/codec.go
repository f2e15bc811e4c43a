package xds

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	// The proto codec registers itself; this codec delegates to it.
	_ "google.golang.org/grpc/encoding/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
)

// encodedResponse is a DiscoveryResponse in wire form: the framed resources shared from the
// cache, then the per-stream fields (version, type URL, nonce) as a small tail. Protobuf allows
// fields in any order, so the concatenation decodes as one DiscoveryResponse.
type encodedResponse struct {
	resources []*cache.Resource
	tail      []byte
	// delta selects the DeltaDiscoveryResponse framing of the resources.
	delta bool
}

func (r *encodedResponse) framed(res *cache.Resource) []byte {
	if r.delta {
		return res.DeltaFramed()
	}
	return res.Framed
}

func (r *encodedResponse) size() int {
	n := len(r.tail)
	for _, res := range r.resources {
		n += len(r.framed(res))
	}
	return n
}

// responseTail encodes DiscoveryResponse fields 1 (version_info), 4 (type_url), 5 (nonce).
func responseTail(version, typeURL, nonce string) []byte {
	b := make([]byte, 0, len(version)+len(typeURL)+len(nonce)+8)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, version)
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendString(b, typeURL)
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendString(b, nonce)
	return b
}

// deltaTail encodes DeltaDiscoveryResponse fields 1 (system_version_info), 4 (type_url),
// 6 (removed_resources) and 5 (nonce).
func deltaTail(version, typeURL, nonce string, removed []string) []byte {
	b := responseTail(version, typeURL, nonce) // fields 1, 4 and 5 have the same numbers
	for _, name := range removed {
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendString(b, name)
	}
	return b
}

// codec is the server's codec: pre-encoded responses pass through as buffer slices that point
// at the cached bytes; everything else is ordinary protobuf, encoded and decoded without
// grpc-go's buffer pool (see Unmarshal).
type codec struct{ proto encoding.CodecV2 }

func newCodec() *codec { return &codec{proto: encoding.GetCodecV2("proto")} }

func (c *codec) Name() string { return "proto" }

func (c *codec) Marshal(v any) (mem.BufferSlice, error) {
	r, ok := v.(*encodedResponse)
	if !ok {
		m, ok := v.(proto.Message)
		if !ok {
			return c.proto.Marshal(v)
		}
		// Unpooled, for the same reason as Unmarshal.
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return r.buffers(mem.DefaultBufferPool()), nil
}

// packBelow and packChunk shape a response's buffers: a resource of packBelow bytes or more
// goes out as the cached bytes themselves; smaller ones are copied together into pooled chunks
// of packChunk bytes (an HTTP/2 frame's worth). grpc-go's writer gathers a frame's buffers in a
// slice it keeps only up to 64 entries: a frame of more than 64 resources (under 256 bytes
// each, small clusters) would cost it a fresh slice per frame, and us a buffer allocation per
// resource. Larger resources are not copied: copying costs more than it saves.
const (
	packBelow = 256
	packChunk = 16 << 10
)

// buffers returns the response's wire bytes as buffers: the resources (large ones shared with
// the cache, small ones packed into chunks from pool), then the tail.
func (r *encodedResponse) buffers(pool mem.BufferPool) mem.BufferSlice {
	out := make(mem.BufferSlice, 0, 4)
	var cur *[]byte
	flush := func() {
		if cur != nil {
			out = append(out, mem.NewBuffer(cur, pool))
			cur = nil
		}
	}
	for _, res := range r.resources {
		f := r.framed(res)
		if len(f) >= packBelow {
			flush()
			out = append(out, mem.SliceBuffer(f))
			continue
		}
		if cur != nil && len(*cur)+len(f) > packChunk {
			flush()
		}
		if cur == nil {
			cur = pool.Get(packChunk)
			*cur = (*cur)[:0]
		}
		*cur = append(*cur, f...)
	}
	flush()
	return append(out, mem.SliceBuffer(r.tail))
}

// Unmarshal decodes requests without grpc-go's buffer pool (see ServerOptions) and, for SotW
// requests, without copying them (sotwRequest keeps a reference to the transport's buffers).
func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *sotwRequest:
		return m.decodeBuffers(data)
	case proto.Message:
		if len(data) == 1 {
			return proto.Unmarshal(data[0].ReadOnlyData(), m) // valid only during this call, which is enough
		}
		return proto.Unmarshal(data.Materialize(), m)
	}
	return c.proto.Unmarshal(data, v)
}
