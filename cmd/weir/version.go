package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func init() {
	registerCommand(func(*globalFlags) *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print weir's version, commit and Go version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				commit := "unknown"
				if bi, ok := debug.ReadBuildInfo(); ok {
					for _, s := range bi.Settings {
						if s.Key == "vcs.revision" {
							commit = s.Value
						}
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "weir %s (commit %s, %s %s/%s)\n",
					version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			},
		}
	})
}
