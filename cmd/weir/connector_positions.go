package main

// weir connector positions: the ways on for a source whose stored
// positions were lost (connectors.ErrPositionsLost).

import (
	"fmt"

	"github.com/spf13/cobra"

	"weir/connectors"
)

// positionsCommand is `weir connector positions SOURCE`.
func positionsCommand(g *globalFlags) *cobra.Command {
	var reset bool
	var from []string
	var offsetsTopic string
	cmd := &cobra.Command{
		Use:   "positions SOURCE (--recover-from TOPIC... | --reset)",
		Short: "Rebuild, or reset, the stored positions of a source whose positions topic lost them",
		Long: `A source's positions (how far it has read) are stored in the compacted topic
` + connectors.DefaultOffsetsTopic + `. When that topic is deleted or emptied, a worker
group's singleton source (mysql) that ran before refuses to start from scratch
(it would write every row again) and fails, naming this command.

--recover-from rebuilds the positions from the records the source already
wrote: each carries its position in the ` + connectors.SourceHeader + ` header; the
position of its last record (read committed) per source partition is stored
with a scan mark at the topics' ends, so the source resumes right after it.
Name every destination topic of the source (a mysql source: its schema-change
topic and its tables' topics).

--reset stores an empty position instead: the source starts from scratch on
purpose (a mysql source: a new snapshot, every row written again).

Both refuse when the topic holds positions of SOURCE. SOURCE is the source's
name (a per-worker source of a worker group: NAME@WORKER). Run it while the
source is stopped or failing; a failing source picks it up at its next retry.`,
		Example: `  weir connector positions shop --recover-from shop.schema-changes --recover-from shop.inventory.customers --brokers kafka1:9092
  weir connector positions shop --reset --brokers kafka1:9092`,
		Args: cobra.ExactArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().StringArrayVar(&from, "recover-from", nil, "a topic the source wrote to (repeatable)")
	cmd.Flags().BoolVar(&reset, "reset", false, "store an empty position: the source starts from scratch")
	cmd.Flags().StringVar(&offsetsTopic, "offsets-topic", connectors.DefaultOffsetsTopic, "the positions topic")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if reset == (len(from) > 0) {
			return fmt.Errorf("give either --recover-from TOPIC (repeatable) or --reset")
		}
		o, err := cf.options()
		if err != nil {
			return err
		}
		ctx, cancel := cf.requestCtx(cmd.Context())
		defer cancel()
		if reset {
			if err := connectors.ResetPositions(ctx, o, offsetsTopic, args[0]); err != nil {
				return cf.explain(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "source %q: empty position stored in %s; it starts from scratch when it runs next\n", args[0], offsetsTopic)
			return nil
		}
		n, err := connectors.RecoverPositions(ctx, o, offsetsTopic, args[0], from)
		if err != nil {
			return cf.explain(err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "source %q: %d position(s) recovered from its records and stored in %s; it resumes after its last record when it runs next\n", args[0], n, offsetsTopic)
		return nil
	}
	return cmd
}
