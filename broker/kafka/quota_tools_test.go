package kafka

import (
	"strings"
	"testing"

	"weir/broker/brokertest/kafkatools"
)

// TestKafkaConfigsQuotas: Apache Kafka 4.4's kafka-configs sets client
// quotas on a client id, the default user and a user + client id, and
// describes them, as it does against Kafka.
func TestKafkaConfigsQuotas(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	run := kafkatools.ForTest(t, kafkatools.ConfigCommand, b.addr)
	for _, args := range [][]string{
		{"--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152", "--entity-type", "clients", "--entity-name", "x"},
		{"--alter", "--add-config", "producer_byte_rate=4096", "--entity-type", "users", "--entity-default"},
		{"--alter", "--add-config", "request_percentage=50", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "x"},
	} {
		if out := run(args...); !strings.Contains(out, "Completed updating") {
			t.Fatalf("kafka-configs %v:\n%s", args, out)
		}
	}
	out := run("--describe", "--entity-type", "clients", "--entity-name", "x")
	if !strings.Contains(out, "Quota configs for client-id 'x' are ") || !strings.Contains(out, "producer_byte_rate=1048576.0") ||
		!strings.Contains(out, "consumer_byte_rate=2097152.0") {
		t.Fatalf("describe client x:\n%s", out)
	}
	out = run("--describe", "--entity-type", "users", "--entity-type", "clients")
	if !strings.Contains(out, "Quota configs for user-principal 'alice', client-id 'x' are request_percentage=50.0") {
		t.Fatalf("describe users and clients:\n%s", out)
	}
	// Deleting, and the quotas the broker then has.
	run("--alter", "--delete-config", "producer_byte_rate", "--entity-type", "clients", "--entity-name", "x")
	x := "x"
	got, _ := describeQuotas(t, b.client(), false, component("client-id", 0, &x))
	want := []string{"client-id=x: consumer_byte_rate=2.097152e+06", "client-id=x,user=alice: request_percentage=50"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after delete:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got, _ = describeQuotas(t, b.client(), true, component("user", 1, nil))
	if len(got) != 1 || got[0] != "user=<default>: producer_byte_rate=4096" {
		t.Fatalf("default user: %v", got)
	}
}
