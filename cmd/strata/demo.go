package main

import (
	"github.com/spf13/cobra"
)

// newDemoCmd is the README's main command: the whole story of Strata in one run on the
// embedded backend.
func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the order-events demo on a temporary embedded Strata",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), terminalStderr(cmd.ErrOrStderr()))
		},
	}
}
