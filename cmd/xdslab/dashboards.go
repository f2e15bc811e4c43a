package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDashboardsCmd is replaced by the issue that builds 'dashboards'.
func newDashboardsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dashboards",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("dashboards: not built yet"))
		},
	}
}
