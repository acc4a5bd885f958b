package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"

	"weir/pipelines"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		var check bool
		cmd := &cobra.Command{
			Use:   "fmt [PATH...]",
			Short: "Rewrite pipeline files in canonical HCL formatting",
			Long: `Rewrite pipeline files (a folder means all its *.hcl files) in canonical
formatting: aligned equals signs, two-space indentation, normalized spacing.
With --check nothing is written: the files that need formatting are listed
and the exit code is 1 if there are any. Files with syntax errors are
reported and left alone.`,
			Example: `  weir fmt examples/quickstart
  weir fmt --check .`,
			RunE: func(cmd *cobra.Command, args []string) error {
				files, _, err := pipelines.ExpandPaths(args)
				if err != nil {
					return err
				}
				var unformatted, broken int
				for _, f := range files {
					src, err := os.ReadFile(f)
					if err != nil {
						return err
					}
					if _, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos); diags.HasErrors() {
						writeDiags(cmd.ErrOrStderr(), nil, diags)
						broken++
						continue
					}
					out := hclwrite.Format(src)
					if bytes.Equal(out, src) {
						continue
					}
					unformatted++
					fmt.Fprintln(cmd.OutOrStdout(), f)
					if !check {
						st, err := os.Stat(f)
						if err != nil {
							return err
						}
						if err := os.WriteFile(f, out, st.Mode().Perm()); err != nil {
							return err
						}
					}
				}
				if broken > 0 {
					return fmt.Errorf("%d files have syntax errors", broken)
				}
				if check && unformatted > 0 {
					return fmt.Errorf("%d files need formatting (run weir fmt)", unformatted)
				}
				return nil
			},
		}
		cmd.Flags().BoolVar(&check, "check", false, "only list files that need formatting; exit 1 if any")
		return cmd
	})
}
