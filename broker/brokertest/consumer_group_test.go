package brokertest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A KIP-848 consumer group keeps its members when its coordinator moves:
// the new leader of the group's __consumer_offsets partition restores
// them (member ids, epochs, partitions) from their records, and the
// franz-go members go on heartbeating there without rejoining.
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
		cl := c.Client(kgo.ConsumerGroup("cgrp"), kgo.ConsumeTopics("cgt"), kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
		go func() {
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
	}
	describe := func() (string, error) {
		// A new client each time: one that cached the killed
		// coordinator keeps dialing it.
		admin := c.Client()
		defer admin.Close()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"cgrp"}
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			return "", err
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return "", kerr.ErrorForCode(g.ErrorCode)
		}
		if g.State != "Stable" || len(g.Members) != 2 {
			return "", fmt.Errorf("group %s with %d members: %s", g.State, len(g.Members), describeConsumerGroup(g))
		}
		var ids []string
		for _, m := range g.Members {
			n := 0
			for _, tp := range m.Assignment.TopicPartitions {
				n += len(tp.Partitions)
			}
			if n != 3 {
				return "", fmt.Errorf("member %s owns %d partitions", m.MemberID, n)
			}
			ids = append(ids, m.MemberID)
		}
		sort.Strings(ids)
		return strings.Join(ids, ","), nil
	}
	var before string
	c.WaitFor(60*time.Second, func() (err error) {
		before, err = describe()
		return err
	})
	killGroupCoordinator(t, c, "cgrp", 30*time.Second)
	// The new coordinator has the same two members (a member it did not
	// know would have rejoined with a new member id).
	c.WaitFor(30*time.Second, func() error {
		after, err := describe()
		if err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("members %s, before the move %s", after, before)
		}
		return nil
	})
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
