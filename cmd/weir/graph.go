package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		pf := &pipelineFlags{}
		cmd := &cobra.Command{
			Use:     "graph [PATH...]",
			Short:   "Print the pipeline graph (sources → topics → streams → sinks) as Graphviz DOT",
			Example: `  weir graph examples/quickstart | dot -Tsvg > pipeline.svg`,
			RunE: func(cmd *cobra.Command, args []string) error {
				cfg, err := loadPipelines(cmd.ErrOrStderr(), args, pf.options())
				if err != nil {
					return err
				}
				fmt.Fprint(cmd.OutOrStdout(), cfg.Graph.DOT())
				return nil
			},
		}
		pf.add(cmd)
		return cmd
	})
}
