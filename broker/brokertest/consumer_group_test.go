package brokertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A KIP-848 consumer group keeps its members when its coordinator moves:
// the new leader of the group's __consumer_offsets partition restores
// them (member ids, epochs, partitions) from their records, and the
// franz-go members go on heartbeating there without rejoining.
//
// The describe that finds the group Stable answers from the coordinator's
// memory, which may hold a change still being replicated: the second
// member's partitions, on a loaded machine. The kill then loses the
// record and the heartbeat answer carrying it: that member owns nothing
// in its own view, and must find the new coordinator to get its
// partitions (startConsumer848 says how it does).
func TestConsumerGroupSurvivesCoordinatorMove(t *testing.T) {
	if testing.Short() {
		t.Skip("group coordinator moves across a three-node cluster")
	}
	t.Parallel()
	c := NewCluster(t, Brokers(3), BrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "500"}))
	c.CreateTopic("cgt", 6, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for range 2 {
		startConsumer848(ctx, c, "cgrp", "cgt")
	}
	var before string
	c.WaitFor(60*time.Second, func() (err error) {
		before, err = describeConsumers(ctx, c, "cgrp", 2, 3)
		return err
	})
	killGroupCoordinator(t, c, "cgrp", 30*time.Second)
	// The new coordinator has the same two members (a member it did not
	// know would have rejoined with a new member id).
	c.WaitFor(30*time.Second, func() error {
		after, err := describeConsumers(ctx, c, "cgrp", 2, 3)
		if err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("members %s, before the move %s", after, before)
		}
		return nil
	})
}

// A member that owns no partition finds its group's new coordinator
// after the old one is lost: given a partition added after the move, it
// takes it there. (Such a member fetches nothing, so no fetch error sends
// it to refresh its metadata: startConsumer848's short metadata.max.age
// does. Without it the member kept heartbeating to the lost coordinator.)
func TestConsumerGroupIdleMemberFollowsCoordinatorMove(t *testing.T) {
	if testing.Short() {
		t.Skip("group coordinator moves across a three-node cluster")
	}
	t.Parallel()
	c := NewCluster(t, Brokers(3), BrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "500"}))
	// Replication factor 2: the partition added with a broker down
	// needs two live brokers.
	c.CreateTopic("idle", 1, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for range 2 {
		startConsumer848(ctx, c, "igrp", "idle")
	}
	var before string
	c.WaitFor(60*time.Second, func() (err error) {
		before, err = describeConsumers(ctx, c, "igrp", 2, -1)
		return err
	})
	killGroupCoordinator(t, c, "igrp", 30*time.Second)
	c.WaitFor(30*time.Second, func() error {
		admin := kadm.NewClient(c.Client(kgo.SeedBrokers(runningAddrs(c)...)))
		defer admin.Close()
		rs, err := admin.CreatePartitions(ctx, 1, "idle")
		if err != nil {
			return err
		}
		if r := rs["idle"]; r.Err != nil && !errors.Is(r.Err, kerr.InvalidPartitions) {
			return r.Err // INVALID_PARTITIONS: an earlier try added it
		}
		return nil
	})
	c.WaitFor(30*time.Second, func() error {
		after, err := describeConsumers(ctx, c, "igrp", 2, 1)
		if err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("members %s, before the move %s", after, before)
		}
		return nil
	})
}

// startConsumer848 starts a franz-go member of group grp (KIP-848
// protocol, server-side assignment) consuming topic until ctx ends.
//
// Its metadata is at most a second old. franz-go (v1.22.3) forgets a
// group coordinator it cannot dial only when its metadata no longer lists
// that broker (a dial error to the coordinator of a ConsumerGroupHeartbeat
// does not make it look the coordinator up again, as Kafka's Java client
// does), and with the default metadata.max.age a member that fetches
// nothing from the lost broker refreshes its metadata only every five
// minutes: until then it heartbeats to the lost coordinator, and its group
// stays short of it. Once the controller fences the lost broker (weir's
// Metadata lists only unfenced brokers, as Kafka's does), the refresh
// drops it and the member asks FindCoordinator again.
func startConsumer848(ctx context.Context, c *Cluster, grp, topic string) {
	cl := c.Client(kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.StickyBalancer()), kgo.MetadataMaxAge(time.Second))
	go func() {
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
}

// describeConsumers describes consumer group grp (ConsumerGroupDescribe)
// through a new client seeded with the running brokers only (one that
// cached a killed coordinator keeps dialing it; and a killed seed's
// "connection refused" would hide the error that matters). It returns the
// sorted member ids once the group is Stable with members members, each
// owning each partitions (any number if each < 0).
func describeConsumers(ctx context.Context, c *Cluster, grp string, members, each int) (string, error) {
	admin := c.Client(kgo.SeedBrokers(runningAddrs(c)...))
	defer admin.Close()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{grp}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		return "", err
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return "", kerr.ErrorForCode(g.ErrorCode)
	}
	if g.State != "Stable" || len(g.Members) != members {
		return "", fmt.Errorf("group %s with %d members: %s", g.State, len(g.Members), describeConsumerGroup(g))
	}
	var ids []string
	for _, m := range g.Members {
		n := 0
		for _, tp := range m.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
		if each >= 0 && n != each {
			return "", fmt.Errorf("member %s owns %d partitions: %s", m.MemberID, n, describeConsumerGroup(g))
		}
		ids = append(ids, m.MemberID)
	}
	sort.Strings(ids)
	return strings.Join(ids, ","), nil
}

// runningAddrs is the Kafka addresses of c's running brokers.
func runningAddrs(c *Cluster) []string {
	var out []string
	for _, b := range c.Brokers() {
		if b.Running() {
			out = append(out, b.Addr())
		}
	}
	return out
}

// describeConsumerGroup is what a ConsumerGroupDescribe says of g's
// epochs and of each member's epoch, owned and target partitions (for a
// failure that explains itself).
func describeConsumerGroup(g kmsg.ConsumerGroupDescribeResponseGroup) string {
	parts := func(tps []kmsg.AssignmentTopicPartition) string {
		var out []string
		for _, tp := range tps {
			out = append(out, fmt.Sprint(tp.Topic, tp.Partitions))
		}
		return strings.Join(out, " ")
	}
	out := fmt.Sprintf("group epoch %d, assignment epoch %d", g.Epoch, g.AssignmentEpoch)
	for _, m := range g.Members {
		out += fmt.Sprintf("; member %s epoch %d owns [%s] target [%s]", m.MemberID, m.MemberEpoch,
			parts(m.Assignment.TopicPartitions), parts(m.TargetAssignment.TopicPartitions))
	}
	return out
}
