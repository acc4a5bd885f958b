package main

// weir group: list, describe (with lag), delete, reset-offsets, on kadm.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "group",
			Short: "List, describe, delete consumer groups and reset their offsets",
			Long: `Manage consumer groups on any Kafka-compatible brokers (weir's or Apache
Kafka's) through the Kafka group APIs. Committed offsets live in the
__consumer_offsets topic; describe shows each partition's committed offset,
log end offset and lag.`,
			Example: `  weir group list
  weir group describe my-app
  weir group reset-offsets my-app --topic logs --to-earliest            # dry run: prints the plan
  weir group reset-offsets my-app --topic logs:0,1 --shift-by -100 --execute
  weir group delete my-app`,
		}
		cmd.AddCommand(groupListCmd(g), groupDescribeCmd(g), groupDeleteCmd(g), groupResetCmd(g))
		return cmd
	})
}

// groupErr names the group and says what to do about common errors.
func groupErr(group string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("group %q does not exist (see `weir group list`): %w", group, err)
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Errorf("group %q still has active members: stop its consumers first: %w", group, err)
	case errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.CoordinatorLoadInProgress):
		return fmt.Errorf("group %q: the group coordinator is not ready; retry in a moment: %w", group, err)
	}
	return fmt.Errorf("group %q: %w", group, err)
}

func groupListCmd(g *globalFlags) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups with their state and protocol type",
		Args:  cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().StringSliceVar(&states, "state", nil, "only groups in these states (Empty, Stable, PreparingRebalance, CompletingRebalance, Dead); repeatable")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			groups, err := adm.ListGroups(ctx, states...)
			if err != nil {
				return cf.explain(fmt.Errorf("listing groups: %w", err))
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE")
			for _, lg := range groups.Sorted() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", lg.Group, lg.State, lg.ProtocolType)
			}
			return tw.Flush()
		})
	}
	return cmd
}

func groupDescribeCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show a group's state, members, and per-partition committed offset, log end offset and lag",
		Args:  cobra.MinimumNArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			lags, err := adm.Lag(ctx, args...)
			if err != nil {
				return cf.explain(fmt.Errorf("describing groups: %w", err))
			}
			var firstErr error
			for i, group := range args {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				l, ok := lags[group]
				if !ok {
					firstErr = errors.Join(firstErr, fmt.Errorf("group %q: not in the response", group))
					continue
				}
				if err := l.Error(); err != nil {
					firstErr = errors.Join(firstErr, groupErr(group, err))
					continue
				}
				printGroupLag(cmd.OutOrStdout(), l)
			}
			return firstErr
		})
	}
	return cmd
}

func printGroupLag(w io.Writer, l kadm.DescribedGroupLag) {
	protocol := l.Protocol
	if protocol == "" {
		protocol = "-"
	}
	if l.State == "Dead" && len(l.Lag) == 0 {
		fmt.Fprintf(w, "GROUP %s: no such group (no members, no committed offsets)\n", l.Group)
		return
	}
	fmt.Fprintf(w, "GROUP %s  state=%s  protocol-type=%s  protocol=%s  members=%d  coordinator=%d\n",
		l.Group, l.State, l.ProtocolType, protocol, len(l.Members), l.Coordinator.NodeID)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tMEMBER-ID\tCLIENT-ID\tHOST")
	var total int64
	for _, ml := range l.Lag.Sorted() {
		cur, lag := "-", "-"
		if ml.Commit.At >= 0 {
			cur = strconv.FormatInt(ml.Commit.At, 10)
		}
		if ml.Err == nil && ml.Lag >= 0 {
			lag = strconv.FormatInt(ml.Lag, 10)
			total += ml.Lag
		}
		end := "-"
		if ml.End.Err == nil {
			end = strconv.FormatInt(ml.End.Offset, 10)
		}
		member, client, host := "-", "-", "-"
		if ml.Member != nil {
			member, client, host = ml.Member.MemberID, ml.Member.ClientID, ml.Member.ClientHost
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", ml.Topic, ml.Partition, cur, end, lag, member, client, host)
		if ml.Err != nil {
			fmt.Fprintf(tw, "\t\t(%v)\t\t\t\t\t\n", ml.Err)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "TOTAL LAG %d\n", total)
}

func groupDeleteCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete empty groups and their committed offsets",
		Args:  cobra.MinimumNArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			resps, err := adm.DeleteGroups(ctx, args...)
			if err != nil {
				return cf.explain(fmt.Errorf("deleting groups: %w", err))
			}
			var firstErr error
			for _, r := range resps.Sorted() {
				if r.Err != nil {
					firstErr = errors.Join(firstErr, groupErr(r.Group, r.Err))
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted group %s\n", r.Group)
			}
			return firstErr
		})
	}
	return cmd
}

