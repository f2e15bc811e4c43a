// Package machine is the fake Envoy's protocol state machine: one client's xDS behaviour as
// Envoy (or grpc-go's xDS client) has it, with no I/O, no clock reads and no goroutines.
// Package fakeenvoy wraps it in a thin gRPC shell (fakeenvoy.Client, one owner per client: a
// goroutine, with a lock when a second one serves its deadline) that feeds it events and performs
// what it returns; package fakeenvoy/fleet runs many.
//
// New builds a client process's machine from a Config (the shell's fakeenvoy.ClientConfig,
// with Envoy's defaults applied). The owner calls Start on every new stream, OnSotw, OnSotwRead
// or OnDelta per response (stamped with its receive time) and OnTimer once NextDeadline has
// passed; each returns a Step: the requests to send, the ACK/NACK decision, the hooks to call,
// the ACK delay and whether to disconnect. Resource, Effective, Synced, Subscribed,
// LocalSecret and Blocked say what the client holds and why it has no full config yet.
//
// By concern:
//
//	machine.go      the state, the events (start, a timer; a response enters through its
//	                wire adapter) and what the client reports of its state
//	wire*.go        the wire adapters (SotW, Delta, proxyless gRPC): a response becomes one
//	                update, requests are built in the protocol's shape
//	apply.go        applying an update: decode, accept or reject, commit, follow-up requests;
//	                same.go whether a resource in other bytes is the one held
//	rules.go        what Envoy rejects (package validate: the checks of a resource, Envoy's
//	                and grpc-go's)
//	warming.go      the init manager: initial fetch, cluster and listener warming, full config
//	drain.go        listener draining: a removed listener's route configurations and
//	                secrets on ADS stay subscribed for the drain time
//	sds.go          SDS secrets by source (ADS, the emulated istio-agent, files) and the
//	                warming on them; blocked.go why a client has no full config
//	decode.go, rtype.go   decoding resources, reading raw protobuf; the resource types
//	resset.go, intern.go  sharing decoded resources and accepted sets among a fleet's clients,
//	                and what is derived once per shared set (references, secret holders);
//	                the pools of warming maps and of apply's per-item states, and the
//	                shared lists of secret references
//	respmemo.go     the codec's memo of response runs the fleet's clients receive alike (a
//	                new run on trial until a second client reads it; one client reads a new
//	                run while the others that receive it wait; its items shared read-only,
//	                what applying them led to each client's own), and what apply asks once per
//	                run (does it cover the clusters, lie within the subscription, name only
//	                served secret sources, what applying it to nothing leads to)
//	codec.go        the client's gRPC codec: the node encoded once, SotW resources read and
//	                looked up in the Interner straight from the transport's buffer, the
//	                receive stamp; a run read from bytes the stamp source calls immutable
//	                (h2client's shared copies) is kept in the memo as those bytes; pieces.go
//	                a response in several pieces looked up in the memo where they lie (and
//	                again while a miss is read)
//
// Transcripts in testdata (TestMachineTranscripts) script a machine event by event (streams,
// responses with abbreviated resources, time) with the requests, ACKs and NACKs each must
// send and when the client holds full config.
package machine
