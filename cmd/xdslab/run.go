package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRunCmd is replaced by the issue that builds 'run'.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("run: not built yet"))
		},
	}
}
