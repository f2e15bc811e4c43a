//go:build race

package run

// raceEnabled: the race detector slows gRPC and protobuf by an order of magnitude, which shows
// in any measured latency.
const raceEnabled = true
