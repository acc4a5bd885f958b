package brokertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/broker/brokertest/kafkatools"
)

// kafkaTool runs one of Kafka's tools (class, see kafkatools) against a
// cluster: every call passes bootstrap first (e.g. "--bootstrap-server",
// addr), and, with a name, logs the arguments and the output under it.
type kafkaTool struct {
	t         *testing.T
	ctx       context.Context
	class     string
	name      string // "" to log nothing
	bootstrap []string
}

func (k kafkaTool) run(args ...string) (string, error) {
	k.t.Helper()
	out, err := kafkatools.Run(k.ctx, k.class, append(append([]string(nil), k.bootstrap...), args...)...)
	if k.name != "" {
		k.t.Logf("%s %s:\n%s", k.name, strings.Join(args, " "), out)
	}
	return out, err
}

// must is run failing the test on an error.
func (k kafkaTool) must(args ...string) string {
	k.t.Helper()
	out, err := k.run(args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

// hasLine fails the test unless out has the line (a trailing \r aside).
func hasLine(t *testing.T, out, line string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimRight(l, "\r") == line {
			return
		}
	}
	t.Fatalf("output lacks the line %q:\n%s", line, out)
}

// addControllerByTool makes b, a broker of c that the quorum lists as an
// observer (Kafka adds only an observer the leader sees fetching, else
// REQUEST_TIMED_OUT "not ready": waited for here), a voter with
// kafka-metadata-quorum add-controller (run) from its configuration as
// Kafka's tool reads it (node.id, process.roles, the metadata log
// directory's meta.properties, the controller listener), and checks
// Kafka's output. voters are the voters before; it returns the
// properties file.
func addControllerByTool(t *testing.T, c *Cluster, run func(args ...string) (string, error), b *Broker, voters []int32) string {
	t.Helper()
	checkStatus(t, c, run, voters, []int32{b.ID})
	props := filepath.Join(t.TempDir(), fmt.Sprintf("controller%d.properties", b.ID))
	content := fmt.Sprintf("node.id=%d\nprocess.roles=broker,controller\nmetadata.log.dir=%s\nlisteners=CONTROLLER://%s\ncontroller.listener.names=CONTROLLER\n",
		b.ID, filepath.Join(b.DataDir(), "controller"), b.ControllerAddr())
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run("--command-config", props, "add-controller")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Added controller %d with directory id %s and endpoints: CONTROLLER://%s", b.ID, b.Node().DirectoryID(), b.ControllerAddr()); !strings.Contains(out, want) {
		t.Fatalf("add-controller printed:\n%s\nwant %q", out, want)
	}
	return props
}
