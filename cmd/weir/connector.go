package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"weir/pipelines"
)

// snapshotRequester is a source that takes incremental snapshots on
// request (connectors/mysql: a signal written into its signal table).
type snapshotRequester interface {
	RequestSnapshot(ctx context.Context, tables []string, stop bool) (string, error)
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "connector",
			Short: "Act on the connectors declared in pipeline files",
		}
		pf := &pipelineFlags{}
		var tables []string
		var stop bool
		var timeout time.Duration
		snap := &cobra.Command{
			Use:   "snapshot SOURCE [PATH...]",
			Short: "Ask a CDC source for an incremental snapshot of tables while it keeps streaming",
			Long: `Write an execute-snapshot signal (Debezium's) into the signal table of the
source named SOURCE in the pipeline files: a running source (weir run, in this
or any other process) reads the signal from the binlog, in order with every
other change, and snapshots the tables incrementally (chunks between
watermarks) without stopping its stream; a stopped source does when it runs
again. The snapshot's progress survives restarts. --stop writes a
stop-snapshot signal instead (no --table: every table queued).

The source needs signal_table (a db.table its user may create and write).
The command connects to the database with the source's own settings.`,
			Example: `  weir connector snapshot shop --table inventory.customers examples/mysql-cdc-to-es
  weir connector snapshot shop --table 'inventory.*' pipeline.hcl -var mysql_password=secret
  weir connector snapshot shop --stop pipeline.hcl`,
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				name, paths := args[0], args[1:]
				if !stop && len(tables) == 0 {
					return fmt.Errorf("name the tables to snapshot with --table db.table (repeatable; glob patterns as in include_tables)")
				}
				cfg, err := loadPipelines(cmd.ErrOrStderr(), paths, pf.options())
				if err != nil {
					return err
				}
				var names []string
				for _, s := range cfg.Sources {
					if s.Name != name {
						names = append(names, s.Name)
						continue
					}
					return requestSnapshot(cmd, s, tables, stop, timeout)
				}
				return fmt.Errorf("no source %q in the pipeline files (sources: %s)", name, strings.Join(names, ", "))
			},
		}
		pf.add(snap)
		snap.Flags().StringArrayVar(&tables, "table", nil, "db.table to snapshot (repeatable; glob patterns as in include_tables)")
		snap.Flags().BoolVar(&stop, "stop", false, "stop incremental snapshots of the --table tables (none: all) instead")
		snap.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up connecting to the database after this long")
		cmd.AddCommand(snap, positionsCommand(g))
		return cmd
	})
}

func requestSnapshot(cmd *cobra.Command, s *pipelines.Source, tables []string, stop bool, timeout time.Duration) error {
	src, err := s.Connector.NewSource(s.Name, s.Config)
	if err != nil {
		return fmt.Errorf("source %q: %w", s.Name, err)
	}
	rq, ok := src.(snapshotRequester)
	if !ok {
		return fmt.Errorf("source %q is a %s source, which takes no incremental snapshots", s.Name, s.Connector.Name)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	id, err := rq.RequestSnapshot(ctx, tables, stop)
	if err != nil {
		return fmt.Errorf("source %q: %w", s.Name, err)
	}
	what := "execute-snapshot of " + strings.Join(tables, ", ")
	if stop {
		what = "stop-snapshot"
		if len(tables) > 0 {
			what += " of " + strings.Join(tables, ", ")
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "signal %s written (%s); source %q acts on it when its binlog stream reaches it\n", id, what, s.Name)
	return nil
}
