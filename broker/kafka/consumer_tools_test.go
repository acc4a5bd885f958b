package kafka

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/kafkatools"
	"weir/internal/testkit"
)

// TestJavaConsumerProtocolBesideClassic: Apache Kafka 4.4's Java consumer
// (kafka-console-consumer) with group.protocol=consumer (KIP-848) in one
// group, and with group.protocol=classic in another, two members each, on
// the same topic: each group consumes every record. While they run,
// kafka-groups --list shows the types as against Kafka, and
// kafka-consumer-groups --describe describes the consumer group
// (ConsumerGroupDescribe) with its members and offsets; once they left,
// it deletes the empty consumer group. The consumers run until the test
// stops them (SIGTERM, once both groups committed every record): a
// consumer that left on its own after an idle timeout left its group
// before the describes were done on a loaded machine (hog pass 23).
func TestJavaConsumerProtocolBesideClassic(t *testing.T) {
	b := startGroupBroker(t, consumerGroupConfig())
	groups := kafkatools.ForTest(t, kafkatools.GroupsCommand, b.addr)
	consumerGroups := kafkatools.ForTest(t, kafkatools.ConsumerGroupCommand, b.addr)
	const parts, n = 4, 400
	createTopic(t, b, "jcp", parts, nil)
	produce(t, b.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "jcp", n, parts)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type run struct {
		group, protocol string
		out             string
		err             error
	}
	runs := []*run{{group: "j-new", protocol: "consumer"}, {group: "j-new", protocol: "consumer"},
		{group: "j-old", protocol: "classic"}, {group: "j-old", protocol: "classic"}}
	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.out, r.err = kafkatools.Run(cctx, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", b.addr,
				"--topic", "jcp", "--group", r.group, "--from-beginning",
				"--consumer-property", "group.protocol="+r.protocol,
				"--consumer-property", "auto.commit.interval.ms=500",
				"--property", "print.partition=true", "--property", "print.offset=true", "--property", "print.value=false")
		}()
	}

	// While they consume: both groups have their two members.
	admin := b.client()
	testkit.CheckFor(t, 90*time.Second, func() error {
		if err := settled(describeConsumerGroup(t, admin, "j-new"), 2, parts); err != nil {
			return fmt.Errorf("j-new: %w", err)
		}
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"j-old"}
		if g := request[*kmsg.DescribeGroupsResponse](t, admin, req).Groups[0]; g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("j-old: %s with %d members", g.State, len(g.Members))
		}
		return nil
	})
	out := groups("--list")
	rows := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		rows[f[0]] = strings.Join(f, " ")
	}
	if rows["GROUP"] != "GROUP TYPE PROTOCOL" || rows["j-new"] != "j-new Consumer consumer" || rows["j-old"] != "j-old Classic consumer" {
		t.Errorf("kafka-groups --list:\n%s", out)
	}
	if out := groups("--list", "--consumer"); !strings.Contains(out, "j-new") || !strings.Contains(out, "j-old") {
		t.Errorf("kafka-groups --list --consumer:\n%s", out)
	}
	if out := consumerGroups("--list", "--type", "consumer"); !strings.Contains(out, "j-new") || strings.Contains(out, "j-old") {
		t.Errorf("kafka-consumer-groups --list --type consumer:\n%s", out)
	}
	// --describe --state: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
	out = consumerGroups("--describe", "--group", "j-new", "--state")
	if !regexp.MustCompile(`(?m)^j-new\s+\S+:\d+\s+\(0\)\s+uniform\s+Stable\s+2\s*$`).MatchString(out) {
		t.Errorf("kafka-consumer-groups --describe --state:\n%s", out)
	}
	// --describe: one row per partition with its member.
	out = consumerGroups("--describe", "--group", "j-new")
	var partRows int
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 9 && f[0] == "j-new" && f[1] == "jcp" && f[6] != "-" && strings.HasPrefix(f[8], "console-consumer") {
			partRows++
		}
	}
	if partRows != parts {
		t.Errorf("kafka-consumer-groups --describe: %d assigned partition rows, want %d:\n%s", partRows, parts, out)
	}
	out = consumerGroups("--describe", "--group", "j-new", "--members")
	if !regexp.MustCompile(`(?m)^j-new\s+\S+\s+/127\.0\.0\.1\s+console-consumer\S*\s+2\s*$`).MatchString(out) {
		t.Errorf("kafka-consumer-groups --describe --members:\n%s", out)
	}

	// Both groups committed every record (auto commit: each record was
	// printed before the poll that commits it), then the consumers stop.
	adm := kadm.NewClient(admin)
	testkit.CheckFor(t, 90*time.Second, func() error {
		for _, g := range []string{"j-new", "j-old"} {
			offs, err := adm.FetchOffsets(ctx, g)
			if err == nil {
				err = offs.Error()
			}
			if err != nil {
				return err
			}
			var sum int64
			offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
			if sum != n {
				return fmt.Errorf("group %s committed %d of %d records", g, sum, n)
			}
		}
		return nil
	})
	stopConsumers()
	wg.Wait()
	seen := map[string]map[string]int{}
	for _, r := range runs {
		if r.err != nil && !strings.Contains(r.out, "Processed a total of") {
			t.Fatalf("%s consumer of %s: %v\n%s", r.protocol, r.group, r.err, r.out)
		}
		if seen[r.group] == nil {
			seen[r.group] = map[string]int{}
		}
		for _, l := range strings.Split(r.out, "\n") {
			// "Partition:1	Offset:7"
			if strings.HasPrefix(l, "Partition:") {
				seen[r.group][strings.Join(strings.Fields(l), " ")]++
			}
		}
	}
	for _, g := range []string{"j-new", "j-old"} {
		if len(seen[g]) != n {
			t.Errorf("group %s consumed %d distinct records of %d", g, len(seen[g]), n)
		}
	}
	// The consumers left: the consumer group is empty, its offsets at the
	// end, and kafka-consumer-groups deletes it.
	out = consumerGroups("--describe", "--group", "j-new", "--state")
	if !regexp.MustCompile(`(?m)^j-new\s+\S+:\d+\s+\(0\)\s+uniform\s+Empty\s+0\s*$`).MatchString(out) {
		t.Errorf("kafka-consumer-groups --describe --state after the members left:\n%s", out)
	}
	out = consumerGroups("--delete", "--group", "j-new")
	if !strings.Contains(out, "Deletion of requested consumer groups ('j-new') was successful.") {
		t.Errorf("kafka-consumer-groups --delete:\n%s", out)
	}
	if out := groups("--list"); strings.Contains(out, "j-new") || !strings.Contains(out, "j-old") {
		t.Errorf("kafka-groups --list after the delete:\n%s", out)
	}
}
