//go:build race

package fleet

// raceEnabled: the race detector allocates on its own account, so allocation counts
// (testing.AllocsPerRun) are not checked under it.
const raceEnabled = true
