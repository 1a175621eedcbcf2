package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print weir's version and the versions it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.OutOrStdout(), versionText())
			return nil
		},
	}
}

// versionText describes the binary from its embedded build information.
func versionText() string {
	version, revision, arrow := "(devel)", "", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" {
			version = v
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
		for _, d := range info.Deps {
			if d.Path == "github.com/apache/arrow-go/v18" {
				arrow = d.Version
			}
		}
	}
	out := fmt.Sprintf("weir %s\n", version)
	if revision != "" {
		out += fmt.Sprintf("revision %s\n", revision)
	}
	out += fmt.Sprintf("go %s %s/%s\narrow-go %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, arrow)
	return out
}
