package kafkatools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"weir/internal/mvnpeer"
)

// Kafka 4.4's tool classes (kafka-<name>.sh runs them).
const (
	ConfigCommand = "org.apache.kafka.tools.ConfigCommand" // kafka-configs
	AclCommand    = "org.apache.kafka.tools.AclCommand"    // kafka-acls
	TopicCommand  = "org.apache.kafka.tools.TopicCommand"  // kafka-topics
	// TransactionsCommand is kafka-transactions (list, describe,
	// describe-producers, find-hanging, abort).
	TransactionsCommand = "org.apache.kafka.tools.TransactionsCommand"
	// GetOffsetShell is kafka-get-offsets (AdminClient listOffsets with
	// the OffsetSpec its --time names).
	GetOffsetShell = "org.apache.kafka.tools.GetOffsetShell"
	// LogDirsCommand is kafka-log-dirs (--describe).
	LogDirsCommand = "org.apache.kafka.tools.LogDirsCommand"
	// FeatureCommand is kafka-features (describe, upgrade, downgrade,
	// disable, version-mapping, feature-dependencies).
	FeatureCommand = "org.apache.kafka.tools.FeatureCommand"
	// GroupsCommand is kafka-groups (--list with the TYPE column).
	GroupsCommand = "org.apache.kafka.tools.GroupsCommand"
	// ConsumerGroupCommand is kafka-consumer-groups.
	ConsumerGroupCommand = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	// LeaderElectionCommand is kafka-leader-election (--election-type
	// preferred|unclean, --all-topic-partitions or --topic/--partition).
	LeaderElectionCommand = "org.apache.kafka.tools.LeaderElectionCommand"
	// ReassignPartitionsCommand is kafka-reassign-partitions (--generate,
	// --execute [--throttle], --verify, --cancel, --list).
	ReassignPartitionsCommand = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
	// MetadataQuorumCommand is kafka-metadata-quorum (describe --status,
	// describe --replication, add-controller, remove-controller).
	MetadataQuorumCommand = "org.apache.kafka.tools.MetadataQuorumCommand"
)

// Heap is the JVM heap of a tool run.
const Heap = "256m"

// Available reports why the tools cannot run here ("" when they can).
func Available() string {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (install Java 17 and Maven to run Kafka's tools)"
		}
	}
	return ""
}

// Require skips t when Java or Maven is missing, and fails it instead
// under CI (CI set), where a skipped test would prove nothing.
func Require(t testing.TB) {
	t.Helper()
	if why := Available(); why != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
}

func project() mvnpeer.Project {
	return mvnpeer.Project{Dir: filepath.Join(mvnpeer.SourceDir(), "java"), Launcher: "weir/kafkatools/Launcher.class"}
}

// Build builds the tools' classpath when needed and returns it.
func Build() (string, error) { return project().Build() }

// Run runs tool class with args and returns its combined output; err
// includes the output when the tool exits non-zero. When ctx is done the
// tool gets SIGTERM, as a user's Ctrl-C or kill would send: the JVM runs
// its shutdown hooks (kafka-console-consumer leaves its group and prints
// "Processed a total of N messages"), and is killed 15 s later if still
// running.
func Run(ctx context.Context, class string, args ...string) (string, error) {
	cp, err := Build()
	if err != nil {
		return "", err
	}
	// The tools' class-data archive (internal/mvnpeer, cds.go): 0.83 →
	// 0.40 CPU-s a run (kafka-topics --list); the first run writes it.
	// One C1 compiler thread (allowed with C1 only): 0.408 → 0.383 CPU-s
	// a run (mean of 6 alternated runs).
	share := mvnpeer.ShareArchive(cp, true)
	jvm := append(mvnpeer.JavaOptions(Heap, cp, share), "-XX:CICompilerCount=1", "weir.kafkatools.Launcher", class)
	cmd := exec.CommandContext(ctx, "java", append(jvm, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	out, err := cmd.CombinedOutput()
	share.Done(err == nil)
	if err != nil {
		return string(out), fmt.Errorf("%s %v: %w\n%s", filepath.Ext(class)[1:], args, err, out)
	}
	return string(out), nil
}

// ForTest returns a function that runs tool class against bootstrap with
// the given arguments and returns its output, failing t on an error. It
// skips t under -short (JVMs take seconds) and where Java or Maven is
// missing; runs are bounded by three minutes in all.
func ForTest(t testing.TB, class, bootstrap string) func(args ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return func(args ...string) string {
		t.Helper()
		out, err := Run(ctx, class, append([]string{"--bootstrap-server", bootstrap}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}
