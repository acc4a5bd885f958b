package kafka

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/kafkatools"
)

// TestKafkaGetOffsetsLocalAndTiered: Apache Kafka 4.4's kafka-get-offsets
// (AdminClient listOffsets with OffsetSpec.earliestLocal/latestTiered, so
// ListOffsets v8/v9+) prints the log start offset for earliest-local and
// nothing for latest-tiered (the tool leaves out partitions whose offset
// is -1, UNKNOWN_OFFSET; an error would print "Skip getting offsets ..."),
// as it does against Kafka without remote storage.
func TestKafkaGetOffsetsLocalAndTiered(t *testing.T) {
	b := startBroker(t)
	run := kafkatools.ForTest(t, kafkatools.GetOffsetShell, b.addr)
	createTopic(t, b, "gotiered", 2, nil)
	cl := b.client(kgo.DefaultProduceTopic("gotiered"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 6; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: 0, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 10_000
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "gotiered"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Offset = 2
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	if resp, err := dr.RequestWith(context.Background(), cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete records: %v %+v", err, resp)
	}
	for _, c := range []struct{ time, want string }{
		{"earliest-local", "gotiered:0:2\ngotiered:1:0"},
		{"-4", "gotiered:0:2\ngotiered:1:0"},
		{"latest-tiered", ""},
		{"-5", ""},
		{"latest", "gotiered:0:6\ngotiered:1:0"},
	} {
		out := run("--topic", "gotiered", "--time", c.time)
		if got := strings.TrimSpace(out); got != c.want {
			t.Errorf("kafka-get-offsets --time %s:\n%s\nwant\n%s", c.time, out, c.want)
		}
	}
}
