package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupCommands: list, describe (with lag), reset-offsets (dry run,
// then --execute) and delete a group whose offsets were committed with
// the admin API, against a real broker.
func TestGroupCommands(t *testing.T) {
	b := startTestBroker(t, 2, kmsg.ListGroups, kmsg.DescribeGroups, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.DeleteGroups)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ { // 5 records in each of the 2 partitions
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: "events", Partition: 0, At: 3, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "events", Partition: 1, At: 5, LeaderEpoch: -1})
	if resps, err := kadm.NewClient(cl).CommitOffsets(ctx, "app", commit); err != nil || resps.Error() != nil {
		t.Fatalf("committing: %v %v", err, resps.Error())
	}

	out := mustWeir(t, "", "group", "list", "--brokers", b)
	if !regexpLine(out, `app\s+\S+.*`) {
		t.Fatalf("list lacks group app:\n%s", out)
	}
	out = mustWeir(t, "", "group", "describe", "app", "--brokers", b)
	for _, line := range []string{`events\s+0\s+3\s+5\s+2\s+-\s+-\s+-`, `events\s+1\s+5\s+5\s+0\s+-\s+-\s+-`, `TOTAL LAG 2`} {
		if !regexpLine(out, line) {
			t.Fatalf("describe lacks a line %q:\n%s", line, out)
		}
	}

	_, _, err = runWeir(t, "", "group", "reset-offsets", "app", "--topic", "events", "--brokers", b)
	if err == nil || !strings.Contains(err.Error(), "give exactly one of --to-earliest") {
		t.Fatalf("reset without a target: err = %v", err)
	}
	out = mustWeir(t, "", "group", "reset-offsets", "app", "--topic", "events:0", "--shift-by", "-2", "--brokers", b)
	if !regexpLine(out, `app\s+events\s+0\s+3\s+1`) || !strings.Contains(out, "dry run: nothing committed") {
		t.Fatalf("dry run output:\n%s", out)
	}
	out = mustWeir(t, "", "group", "reset-offsets", "app", "--topic", "events", "--to-earliest", "--execute", "--brokers", b)
	if !strings.Contains(out, "committed 2 offsets for group app") {
		t.Fatalf("reset output:\n%s", out)
	}
	out = mustWeir(t, "", "group", "describe", "app", "--brokers", b)
	if !regexpLine(out, `events\s+0\s+0\s+5\s+5.*`) || !regexpLine(out, `TOTAL LAG 10`) {
		t.Fatalf("describe after reset:\n%s", out)
	}

	out = mustWeir(t, "", "group", "delete", "app", "--brokers", b)
	if !strings.Contains(out, "deleted group app") {
		t.Fatalf("delete output %q", out)
	}
	out, _, err = runWeir(t, "", "group", "delete", "app", "--brokers", b)
	if err == nil || !strings.Contains(err.Error(), `group "app"`) {
		t.Fatalf("deleting a deleted group: err = %v\n%s", err, out)
	}
}
