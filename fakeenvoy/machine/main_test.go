package machine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks every test of the package for leaked goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
