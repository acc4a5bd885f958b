package kafka

import (
	"testing"

	"weir/broker/group"
)

// TestGroupCoordinatorStartsWithBrokerConfigs: without SetGroupConfig the
// group coordinator starts lazily with the broker configs, and the
// offsets topic it creates has offsets.topic.num.partitions partitions
// and segment.bytes offsets.topic.segment.bytes (as Kafka creates it).
func TestGroupCoordinatorStartsWithBrokerConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, map[string]string{
		"offsets.topic.num.partitions": "3",
		"offsets.topic.segment.bytes":  "2097152",
	}))
	if _, ok := b.srv.groupCoord.running(); ok {
		t.Fatal("the group coordinator runs before any group request")
	}
	adm, ctx := adminFor(t, b)
	for _, r := range adm.FindGroupCoordinators(ctx, "g") {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if _, ok := b.srv.groupCoord.running(); !ok {
		t.Fatal("the group coordinator does not run after FindCoordinator")
	}
	if err := b.srv.SetGroupConfig(testGroupConfig()); err != ErrGroupsStarted {
		t.Fatalf("SetGroupConfig after the start: %v, want ErrGroupsStarted", err)
	}
	tds, err := adm.ListTopics(ctx, group.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tds[group.OffsetsTopic].Partitions); n != 3 {
		t.Fatalf("%s has %d partitions, want 3", group.OffsetsTopic, n)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, group.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(group.OffsetsTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "segment.bytes" {
			if c.MaybeValue() != "2097152" {
				t.Fatalf("segment.bytes of %s is %s, want 2097152", group.OffsetsTopic, c.MaybeValue())
			}
			return
		}
	}
	t.Fatalf("no segment.bytes in %s's configs %+v", group.OffsetsTopic, rc.Configs)
}
