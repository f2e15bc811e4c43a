package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newValidateCmd is replaced by the issue that builds 'validate'.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("validate: not built yet"))
		},
	}
}
