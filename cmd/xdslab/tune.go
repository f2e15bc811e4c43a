package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTuneCmd is replaced by the issue that builds 'tune'.
func newTuneCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tune",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("tune: not built yet"))
		},
	}
}
