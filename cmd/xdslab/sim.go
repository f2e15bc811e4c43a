package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSimCmd is replaced by the issue that builds 'sim'.
func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sim",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("sim: not built yet"))
		},
	}
}
