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
}

func (r *encodedResponse) size() int {
	n := len(r.tail)
	for _, res := range r.resources {
		n += len(res.Framed)
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

// codec is the server's codec: pre-encoded responses pass through as buffer slices that point
// at the cached bytes; everything else is ordinary protobuf.
type codec struct{ proto encoding.CodecV2 }

func newCodec() *codec { return &codec{proto: encoding.GetCodecV2("proto")} }

func (c *codec) Name() string { return "proto" }

func (c *codec) Marshal(v any) (mem.BufferSlice, error) {
	r, ok := v.(*encodedResponse)
	if !ok {
		return c.proto.Marshal(v)
	}
	out := make(mem.BufferSlice, 0, len(r.resources)+1)
	for _, res := range r.resources {
		out = append(out, mem.SliceBuffer(res.Framed))
	}
	return append(out, mem.SliceBuffer(r.tail)), nil
}

func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(proto.Message); ok {
		return c.proto.Unmarshal(data, m)
	}
	return c.proto.Unmarshal(data, v)
}
