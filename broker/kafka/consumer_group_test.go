package kafka

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/group"
	"weir/internal/testkit"
)

// consumerGroupConfig is testGroupConfig with a short consumer-protocol
// heartbeat interval, so that reconciliation takes little time.
func consumerGroupConfig() group.Config {
	cfg := testGroupConfig()
	cfg.ConsumerHeartbeatInterval = 100 * time.Millisecond
	cfg.ConsumerSessionTimeout = 3 * time.Second
	return cfg
}

// cpMember is one franz-go consumer of a KIP-848 group (ServerSideBalancer)
// or of a classic group; it records every record it consumes.
type cpMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

type consumed struct {
	mu   sync.Mutex
	seen map[string]int // topic/partition/offset -> times
}

func (c *consumed) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func startCPMember(t *testing.T, b *testBroker, c *consumed, groupID string, server bool, opts ...kgo.Opt) *cpMember {
	t.Helper()
	all := []kgo.Opt{
		kgo.SeedBrokers(b.addr),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	}
	if server {
		all = append(all, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	} else {
		all = append(all, kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(100*time.Millisecond))
	}
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &cpMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			c.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				c.seen[fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)]++
			})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *cpMember) close() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.cancel = nil
	m.cl.Close() // leaves the group
	<-m.done
}

// describeConsumerGroup describes one group with ConsumerGroupDescribe.
// A retriable error (the group's coordinator still loading its
// partition: COORDINATOR_LOAD_IN_PROGRESS) is asked again.
func describeConsumerGroup(t *testing.T, cl *kgo.Client, groupID string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	var g kmsg.ConsumerGroupDescribeResponseGroup
	testkit.CheckFor(t, 20*time.Second, func() error {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{groupID}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			if kerr.IsRetriable(err) {
				return fmt.Errorf("ConsumerGroupDescribe: %w", err)
			}
			t.Fatalf("ConsumerGroupDescribe: %v", err)
		}
		g = resp.Groups[0]
		return nil
	})
	return g
}

// settled checks that a consumer group is Stable with n members whose
// assignments are their targets, disjoint, covering parts partitions.
func settled(d kmsg.ConsumerGroupDescribeResponseGroup, n int, parts int) error {
	if d.ErrorCode != 0 {
		return kerr.ErrorForCode(d.ErrorCode)
	}
	if d.State != "Stable" || len(d.Members) != n {
		return fmt.Errorf("group %s epoch %d with %d members, want Stable with %d", d.State, d.Epoch, len(d.Members), n)
	}
	owner := map[string]string{}
	for _, m := range d.Members {
		if m.MemberEpoch != d.AssignmentEpoch {
			return fmt.Errorf("member %s at epoch %d, group assignment epoch %d", m.MemberID, m.MemberEpoch, d.AssignmentEpoch)
		}
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				k := fmt.Sprintf("%s/%d", tp.Topic, p)
				if o, ok := owner[k]; ok {
					return fmt.Errorf("%s owned by %s and %s", k, o, m.MemberID)
				}
				owner[k] = m.MemberID
			}
		}
	}
	if len(owner) != parts {
		return fmt.Errorf("%d of %d partitions assigned", len(owner), parts)
	}
	return nil
}

func TestConsumerProtocolFranz(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: consumer group rebalances")
	}
	b := startGroupBroker(t, consumerGroupConfig())
	const parts, n = 12, 1200
	createTopic(t, b, "cp", parts, nil)
	admin := b.client()
	produce(t, b.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "cp", n, parts)

	c := &consumed{seen: map[string]int{}}
	var ms []*cpMember
	for range 3 {
		ms = append(ms, startCPMember(t, b, c, "cg", true, kgo.ConsumeTopics("cp")))
	}
	testkit.CheckFor(t, 30*time.Second, func() error {
		if got := c.count(); got != n {
			return fmt.Errorf("consumed %d of %d records", got, n)
		}
		return settled(describeConsumerGroup(t, admin, "cg"), 3, parts)
	})

	// A fourth member joins: the group settles again with 4.
	ms = append(ms, startCPMember(t, b, c, "cg", true, kgo.ConsumeTopics("cp")))
	testkit.CheckFor(t, 30*time.Second, func() error { return settled(describeConsumerGroup(t, admin, "cg"), 4, parts) })
	d := describeConsumerGroup(t, admin, "cg")
	if d.AssignorName != "uniform" {
		t.Errorf("assignor %q, want uniform", d.AssignorName)
	}
	for _, m := range d.Members {
		if len(m.Assignment.TopicPartitions) != 1 {
			t.Errorf("member %s assigned %+v", m.MemberID, m.Assignment.TopicPartitions)
			continue
		}
		if cnt := len(m.Assignment.TopicPartitions[0].Partitions); cnt != 3 {
			t.Errorf("member %s has %d partitions, want 3 (uniform)", m.MemberID, cnt)
		}
	}

	// ListGroups reports the type.
	lg := request[*kmsg.ListGroupsResponse](t, admin, kmsg.NewPtrListGroupsRequest())
	found := false
	for _, g := range lg.Groups {
		if g.Group == "cg" {
			found = true
			if g.GroupType != "consumer" || g.ProtocolType != "consumer" || g.GroupState != "Stable" {
				t.Errorf("ListGroups: %+v", g)
			}
		}
	}
	if !found {
		t.Errorf("ListGroups does not list cg: %+v", lg.Groups)
	}

	// One member leaves: 3 again; the others take its partitions.
	ms[0].close()
	testkit.CheckFor(t, 30*time.Second, func() error { return settled(describeConsumerGroup(t, admin, "cg"), 3, parts) })

	// Committed offsets are the group's (shared with classic groups'
	// storage): every partition at its end once the members committed.
	testkit.CheckFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "cg"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = "cp"
		for p := range int32(parts) {
			rt.Partitions = append(rt.Partitions, p)
		}
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.OffsetFetchResponse](t, admin, req)
		var sum int64
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				sum += p.Offset
			}
		}
		if sum != n {
			return fmt.Errorf("committed offsets sum to %d, want %d", sum, n)
		}
		return nil
	})
	for _, m := range ms {
		m.close()
	}
	testkit.CheckFor(t, 30*time.Second, func() error {
		if d := describeConsumerGroup(t, admin, "cg"); d.State != "Empty" {
			return fmt.Errorf("group %s after every member left", d.State)
		}
		return nil
	})
	// DescribeGroups (classic) does not describe it; DeleteGroups deletes
	// the empty group.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"cg"}
	if g := request[*kmsg.DescribeGroupsResponse](t, admin, dg).Groups[0]; g.State != "Dead" {
		t.Errorf("DescribeGroups of a consumer group: %s", g.State)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"cg"}
	if g := request[*kmsg.DeleteGroupsResponse](t, admin, del).Groups[0]; g.ErrorCode != 0 {
		t.Errorf("DeleteGroups: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	if d := describeConsumerGroup(t, admin, "cg"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("after delete: %v", kerr.ErrorForCode(d.ErrorCode))
	}
}

