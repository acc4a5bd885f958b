package kafka

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/kafkatools"
	"weir/broker/logdir"
	"weir/broker/metadata"
	"weir/internal/testkit"
)

// TestKafkaGetOffsetsLocalAndTiered: Apache Kafka 4.4's kafka-get-offsets
// (AdminClient listOffsets with OffsetSpec.earliestLocal/latestTiered, so
// ListOffsets v8/v9+) prints the log start offset for earliest-local and
// nothing for latest-tiered (the tool leaves out partitions whose offset
// is -1, UNKNOWN_OFFSET; an error would print "Skip getting offsets ..."),
// as it does against Kafka without remote storage.
func TestKafkaGetOffsetsLocalAndTiered(t *testing.T) {
	t.Parallel()
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

// TestKafkaGroupsListType: Apache Kafka 4.4's kafka-groups --list and
// kafka-consumer-groups --list --type (ListGroups v5) show weir's groups
// with type Classic, and a filter on another type lists none of them.
func TestKafkaGroupsListType(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	groups := kafkatools.ForTest(t, kafkatools.GroupsCommand, b.addr)
	consumerGroups := kafkatools.ForTest(t, kafkatools.ConsumerGroupCommand, b.addr)
	createTopic(t, b, "gltype", 1, nil)
	// The consumer joins in the background; wait until the group has it
	// (an offset commit without member id raced that join: UNKNOWN_MEMBER_ID).
	cl := b.client(kgo.ConsumerGroup("gl-classic"), kgo.ConsumeTopics("gltype"))
	testkit.CheckFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"gl-classic"}
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			return err
		}
		if g := resp.Groups[0]; g.State != "Stable" || g.ProtocolType != "consumer" {
			return fmt.Errorf("group gl-classic: state %q, protocol type %q", g.State, g.ProtocolType)
		}
		return nil
	})

	out := groups("--list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "GROUP TYPE PROTOCOL" ||
		strings.Join(strings.Fields(lines[1]), " ") != "gl-classic Classic consumer" {
		t.Fatalf("kafka-groups --list:\n%s", out)
	}
	if out := groups("--list", "--consumer"); !strings.Contains(out, "gl-classic") {
		t.Fatalf("kafka-groups --list --consumer:\n%s", out)
	}
	out = consumerGroups("--list", "--type")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "GROUP TYPE" ||
		strings.Join(strings.Fields(lines[1]), " ") != "gl-classic Classic" {
		t.Fatalf("kafka-consumer-groups --list --type:\n%s", out)
	}
	if out := consumerGroups("--list", "--type", "consumer"); strings.Contains(out, "gl-classic") {
		t.Fatalf("kafka-consumer-groups --list --type consumer lists a classic group:\n%s", out)
	}
	if out := consumerGroups("--list", "--type", "CLASSIC"); !strings.Contains(out, "gl-classic") {
		t.Fatalf("kafka-consumer-groups --list --type CLASSIC:\n%s", out)
	}
}

// TestKafkaFeatures: Apache Kafka 4.4's kafka-features describe prints
// weir's features (ApiVersions v4 supported and finalized features) as
// it does against Kafka; an upgrade weir cannot make fails with Kafka's
// INVALID_UPDATE_VERSION message, and one to the current level succeeds.
func TestKafkaFeatures(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	run := kafkatools.ForTest(t, kafkatools.FeatureCommand, b.addr)
	out := run("describe")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"Feature: group.version SupportedMinVersion: 1 SupportedMaxVersion: 1 FinalizedVersionLevel: 1 Epoch: 0",
		"Feature: metadata.version SupportedMinVersion: 4.0-IV3 SupportedMaxVersion: 4.0-IV3 FinalizedVersionLevel: 4.0-IV3 Epoch: 0",
		"Feature: transaction.version SupportedMinVersion: 1 SupportedMaxVersion: 1 FinalizedVersionLevel: 1 Epoch: 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("kafka-features describe:\n%s\nwant (spacing aside)\n%s", out, strings.Join(want, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct{ feature, want string }{
		{"transaction.version=2", "Could not upgrade transaction.version to 2. The update failed for all features since the following feature had an error: Invalid update version 2 for feature transaction.version. Local controller 0 only supports versions 1"},
		{"group.version=2", "Could not upgrade group.version to 2. The update failed for all features since the following feature had an error: Invalid update version 2 for feature group.version. Local controller 0 only supports versions 1"},
	} {
		out, err := kafkatools.Run(ctx, kafkatools.FeatureCommand, "--bootstrap-server", b.addr, "upgrade", "--feature", c.feature)
		if err == nil || !strings.Contains(out, c.want) || !strings.Contains(out, "1 out of 1 operation(s) failed.") {
			t.Errorf("kafka-features upgrade --feature %s: %v\n%s\nwant\n%s", c.feature, err, out, c.want)
		}
	}
	if out := run("upgrade", "--feature", "transaction.version=1"); strings.TrimSpace(out) != "transaction.version was upgraded to 1." {
		t.Errorf("upgrade to the current level:\n%s", out)
	}
	if out := run("describe"); !strings.Contains(out, "FinalizedVersionLevel: 1") {
		t.Errorf("describe after the no-op upgrade:\n%s", out)
	}
}

// TestKafkaLogDirsFailedDir: kafka-log-dirs --describe against a broker
// whose log directory broker/logdir marked failed shows the directory
// with Kafka's error for it and no partitions.
func TestKafkaLogDirsFailedDir(t *testing.T) {
	t.Parallel()
	mon := logdir.New(logdir.Config{})
	t.Cleanup(mon.Close)
	dir := t.TempDir()
	b := startBroker(t, func(c *Config) {
		c.LogDirs = []string{dir}
		c.LogDirState = func(string) (metadata.StorageState, error) { return mon.State() }
	})
	run := kafkatools.ForTest(t, kafkatools.LogDirsCommand, b.addr)
	createTopic(t, b, "faileddir", 1, nil)
	mon.Report(&os.PathError{Op: "write", Path: "x", Err: syscall.EIO})
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := run("--describe")
	want := `{"brokers":[{"broker":0,"logDirs":[{"partitions":[],"error":"org.apache.kafka.common.errors.KafkaStorageException","logDir":"` + abs + `"}]}],"version":1}`
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || lines[2] != want {
		t.Fatalf("kafka-log-dirs --describe:\n%s\nwant last line\n%s", out, want)
	}
}
