package main

// weir cluster reassign (plan, execute, status, cancel) and weir cluster
// rebalance: partition reassignment through the Kafka protocol
// (AlterPartitionReassignments, ListPartitionReassignments), with
// Kafka's replication throttles (leader/follower.replication.throttled.rate
// on the brokers, leader/follower.replication.throttled.replicas on the
// topics) set as kafka-reassign-partitions --throttle sets them and
// removed when the reassignment is done. Plans are Kafka's reassignment
// JSON, so either tool can run them. Planning is internal/rebalance.

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/rebalance"
)

// The throttle configs (Kafka's QuotaConfig names).
var (
	brokerThrottles = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
	topicThrottles  = []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

func init() {
	clusterSubcommands = append(clusterSubcommands, clusterReassignCmd, clusterRebalanceCmd)
}

func clusterReassignCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reassign",
		Short: "Move partition replicas between brokers: plan, execute (with a throttle), status, cancel",
		Long: `Reassign partitions as kafka-reassign-partitions does, on weir or Apache Kafka:

  plan      propose moving topics onto a set of brokers (Kafka's reassignment JSON)
  execute   start a plan, optionally throttling the replication it causes
  status    show which partitions of a plan are still moving; removes the
            throttles once none is
  cancel    revert the plan's partitions that are still moving

A reassignment adds the new replicas, which copy the partition from its
leader and join the ISR once caught up; then the replicas not in the plan
are removed (and a new leader elected if the leader was one of them).
With --throttle the copying is limited to that many bytes per second per
broker, in each direction (leader.replication.throttled.rate and
follower.replication.throttled.rate; replicas in the ISR are never
throttled).`,
	}
	cmd.AddCommand(reassignPlanCmd(g), reassignExecuteCmd(g), reassignStatusCmd(g), reassignCancelCmd(g))
	return cmd
}

func parseBrokerIDs(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--broker-ids: %q is not a broker id", f)
		}
		if slices.Contains(out, int32(n)) {
			return nil, fmt.Errorf("--broker-ids: broker %d listed twice", n)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// clusterState reads every partition's replicas (of topics, all when
// empty), sizes (the largest replica's, from DescribeLogDirs; 0 where the
// brokers do not say) and the live brokers.
func clusterState(ctx context.Context, adm *kadm.Client, topics []string) ([]rebalance.Partition, []int32, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, nil, fmt.Errorf("reading metadata: %w", err)
	}
	var live []int32
	for _, b := range md.Brokers {
		live = append(live, b.NodeID)
	}
	slices.Sort(live)
	var parts []rebalance.Partition
	var set kadm.TopicsSet
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return nil, nil, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		if t.IsInternal && len(topics) == 0 {
			continue
		}
		for _, p := range t.Partitions.Sorted() {
			parts = append(parts, rebalance.Partition{Topic: t.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
			set.Add(t.Topic, p.Partition)
		}
	}
	if len(parts) > 0 {
		sizes := map[string]int64{}
		if dirs, err := adm.DescribeAllLogDirs(ctx, set); err == nil {
			dirs.Each(func(d kadm.DescribedLogDir) {
				d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
					k := p.Topic + "\x00" + strconv.Itoa(int(p.Partition))
					sizes[k] = max(sizes[k], p.Size)
				})
			})
		}
		for i := range parts {
			parts[i].Bytes = sizes[parts[i].Topic+"\x00"+strconv.Itoa(int(parts[i].Partition))]
		}
	}
	return parts, live, nil
}

