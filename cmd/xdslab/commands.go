package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/scenarios"
)

// subcommands lists every subcommand; each lives in its own file.
func subcommands() []*cobra.Command {
	return []*cobra.Command{
		newRunCmd(),
		newControlplaneCmd(),
		newFleetCmd(),
		newMergeCmd(),
		newSimCmd(),
		newValidateCmd(),
		newImportCmd(),
		newTuneCmd(),
		newCompareCmd(),
		newDashboardsCmd(),
		newVersionCmd(),
	}
}

// oneScenario is the Args check of a command that takes one scenario (optional when
// optional: the default is quickstart): cobra's own said "accepts at most 1 arg(s), received
// 2", naming neither the command nor what to do.
func oneScenario(command string, optional bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) > 1:
			return usageErr(fmt.Errorf("%s: one scenario at a time, got %d arguments (%s): run each in its own command (an output directory is given with --out DIR)",
				command, len(args), strings.Join(args, " ")))
		case len(args) == 0 && !optional:
			return usageErr(fmt.Errorf("%s: name a scenario file or a built-in (%s)", command, strings.Join(scenarios.BuiltinNames(), ", ")))
		}
		return nil
	}
}
