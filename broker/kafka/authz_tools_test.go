package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/brokertest/kafkatools"
)

// TestKafkaAclsTool: Apache Kafka 4.4's kafka-acls (AclCommand) adds,
// lists and removes ACLs on weir as it does on Kafka (its output is built
// from weir's CreateAcls, DescribeAcls and DeleteAcls answers), and the
// ACLs it adds are enforced.
func TestKafkaAclsTool(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	tool := kafkatools.ForTest(t, kafkatools.AclCommand, b.listenerAddr("PLAINTEXT"))
	withTopic(t, b, "logs-app")
	run := func(args ...string) string {
		t.Helper()
		out := tool(args...)
		t.Logf("kafka-acls %s\n%s", strings.Join(args, " "), out)
		return out
	}
	out := run("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
		"--topic", "logs-", "--resource-pattern-type", "prefixed")
	for _, want := range []string{
		"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`:",
		"(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
		"(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--add output lacks %q", want)
		}
	}
	run("--add", "--deny-principal", "User:bob", "--operation", "All", "--group", "app")
	run("--add", "--allow-principal", "User:alice", "--operation", "IdempotentWrite", "--cluster")
	if n := b.meta.Image().NumACLs(); n != 4 {
		t.Fatalf("%d ACLs stored, want 4", n)
	}
	out = run("--list")
	for _, want := range []string{
		"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`:",
		"Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=app, patternType=LITERAL)`:",
		"(principal=User:bob, host=*, operation=ALL, permissionType=DENY)",
		"Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`:",
		"(principal=User:alice, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--list output lacks %q", want)
		}
	}
	// --list --topic logs-app shows the ACLs that apply to it (MATCH).
	out = run("--list", "--topic", "logs-app", "--resource-pattern-type", "match")
	if !strings.Contains(out, "name=logs-, patternType=PREFIXED") || strings.Contains(out, "GROUP") {
		t.Errorf("--list --topic logs-app (match):\n%s", out)
	}
	// The added ACLs are enforced.
	if got := b.rawAs(t, "alice").roundTrip(metadataReq(false)("logs-app")).(*kmsg.MetadataResponse).Topics[0].ErrorCode; got != 0 {
		t.Errorf("alice's Metadata of logs-app: %d", got)
	}
	run("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
		"--topic", "logs-", "--resource-pattern-type", "prefixed")
	if n := b.meta.Image().NumACLs(); n != 2 {
		t.Fatalf("%d ACLs left after --remove, want 2", n)
	}
	if acls := b.meta.Image().ACLs(); len(acls) != 2 || acls[0].Principal != "User:bob" || acls[1].Operation != acl.OpIdempotentWrite {
		t.Errorf("ACLs left: %v", acls)
	}
}