func reassignPlanCmd(g *globalFlags) *cobra.Command {
	var topics, ids, out string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Propose moving topics' partitions onto a set of brokers (Kafka's reassignment JSON)",
		Long: `Propose new replica lists for the partitions of --topics placed on
--broker-ids only, evening replicas, bytes and preferred leaders over them
and moving as few replicas as it can. The plan (Kafka's reassignment JSON,
as kafka-reassign-partitions --generate writes it) goes to stdout or
--out; a table of each broker's load before and after goes to stderr.`,
		Example: `  weir cluster reassign plan --topics orders,payments --broker-ids 2,3,4 --out plan.json`,
		Args:    cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().StringVar(&topics, "topics", "", "comma-separated topics to move (required)")
	cmd.Flags().StringVar(&ids, "broker-ids", "", "comma-separated broker ids to place the replicas on (required)")
	cmd.Flags().StringVar(&out, "out", "", "write the plan to this file instead of stdout")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var ts []string
		for _, t := range strings.Split(topics, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ts = append(ts, t)
			}
		}
		if len(ts) == 0 {
			return fmt.Errorf("--topics: name at least one topic")
		}
		brokers, err := parseBrokerIDs(ids)
		if err != nil {
			return err
		}
		if len(brokers) == 0 {
			return fmt.Errorf("--broker-ids: name at least one broker")
		}
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			parts, _, err := clusterState(ctx, adm, ts)
			if err != nil {
				return cf.explain(err)
			}
			plan, err := rebalance.Plan(parts, brokers)
			if err != nil {
				return err
			}
			return writePlan(cmd, parts, plan, brokers, out)
		})
	}
	return cmd
}

// writePlan prints the load table to stderr and the plan to out (or
// stdout).
func writePlan(cmd *cobra.Command, parts, plan []rebalance.Partition, brokers []int32, out string) error {
	writeLoads(cmd.ErrOrStderr(), parts, rebalance.Apply(parts, plan), brokers)
	fmt.Fprintf(cmd.ErrOrStderr(), "%d of %d partitions change\n", len(plan), len(parts))
	b := append(rebalance.Encode(plan), '\n')
	if out == "" {
		_, err := cmd.OutOrStdout().Write(b)
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "plan written to %s\n", out)
	return nil
}

// writeLoads prints each broker's replicas, preferred leaderships and
// bytes before and after.
func writeLoads(w io.Writer, before, after []rebalance.Partition, brokers []int32) {
	lb, la := rebalance.Loads(before, brokers), rebalance.Loads(after, brokers)
	ids := make([]int32, 0, len(lb))
	for id := range lb {
		ids = append(ids, id)
	}
	for id := range la {
		if _, ok := lb[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tREPLICAS\tLEADERS\tBYTES\t→ REPLICAS\tLEADERS\tBYTES")
	for _, id := range ids {
		b, a := lb[id], la[id]
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t→ %d\t%d\t%d\n", id, b.Replicas, b.Leaders, b.Bytes, a.Replicas, a.Leaders, a.Bytes)
	}
	tw.Flush()
}

func readPlan(path string) ([]rebalance.Partition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	plan, err := rebalance.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return plan, nil
}

func reassignExecuteCmd(g *globalFlags) *cobra.Command {
	var throttle int64
	var wait bool
	cmd := &cobra.Command{
		Use:   "execute PLAN.json",
		Short: "Start the reassignments of a plan, optionally throttled",
		Long: `Start the reassignments of a plan (Kafka's reassignment JSON). With
--throttle BYTES_PER_SEC the brokers involved get
leader.replication.throttled.rate and follower.replication.throttled.rate
and the topics leader.replication.throttled.replicas (the current replicas)
and follower.replication.throttled.replicas (the new ones), as
kafka-reassign-partitions --execute --throttle sets them. With --wait it
waits until every partition has moved and removes the throttles;
otherwise run "weir cluster reassign status" until it reports none moving.`,
		Example: `  weir cluster reassign execute plan.json --throttle 50000000 --wait`,
		Args:    cobra.ExactArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().Int64Var(&throttle, "throttle", -1, "replication throttle in bytes/s per broker and direction (-1: none)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the reassignment to finish, then remove the throttles")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		plan, err := readPlan(args[0])
		if err != nil {
			return err
		}
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			return executePlan(ctx, cmd, cf, adm, plan, throttle, wait)
		})
	}
	return cmd
}

