package kafkapeer

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"weir/internal/mvnpeer"
)

// Cluster is several Apache Kafka 4.4 KRaft nodes, each broker and
// controller in one JVM (a static quorum of all of them), PLAINTEXT only,
// on fixed loopback ports so that a node killed with SIGKILL restarts
// where it was, on its data directory.
type Cluster struct {
	heap  string
	cp    string
	Nodes []*Node
}

// Node is one node of a Cluster.
type Node struct {
	ID        int
	Plaintext string
	dir, conf string
	k         *Kafka // nil while stopped
}

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// Dir holds the nodes' configurations, data and logs.
	Dir string
	// Nodes is the number of nodes (default 3). Internal topics get
	// min(3, Nodes) replicas, min.insync.replicas min(2, Nodes).
	Nodes int
	// Heap per JVM (default 384m).
	Heap string
	// Props are more server.properties lines for every node.
	Props []string
}

// StartCluster formats and starts the nodes; it returns when every
// node's listener accepts connections.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	cp, err := project().Build()
	if err != nil {
		return nil, err
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Heap == "" {
		o.Heap = "384m"
	}
	ports, err := freePorts(2 * o.Nodes)
	if err != nil {
		return nil, err
	}
	c := &Cluster{heap: o.Heap, cp: cp}
	var voters []string
	for i := 1; i <= o.Nodes; i++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, ports[2*i-1]))
	}
	rf, isr := min(3, o.Nodes), min(2, o.Nodes)
	for i := 1; i <= o.Nodes; i++ {
		n := &Node{ID: i, Plaintext: fmt.Sprintf("127.0.0.1:%d", ports[2*i-2]), dir: filepath.Join(o.Dir, fmt.Sprintf("node%d", i))}
		ctrl := fmt.Sprintf("127.0.0.1:%d", ports[2*i-1])
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, err
		}
		props := append([]string{
			"process.roles=broker,controller",
			fmt.Sprintf("node.id=%d", i),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"listeners=PLAINTEXT://" + n.Plaintext + ",CONTROLLER://" + ctrl,
			"advertised.listeners=PLAINTEXT://" + n.Plaintext,
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=PLAINTEXT",
			"log.dirs=" + filepath.Join(n.dir, "data"),
			fmt.Sprintf("offsets.topic.replication.factor=%d", rf),
			fmt.Sprintf("transaction.state.log.replication.factor=%d", rf),
			fmt.Sprintf("transaction.state.log.min.isr=%d", isr),
			fmt.Sprintf("share.coordinator.state.topic.replication.factor=%d", rf),
			fmt.Sprintf("default.replication.factor=%d", rf),
			fmt.Sprintf("min.insync.replicas=%d", isr),
			"group.initial.rebalance.delay.ms=0",
		}, o.Props...)
		n.conf = filepath.Join(n.dir, "server.properties")
		if err := os.WriteFile(n.conf, []byte(strings.Join(props, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		if out, err := c.java("format", "-t", "V2VpckthZmthQ2x1c3Rlcg", "-c", n.conf).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kafka storage format of node %d: %v\n%s", i, err, out)
		}
		c.Nodes = append(c.Nodes, n)
	}
	errc := make(chan error, len(c.Nodes))
	for _, n := range c.Nodes {
		go func() { errc <- c.Start(ctx, n.ID) }()
	}
	for range c.Nodes {
		if e := <-errc; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) java(args ...string) *exec.Cmd {
	// Nodes only map the build's class-data archive (they are killed, so
	// they cannot write it: a single broker does, kafkapeer.go).
	return exec.Command("java", javaArgs(c.heap, c.cp, mvnpeer.ShareArchive(c.cp, false), args...)...)
}

// Bootstrap is every node's listener, comma-separated.
func (c *Cluster) Bootstrap() string {
	var as []string
	for _, n := range c.Nodes {
		as = append(as, n.Plaintext)
	}
	return strings.Join(as, ",")
}

// Start starts node id (again, after Kill) and waits until its listener
// accepts connections.
func (c *Cluster) Start(ctx context.Context, id int) error {
	n := c.Nodes[id-1]
	logf, err := os.OpenFile(filepath.Join(n.dir, "kafka.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	k := &Kafka{Plaintext: n.Plaintext, done: make(chan error, 1), log: logf.Name()}
	k.cmd = c.java("start", n.conf)
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	if err := k.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	go func() { k.done <- k.cmd.Wait(); logf.Close() }()
	n.k = k
	for {
		select {
		case err := <-k.done:
			k.done <- err
			return fmt.Errorf("kafka node %d exited while starting: %v\n%s", id, err, k.Log())
		case <-ctx.Done():
			return fmt.Errorf("kafka node %d did not open %s: %w", id, n.Plaintext, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if conn, err := net.DialTimeout("tcp", n.Plaintext, time.Second); err == nil {
			conn.Close()
			return nil
		}
	}
}

// Kill sends node id SIGKILL and waits until it is gone.
func (c *Cluster) Kill(id int) {
	if n := c.Nodes[id-1]; n.k != nil {
		n.k.Stop()
		n.k = nil
	}
}

// Stop kills every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		c.Kill(n.ID)
	}
}

// Log is node id's output so far (every run of it).
func (c *Cluster) Log(id int) string {
	b, _ := os.ReadFile(filepath.Join(c.Nodes[id-1].dir, "kafka.log"))
	return string(b)
}
