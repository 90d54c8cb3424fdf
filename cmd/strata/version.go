package main

import (
	"errors"
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

// buildVersion is what versionString prints, and `strata version --json` prints as
// JSON.
type buildVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func buildVersionOf(info *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: info.Main.Version, Go: info.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func versionOf(info *debug.BuildInfo) string {
	b := buildVersionOf(info)
	v, rev := b.Version, b.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		modified := ""
		if b.Modified {
			modified = "+modified"
		}
		v += fmt.Sprintf(" (revision %s%s)", rev, modified)
	}
	return v + ", " + b.Go
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of strata (module version, VCS revision, Go version; --json for a JSON object)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				info, ok := debug.ReadBuildInfo()
				if !ok {
					return errors.New("the binary carries no build information")
				}
				return printJSON(cmd.OutOrStdout(), buildVersionOf(info))
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "strata version", cmd.Root().Version)
			return err
		},
	}
}