// executePlan sets the throttles, starts the reassignments and, with
// wait, waits for them and removes the throttles.
func executePlan(ctx context.Context, cmd *cobra.Command, cf *clientFlags, adm *kadm.Client, plan []rebalance.Partition, throttle int64, wait bool) error {
	out := cmd.OutOrStdout()
	if len(plan) == 0 {
		fmt.Fprintln(out, "Nothing to reassign.")
		return nil
	}
	var topics []string
	for _, p := range plan {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	cur, live, err := clusterState(ctx, adm, topics)
	if err != nil {
		return cf.explain(err)
	}
	for _, p := range plan {
		for _, r := range p.Replicas {
			if !slices.Contains(live, r) {
				return fmt.Errorf("%s-%d: broker %d is not a live broker of the cluster (live: %v)", p.Topic, p.Partition, r, live)
			}
		}
	}
	if throttle >= 0 {
		if err := setThrottles(ctx, adm, cur, plan, throttle); err != nil {
			return cf.explain(err)
		}
		fmt.Fprintf(out, "The inter-broker throttle limit was set to %d B/s\n", throttle)
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return cf.explain(fmt.Errorf("starting the reassignments: %w", err))
	}
	var started, failed []string
	for _, r := range resps.Sorted() {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v: %s", name, r.Err, r.ErrMessage))
			continue
		}
		started = append(started, name)
	}
	if len(started) > 0 {
		fmt.Fprintf(out, "Started reassigning %s\n", strings.Join(started, ","))
	}
	if len(failed) > 0 {
		return fmt.Errorf("reassignments refused:\n%s", strings.Join(failed, "\n"))
	}
	if !wait {
		return nil
	}
	for {
		moving, err := stillMoving(ctx, adm, plan)
		if err != nil {
			return cf.explain(err)
		}
		if len(moving) == 0 {
			break
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(time.Second):
		}
	}
	fmt.Fprintln(out, "Reassignment complete.")
	if throttle >= 0 {
		if err := clearThrottles(ctx, adm, cur, plan); err != nil {
			return cf.explain(err)
		}
		fmt.Fprintln(out, "Throttles removed.")
	}
	return nil
}

// setThrottles sets the broker rates on every broker holding or taking a
// replica of a moving partition, the leader throttle on the partitions'
// current replicas and the follower throttle on the new ones
// (kafka-reassign-partitions' calculateLeaderThrottles /
// calculateFollowerThrottles).
func setThrottles(ctx context.Context, adm *kadm.Client, cur, plan []rebalance.Partition, rate int64) error {
	current := map[string][]int32{}
	for _, p := range cur {
		current[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p.Replicas
	}
	leaders, followers := map[string][]string{}, map[string][]string{}
	var brokers []int32
	for _, p := range plan {
		reps := current[fmt.Sprintf("%s-%d", p.Topic, p.Partition)]
		for _, r := range reps {
			leaders[p.Topic] = append(leaders[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
			if !slices.Contains(brokers, r) {
				brokers = append(brokers, r)
			}
		}
		for _, r := range p.Replicas {
			if !slices.Contains(reps, r) {
				followers[p.Topic] = append(followers[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
			}
			if !slices.Contains(brokers, r) {
				brokers = append(brokers, r)
			}
		}
	}
	for topic, ls := range leaders {
		l, f := strings.Join(ls, ","), strings.Join(followers[topic], ",")
		cfgs := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: topicThrottles[0], Value: &l}}
		if f != "" {
			cfgs = append(cfgs, kadm.AlterConfig{Op: kadm.SetConfig, Name: topicThrottles[1], Value: &f})
		}
		if err := alterErr(adm.AlterTopicConfigs(ctx, cfgs, topic)); err != nil {
			return fmt.Errorf("setting the throttled replicas of %s: %w", topic, err)
		}
	}
	v := strconv.FormatInt(rate, 10)
	var cfgs []kadm.AlterConfig
	for _, name := range brokerThrottles {
		cfgs = append(cfgs, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: &v})
	}
	if err := alterErr(adm.AlterBrokerConfigs(ctx, cfgs, brokers...)); err != nil {
		return fmt.Errorf("setting the throttle rate: %w", err)
	}
	return nil
}

// removePlanThrottles removes the throttles of a plan's reassignment
// from its topics and brokers, as they are now.
func removePlanThrottles(ctx context.Context, adm *kadm.Client, plan []rebalance.Partition) error {
	topics := map[string]bool{}
	for _, p := range plan {
		topics[p.Topic] = true
	}
	cur, _, err := clusterState(ctx, adm, slices.Sorted(mapKeys(topics)))
	if err != nil {
		return err
	}
	return clearThrottles(ctx, adm, cur, plan)
}

// clearThrottles removes the throttle configs from the plan's topics and
// from every broker holding a replica of them, before or after.
func clearThrottles(ctx context.Context, adm *kadm.Client, cur, plan []rebalance.Partition) error {
	var topics []string
	var brokers []int32
	for _, ps := range [][]rebalance.Partition{cur, plan} {
		for _, p := range ps {
			if !slices.Contains(topics, p.Topic) {
				topics = append(topics, p.Topic)
			}
			for _, r := range p.Replicas {
				if !slices.Contains(brokers, r) {
					brokers = append(brokers, r)
				}
			}
		}
	}
	var tc, bc []kadm.AlterConfig
	for _, n := range topicThrottles {
		tc = append(tc, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: n})
	}
	for _, n := range brokerThrottles {
		bc = append(bc, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: n})
	}
	if err := alterErr(adm.AlterTopicConfigs(ctx, tc, topics...)); err != nil {
		return fmt.Errorf("removing topic throttles: %w", err)
	}
	if err := alterErr(adm.AlterBrokerConfigs(ctx, bc, brokers...)); err != nil {
		return fmt.Errorf("removing broker throttles: %w", err)
	}
	return nil
}

