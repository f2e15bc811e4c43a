package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestScenarioArgs: run and sim name themselves and the fix when given the wrong number of
// scenarios (cobra said "accepts at most 1 arg(s), received 2").
func TestScenarioArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "a.yaml", "out/dir"}, "run: one scenario at a time, got 2 arguments (a.yaml out/dir): run each in its own command (an output directory is given with --out DIR)"},
		{[]string{"sim", "a.yaml", "b.yaml", "--sink-dir", "x"}, "sim: one scenario at a time, got 2 arguments"},
		{[]string{"sim", "--sink-dir", "x"}, "sim: name a scenario file or a built-in (authz-churn,"},
	} {
		root := newRootCmd()
		root.SetArgs(tc.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.ExecuteContext(context.Background())
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("xdslab %s: %v, want a usage error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
