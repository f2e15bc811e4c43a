// Package stream carries the simulator's probe events to the fleet shards of a distributed run
// (docs/distributed.md): one HTTP/1.1 response per shard streams newline-delimited JSON
// messages (expect, t0, measure, end), and each shard acknowledges every expectation with a
// POST once its matcher holds it. The Publisher (the simulator's side) writes a change only
// after every subscribed shard acknowledged its expectation, or after the ack timeout, which
// it counts: no shard can receive a client response to a change it has not registered.
//
// GET /time serves the simulator's clock; MeasureClock estimates a shard's offset from it
// (NTP style, shortest of several round trips) and Stream converts the simulator's t0 values
// to the shard's clock with it, so push latencies are measured on one clock.
//
// The protocol is plain HTTP and JSON so that it needs no code generation, passes any proxy or
// Kubernetes Service, and can be read with curl; the probe rate (tens to hundreds of events a
// second) is far below what one HTTP/1.1 stream carries.
package stream
