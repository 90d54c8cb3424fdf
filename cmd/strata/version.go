package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionString is the module version this binary was built from (a tagged version for
// `go install ...@v1.2.3`, "(devel)" in a checkout) with the VCS revision and the Go
// version, from the build information the Go toolchain embeds.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown build)"
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += fmt.Sprintf(" (revision %s%s)", rev, modified)
	}
	return v + ", " + info.GoVersion
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of strata (module version, VCS revision, Go version)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "strata version", cmd.Root().Version)
			return err
		},
	}
}
