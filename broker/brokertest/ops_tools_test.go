package brokertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/kafkatools"
	"weir/broker/brokertest/testbroker"
)

// TestKafkaLogDirsDescribe: Apache Kafka 4.4's kafka-log-dirs --describe
// against a weir broker prints what it prints against Kafka: the two
// progress lines, then the JSON of each broker's log directories with
// every partition's size (its segment files' bytes on disk), offset lag 0
// and isFuture false, error null; --topic-list keeps those topics.
func TestKafkaLogDirsDescribe(t *testing.T) {
	b := testbroker.Start(t)
	run := kafkatools.ForTest(t, kafkatools.LogDirsCommand, b.Addr)
	b.CreateTopic("logdirs", 2, nil)
	b.CreateTopic("other", 1, nil)
	cl := b.Client(kgo.DefaultProduceTopic("logdirs"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: 0, Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(b.Dir)
	if err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		files, _ := filepath.Glob(filepath.Join(b.Dir, p, "*.log"))
		var n int64
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			n += st.Size()
		}
		return n
	}
	type partition struct {
		Partition string `json:"partition"`
		Size      int64  `json:"size"`
		OffsetLag int64  `json:"offsetLag"`
		IsFuture  bool   `json:"isFuture"`
	}
	parse := func(out string) map[string]partition {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || lines[0] != "Querying brokers for log directories information" ||
			lines[1] != "Received log directory information from brokers 0" {
			t.Fatalf("kafka-log-dirs output:\n%s", out)
		}
		var doc struct {
			Version int `json:"version"`
			Brokers []struct {
				Broker  int `json:"broker"`
				LogDirs []struct {
					LogDir     string      `json:"logDir"`
					Error      *string     `json:"error"`
					Partitions []partition `json:"partitions"`
				} `json:"logDirs"`
			} `json:"brokers"`
		}
		if err := json.Unmarshal([]byte(lines[2]), &doc); err != nil {
			t.Fatalf("kafka-log-dirs JSON: %v\n%s", err, out)
		}
		if doc.Version != 1 || len(doc.Brokers) != 1 || doc.Brokers[0].Broker != 0 || len(doc.Brokers[0].LogDirs) != 1 {
			t.Fatalf("kafka-log-dirs output:\n%s", out)
		}
		d := doc.Brokers[0].LogDirs[0]
		if d.LogDir != abs || d.Error != nil {
			t.Fatalf("log dir %q error %v, want %q and null:\n%s", d.LogDir, d.Error, abs, out)
		}
		got := map[string]partition{}
		for _, p := range d.Partitions {
			got[p.Partition] = p
		}
		return got
	}
	check := func(got map[string]partition, names ...string) {
		t.Helper()
		for _, name := range names {
			p, ok := got[name]
			if !ok || p.Size != size(name) || p.OffsetLag != 0 || p.IsFuture {
				t.Errorf("%s: %+v (present %v), want size %d, offsetLag 0, isFuture false", name, p, ok, size(name))
			}
		}
	}
	got := parse(run("--describe"))
	check(got, "logdirs-0", "logdirs-1", "other-0")
	if got["logdirs-0"].Size == 0 {
		t.Errorf("logdirs-0 holds 10 records but its size is 0")
	}
	got = parse(run("--describe", "--topic-list", "logdirs", "--broker-list", "0"))
	check(got, "logdirs-0", "logdirs-1")
	if len(got) != 2 {
		t.Errorf("--topic-list logdirs: %v", fmt.Sprint(got))
	}
}
