package kafka

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest/kafkatools"
)

// TestKafkaToolsSCRAM: Apache Kafka 4.4's kafka-configs creates and
// describes SCRAM users against weir (AlterUserScramCredentials,
// DescribeUserScramCredentials), and Kafka's Java producer
// (ProducerPerformance) and consumer (ConsoleConsumer) authenticate with
// SCRAM-SHA-512 over SASL_SSL as the user it created; a wrong password
// fails the Java client with Kafka's message.
func TestKafkaToolsSCRAM(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, saslConfigs())
	configs := kafkatools.ForTest(t, kafkatools.ConfigCommand, b.addr)
	for _, mech := range []string{"SCRAM-SHA-256=[iterations=8192,password=alice-secret]", "SCRAM-SHA-512=[password=alice-secret]"} {
		// One mechanism per call: Kafka refuses two changes of one user in
		// a request (DUPLICATE_RESOURCE), and so does weir.
		if out := configs("--alter", "--add-config", mech, "--entity-type", "users", "--entity-name", "alice"); !strings.Contains(out, "Completed updating config for user alice.") {
			t.Fatalf("kafka-configs --alter %s:\n%s", mech, out)
		}
	}
	out := configs("--describe", "--entity-type", "users", "--entity-name", "alice")
	if !strings.Contains(out, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096") {
		t.Fatalf("kafka-configs --describe:\n%s", out)
	}
	createTopic(t, b.testBroker, "java-sasl", 1, nil)
	// Java reads .properties files as ISO-8859-1: the trust store goes
	// to an ASCII path (the TLS setup's folder name is not ASCII).
	pem, err := os.ReadFile(b.tls.trusts)
	if err != nil {
		t.Fatal(err)
	}
	trusts := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(trusts, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	props := func(name, password string) string {
		p := filepath.Join(t.TempDir(), name)
		body := strings.Join([]string{
			"security.protocol=SASL_SSL",
			"sasl.mechanism=SCRAM-SHA-512",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="` + password + `";`,
			"ssl.truststore.type=PEM",
			"ssl.truststore.location=" + trusts,
		}, "\n") + "\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := props("alice.properties", "alice-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sasl := b.listenerAddr("SASL_SSL")
	out, err = kafkatools.Run(ctx, "org.apache.kafka.tools.ProducerPerformance", "--bootstrap-server", sasl, "--topic", "java-sasl",
		"--num-records", "200", "--record-size", "100", "--throughput", "-1", "--producer.config", good)
	if err != nil || !strings.Contains(out, "200 records sent") {
		t.Fatalf("Java producer over SASL_SSL: %v\n%s", err, out)
	}
	out, err = kafkatools.Run(ctx, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", sasl, "--topic", "java-sasl",
		"--from-beginning", "--max-messages", "200", "--timeout-ms", "60000", "--consumer.config", good)
	if err != nil || !strings.Contains(out, "Processed a total of 200 messages") {
		t.Fatalf("Java consumer over SASL_SSL: %v\n%s", err, out)
	}
	if !b.authenticated("User:alice", "SCRAM-SHA-512") {
		t.Fatal("no SCRAM-SHA-512 authentication of User:alice logged")
	}
	out, err = kafkatools.Run(ctx, "org.apache.kafka.tools.ProducerPerformance", "--bootstrap-server", sasl, "--topic", "java-sasl",
		"--num-records", "1", "--record-size", "10", "--throughput", "-1", "--producer.config", props("bad.properties", "wrong-password"))
	if err == nil && !strings.Contains(out, "Authentication failed") {
		t.Fatalf("Java producer with a wrong password: no authentication error\n%s", out)
	}
	if !strings.Contains(out, "Authentication failed: Invalid user credentials") {
		t.Fatalf("Java producer with a wrong password: %v\n%s", err, out)
	}
}
