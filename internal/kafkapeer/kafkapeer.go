// Package kafkapeer starts a real Apache Kafka 4.4 broker for tests of
// weir's clients: one KRaft node (broker and controller in one JVM) from
// Maven Central jars (java/pom.xml, built on demand through
// internal/mvnpeer; scripts/test builds it up front), with a PLAINTEXT
// listener and a SASL_SSL one (SCRAM-SHA-256/512 users added when the
// data directory is formatted, PLAIN users from the listener's JAAS
// config), its certificate a PEM key store. It is heavy (a JVM, seconds
// to start): start one per test package. StartCluster (cluster.go) runs
// several nodes (a static KRaft quorum, PLAINTEXT) on fixed ports, each
// of which can be killed and started again.
package kafkapeer

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"weir/internal/mvnpeer"
)

// Options configure the broker.
type Options struct {
	// Dir holds the configuration, data and log (a fresh directory).
	Dir string
	// KeyStore is the PEM file with the broker's key and certificate
	// chain (Kafka's ssl.keystore.type=PEM), unencrypted. Without it the
	// broker has no SASL_SSL listener (PLAINTEXT only).
	KeyStore string
	// SCRAM are users (name → password) of SCRAM-SHA-256 and
	// SCRAM-SHA-512; PLAIN are users of PLAIN.
	SCRAM, PLAIN map[string]string
	// Heap is the JVM heap (default 512m).
	Heap string
	// Props are more server.properties lines (name=value), after the
	// others (a later line overrides an earlier one).
	Props []string
}

// Kafka is a running broker.
type Kafka struct {
	// Plaintext and SASLSSL are the listeners' host:port (SASLSSL is
	// empty without Options.KeyStore).
	Plaintext, SASLSSL string
	cmd                *exec.Cmd
	done               chan error
	log                string
	// share is the JVM's class-data archive use (internal/mvnpeer,
	// cds.go); when it writes the archive, Stop ends it with SIGTERM.
	share *mvnpeer.Share
}

// Available reports why the broker cannot run here ("" when it can).
func Available() string {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (install Java 17 and Maven to run Apache Kafka)"
		}
	}
	return ""
}

// Build builds the broker's Java launcher when needed and returns its
// classpath (Start calls it; scripts/test builds it up front).
func Build() (string, error) { return project().Build() }

