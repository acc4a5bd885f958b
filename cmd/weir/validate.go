package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"weir/pipelines"
)

// pipelineFlags are the variable options of run, validate and graph.
type pipelineFlags struct {
	vars     []string
	varFiles []string
}

func (p *pipelineFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&p.vars, "var", nil, "set an input variable NAME=VALUE (repeatable; wins over --var-file and WEIR_VAR_NAME; -var works too)")
	cmd.Flags().StringArrayVar(&p.varFiles, "var-file", nil, "read input variables from an HCL file of NAME = value lines (repeatable)")
}

func (p *pipelineFlags) options() pipelines.Options {
	return pipelines.Options{Vars: p.vars, VarFiles: p.varFiles}
}

// writeDiags prints diagnostics with file:line:col and source snippets.
func writeDiags(w io.Writer, cfg *pipelines.Config, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	var files map[string]*hcl.File
	if cfg != nil {
		files = cfg.Files
	}
	color := false
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		color = true
	}
	pipelines.SortDiagnostics(diags)
	_ = pipelines.WriteDiagnostics(w, files, diags, color)
}

// loadPipelines loads paths and prints the diagnostics; it fails when
// there are errors.
func loadPipelines(w io.Writer, paths []string, opts pipelines.Options) (*pipelines.Config, error) {
	cfg, diags := pipelines.Load(paths, opts)
	writeDiags(w, cfg, diags)
	if diags.HasErrors() {
		n := 0
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				n++
			}
		}
		s := "s"
		if n == 1 {
			s = ""
		}
		return nil, fmt.Errorf("%d error%s in the pipeline files", n, s)
	}
	return cfg, nil
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		pf := &pipelineFlags{}
		cmd := &cobra.Command{
			Use:   "validate [PATH...]",
			Short: "Check pipeline files without running them (exit 1 on errors)",
			Long: `Load pipeline files (a folder means all its *.hcl files) and report every
problem at once, each with file:line:col and the source line: unknown blocks
and attributes, wrong types, missing settings, undeclared references, cycles,
bad regular expressions and expressions. Connector settings are checked
against each connector kind's declared spec. No broker is needed.`,
			Example: `  weir validate examples/quickstart
  weir validate pipeline.hcl -var env=prod`,
			RunE: func(cmd *cobra.Command, args []string) error {
				opts := pf.options()
				opts.Tests = true // test blocks are checked too (weir test runs them)
				cfg, err := loadPipelines(cmd.ErrOrStderr(), args, opts)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "valid: %d topics, %d sources, %d streams, %d sinks\n",
					len(cfg.Topics), len(cfg.Sources), len(cfg.Streams), len(cfg.Sinks))
				return nil
			},
		}
		pf.add(cmd)
		return cmd
	})
}
