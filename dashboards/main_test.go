package dashboards

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

// update rewrites the committed dashboard JSON: go test ./dashboards -update
var update = flag.Bool("update", false, "rewrite the committed dashboards under grafana/")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
