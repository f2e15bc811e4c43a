//go:build race

package livetest

// raceEnabled: the race detector slows the run several times over.
const raceEnabled = true
