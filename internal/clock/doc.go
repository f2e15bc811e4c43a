// Package clock is the time source of the goroutines whose timing tests script: the control
// plane's debouncer and the fake Envoy's client shell. Production passes Real(); a test either
// injects a manual clock (to step through a timeline deterministically, event by event) or runs
// Real() inside a testing/synctest bubble, where time is virtual. The simulator's runner has a
// clock of its own (simulator.Clock), because its virtual clock is a product feature (runs as
// fast as possible), not a test device. A leaf.
package clock