func alterErr(rs kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%s: %w: %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}

// stillMoving returns the plan's partitions being reassigned now.
func stillMoving(ctx context.Context, adm *kadm.Client, plan []rebalance.Partition) ([]kadm.ListPartitionReassignmentsResponse, error) {
	var set kadm.TopicsSet
	for _, p := range plan {
		set.Add(p.Topic, p.Partition)
	}
	rs, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("listing reassignments: %w", err)
	}
	var out []kadm.ListPartitionReassignmentsResponse
	for _, r := range rs.Sorted() {
		if len(r.AddingReplicas) > 0 || len(r.RemovingReplicas) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

func reassignStatusCmd(g *globalFlags) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "status PLAN.json",
		Short: "Show which partitions of a plan are still moving; remove the throttles once none is",
		Args:  cobra.ExactArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().BoolVar(&keep, "keep-throttles", false, "do not remove the throttles when the reassignment is done")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		plan, err := readPlan(args[0])
		if err != nil {
			return err
		}
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			moving, err := stillMoving(ctx, adm, plan)
			if err != nil {
				return cf.explain(err)
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PARTITION\tREPLICAS\tADDING\tREMOVING")
			for _, r := range moving {
				fmt.Fprintf(tw, "%s-%d\t%v\t%v\t%v\n", r.Topic, r.Partition, r.Replicas, r.AddingReplicas, r.RemovingReplicas)
			}
			tw.Flush()
			fmt.Fprintf(out, "%d of %d partitions still moving\n", len(moving), len(plan))
			if len(moving) > 0 || keep {
				return nil
			}
			if err := removePlanThrottles(ctx, adm, plan); err != nil {
				return cf.explain(err)
			}
			fmt.Fprintln(out, "Throttles removed.")
			return nil
		})
	}
	return cmd
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func reassignCancelCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel PLAN.json",
		Short: "Revert the plan's partitions that are still moving (and remove the throttles)",
		Args:  cobra.ExactArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		plan, err := readPlan(args[0])
		if err != nil {
			return err
		}
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			moving, err := stillMoving(ctx, adm, plan)
			if err != nil {
				return cf.explain(err)
			}
			out := cmd.OutOrStdout()
			if len(moving) == 0 {
				fmt.Fprintln(out, "None of the plan's partitions are moving.")
			} else {
				var req kadm.AlterPartitionAssignmentsReq
				for _, r := range moving {
					req.CancelAssign(r.Topic, r.Partition)
				}
				resps, err := adm.AlterPartitionAssignments(ctx, req)
				if err != nil {
					return cf.explain(fmt.Errorf("cancelling: %w", err))
				}
				var done, failed []string
				for _, r := range resps.Sorted() {
					if r.Err != nil {
						failed = append(failed, fmt.Sprintf("%s-%d: %v: %s", r.Topic, r.Partition, r.Err, r.ErrMessage))
					} else {
						done = append(done, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
					}
				}
				if len(done) > 0 {
					fmt.Fprintf(out, "Cancelled reassigning %s\n", strings.Join(done, ","))
				}
				if len(failed) > 0 {
					return fmt.Errorf("cancels refused:\n%s", strings.Join(failed, "\n"))
				}
			}
			if err := removePlanThrottles(ctx, adm, plan); err != nil {
				return cf.explain(err)
			}
			fmt.Fprintln(out, "Throttles removed.")
			return nil
		})
	}
	return cmd
}

