package eostest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// weirCluster is `weir broker` processes on loopback with fixed ports,
// so a broker killed with SIGKILL restarts where it was (as
// broker/brokertest's process tests run them).
type weirCluster struct {
	t      *testing.T
	bin    string
	voters string
	extra  []string
	nodes  []*weirNode
}

type weirNode struct {
	id                 int
	kafkaAddr, ctrlAdr string
	dataDir, logPath   string

	mu   sync.Mutex
	proc *testkit.Proc // nil when not running
}

// startWeirCluster starts n brokers with the extra arguments and waits
// until each logs "broker started".
func startWeirCluster(t *testing.T, n int, extra ...string) *weirCluster {
	t.Helper()
	c := &weirCluster{t: t, bin: weirbin.Build(t), extra: extra}
	dir := t.TempDir()
	var vs []string
	for i := 1; i <= n; i++ {
		nd := &weirNode{id: i, kafkaAddr: freeAddr(t), ctrlAdr: freeAddr(t),
			dataDir: filepath.Join(dir, "data"+strconv.Itoa(i)), logPath: filepath.Join(dir, "broker"+strconv.Itoa(i)+".log")}
		c.nodes = append(c.nodes, nd)
		vs = append(vs, fmt.Sprintf("%d@%s", i, nd.ctrlAdr))
	}
	c.voters = strings.Join(vs, ",")
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.Kill(nd.id)
		}
		if t.Failed() {
			for _, nd := range c.nodes {
				b, _ := os.ReadFile(nd.logPath)
				t.Logf("last log lines of broker %d:\n%s", nd.id, tail(string(b), 30))
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

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Seeds are the brokers' Kafka listeners.
func (c *weirCluster) Seeds() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.kafkaAddr)
	}
	return out
}

// Start runs broker id (again) and waits for "broker started".
func (c *weirCluster) Start(id int) {
	nd := c.nodes[id-1]
	args := append([]string{"broker", "--node-id", strconv.Itoa(id), "--data-dir", nd.dataDir,
		"--kafka-addr", nd.kafkaAddr, "--controller-addr", nd.ctrlAdr, "--controller-voters", c.voters,
		"--admin-addr", "127.0.0.1:0", "--registry-addr", "off", "--log-format", "json"}, c.extra...)
	proc, err := testkit.StartProc(c.bin, args, nd.logPath, "broker started")
	if err != nil {
		c.t.Errorf("broker %d: %v", id, err)
		return
	}
	nd.mu.Lock()
	nd.proc = proc
	nd.mu.Unlock()
	if err := proc.WaitReady(60 * time.Second); err != nil {
		c.t.Errorf("broker %d: %v", id, err)
	}
}

// Kill sends broker id SIGKILL and waits for it to be gone.
func (c *weirCluster) Kill(id int) {
	nd := c.nodes[id-1]
	nd.mu.Lock()
	proc := nd.proc
	nd.proc = nil
	nd.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
}

// createTopics creates the topics (partitions each, the broker's default
// replication factor), retrying while the cluster answers with retriable
// errors or INVALID_REPLICATION_FACTOR (on a fresh cluster, until every
// broker has registered); a topic that exists already is fine.
func createTopics(t testing.TB, cl *kgo.Client, partitions int32, topics ...string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	testkit.CheckFor(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		rs, err := adm.CreateTopics(ctx, partitions, -1, nil, topics...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
				if !kerr.IsRetriable(r.Err) && !errors.Is(r.Err, kerr.InvalidReplicationFactor) {
					return testkit.Stop(fmt.Errorf("creating %s: %w", r.Topic, r.Err))
				}
				return fmt.Errorf("creating %s: %w", r.Topic, r.Err)
			}
		}
		return nil
	})
}
