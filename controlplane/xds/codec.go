package xds

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	// The proto codec registers itself; this codec delegates to it.
	_ "google.golang.org/grpc/encoding/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/xds/sotw"
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
	return r.buffers(), nil
}

// buffers returns the response's wire bytes as buffers: the resources' cached framing itself
// (never copied: a response waiting for a slow client's window holds no bytes of its own), one
// buffer per run of resources generated together, then the tail.
func (r *encodedResponse) buffers() mem.BufferSlice {
	if r.delta {
		out := make(mem.BufferSlice, 0, len(r.resources)+1)
		for _, res := range r.resources {
			out = append(out, mem.SliceBuffer(r.framed(res)))
		}
		return append(out, mem.SliceBuffer(r.tail))
	}
	// Resources generated together are framed next to each other: one buffer per run (gRPC
	// gathers a 16 KiB frame from at most 64 buffers before it allocates).
	var out mem.BufferSlice
	cache.FramedRuns(r.resources, func(b []byte) { out = append(out, mem.SliceBuffer(b)) })
	return append(out, mem.SliceBuffer(r.tail))
}

// Unmarshal decodes requests without grpc-go's buffer pool (see ServerOptions) and, for SotW
// requests, without copying them (sotw.Request keeps a reference to the transport's buffers).
func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *sotw.Request:
		return m.DecodeBuffers(data)
	case proto.Message:
		if len(data) == 1 {
			return proto.Unmarshal(data[0].ReadOnlyData(), m) // valid only during this call, which is enough
		}
		return proto.Unmarshal(data.Materialize(), m)
	}
	return c.proto.Unmarshal(data, v)
}
