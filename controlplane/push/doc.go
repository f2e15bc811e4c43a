// Package push moves a push cycle from the debouncer to the connections: a per-connection
// queue that coalesces requests, the default push concurrency, and ACK-gated flow control.
//
//	debounce ─PushRequest─▶ Queue.Enqueue(conn, req) for every connection
//	                          │ at most one pending request per connection, merged in place
//	PushThrottle workers: Queue.Dequeue ─▶ hand the Item to the connection ─▶ MarkDone
//	connection (its session, fed by the owner goroutine): per type, Flow.Push ─▶ send ─▶ Flow.Sent;
//	                          on ACK/NACK Flow.Ack
//
// # Queue
//
// Queue[K] is shared by the pusher, the push workers and the connections; K is any comparable
// connection key (a connection id string, or a *Connection pointer). Pending[K] is its pure
// core, usable directly by a single goroutine (and by simulations).
//
//   - Enqueue(conn, req) puts conn at the back of the FIFO; if conn is already waiting, req is
//     merged into its request (model.PushRequest.Merge), which keeps its place and its
//     enqueue time. If conn is being processed (dequeued, not yet MarkDone), req waits and
//     conn rejoins the back of the queue on MarkDone: a connection is never processed by two
//     workers at once, and never misses a request that arrived while it was being pushed.
//   - Dequeue(ctx) blocks until a connection waits, and returns an Item: the connection, its
//     merged request and the time its earliest request was enqueued. Record
//     pilot_proxy_queue_time as now − Item.Enqueued.
//   - MarkDone(conn) after the push to conn ended (successfully or not).
//   - Remove(conn) when the connection closes: its pending request is dropped.
//   - Len() is the number of connections waiting (a gauge), Close() stops the workers.
//
// # Concurrency
//
// DefaultConcurrency(cores) gives Istio's default push throttle, min(15 + 5 × cores, 100). The
// ADS server (controlplane/xds) runs that many workers, each pushing one connection at a time,
// so a slow connection holds one worker and never more.
//
// # Flow control (for the ADS server)
//
// Flow is ACK-gated flow control for one connection, a pure core owned by the connection's
// goroutine, which passes the current time to every call. Per type URL, while a response is
// unanswered (neither ACKed nor NACKed), further pushes of that type are held and merged into
// one request; the answer, or AckTimeout without one, releases it. This bounds the responses
// in flight per type to one, so a slow client gets the latest state once instead of a backlog
// of intermediate ones. With FlowOptions.Enabled false every push passes through at once
// (ACK waits are still measured). Create one per connection with NewFlow; it is not safe for
// concurrent use.
//
//   - Before sending type T for a push: send := flow.Push(T, req, now). If send is nil the push
//     is held: do nothing. Otherwise generate and send T for send (which may merge pushes
//     that were held), then flow.Sent(T, nonce, now) with the response's nonce. Skipping Sent
//     (nothing to send) leaves T idle.
//   - Responses the client asked for (initial requests, subscription changes) are not pushes:
//     send them without Push, but do call Sent, so the next push waits for their answer.
//   - On a request of type T carrying response_nonce n (an ACK, or a NACK with error_detail):
//     res := flow.Ack(T, n, now). If res.Release is not nil, push T for it now (through Push
//     again is fine: T is idle). res.Matched and res.Wait give the ACK round trip; an
//     unmatched nonce is stale and changes nothing (the server must not answer it anyway).
//   - Timer: arm it for flow.Deadline() (zero: none) after every call that may change it
//     (Push, Sent, Ack, Expire); when it fires call flow.Expire(now) and push each Release.
//   - Counters for metrics: flow.Stats().
//
// Nothing in this package reads a clock except Queue, which stamps enqueue times with the
// now function it is given.
package push