// resetSpec is where reset-offsets moves each partition.
type resetSpec struct {
	earliest, latest bool
	toOffset         int64
	toOffsetSet      bool
	toDatetime       string
	shiftBy          int64
	shiftBySet       bool
}

func (s *resetSpec) validate() error {
	n := 0
	for _, b := range []bool{s.earliest, s.latest, s.toOffsetSet, s.toDatetime != "", s.shiftBySet} {
		if b {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
	}
	return nil
}

// parseTopicPartitions parses --topic values: "T" (every partition) or
// "T:0,1,2".
func parseTopicPartitions(vals []string) (map[string][]int32, error) {
	out := map[string][]int32{}
	for _, v := range vals {
		t, ps, hasParts := strings.Cut(v, ":")
		if t == "" {
			return nil, fmt.Errorf("--topic %q: want TOPIC or TOPIC:P[,P]", v)
		}
		if !hasParts {
			if _, ok := out[t]; !ok {
				out[t] = nil
			}
			continue
		}
		for _, p := range strings.Split(ps, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--topic %q: partition %q is not a number >= 0", v, p)
			}
			out[t] = append(out[t], int32(n))
		}
	}
	return out, nil
}

// resetRow is one line of the plan.
type resetRow struct {
	topic     string
	partition int32
	current   int64 // -1: no commit
	target    int64
}

func groupResetCmd(g *globalFlags) *cobra.Command {
	var (
		spec    resetSpec
		topics  []string
		execute bool
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic TOPIC[:P,P...] (--to-earliest | --to-latest | --to-offset N | --to-datetime RFC3339 | --shift-by N) [--execute]",
		Short: "Move a stopped group's committed offsets (a dry run unless --execute)",
		Long: `Compute new committed offsets for a group that has no active members and
print the plan; with --execute, commit them. The group's next consumer starts
at the new offsets. Targets are clamped to each partition's log start and end.`,
		Example: `  weir group reset-offsets my-app --topic logs --to-earliest
  weir group reset-offsets my-app --topic logs --to-datetime 2024-05-01T00:00:00Z --execute
  weir group reset-offsets my-app --topic logs:3 --to-offset 1500 --execute`,
		Args: cobra.ExactArgs(1),
	}
	cf := addClientFlags(cmd, g)
	fl := cmd.Flags()
	fl.StringArrayVar(&topics, "topic", nil, "topic to reset, TOPIC for all its partitions or TOPIC:P,P,...; repeatable (required)")
	fl.BoolVar(&spec.earliest, "to-earliest", false, "reset to each partition's log start offset")
	fl.BoolVar(&spec.latest, "to-latest", false, "reset to each partition's log end offset")
	fl.Int64Var(&spec.toOffset, "to-offset", 0, "reset to this offset")
	fl.StringVar(&spec.toDatetime, "to-datetime", "", "reset to the first offset at or after this time (RFC3339, e.g. 2024-05-01T00:00:00Z)")
	fl.Int64Var(&spec.shiftBy, "shift-by", 0, "move the committed offset by N (negative: back); partitions without a commit start from the log start")
	fl.BoolVar(&execute, "execute", false, "commit the new offsets (default: only print the plan)")
	_ = cmd.MarkFlagRequired("topic")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		spec.toOffsetSet = cmd.Flags().Changed("to-offset")
		spec.shiftBySet = cmd.Flags().Changed("shift-by")
		if err := spec.validate(); err != nil {
			return err
		}
		want, err := parseTopicPartitions(topics)
		if err != nil {
			return err
		}
		group := args[0]
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			rows, err := planReset(ctx, adm, group, want, &spec)
			if err != nil {
				return cf.explain(err)
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tNEW-OFFSET")
			for _, r := range rows {
				cur := "-"
				if r.current >= 0 {
					cur = strconv.FormatInt(r.current, 10)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", group, r.topic, r.partition, cur, r.target)
			}
			tw.Flush()
			if !execute {
				fmt.Fprintln(out, "dry run: nothing committed; add --execute to apply")
				return nil
			}
			var os kadm.Offsets
			for _, r := range rows {
				os.Add(kadm.Offset{Topic: r.topic, Partition: r.partition, At: r.target, LeaderEpoch: -1})
			}
			resps, err := adm.CommitOffsets(ctx, group, os)
			if err == nil {
				err = resps.Error()
			}
			if err != nil {
				if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.IllegalGeneration) {
					return fmt.Errorf("group %q became active while resetting: stop its consumers and retry: %w", group, err)
				}
				return cf.explain(groupErr(group, fmt.Errorf("committing new offsets: %w", err)))
			}
			fmt.Fprintf(out, "committed %d offsets for group %s\n", len(rows), group)
			return nil
		})
	}
	return cmd
}

