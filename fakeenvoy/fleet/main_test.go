package fleet

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks every test of the package for leaked goroutines. Run
// with -fleet.serve-mesh, the binary is BenchmarkFleetHeapPerClient's control plane instead.
func TestMain(m *testing.M) {
	flag.Parse()
	if *serveMesh > 0 {
		os.Exit(serveMeshMain(*serveMesh))
	}
	goleak.VerifyTestMain(m)
}