func clusterRebalanceCmd(g *globalFlags) *cobra.Command {
	var ids, topics, out string
	var execute, wait bool
	var throttle int64
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Plan (and run) reassignments that even replicas, leaders and bytes across brokers",
		Long: `Compute a plan that evens the cluster over --broker-ids (default: every
live broker): replicas on brokers not listed move off them (draining a
broker before it is decommissioned), replica counts end at most one apart,
bytes (partition sizes from DescribeLogDirs) are evened by swaps, and
preferred leaders (first replicas) end at most one apart; as few replicas
move as it can. Kafka leaves this to Cruise Control.

The plan is printed (Kafka's reassignment JSON) with a table of each
broker's load before and after. --execute starts it (with --throttle, as
"weir cluster reassign execute"); with --wait it also waits for it, removes
the throttles and elects the preferred leaders of the moved partitions.`,
		Example: `  weir cluster rebalance                         # plan only
  weir cluster rebalance --broker-ids 2,3,4 --execute --throttle 50000000 --wait   # drain broker 1`,
		Args: cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().StringVar(&ids, "broker-ids", "", "comma-separated broker ids to spread over (default: the live brokers)")
	cmd.Flags().StringVar(&topics, "topics", "", "comma-separated topics to consider (default: every non-internal topic)")
	cmd.Flags().StringVar(&out, "out", "", "write the plan to this file instead of stdout")
	cmd.Flags().BoolVar(&execute, "execute", false, "start the plan")
	cmd.Flags().Int64Var(&throttle, "throttle", -1, "with --execute: replication throttle in bytes/s (-1: none)")
	cmd.Flags().BoolVar(&wait, "wait", false, "with --execute: wait for the plan to finish, remove the throttles, elect preferred leaders")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		brokers, err := parseBrokerIDs(ids)
		if err != nil {
			return err
		}
		var ts []string
		for _, t := range strings.Split(topics, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ts = append(ts, t)
			}
		}
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			parts, live, err := clusterState(ctx, adm, ts)
			if err != nil {
				return cf.explain(err)
			}
			if len(brokers) == 0 {
				brokers = live
			}
			plan, err := rebalance.Plan(parts, brokers)
			if err != nil {
				return err
			}
			if err := writePlan(cmd, parts, plan, brokers, out); err != nil {
				return err
			}
			if !execute {
				return nil
			}
			if err := executePlan(ctx, cmd, cf, adm, plan, throttle, wait); err != nil {
				return err
			}
			if !wait || len(plan) == 0 {
				return nil
			}
			var set kadm.TopicsSet
			for _, p := range plan {
				set.Add(p.Topic, p.Partition)
			}
			res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
			if err != nil {
				return cf.explain(fmt.Errorf("electing preferred leaders: %w", err))
			}
			n := 0
			for _, ps := range res {
				for _, r := range ps {
					if r.Err == nil {
						n++
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Preferred leaders elected for %d partitions.\n", n)
			return nil
		})
	}
	return cmd
}