// TestConsumerProtocolBesideClassic runs a KIP-848 group and a classic
// group on the same topic: each consumes every record once settled.
func TestConsumerProtocolBesideClassic(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: consumer group rebalances")
	}
	b := startGroupBroker(t, consumerGroupConfig())
	const parts, n = 6, 600
	createTopic(t, b, "both", parts, nil)
	produce(t, b.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "both", n, parts)
	cNew, cOld := &consumed{seen: map[string]int{}}, &consumed{seen: map[string]int{}}
	for range 2 {
		startCPMember(t, b, cNew, "g-new", true, kgo.ConsumeTopics("both"))
		startCPMember(t, b, cOld, "g-old", false, kgo.ConsumeTopics("both"))
	}
	testkit.CheckFor(t, 30*time.Second, func() error {
		if a, o := cNew.count(), cOld.count(); a != n || o != n {
			return fmt.Errorf("consumer protocol %d, classic %d of %d records", a, o, n)
		}
		return nil
	})
	admin := b.client()
	req := kmsg.NewPtrListGroupsRequest()
	lg := request[*kmsg.ListGroupsResponse](t, admin, req)
	types := map[string]string{}
	for _, g := range lg.Groups {
		types[g.Group] = g.GroupType
	}
	if types["g-new"] != "consumer" || types["g-old"] != "classic" {
		t.Errorf("group types %v", types)
	}
	req.TypesFilter = []string{"consumer"}
	lg = request[*kmsg.ListGroupsResponse](t, admin, req)
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "g-new" {
		t.Errorf("ListGroups types=consumer: %+v", lg.Groups)
	}
	// A classic member cannot join the consumer group while it has
	// members; a consumer-protocol heartbeat to the classic group is
	// GROUP_ID_NOT_FOUND.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "g-old", "m1", 30000
	hb.SubscribedTopicNames, hb.Topics = []string{"both"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := request[*kmsg.ConsumerGroupHeartbeatResponse](t, admin, hb); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("heartbeat to a classic group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestConsumerProtocolRegexAndRange: a regular-expression subscription
// (RE2, matched against the whole name: franz-go sends ".*(?:pattern).*",
// so the pattern is anchored here) picks up a topic created later; the
// range assignor gives contiguous ranges.
func TestConsumerProtocolRegexAndRange(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: consumer group rebalances")
	}
	b := startGroupBroker(t, consumerGroupConfig())
	createTopic(t, b, "rx-a", 4, nil)
	createTopic(t, b, "xrx-a", 4, nil) // not matched: the pattern is anchored
	admin := b.client()
	c := &consumed{seen: map[string]int{}}
	for range 2 {
		startCPMember(t, b, c, "rg", true, kgo.ConsumeRegex(), kgo.ConsumeTopics("^rx-"), kgo.Balancers(kgo.RangeBalancer()))
	}
	testkit.CheckFor(t, 30*time.Second, func() error { return settled(describeConsumerGroup(t, admin, "rg"), 2, 4) })
	createTopic(t, b, "rx-b", 2, nil)
	testkit.CheckFor(t, 30*time.Second, func() error { return settled(describeConsumerGroup(t, admin, "rg"), 2, 6) })
	d := describeConsumerGroup(t, admin, "rg")
	if d.AssignorName != "range" {
		t.Errorf("assignor %q, want range", d.AssignorName)
	}
	var got []string
	for _, m := range d.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			got = append(got, fmt.Sprintf("%s%v", tp.Topic, tp.Partitions))
		}
	}
	sort.Strings(got)
	want := []string{"rx-a[0 1]", "rx-a[2 3]", "rx-b[0]", "rx-b[1]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("range assignment %v, want %v", got, want)
	}
}
