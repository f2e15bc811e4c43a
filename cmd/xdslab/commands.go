package main

import "github.com/spf13/cobra"

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
