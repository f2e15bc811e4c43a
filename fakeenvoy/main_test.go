package fakeenvoy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks every test of the package (client and fleet alike) for leaked goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
