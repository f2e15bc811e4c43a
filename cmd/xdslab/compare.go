package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCompareCmd is replaced by the issue that builds 'compare'.
func newCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compare",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("compare: not built yet"))
		},
	}
}