// planReset checks that the group is inactive and computes each
// partition's new offset.
func planReset(ctx context.Context, adm *kadm.Client, group string, want map[string][]int32, spec *resetSpec) ([]resetRow, error) {
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describing group %q: %w", group, err)
	}
	if dg, ok := dgs[group]; ok {
		if dg.Err != nil {
			return nil, groupErr(group, dg.Err)
		}
		if len(dg.Members) > 0 {
			return nil, fmt.Errorf("group %q is %s with %d active members: offsets can only be reset while the group is inactive (stop its consumers first)", group, dg.State, len(dg.Members))
		}
	}
	names := make([]string, 0, len(want))
	for t := range want {
		names = append(names, t)
	}
	sort.Strings(names)
	tds, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("listing start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("listing end offsets: %w", err)
	}
	var at kadm.ListedOffsets
	if spec.toDatetime != "" {
		ts, err := time.Parse(time.RFC3339Nano, spec.toDatetime)
		if err != nil {
			return nil, fmt.Errorf("--to-datetime %q: want RFC3339 such as 2024-05-01T00:00:00Z: %w", spec.toDatetime, err)
		}
		if at, err = adm.ListOffsetsAfterMilli(ctx, ts.UnixMilli(), names...); err != nil {
			return nil, fmt.Errorf("listing offsets after %s: %w", spec.toDatetime, err)
		}
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, groupErr(group, fmt.Errorf("fetching committed offsets: %w", err))
	}
	var rows []resetRow
	for _, t := range names {
		td, ok := tds[t]
		if !ok || td.Err != nil {
			if ok && td.Err != nil && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("topic %q: %w", t, td.Err)
			}
			return nil, fmt.Errorf("topic %q does not exist (see `weir topic list`)", t)
		}
		parts := want[t]
		if parts == nil {
			for p := range td.Partitions {
				parts = append(parts, p)
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		}
		for _, p := range parts {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", t, p, len(td.Partitions))
			}
			s, ok1 := starts.Lookup(t, p)
			e, ok2 := ends.Lookup(t, p)
			if !ok1 || !ok2 || s.Err != nil || e.Err != nil {
				return nil, fmt.Errorf("topic %q partition %d: could not list its offsets: %v", t, p, errors.Join(s.Err, e.Err))
			}
			r := resetRow{topic: t, partition: p, current: -1}
			if c, ok := committed.Lookup(t, p); ok && c.Err == nil && c.At >= 0 {
				r.current = c.At
			}
			switch {
			case spec.earliest:
				r.target = s.Offset
			case spec.latest:
				r.target = e.Offset
			case spec.toOffsetSet:
				r.target = spec.toOffset
			case spec.toDatetime != "":
				a, ok := at.Lookup(t, p)
				if !ok || a.Err != nil || a.Offset < 0 {
					r.target = e.Offset
				} else {
					r.target = a.Offset
				}
			case spec.shiftBySet:
				base := r.current
				if base < 0 {
					base = s.Offset
				}
				r.target = base + spec.shiftBy
			}
			r.target = max(s.Offset, min(e.Offset, r.target))
			rows = append(rows, r)
		}
	}
	return rows, nil
}
