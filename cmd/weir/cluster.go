package main

import (
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "cluster",
			Short: "Inspect and operate a cluster: status, controller voters, decommissioning brokers",
		}
		cmd.AddCommand(clusterStatusCmd(g))
		for _, sub := range clusterSubcommands {
			cmd.AddCommand(sub(g))
		}
		return cmd
	})
}

func clusterStatusCmd(g *globalFlags) *cobra.Command {
	var problems bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show brokers, the controller, and each partition's leader, replicas and ISR",
		Long: `Show the cluster as a broker sees it (Metadata): the live brokers, the
controller, and for every partition its leader, leader epoch, replicas and
in-sync replicas (ISR). A partition is under-replicated when its ISR is
smaller than its replica set, and offline when it has no live leader
(no in-sync replica is running; with unclean.leader.election.enable=false
it waits for one to return). Works against weir and Apache Kafka brokers.`,
		Example: `  weir cluster status --brokers 127.0.0.1:9092
  weir cluster status --problems     # only under-replicated and offline partitions`,
		Args: cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().BoolVar(&problems, "problems", false, "list only under-replicated and offline partitions")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_, cl, err := cf.admin()
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := cf.requestCtx(cmd.Context())
		defer cancel()
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return cf.explain(fmt.Errorf("reading cluster metadata: %w", err))
		}
		writeClusterStatus(cmd.OutOrStdout(), resp, problems)
		return nil
	}
	return cmd
}

// partitionStatus is one partition's line.
type partitionStatus struct {
	topic           string
	partition       int32
	leader, epoch   int32
	replicas, isr   []int32
	offlineReplicas []int32
	underReplicated bool
	offline         bool
	errText         string
}

func writeClusterStatus(out io.Writer, resp *kmsg.MetadataResponse, problemsOnly bool) {
	cluster := "-"
	if resp.ClusterID != nil {
		cluster = *resp.ClusterID
	}
	live := map[int32]bool{}
	brokers := slices.Clone(resp.Brokers)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].NodeID < brokers[j].NodeID })
	for _, b := range brokers {
		live[b.NodeID] = true
	}
	var parts []partitionStatus
	known := map[int32]bool{}
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		for _, p := range t.Partitions {
			ps := partitionStatus{topic: name, partition: p.Partition, leader: p.Leader, epoch: p.LeaderEpoch,
				replicas: p.Replicas, isr: p.ISR, offlineReplicas: p.OfflineReplicas}
			for _, r := range p.Replicas {
				known[r] = true
			}
			ps.offline = p.Leader < 0 || !live[p.Leader]
			ps.underReplicated = len(p.ISR) < len(p.Replicas)
			if p.ErrorCode != 0 {
				ps.errText = kerr.ErrorForCode(p.ErrorCode).Error()
			}
			parts = append(parts, ps)
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topic != parts[j].topic {
			return parts[i].topic < parts[j].topic
		}
		return parts[i].partition < parts[j].partition
	})
	var under, offline int
	for _, p := range parts {
		if p.offline {
			offline++
		} else if p.underReplicated {
			under++
		}
	}
	controller := "none"
	if resp.ControllerID >= 0 {
		controller = strconv.Itoa(int(resp.ControllerID))
	}
	fmt.Fprintf(out, "cluster %s, controller %s\n\n", cluster, controller)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tADDRESS\tRACK\tSTATE")
	for _, b := range brokers {
		rack := "-"
		if b.Rack != nil {
			rack = *b.Rack
		}
		state := "live"
		if b.NodeID == resp.ControllerID {
			state = "live, controller"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), rack, state)
	}
	var missing []int32
	for id := range known {
		if !live[id] {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	for _, id := range missing {
		fmt.Fprintf(tw, "%d\t-\t-\tnot live (fenced or stopped)\n", id)
	}
	tw.Flush()
	fmt.Fprintf(out, "\n%d partitions, %d under-replicated, %d offline\n", len(parts), under, offline)
	if len(parts) == 0 {
		return
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tSTATUS")
	for _, p := range parts {
		status := "ok"
		switch {
		case p.offline:
			status = "OFFLINE"
		case p.underReplicated:
			status = "under-replicated"
		}
		if len(p.offlineReplicas) > 0 {
			status += " (offline replicas " + ids(p.offlineReplicas) + ")"
		}
		if p.errText != "" && !p.offline {
			status += " " + p.errText
		}
		if problemsOnly && status == "ok" {
			continue
		}
		leader := strconv.Itoa(int(p.leader))
		if p.leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\n", p.topic, p.partition, leader, p.epoch, ids(p.replicas), ids(p.isr), status)
	}
	tw.Flush()
}

func ids(v []int32) string {
	s := make([]string, len(v))
	for i, id := range v {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ",") + "]"
}
