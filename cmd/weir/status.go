package main

// weir status: the cluster-wide view of a worker group, from its status
// topic (pipelines/workgroup.StatusTopic), from any machine.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"weir/pipelines"
	"weir/pipelines/workgroup"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		var group string
		cmd := &cobra.Command{
			Use:   "status --group NAME",
			Short: "Show which worker of a worker group runs which component, its state, rates, lag and last error",
			Long: `Read the status topic (` + workgroup.StatusTopic + `) that the workers of
` + "`weir run --group NAME`" + ` report to every few seconds, and print the group's
workers (the hash of the pipeline files each loaded, the leader, when each
last reported) and every component on every worker: placement (singleton,
per-worker, partitions), state, records/s in and out, lag, errors and the
last error. Workers that loaded different pipeline files are named; a
worker that stopped reporting (killed, unreachable) shows how long ago it
last did. Needs no worker on this machine, only the brokers.`,
			Example: `  weir status --group shop-workers --brokers kafka1:9092`,
			Args:    cobra.NoArgs,
		}
		cf := addClientFlags(cmd, g)
		cmd.Flags().StringVar(&group, "group", "", "the worker group (weir run --group)")
		cmd.RunE = func(cmd *cobra.Command, _ []string) error {
			if group == "" {
				return fmt.Errorf("name the worker group with --group")
			}
			o, err := cf.options()
			if err != nil {
				return err
			}
			ctx, cancel := cf.requestCtx(cmd.Context())
			defer cancel()
			st, err := workgroup.ReadStatus(ctx, o, group)
			if err != nil {
				return cf.explain(err)
			}
			if len(st.Workers) == 0 {
				return fmt.Errorf("worker group %q has reported nothing to %s (is its name right? are its workers running?)", group, workgroup.StatusTopic)
			}
			writeWorkerStatus(cmd.OutOrStdout(), group, st, time.Now())
			return nil
		}
		return cmd
	})
}

// staleAfter is when a worker's report counts as missed.
const staleAfter = 3*pipelines.StatusInterval + time.Second

func writeWorkerStatus(out io.Writer, group string, st workgroup.Status, now time.Time) {
	ago := func(t time.Time) string { return now.Sub(t).Round(time.Second).String() + " ago" }
	stale := map[string]bool{}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "WORKER\tSTATE\tPIPELINES\tLEADER\tLAST REPORT\n")
	for _, w := range st.Workers {
		state := w.State
		if w.State == "running" && now.Sub(w.At) > staleAfter {
			state = "not reporting"
			stale[w.Worker] = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.Worker, state, w.Pipelines, w.Leader, ago(w.At))
	}
	tw.Flush()
	if pg := st.PipelineGroups(); len(pg) > 1 {
		var parts []string
		for _, ws := range pg {
			var names []string
			for _, w := range ws {
				names = append(names, w.Worker)
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(names, ", "), ws[0].Pipelines))
		}
		fmt.Fprintf(out, "\nWARNING: the workers of %s loaded different pipeline files: %s; singletons run only on workers with the leader's settings\n",
			group, strings.Join(parts, " vs "))
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "COMPONENT\tPLACEMENT\tWORKER\tSTATE\tIN/S\tOUT/S\tLAG\tERRORS\tLAST ERROR\n")
	for _, c := range st.Components {
		state := c.State
		if stale[c.Worker] {
			state += " (worker not reporting for " + now.Sub(c.At).Round(time.Second).String() + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Component, c.Placement, c.Worker, state,
			pipelines.FormatRate(c.InRate), pipelines.FormatRate(c.OutRate), pipelines.FormatRate(c.Lag),
			pipelines.FormatRate(c.Errors), truncate(c.LastError, 80))
	}
	tw.Flush()
}
