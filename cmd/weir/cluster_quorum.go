package main

// weir cluster add-voter / remove-voter / decommission: the controller
// quorum's membership (KIP-853 AddRaftVoter, RemoveRaftVoter) and
// retiring a broker (UnregisterBroker), over the Kafka protocol, so they
// work against weir and Apache Kafka 4.x brokers alike. Unlike
// kafka-metadata-quorum they need no controller properties file: the new
// voter's directory id comes from the quorum's observers, and each
// command waits until the change shows in DescribeQuorum.

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterSubcommands are added to `weir cluster` (cluster.go).
var clusterSubcommands = []func(*globalFlags) *cobra.Command{addVoterCmd, removeVoterCmd, decommissionCmd}

const clusterMetadataTopic = "__cluster_metadata"

// quorumState is DescribeQuorum's answer for the metadata log.
type quorumState struct {
	part  kmsg.DescribeQuorumResponseTopicPartition
	nodes []kmsg.DescribeQuorumResponseNode
}

func describeQuorum(ctx context.Context, cl *kgo.Client) (quorumState, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = clusterMetadataTopic
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return quorumState{}, fmt.Errorf("describing the controller quorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return quorumState{}, fmt.Errorf("describing the controller quorum: %w%s", err, msgSuffix(resp.ErrorMessage))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return quorumState{}, fmt.Errorf("describing the controller quorum: an answer without %s-0", clusterMetadataTopic)
	}
	part := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
		return quorumState{}, fmt.Errorf("describing the controller quorum: %w%s", err, msgSuffix(part.ErrorMessage))
	}
	return quorumState{part: part, nodes: resp.Nodes}, nil
}

func msgSuffix(m *string) string {
	if m == nil || *m == "" {
		return ""
	}
	return ": " + *m
}

