package weircluster

import (
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
)

// Options are the optional settings of StartWith.
type Options struct {
	// Args are more `weir broker` arguments of every node, given at
	// every start.
	Args []string
	// NodeArgs are more arguments of some nodes (by node id), given at
	// every start before Args.
	NodeArgs map[int][]string
	// DataDirs are the data directories of some nodes (by node id);
	// the others get one in the test's temporary directory.
	DataDirs map[int]string
	// TLS: the brokers replicate and run the controller quorum over TLS
	// only, with mutual authentication: each has a CLIENT (PLAINTEXT,
	// the Seeds), an INTERNAL (SSL, inter.broker.listener.name) and a
	// CONTROLLER (SSL, controller.listener.names) listener,
	// ssl.client.auth=required, PEM files from a test CA (CA).
	TLS bool
}

// Cluster is n `weir broker` processes.
type Cluster struct {
	t      testing.TB
	bin    string
	dir    string
	voters string
	o      Options
	ca     *tlstest.CA
	tlsDir string

	mu    sync.Mutex // guards nodes (AddNode)
	nodes []*node
}

type node struct {
	id                  int
	kafkaAddr, ctrlAddr string
	started             bool   // it logged "broker started" once
	intAddr, keyStore   string // with TLS
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
	return StartWith(t, bin, n, Options{Args: extra})
}

// StartWith is Start with options.
func StartWith(t testing.TB, bin string, n int, o Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: bin, dir: t.TempDir(), o: o}
	if o.TLS {
		c.ca = tlstest.NewCA(t, "weircluster CA")
		c.tlsDir = tlstest.Dir(t)
		tlstest.Write(t, c.tlsDir, "ca.pem", c.ca.PEM)
	}
	var vs []string
	for i := 1; i <= n; i++ {
		nd := c.newNode(i)
		vs = append(vs, fmt.Sprintf("%d@%s", i, nd.ctrlAddr))
	}
	c.voters = strings.Join(vs, ",")
	t.Cleanup(func() {
		for _, id := range c.IDs() {
			c.Kill(id)
		}
		if t.Failed() {
			var logs []string
			for _, nd := range c.all() {
				logs = append(logs, nd.logPath)
			}
			kept := testkit.Keep("weircluster-failed", logs...)
			for _, nd := range c.all() {
				b, _ := os.ReadFile(nd.logPath)
				l := strings.Split(string(b), "\n")
				t.Logf("last log lines of broker %d (whole log in %s):\n%s", nd.id, kept, strings.Join(l[max(0, len(l)-40):], "\n"))
			}
		}
	})
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Start(i) }()
	}
	wg.Wait()
	return c
}

// newNode adds node id (not started) with its addresses and files.
func (c *Cluster) newNode(id int) *node {
	t := c.t
	nd := &node{id: id, kafkaAddr: testkit.FreeAddr(t), ctrlAddr: testkit.FreeAddr(t),
		dataDir: filepath.Join(c.dir, "data"+strconv.Itoa(id)), logPath: filepath.Join(c.dir, "broker"+strconv.Itoa(id)+".log")}
	if d, ok := c.o.DataDirs[id]; ok {
		nd.dataDir = d
	}
	if c.ca != nil {
		nd.intAddr = testkit.FreeAddr(t)
		leaf := c.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker" + strconv.Itoa(id)}})
		nd.keyStore = tlstest.Write(t, c.tlsDir, "broker"+strconv.Itoa(id)+".pem", leaf.KeyStore())
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, nd)
	c.mu.Unlock()
	return nd
}

// AddNode adds a broker that is not a voter of the quorum (an observer
// until it is added) and returns its id; it is not started (Start).
func (c *Cluster) AddNode() int {
	return c.newNode(len(c.all()) + 1).id
}

func (c *Cluster) all() []*node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*node(nil), c.nodes...)
}

func (c *Cluster) node(id int) *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id-1]
}

// IDs are the node ids, 1 to n (and the added nodes').
func (c *Cluster) IDs() []int {
	var out []int
	for _, nd := range c.all() {
		out = append(out, nd.id)
	}
	return out
}