func project() mvnpeer.Project {
	return mvnpeer.Project{Dir: filepath.Join(mvnpeer.SourceDir(), "java"), Launcher: "weir/kafkapeer/Launcher.class"}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Start formats o.Dir and starts the broker; it returns when the
// SASL_SSL listener (PLAINTEXT without a key store) accepts connections.
func Start(ctx context.Context, o Options) (*Kafka, error) {
	cp, err := project().Build()
	if err != nil {
		return nil, err
	}
	if o.Heap == "" {
		o.Heap = "512m"
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	k := &Kafka{Plaintext: fmt.Sprintf("127.0.0.1:%d", ports[0]), SASLSSL: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		done: make(chan error, 1), log: filepath.Join(o.Dir, "kafka.log")}
	ctrl := fmt.Sprintf("127.0.0.1:%d", ports[2])
	var plain []string
	for _, u := range sortedKeys(o.PLAIN) {
		plain = append(plain, fmt.Sprintf("user_%s=%q", u, o.PLAIN[u]))
	}
	props := []string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.bootstrap.servers=" + ctrl,
		"listeners=PLAINTEXT://" + k.Plaintext + ",SASL_SSL://" + k.SASLSSL + ",CONTROLLER://" + ctrl,
		"advertised.listeners=PLAINTEXT://" + k.Plaintext + ",SASL_SSL://" + k.SASLSSL,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"log.dirs=" + filepath.Join(o.Dir, "data"),
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"group.initial.rebalance.delay.ms=0",
		"sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required " + strings.Join(plain, " ") + ";",
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + o.KeyStore,
	}
	if o.KeyStore == "" {
		k.SASLSSL = ""
		props = slices.DeleteFunc(props, func(p string) bool {
			return strings.Contains(strings.ToLower(p), "sasl") || strings.HasPrefix(p, "ssl.")
		})
		props = append(props, "listeners=PLAINTEXT://"+k.Plaintext+",CONTROLLER://"+ctrl, "advertised.listeners=PLAINTEXT://"+k.Plaintext,
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
	}
	props = append(props, o.Props...)
	conf := filepath.Join(o.Dir, "server.properties")
	if err := os.WriteFile(conf, []byte(strings.Join(props, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	java := func(share *mvnpeer.Share, args ...string) *exec.Cmd {
		return exec.Command("java", javaArgs(o.Heap, cp, share, args...)...)
	}
	format := []string{"format", "--standalone", "-t", "V2VpckthZmthUGVlcjEyMw", "-c", conf}
	for _, u := range sortedKeys(o.SCRAM) {
		for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			format = append(format, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", m, u, o.SCRAM[u]))
		}
	}
	// The storage tool only maps the archive: the broker writes it, as it
	// loads far more classes.
	if out, err := java(mvnpeer.ShareArchive(cp, false), format...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka storage format: %v\n%s", err, out)
	}
	logf, err := os.Create(k.log)
	if err != nil {
		return nil, err
	}
	k.share = mvnpeer.ShareArchive(cp, true)
	k.cmd = java(k.share, "start", conf)
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan broker if the test process dies
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	if err := k.cmd.Start(); err != nil {
		logf.Close()
		k.share.Done(false)
		return nil, err
	}
	go func() { k.done <- k.cmd.Wait(); logf.Close() }()
	wait := k.SASLSSL
	if wait == "" {
		wait = k.Plaintext
	}
	for {
		select {
		case err := <-k.done:
			k.done <- err
			k.share.Done(false)
			return nil, fmt.Errorf("kafka exited while starting: %v\n%s", err, k.Log())
		case <-ctx.Done():
			k.Stop()
			return nil, fmt.Errorf("kafka did not open %s: %w\n%s", wait, ctx.Err(), k.Log())
		case <-time.After(100 * time.Millisecond):
		}
		if c, err := net.DialTimeout("tcp", wait, time.Second); err == nil {
			c.Close()
			return k, nil
		}
	}
}

// Log is the broker's output so far.
func (k *Kafka) Log() string {
	b, _ := os.ReadFile(k.log)
	return string(b)
}

// Exited reports whether the broker's JVM has ended, and how (its exit
// error), without waiting: a test's peer that dies mid-run (out of
// memory, a fatal error) shows in its log, which the caller can keep.
func (k *Kafka) Exited() (bool, error) {
	select {
	case err := <-k.done:
		k.done <- err
		return true, err
	default:
		return false, nil
	}
}

// LogPath is the file the broker writes its output to (in Options.Dir).
func (k *Kafka) LogPath() string { return k.log }

// Stop kills the broker and waits for it. A broker writing its build's
// class-data archive (the first one started on a build) is stopped with
// SIGTERM instead, so that its JVM exits and writes it (killed after a
// minute).
func (k *Kafka) Stop() {
	if k.cmd.Process == nil {
		return
	}
	if k.share != nil && k.share.Dumping {
		_ = k.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-k.done:
			k.done <- err
			k.share.Done(err == nil || isTerm(err))
			return
		case <-time.After(time.Minute):
			k.share.Done(false)
		}
	}
	_ = k.cmd.Process.Kill()
	err := <-k.done
	k.done <- err
}

// isTerm: the JVM ended by SIGTERM (Kafka's shutdown hook ran; java
// exits 143).
func isTerm(err error) bool {
	ee, ok := err.(*exec.ExitError)
	return ok && ee.ExitCode() == 143
}

// javaArgs is the java command line of the launcher with args.
func javaArgs(heap, cp string, share *mvnpeer.Share, args ...string) []string {
	return append(append(mvnpeer.JavaOptions(heap, cp, share), "weir.kafkapeer.Launcher"), args...)
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