// kafkaUUID is a Kafka Uuid's string form; parseKafkaUUID reads it.
func kafkaUUID(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

func parseKafkaUUID(s string) ([16]byte, error) {
	var u [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("%q is not a Kafka directory id (22 characters of URL-safe base64, as kafka-metadata-quorum describe prints it)", s)
	}
	copy(u[:], b)
	return u, nil
}

func (q quorumState) find(id int32) (voter, observer *kmsg.DescribeQuorumResponseTopicPartitionReplicaState) {
	for i := range q.part.CurrentVoters {
		if q.part.CurrentVoters[i].ReplicaID == id {
			voter = &q.part.CurrentVoters[i]
		}
	}
	for i := range q.part.Observers {
		if q.part.Observers[i].ReplicaID == id {
			observer = &q.part.Observers[i]
		}
	}
	return voter, observer
}

func (q quorumState) voterIDs() string {
	var v []int32
	for _, r := range q.part.CurrentVoters {
		v = append(v, r.ReplicaID)
	}
	return ids(v)
}

// controllerListener is the voters' controller listener name.
func (q quorumState) controllerListener() string {
	for _, n := range q.nodes {
		for _, l := range n.Listeners {
			return l.Name
		}
	}
	return "CONTROLLER"
}

// waitQuorum polls DescribeQuorum until done accepts it or ctx ends.
func waitQuorum(ctx context.Context, cl *kgo.Client, done func(quorumState) bool) (quorumState, error) {
	for {
		q, err := describeQuorum(ctx, cl)
		if err == nil && done(q) {
			return q, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return q, fmt.Errorf("waiting for the change to show in the quorum: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeQuorum(out io.Writer, q quorumState) {
	var obs []int32
	for _, r := range q.part.Observers {
		obs = append(obs, r.ReplicaID)
	}
	fmt.Fprintf(out, "leader %d, epoch %d; voters %s, observers %s\n", q.part.LeaderID, q.part.LeaderEpoch, q.voterIDs(), ids(obs))
}

func addVoterCmd(g *globalFlags) *cobra.Command {
	var nodeID int32
	var dirID, addr, listener string
	cmd := &cobra.Command{
		Use:   "add-voter",
		Short: "Make an observer of the controller quorum a voter (KIP-853 AddRaftVoter)",
		Long: `Make a node that follows the controller quorum as an observer a voter.
Start the node first (weir broker with a --node-id that is not in
--controller-voters joins as an observer) and let it catch up; then
add-voter promotes it, waiting (within --timeout) for the node to show
as an observer and to catch up. The quorum refuses a node id that already
votes (DUPLICATE_VOTER) and a node that is not a caught-up observer
(REQUEST_TIMED_OUT, retried until --timeout): nothing changes then. One
change at a time.

--controller-addr is where the other voters reach the node's controller
listener. The directory id defaults to the one the observer reports.
Replace a voter by adding the new one first, then removing the old one.`,
		Example: `  weir cluster add-voter --node-id 4 --controller-addr broker4.example:9093
  weir cluster remove-voter --node-id 1`,
		Args: cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().Int32Var(&nodeID, "node-id", -1, "the node id to make a voter (required)")
	cmd.Flags().StringVar(&addr, "controller-addr", "", "host:port of the node's controller listener (required)")
	cmd.Flags().StringVar(&dirID, "directory-id", "", "the node's metadata directory id (default: the one it reports as an observer)")
	cmd.Flags().StringVar(&listener, "listener", "", "the controller listener's name (default: the voters')")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if nodeID < 0 {
			return fmt.Errorf("--node-id: required (the node to add; >= 0)")
		}
		host, portStr, err := net.SplitHostPort(addr)
		port, perr := strconv.ParseUint(portStr, 10, 16)
		if addr == "" || err != nil || perr != nil || host == "" || port == 0 {
			return fmt.Errorf("--controller-addr %q: want HOST:PORT of the node's controller listener", addr)
		}
		_, cl, err := cf.admin()
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := cf.requestCtx(cmd.Context())
		defer cancel()
		// A node just started may not be listed as an observer yet:
		// wait for it (within --timeout).
		var q quorumState
		var voter, observer *kmsg.DescribeQuorumResponseTopicPartitionReplicaState
		for seen := false; ; seen = true {
			next, err := describeQuorum(ctx, cl)
			if err != nil {
				if seen && ctx.Err() != nil {
					break // waited: answer from the last view
				}
				return cf.explain(err)
			}
			q = next
			voter, observer = q.find(nodeID)
			if voter != nil || observer != nil || dirID != "" || ctx.Err() != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		if voter != nil {
			return fmt.Errorf("node %d is already a voter (voters %s): nothing changed", nodeID, q.voterIDs())
		}
		var dir [16]byte
		switch {
		case dirID != "":
			if dir, err = parseKafkaUUID(dirID); err != nil {
				return fmt.Errorf("--directory-id: %w", err)
			}
		case observer != nil:
			dir = observer.ReplicaDirectoryID
		default:
			return fmt.Errorf("node %d is not an observer of the controller quorum: start it (weir broker --node-id %d, not in --controller-voters) and let it catch up first", nodeID, nodeID)
		}
		if listener == "" {
			listener = q.controllerListener()
		}
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.TimeoutMillis = int32(cf.timeout / time.Millisecond)
		req.VoterID, req.VoterDirectoryID = nodeID, dir
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = listener, host, uint16(port)
		req.Listeners = append(req.Listeners, l)
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return cf.explain(fmt.Errorf("adding voter %d: %w", nodeID, err))
			}
			err = kerr.ErrorForCode(resp.ErrorCode)
			if err == nil {
				break
			}
			// REQUEST_TIMED_OUT: not caught up yet, or another change
			// is in progress; retried within --timeout.
			if resp.ErrorCode != kerr.RequestTimedOut.Code || ctx.Err() != nil {
				return fmt.Errorf("adding voter %d: %w%s (nothing changed)", nodeID, err, msgSuffix(resp.ErrorMessage))
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		q, err = waitQuorum(ctx, cl, func(q quorumState) bool { v, _ := q.find(nodeID); return v != nil })
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "added voter %d with directory id %s and endpoint %s://%s\n", nodeID, kafkaUUID(dir), listener, net.JoinHostPort(host, portStr))
		writeQuorum(cmd.OutOrStdout(), q)
		return nil
	}
	return cmd
}

func removeVoterCmd(g *globalFlags) *cobra.Command {
	var nodeID int32
	var dirID string
	cmd := &cobra.Command{
		Use:   "remove-voter",
		Short: "Remove a voter from the controller quorum (KIP-853 RemoveRaftVoter)",
		Long: `Remove a voter from the controller quorum. A node that keeps running
follows the quorum as an observer; a removed leader steps down once the
change is committed. The last voter cannot be removed, nor a node that
does not vote (VOTER_NOT_FOUND): nothing changes then. The directory id
defaults to the one the quorum reports for the voter.`,
		Example: `  weir cluster remove-voter --node-id 1`,
		Args:    cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().Int32Var(&nodeID, "node-id", -1, "the voter to remove (required)")
	cmd.Flags().StringVar(&dirID, "directory-id", "", "the voter's metadata directory id (default: the one the quorum reports)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if nodeID < 0 {
			return fmt.Errorf("--node-id: required (the voter to remove; >= 0)")
		}
		_, cl, err := cf.admin()
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := cf.requestCtx(cmd.Context())
		defer cancel()
		var dir [16]byte
		if dirID != "" {
			if dir, err = parseKafkaUUID(dirID); err != nil {
				return fmt.Errorf("--directory-id: %w", err)
			}
		} else {
			q, err := describeQuorum(ctx, cl)
			if err != nil {
				return cf.explain(err)
			}
			if v, _ := q.find(nodeID); v != nil {
				dir = v.ReplicaDirectoryID
			}
		}
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID, req.VoterDirectoryID = nodeID, dir
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return cf.explain(fmt.Errorf("removing voter %d: %w", nodeID, err))
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("removing voter %d: %w%s (nothing changed)", nodeID, err, msgSuffix(resp.ErrorMessage))
		}
		q, err := waitQuorum(ctx, cl, func(q quorumState) bool { v, _ := q.find(nodeID); return v == nil })
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "removed voter %d with directory id %s\n", nodeID, kafkaUUID(dir))
		writeQuorum(cmd.OutOrStdout(), q)
		return nil
	}
	return cmd
}

func decommissionCmd(g *globalFlags) *cobra.Command {
	var nodeID int32
	var force bool
	cmd := &cobra.Command{
		Use:   "decommission",
		Short: "Retire a stopped broker for good (UnregisterBroker)",
		Long: `Retire a broker for good: its registration is removed (Kafka's
UnregisterBroker), its leaderships and ISR memberships go to the other
replicas, and it leaves the controller quorum's observers.

Before that, decommission checks what would be lost, and changes nothing
when a check fails:
  - the broker must not be a controller voter (weir cluster remove-voter
    first);
  - it must be stopped (a running broker registers again);
  - no partition may still have a replica on it (move them off first with
    weir cluster reassign or kafka-reassign-partitions), unless --force.`,
		Example: `  weir cluster remove-voter --node-id 1     # if it votes
  # stop broker 1, then
  weir cluster decommission --node-id 1`,
		Args: cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	cmd.Flags().Int32Var(&nodeID, "node-id", -1, "the broker to retire (required)")
	cmd.Flags().BoolVar(&force, "force", false, "retire it even though partitions still have replicas on it (they stay under-replicated until reassigned)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if nodeID < 0 {
			return fmt.Errorf("--node-id: required (the broker to retire; >= 0)")
		}
		_, cl, err := cf.admin()
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := cf.requestCtx(cmd.Context())
		defer cancel()
		if q, err := describeQuorum(ctx, cl); err == nil {
			if v, _ := q.find(nodeID); v != nil {
				return fmt.Errorf("broker %d is a controller voter (voters %s): run weir cluster remove-voter --node-id %d first; nothing changed", nodeID, q.voterIDs(), nodeID)
			}
		}
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return cf.explain(fmt.Errorf("reading cluster metadata: %w", err))
		}
		for _, b := range md.Brokers {
			if b.NodeID == nodeID {
				return fmt.Errorf("broker %d is running (at %s): stop it first; nothing changed", nodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
			}
		}
		var hosted []string
		for _, t := range md.Topics {
			for _, p := range t.Partitions {
				for _, r := range p.Replicas {
					if r == nodeID && t.Topic != nil {
						hosted = append(hosted, fmt.Sprintf("%s-%d", *t.Topic, p.Partition))
					}
				}
			}
		}
		if len(hosted) > 0 && !force {
			shown := hosted
			if len(shown) > 10 {
				shown = append(shown[:10:10], fmt.Sprintf("... (%d in all)", len(hosted)))
			}
			return fmt.Errorf("broker %d still holds replicas of %d partitions (%s): reassign them first (weir cluster reassign), or --force; nothing changed", nodeID, len(hosted), strings.Join(shown, ", "))
		}
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = nodeID
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return cf.explain(fmt.Errorf("unregistering broker %d: %w", nodeID, err))
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("unregistering broker %d: %w%s", nodeID, err, msgSuffix(resp.ErrorMessage))
		}
		fmt.Fprintf(cmd.OutOrStdout(), "broker %d decommissioned", nodeID)
		if len(hosted) > 0 {
			fmt.Fprintf(cmd.OutOrStdout(), " (%d partitions still list it as a replica: reassign them)", len(hosted))
		}
		fmt.Fprintln(cmd.OutOrStdout())
		return nil
	}
	return cmd
}
