package h2client

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// sliceSource serves wire to the transport in reads of at most chunk bytes.
type sliceSource struct {
	b     []byte
	chunk int
}

func (s *sliceSource) recv(into receiver) (int, time.Time, error) {
	if len(s.b) == 0 {
		return 0, time.Time{}, errEOF
	}
	buf := into.buffer()
	n := copy(buf[:min(len(buf), s.chunk)], s.b)
	s.b = s.b[n:]
	return n, time.Unix(1e9, 0), nil
}

func frame(typ, flags byte, stream uint32, payload []byte) []byte {
	return append(appendFrameHeader(nil, len(payload), typ, flags, stream), payload...)
}

func headerBlock(enc *hpack.Encoder, buf *bytes.Buffer, kv ...string) []byte {
	buf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), buf.Bytes()...)
}

func grpcMessage(b []byte) []byte {
	p := make([]byte, 5, 5+len(b))
	binary.BigEndian.PutUint32(p[1:], uint32(len(b)))
	return append(p, b...)
}

// serverTranscript is a well-formed server side of stream 1: settings, headers, messages
// (one split over two frames, one padded), a ping, a window update, and OK trailers.
func serverTranscript() []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	resp, _ := proto.Marshal(&discoveryv3.DiscoveryResponse{VersionInfo: "1", TypeUrl: "t", Nonce: "n"})
	msg := grpcMessage(resp)
	settings := make([]byte, 6)
	binary.BigEndian.PutUint16(settings, settingInitialWindowSize)
	binary.BigEndian.PutUint32(settings[2:], 1<<20)
	padded := append(append([]byte{3}, msg...), 0, 0, 0)
	head := headerBlock(enc, &buf, ":status", "200", "content-type", "application/grpc", "x-md", "v")
	return bytes.Join([][]byte{
		frame(frameSettings, 0, 0, settings),
		frame(frameSettings, flagAck, 0, nil),
		frame(frameHeaders, 0, 1, head[:2]),
		frame(frameContinuation, flagEndHeaders, 1, head[2:]),
		frame(frameData, 0, 1, msg[:4]),
		frame(frameData, 0, 1, msg[4:]),
		frame(framePing, 0, 0, make([]byte, 8)),
		frame(frameWindowUpdate, 0, 0, []byte{0, 1, 0, 0}),
		frame(frameData, flagPadded, 1, padded),
		frame(frameHeaders, flagEndHeaders|flagEndStream, 1, headerBlock(enc, &buf, "grpc-status", "0")),
	}, nil)
}

// run plays wire as the server's side of a stream and returns the messages received and the
// stream's end.
func run(t testing.TB, wire []byte, chunk int) (int, error) {
	c := &Conn{cfg: Config{Target: "127.0.0.1:1", MaxRecvMsgSize: 1 << 16}.withDefaults()}
	tr := newTransport(&c.cfg, nil, &sliceSource{b: wire, chunk: chunk})
	tr.w = io.Discard
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := tr.open(ctx, c, encoding.GetCodecV2("proto"), "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources")
	if err != nil {
		t.Fatal(err)
	}
	// A request above the initial window: part of it waits for the server's window updates.
	if err := s.SendMsg(&discoveryv3.DiscoveryRequest{VersionInfo: string(make([]byte, 70000))}); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Header()
	n := 0
	for range 1000 {
		if err := s.RecvMsg(&discoveryv3.DiscoveryResponse{}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func TestServerTranscript(t *testing.T) {
	wire := serverTranscript()
	for _, chunk := range []int{1, 3, 9, 64, len(wire)} {
		n, err := run(t, wire, chunk)
		if n != 2 || err != io.EOF {
			t.Errorf("reads of %d bytes: %d messages, end %v; want 2, io.EOF", chunk, n, err)
		}
	}
}

// FuzzServerBytes plays arbitrary bytes as the server's side of a stream: the transport must
// end the stream with io.EOF or a gRPC status error, never panic or hang.
func FuzzServerBytes(f *testing.F) {
	f.Add(serverTranscript(), uint16(7))
	f.Add(serverTranscript()[:40], uint16(100))
	f.Add(frame(frameHeaders, flagEndHeaders|flagEndStream, 1, []byte{0x88}), uint16(1))
	f.Add(frame(frameGoAway, 0, 0, make([]byte, 8)), uint16(9))
	f.Fuzz(func(t *testing.T, wire []byte, chunk uint16) {
		_, err := run(t, wire, int(chunk)+1)
		if err == nil {
			return // 1,000 messages: fine
		}
		if _, ok := status.FromError(err); !ok && err != io.EOF {
			t.Fatalf("stream ended with %v (%T), not a status", err, err)
		}
	})
}
