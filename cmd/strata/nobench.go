//go:build !bench

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// benchBuilt reports whether this binary holds the benchmark drivers (-tags bench).
const benchBuilt = false

// newBenchCmd stands in for `strata bench` in the binary users run: the drivers link
// plotting, fonts and the NATS and Redis clients, which would make every first
// `go run ./cmd/strata` compile for minutes. It says how to get them.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "bench",
		Short:              "Benchmarks (cost, peers, memory): build with -tags bench to have them",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("this strata is built without the benchmark drivers; run: go run -tags bench ./cmd/strata bench %s",
				strings.Join(args, " "))
		},
	}
}
