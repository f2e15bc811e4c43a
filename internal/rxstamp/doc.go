// Package rxstamp gives a fake Envoy client the kernel's receive time of each gRPC message it
// reads: its codec (package fakeenvoy) takes the stamp when grpc-go hands it the message, and
// that time ends the push latency the measurement reports. A leaf: it knows TCP, HTTP/2 frames
// and gRPC's length prefix, nothing of xDS.
//
// A response's receive time is when its last byte reached the client's socket. The codec reads
// the clock when grpc-go hands it the message (its Unmarshal), which is later by however long
// the client's transport reader and receive goroutine waited for a core: when a push reaches
// 500 clients at once on two cores, the last of them runs tens of ms after its bytes arrived,
// and that wait is the harness's, not the control plane's.
//
// So a client on a connection of its own (plaintext: the bytes read are the HTTP/2 frames)
// dials through Stamps.Dial (a stampConn), which asks the kernel to timestamp what the socket receives
// (SO_TIMESTAMPNS: TCP returns the arrival time of the last segment each recvmsg reads) and
// reads the HTTP/2 frames as they pass to find where each gRPC message ends. Each complete
// message leaves (stream, length, arrival time) in a short queue; the codec's Take takes the oldest
// and uses its time when its length is the message's (anything else: the queue is out of step,
// it is cleared and the clock read at Unmarshal stands). The arrival time is the kernel's
// wall clock; it is carried over to the monotonic clock as "this long before now".
package rxstamp
