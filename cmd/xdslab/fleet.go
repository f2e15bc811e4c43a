package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newFleetCmd is replaced by the issue that builds 'fleet'.
func newFleetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "fleet",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("fleet: not built yet"))
		},
	}
}
