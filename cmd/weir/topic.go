package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "topic",
			Short: "Create, list, describe, delete and reconfigure topics",
			Long: `Manage topics on any Kafka-compatible brokers (weir's or Apache Kafka's)
through the Kafka admin APIs. Topic configs use Kafka's names
(retention.ms, cleanup.policy, segment.bytes, ...).`,
			Example: `  weir topic create logs --partitions 8 --config retention.ms=86400000
  weir topic list
  weir topic describe logs
  weir topic alter-config logs --set cleanup.policy=compact --delete retention.ms
  weir topic delete logs`,
		}
		cmd.AddCommand(topicCreateCmd(g), topicListCmd(g), topicDescribeCmd(g), topicDeleteCmd(g), topicAlterConfigCmd(g))
		return cmd
	})
}

// parseKV parses NAME=VALUE for the flag named flag.
func parseKV(flag, kv string) (string, string, error) {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("--%s %q: want NAME=VALUE, e.g. retention.ms=86400000", flag, kv)
	}
	return k, v, nil
}

// topicErr turns a per-topic Kafka error into one that names the topic
// and says what to do.
func topicErr(topic string, err error, msg string) error {
	if err == nil {
		return nil
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		err = fmt.Errorf("%w: %s", err, msg)
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("topic %q does not exist (list topics with `weir topic list`, create it with `weir topic create %s`): %w", topic, topic, err)
	case errors.Is(err, kerr.TopicAlreadyExists):
		return fmt.Errorf("topic %q already exists (see it with `weir topic describe %s`, or pass --if-not-exists): %w", topic, topic, err)
	case errors.Is(err, kerr.InvalidReplicationFactor):
		return fmt.Errorf("topic %q: replication factor exceeds the available brokers (lower --replication-factor): %w", topic, err)
	case errors.Is(err, kerr.InvalidPartitions):
		return fmt.Errorf("topic %q: invalid partition count (use --partitions >= 1): %w", topic, err)
	case errors.Is(err, kerr.InvalidConfig):
		return fmt.Errorf("topic %q: invalid config (check the Kafka topic config name and value): %w", topic, err)
	case errors.Is(err, kerr.InvalidTopicException):
		return fmt.Errorf("topic %q: invalid name (use letters, digits, '.', '_' and '-', at most 249 characters): %w", topic, err)
	}
	return fmt.Errorf("topic %q: %w", topic, err)
}

func topicCreateCmd(g *globalFlags) *cobra.Command {
	var (
		partitions  int32
		replication int16
		configs     []string
		ifNotExists bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Args:  cobra.ExactArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().Int32Var(&partitions, "partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	cmd.Flags().Int16Var(&replication, "replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	cmd.Flags().StringArrayVar(&configs, "config", nil, "topic config NAME=VALUE with Kafka's names; repeatable")
	cmd.Flags().BoolVar(&ifNotExists, "if-not-exists", false, "succeed quietly when the topic already exists")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		topic := args[0]
		cfgs := map[string]*string{}
		for _, kv := range configs {
			k, v, err := parseKV("config", kv)
			if err != nil {
				return err
			}
			cfgs[k] = &v
		}
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			resps, err := adm.CreateTopics(ctx, partitions, replication, cfgs, topic)
			if err != nil {
				return cf.explain(fmt.Errorf("creating topic %q: %w", topic, err))
			}
			resp, ok := resps[topic]
			if !ok {
				return fmt.Errorf("creating topic %q: the broker did not answer for it; check with `weir topic list`", topic)
			}
			if resp.Err != nil {
				if ifNotExists && errors.Is(resp.Err, kerr.TopicAlreadyExists) {
					return nil
				}
				return topicErr(topic, resp.Err, resp.ErrMessage)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created topic %q with %d partitions, replication factor %d\n",
				topic, resp.NumPartitions, resp.ReplicationFactor)
			return nil
		})
	}
	return cmd
}

func topicListCmd(g *globalFlags) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics with their partition and replica counts",
		Args:  cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics (__consumer_offsets, ...)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			list := adm.ListTopics
			if internal {
				list = adm.ListTopicsWithInternal
			}
			tds, err := list(ctx)
			if err != nil {
				return cf.explain(fmt.Errorf("listing topics: %w", err))
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICAS")
			for _, name := range tds.Names() {
				td := tds[name]
				if td.Err != nil {
					fmt.Fprintf(tw, "%s\t-\t-\t(%v)\n", name, td.Err)
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\n", name, len(td.Partitions), td.Partitions.NumReplicas())
			}
			return tw.Flush()
		})
	}
	return cmd
}

func topicDescribeCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show partitions, leaders, replicas, ISR and non-default configs",
		Args:  cobra.MinimumNArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			tds, err := adm.ListTopicsWithInternal(ctx, args...)
			if err != nil {
				return cf.explain(fmt.Errorf("describing topics %v: %w", args, err))
			}
			for _, name := range args {
				td, ok := tds[name]
				if !ok {
					return topicErr(name, kerr.UnknownTopicOrPartition, "")
				}
				if td.Err != nil {
					return topicErr(name, td.Err, "")
				}
			}
			// Partitions are worth showing even if configs cannot be read
			// (a broker without DescribeConfigs, or a transient error).
			rcs, cerr := adm.DescribeTopicConfigs(ctx, args...)
			out := cmd.OutOrStdout()
			for i, name := range args {
				if i > 0 {
					fmt.Fprintln(out)
				}
				var (
					nonDefault []kadm.Config
					note       string
				)
				if cerr != nil {
					note = fmt.Sprintf("(unavailable: %v)", cerr)
				} else if rc, err := rcs.On(name, nil); err != nil {
					note = fmt.Sprintf("(unavailable: %v)", err)
				} else if rc.Err != nil {
					note = fmt.Sprintf("(unavailable: %v)", rc.Err)
				} else {
					nonDefault = topicOverrides(rc.Configs)
				}
				writeTopicDescription(out, tds[name], nonDefault, note)
			}
			return nil
		})
	}
	return cmd
}

// topicOverrides returns the configs set on the topic itself, sorted.
func topicOverrides(cs []kadm.Config) []kadm.Config {
	var out []kadm.Config
	for _, c := range cs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b kadm.Config) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// writeTopicDescription prints td like kafka-topics --describe; a
// non-empty note replaces the configs.
func writeTopicDescription(w io.Writer, td kadm.TopicDetail, configs []kadm.Config, note string) {
	var kv []string
	for _, c := range configs {
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		kv = append(kv, c.Key+"="+v)
	}
	cfg := "(all defaults)"
	if len(kv) > 0 {
		cfg = strings.Join(kv, ",")
	}
	if note != "" {
		cfg = note
	}
	id := ""
	if td.ID != (kadm.TopicID{}) { // Metadata before v10 carries no topic ids
		id = "\tTopicId: " + td.ID.String()
	}
	fmt.Fprintf(w, "Topic: %s%s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		td.Topic, id, len(td.Partitions), td.Partitions.NumReplicas(), cfg)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, p := range td.Partitions.Sorted() {
		line := fmt.Sprintf("\tPartition: %d\tLeader: %d\tReplicas: %s\tIsr: %s", p.Partition, p.Leader, joinIDs(p.Replicas), joinIDs(p.ISR))
		if len(p.OfflineReplicas) > 0 {
			line += "\tOffline: " + joinIDs(p.OfflineReplicas)
		}
		if p.Err != nil {
			line += fmt.Sprintf("\tError: %v", p.Err)
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func topicDeleteCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete topics and all their records",
		Args:  cobra.MinimumNArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			resps, err := adm.DeleteTopics(ctx, args...)
			if err != nil {
				return cf.explain(fmt.Errorf("deleting topics %v: %w", args, err))
			}
			var errs []error
			for _, name := range args {
				r, ok := resps[name]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("topic %q: no answer from the broker; check with `weir topic list`", name))
				case r.Err != nil:
					errs = append(errs, topicErr(name, r.Err, r.ErrMessage))
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "deleted topic %q\n", name)
				}
			}
			return errors.Join(errs...)
		})
	}
	return cmd
}

func topicAlterConfigCmd(g *globalFlags) *cobra.Command {
	var sets, deletes []string
	cmd := &cobra.Command{
		Use:   "alter-config NAME",
		Short: "Set or remove topic config overrides (incrementally)",
		Long: `Set or remove topic-level config overrides with IncrementalAlterConfigs.
Configs not named are left unchanged; a deleted override falls back to the
broker default.`,
		Example: `  weir topic alter-config logs --set retention.ms=3600000 --set cleanup.policy=delete
  weir topic alter-config logs --delete retention.ms`,
		Args: cobra.ExactArgs(1),
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "config NAME=VALUE to set; repeatable")
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "config NAME to remove (back to the default); repeatable")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		topic := args[0]
		if len(sets)+len(deletes) == 0 {
			return fmt.Errorf("topic %q: nothing to alter: pass --set NAME=VALUE and/or --delete NAME", topic)
		}
		var alters []kadm.AlterConfig
		var done []string
		for _, kv := range sets {
			k, v, err := parseKV("set", kv)
			if err != nil {
				return err
			}
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
			done = append(done, "set "+k+"="+v)
		}
		for _, k := range deletes {
			k = strings.TrimSpace(k)
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			done = append(done, "deleted "+k)
		}
		return cf.withAdmin(cmd.Context(), func(ctx context.Context, adm *kadm.Client) error {
			resps, err := adm.AlterTopicConfigs(ctx, alters, topic)
			if err != nil {
				return cf.explain(fmt.Errorf("altering configs of topic %q: %w", topic, err))
			}
			r, err := resps.On(topic, nil)
			if err != nil {
				return topicErr(topic, err, "")
			}
			if r.Err != nil {
				return topicErr(topic, r.Err, r.ErrMessage)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "topic %q: %s\n", topic, strings.Join(done, ", "))
			return nil
		})
	}
	return cmd
}
