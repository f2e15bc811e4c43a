package istio_test

import (
	"os"
	"testing"

	"istio.io/istio/pkg/log"
)

// TestMain keeps Istio's own logging to errors: its per-connection info lines and per-proxy
// warnings would bury the tests' output.
func TestMain(m *testing.M) {
	o := log.DefaultOptions()
	o.SetDefaultOutputLevel(log.OverrideScopeName, log.ErrorLevel)
	if err := log.Configure(o); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
