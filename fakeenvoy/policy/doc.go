// Package policy is what a fake Envoy client is scripted to do with the responses it receives,
// beyond what Envoy itself would: Nack (which responses it rejects: a probability, every Nth,
// a resource-name regexp, or realistically, what Envoy rejects) and Ack (Envoy's apply time
// before the ACK, a hung client that never ACKs, disconnects after N responses). Scenarios and
// flags set them (ParseNack reads the flag syntax); fakeenvoy.ClientConfig carries them to
// the client's state machine, which applies them. A leaf.
package policy
