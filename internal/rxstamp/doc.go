// Package rxstamp gives a fake Envoy the kernel's receive time of each message it reads: that
// time ends the push latency the measurement reports. A leaf: it knows sockets, nothing of
// HTTP/2, gRPC or xDS.
//
// A response's receive time is when its last byte reached the client's socket. A clock read
// when the client gets round to the message is later by however long its goroutines waited for
// a core: when a push reaches 500 clients at once on two cores, the last of them runs tens of ms
// after its bytes arrived, and that wait is the harness's, not the control plane's.
//
// So the fleet's transport (package internal/h2client) turns on SO_TIMESTAMPNS (Enable) and
// reads with recvmsg: TCP then returns, with each read, the arrival time of the last segment
// it read (Kernel parses it from the control data). The transport hands the time of the read
// that completed a message to the client's codec through a Source. The arrival time is the
// kernel's wall clock; the codec carries it over to the monotonic clock as "this long before
// now".
//
// The kernel stamps segments once a process-wide switch is on, which the first socket to ask
// turns on asynchronously: the first segments after that may come without a stamp, and the
// codec then keeps its own clock.
package rxstamp
