package brokertest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat not found on PATH in CI: %v", err)
		}
		t.Skip("kcat not on PATH (install the Debian package kcat)")
	}
	return p
}

// kcat (librdkafka) producing with acks=all and consuming while the
// partition's leader is lost: both follow the new leader by themselves,
// and every line arrives once, in order.
func TestKcatFollowsLeadership(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("kc", 1, 3, map[string]string{"min.insync.replicas": "2"})
	brokers := strings.Join(c.Addrs(), ",")

	// A consumer that keeps reading across the failover.
	cons := exec.Command(kcat, "-C", "-b", brokers, "-t", "kc", "-p", "0", "-o", "beginning", "-q", "-u", "-f", "%s\n",
		"-X", "topic.metadata.refresh.interval.ms=500")
	consOut, err := cons.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var consErr bytes.Buffer
	cons.Stderr = &consErr
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	defer cons.Process.Kill()
	lines := make(chan string, 10000)
	go func() {
		sc := bufio.NewScanner(consOut)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	prod := exec.Command(kcat, "-P", "-u", "-b", brokers, "-t", "kc", "-p", "0",
		"-X", "acks=all", "-X", "enable.idempotence=true", "-X", "linger.ms=5",
		"-X", "topic.metadata.refresh.interval.ms=500", "-X", "message.timeout.ms=60000")
	stdin, err := prod.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var prodOut bytes.Buffer
	prod.Stdout, prod.Stderr = &prodOut, &prodOut
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("line-%04d", i))
	}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := io.WriteString(stdin, want[i]+"\n"); err != nil {
				t.Fatal(err)
			}
			if i%100 == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	var got []string
	read := func(k int) {
		deadline := time.After(60 * time.Second)
		for len(got) < k {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("kcat consumer exited after %d lines: %s", len(got), consErr.String())
				}
				got = append(got, l)
			case <-deadline:
				var state []string
				for _, b := range c.Brokers() {
					if l := b.Log("kc", 0); l != nil {
						state = append(state, fmt.Sprintf("broker %d: log end %d, HW %d, leads %v", b.ID, l.EndOffset(), l.HighWatermark(), b.Leads("kc", 0)))
					}
				}
				cl := strings.Split(consErr.String(), "\n")
				pl := strings.Split(prodOut.String(), "\n")
				t.Fatalf("kcat consumer has %d of %d lines (%v); producer: %s; consumer: %s", len(got), k, state, strings.Join(pl[max(0, len(pl)-30):], "\n"), strings.Join(cl[max(0, len(cl)-40):], "\n"))
			}
		}
	}
	write(0, n/2)
	// kcat reads its input in blocks: wait for part of it to arrive, so
	// the producer and the consumer are both busy with the partition.
	read(n / 4)
	leader, err := c.LeaderOf("kc", 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	write(n/2, n)
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- prod.Wait() }()
	select {
	case err := <-done:
		if err != nil || strings.Contains(prodOut.String(), "Delivery failed") {
			t.Fatalf("kcat producer: %v\n%s", err, prodOut.String())
		}
	case <-time.After(90 * time.Second):
		prod.Process.Kill()
		t.Fatalf("kcat producer did not finish: %s", prodOut.String())
	}
	read(n)
	if !slices.Equal(got, want) {
		t.Fatalf("the consumer read %d lines, not the %d written in order (first differences: %v)", len(got), n, firstDiff(got, want))
	}
	if nl, _ := c.LeaderOf("kc", 0); nl == leader {
		t.Fatalf("leader did not move")
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: %q vs %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(got), len(want))
}
