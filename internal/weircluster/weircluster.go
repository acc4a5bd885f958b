package weircluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/internal/testkit"
)

// Cluster is n `weir broker` processes.
type Cluster struct {
	t      testing.TB
	bin    string
	voters string
	extra  []string
	nodes  []*node
}

type node struct {
	id                  int
	kafkaAddr, ctrlAddr string
	dataDir, logPath    string

	mu   sync.Mutex
	proc *testkit.Proc // nil when not running
}

// Start starts n brokers of the weir binary bin (internal/weirbin) with
// the extra `weir broker` arguments, waits until each logs "broker
// started", and kills them when the test ends (printing their last log
// lines if it failed).
func Start(t testing.TB, bin string, n int, extra ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: bin, extra: extra}
	dir := t.TempDir()
	var vs []string
	for i := 1; i <= n; i++ {
		nd := &node{id: i, kafkaAddr: freeAddr(t), ctrlAddr: freeAddr(t),
			dataDir: filepath.Join(dir, "data"+strconv.Itoa(i)), logPath: filepath.Join(dir, "broker"+strconv.Itoa(i)+".log")}
		c.nodes = append(c.nodes, nd)
		vs = append(vs, fmt.Sprintf("%d@%s", i, nd.ctrlAddr))
	}
	c.voters = strings.Join(vs, ",")
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.Kill(nd.id)
		}
		if t.Failed() {
			for _, nd := range c.nodes {
				b, _ := os.ReadFile(nd.logPath)
				l := strings.Split(string(b), "\n")
				t.Logf("last log lines of broker %d:\n%s", nd.id, strings.Join(l[max(0, len(l)-30):], "\n"))
			}
		}
	})
	var wg sync.WaitGroup
	for _, nd := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); c.Start(nd.id) }()
	}
	wg.Wait()
	return c
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Seeds are the brokers' Kafka listeners.
func (c *Cluster) Seeds() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.kafkaAddr)
	}
	return out
}

// Start runs broker id (again) and waits for "broker started".
func (c *Cluster) Start(id int) {
	nd := c.nodes[id-1]
	args := append([]string{"broker", "--node-id", strconv.Itoa(id), "--data-dir", nd.dataDir,
		"--kafka-addr", nd.kafkaAddr, "--controller-addr", nd.ctrlAddr, "--controller-voters", c.voters,
		"--admin-addr", "127.0.0.1:0", "--registry-addr", "off", "--log-format", "json"}, c.extra...)
	proc, err := testkit.StartProc(c.bin, args, nd.logPath, "broker started")
	if err != nil {
		c.t.Errorf("broker %d: %v", id, err)
		return
	}
	nd.mu.Lock()
	nd.proc = proc
	nd.mu.Unlock()
	if err := proc.WaitReady(90 * time.Second); err != nil {
		c.t.Errorf("broker %d: %v", id, err)
	}
}

// Kill sends broker id SIGKILL and waits until it is gone.
func (c *Cluster) Kill(id int) {
	nd := c.nodes[id-1]
	nd.mu.Lock()
	proc := nd.proc
	nd.proc = nil
	nd.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
}
