package measure

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks every test of the package for leaked goroutines (Drain polls on a ticker).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
