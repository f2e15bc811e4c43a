// Package h2client is the fake Envoys' own gRPC client transport: HTTP/2 over a plaintext TCP
// connection of its own, carrying one bidirectional stream at a time, as an Envoy's
// connection to its xDS server does. A Conn implements grpc.ClientConnInterface, so the
// generated ADS client runs on it unchanged, with the codec the stream is opened with
// (grpc.ForceCodecV2).
//
// Why not grpc-go's client: at one connection per client its transport is most of what a fake
// Envoy costs per pushed response (issue 28, docs/performance.md). grpc-go gives every
// connection a reader goroutine and a writer goroutine, so each response crosses three
// goroutines before the client's machine sees it, and each ACK two more before it is written;
// its reader also tries a read that finds nothing after every frame. Here the stream's
// receiving goroutine reads the socket itself and its sending goroutine writes it: a response
// costs one read system call and its ACK one write. What grpc-go does for many streams (a
// resolver, a balancer, keepalive, BDP-driven windows) a fake Envoy has no use for.
//
// The protocol is HTTP/2 (RFC 9113) as a gRPC client speaks it:
//   - the connection preface and SETTINGS (server push off; a receive window of 256 MiB per
//     stream and per connection, Envoy's defaults, so a window update is rare);
//   - a HEADERS frame opening each stream (POST to the method, te: trailers,
//     content-type application/grpc, the outgoing metadata of the stream's context);
//   - length-prefixed gRPC messages in DATA frames, split to the server's frame size and
//     flow-control windows;
//   - the server's HEADERS, trailers (grpc-status, grpc-message, grpc-status-details-bin) or
//     trailers-only response, RST_STREAM, SETTINGS, PING, WINDOW_UPDATE and GOAWAY.
//
// Errors are gRPC status errors with the codes grpc-go gives for the same event (Unavailable
// when the connection fails or closes, Canceled when the stream's context is done, the HTTP
// status mapping for a non-gRPC response), so the client reports the same thing on either
// transport.
//
// Reading. A receive buffer is taken from the pool only once the socket is readable and given
// back when every byte in it has been used and delivered (a read that finds nothing gives it
// back before it waits), so an idle client holds none. The socket has SO_TIMESTAMPNS: each read's
// kernel arrival time (of the last segment it returned) is kept, and a message's stamp is that
// of the read that completed the frame holding its last byte. Take gives it to the codec,
// which the transport calls (Unmarshal) right before RecvMsg returns. A message held in one
// DATA frame is handed to the codec in place, in the receive buffer; a longer one is handed over
// as the pieces of the frames it came in, also where they were read (a codec that needs it
// whole gathers it: mem.BufferSlice). While such a message comes in, the receive buffers its
// pieces lie in are neither reused nor given back, but set aside until it is delivered, and
// the receive buffer grows to what is left of it (at most 256 KiB), so a full config of a MB
// takes a few reads.
//
// Shared copies. Connections given the same Shared (Config.Shared; a fleet shares one) hold
// one copy of a large message (64 KiB and more) that reaches many of them alike, found by its
// first KiB: the first stream to receive it writes its frames' bytes into the copy, the others
// compare theirs with it and write what it lacks, and none pins a receive buffer for those
// bytes. A stream whose bytes differ from the copy in the last 32 KiB (its nonce) keeps its
// own from there, as above, and its message is the copy's bytes followed by its own pieces;
// one that differs earlier goes on with another copy of the same start (the push before) or
// forks a copy of its own. A message read to its end from a copy is handed over as that one
// piece, and Conn.Immutable tells the codec it may keep it. A thousand sidecars receiving the
// same full config of a MB then hold one MB between them, not a GB; a copy costs its starter
// one copy of the message, so while the recent copies go unfollowed, as when every client's
// response differs from the start, only one message in 16 starts one.
//
// A send takes what
// the flow-control windows allow at once; only the rest waits, as the codec's own buffers
// (an ACK's thousand names are not copied), each given back once its bytes are written.
//
// A stream ends when the server sends its trailers or resets it, when the connection fails,
// or when its context is done: the transport then interrupts a read in progress with a past
// deadline (no byte is lost: a read either returned its bytes or none), resets the stream
// (RST_STREAM CANCEL) and keeps the connection for the next stream, which opens once the last
// reader has left the socket. A connection that failed, or that the server sent GOAWAY on, is
// closed and the next stream dials a new one.
//
// PINGs and SETTINGS are answered by the goroutine that receives, while it reads: a client
// whose receiving goroutine waits (a fake Envoy during a scripted ACK delay, which stands for
// Envoy busy applying config on its one event loop) answers them when it reads again.
package h2client
