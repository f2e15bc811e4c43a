package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newControlplaneCmd is replaced by the issue that builds 'controlplane'.
func newControlplaneCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "controlplane",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("controlplane: not built yet"))
		},
	}
}