// Seeds are the brokers' Kafka listeners (CLIENT, with TLS), by node id
// from 1.
func (c *Cluster) Seeds() []string {
	var out []string
	for _, nd := range c.all() {
		out = append(out, nd.kafkaAddr)
	}
	return out
}

// Addr is broker id's Kafka listener.
func (c *Cluster) Addr(id int) string { return c.node(id).kafkaAddr }

// ControllerAddr is broker id's controller (quorum) listener.
func (c *Cluster) ControllerAddr(id int) string { return c.node(id).ctrlAddr }

// DataDir is broker id's data directory.
func (c *Cluster) DataDir(id int) string { return c.node(id).dataDir }

// LogPath is the file broker id logs to (JSON lines).
func (c *Cluster) LogPath(id int) string { return c.node(id).logPath }

// Bin is the weir binary the brokers run.
func (c *Cluster) Bin() string { return c.bin }

// CA is the test CA of a TLS cluster (nil without TLS).
func (c *Cluster) CA() *tlstest.CA { return c.ca }

// Running reports whether broker id's process runs (started, not
// killed).
func (c *Cluster) Running(id int) bool {
	nd := c.node(id)
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.proc != nil
}

// Start runs broker id (again) and waits for "broker started"; a
// failure fails the test (Errorf).
func (c *Cluster) Start(id int) {
	nd := c.node(id)
	args := []string{"broker", "--node-id", strconv.Itoa(id), "--data-dir", nd.dataDir,
		"--controller-voters", c.voters,
		"--admin-addr", "127.0.0.1:0", "--registry-addr", "off", "--log-format", "json"}
	if c.ca != nil {
		args = append(args,
			"--config", "listeners=CLIENT://"+nd.kafkaAddr+",INTERNAL://"+nd.intAddr+",CONTROLLER://"+nd.ctrlAddr,
			"--config", "listener.security.protocol.map=CLIENT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL",
			"--config", "inter.broker.listener.name=INTERNAL", "--config", "controller.listener.names=CONTROLLER",
			"--config", "ssl.keystore.location="+nd.keyStore,
			"--config", "ssl.truststore.location="+filepath.Join(c.tlsDir, "ca.pem"),
			"--config", "ssl.client.auth=required")
	} else {
		args = append(args, "--kafka-addr", nd.kafkaAddr, "--controller-addr", nd.ctrlAddr)
	}
	args = append(append(args, c.o.NodeArgs[id]...), c.o.Args...)
	proc, err := testkit.StartProc(c.bin, args, nd.logPath, "broker started")
	if err != nil {
		c.t.Errorf("broker %d: %v", id, err)
		return
	}
	nd.mu.Lock()
	nd.proc = proc
	nd.mu.Unlock()
	err = proc.WaitReady(90 * time.Second)
	if err != nil && !nd.started && c.brokerPortTaken(nd) {
		// A free port picked for its Kafka or (with TLS) inter-broker
		// listener was taken by another process before the broker bound
		// it (hog passes and a fresh-clone run saw it). Nobody has those
		// addresses yet on a first start: pick others. (The
		// controller's is in every node's voters.)
		nd.kafkaAddr = testkit.FreeAddr(c.t)
		if nd.intAddr != "" {
			nd.intAddr = testkit.FreeAddr(c.t)
		}
		c.Start(id)
		return
	}
	if err != nil {
		c.t.Errorf("broker %d: %v", id, err)
		return
	}
	nd.started = true
}

// brokerPortTaken reports whether nd's log says the address of its Kafka
// listener or of its inter-broker one was in use.
func (c *Cluster) brokerPortTaken(nd *node) bool {
	b, _ := os.ReadFile(nd.logPath)
	log := string(b)
	if !strings.Contains(log, "address already in use") {
		return false
	}
	return strings.Contains(log, "listen on "+nd.kafkaAddr+":") || (nd.intAddr != "" && strings.Contains(log, "listen on "+nd.intAddr+":"))
}

// Kill sends broker id SIGKILL and waits until it is gone.
func (c *Cluster) Kill(id int) {
	nd := c.node(id)
	nd.mu.Lock()
	proc := nd.proc
	nd.proc = nil
	nd.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
}
