package kafka

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit"
)

// groupKcat returns kcat's path: a failure in CI (CI=true, where the test
// command installs it), a skip elsewhere.
func groupKcat(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if _, err2 := os.Stat("/usr/bin/kcat"); err2 == nil {
			return "/usr/bin/kcat"
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("kcat missing in CI: %v", err)
		}
		t.Skip("kcat not installed")
	}
	return p
}

// kcatMember is one `kcat -G` process and the values it printed.
type kcatMember struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	stderr strings.Builder
	done   chan struct{}
}

func startKcat(t *testing.T, path, addr, group, topic string) *kcatMember {
	t.Helper()
	k := &kcatMember{done: make(chan struct{})}
	k.cmd = exec.Command(path, "-b", addr, "-G", group, "-q", "-u", "-f", "%s\n",
		"-X", "auto.offset.reset=earliest",
		"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=250",
		"-X", "topic.metadata.refresh.interval.ms=1000",
		topic)
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	k.cmd.Stderr = &lockedWriter{mu: &k.mu, w: &k.stderr}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(k.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			k.mu.Lock()
			k.lines = append(k.lines, sc.Text())
			k.mu.Unlock()
		}
		io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() { k.stop() })
	return k
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (k *kcatMember) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.lines)
}

// stop asks kcat to stop (SIGTERM: it leaves the group) and waits.
func (k *kcatMember) stop() {
	if k.cmd.ProcessState != nil {
		return
	}
	k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		k.cmd.Process.Kill()
		<-k.done
	}
	k.cmd.Wait()
}

func TestGroupKcatTwoMembers(t *testing.T) {
	t.Parallel()
	kcat := groupKcat(t)
	b := startGroupBroker(t, testGroupConfig())
	const (
		parts = 4
		n     = 400
		topic = "kcat-g"
		group = "kcat-group"
	)
	createTopic(t, b, topic, parts, nil)
	k1 := startKcat(t, kcat, b.addr, group, topic)
	k2 := startKcat(t, kcat, b.addr, group, topic)

	// Wait until both are in one Stable generation, together assigned
	// every partition; only then produce, so that no partition changes
	// hands while records flow.
	coord, err := b.srv.groups()
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 60*time.Second, func() error {
		d := coord.Describe([]string{group})[0]
		if d.State != "Stable" || len(d.Members) != 2 {
			return fmt.Errorf("group %s with %d members", d.State, len(d.Members))
		}
		seen := map[int32]bool{}
		for _, m := range d.Members {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(m.MemberAssignment); err != nil {
				return fmt.Errorf("member %s assignment: %v", m.MemberID, err)
			}
			mine := 0
			for _, at := range a.Topics {
				for _, p := range at.Partitions {
					seen[p] = true
					mine++
				}
			}
			if mine == 0 {
				return fmt.Errorf("member %s has no partition", m.MemberID)
			}
		}
		if len(seen) != parts {
			return fmt.Errorf("%d of %d partitions assigned", len(seen), parts)
		}
		return nil
	})

	cl := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: fmt.Appendf(nil, "rec-%04d", i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 60*time.Second, func() error {
		if got := k1.count() + k2.count(); got < n {
			return fmt.Errorf("kcat members printed %d of %d records", got, n)
		}
		return nil
	})
	k1.stop()
	k2.stop()

	all := append(append([]string(nil), k1.lines...), k2.lines...)
	if len(k1.lines) == 0 || len(k2.lines) == 0 {
		t.Errorf("one member consumed nothing: %d and %d records", len(k1.lines), len(k2.lines))
	}
	sort.Strings(all)
	if len(all) != n {
		t.Errorf("%d records consumed, want %d", len(all), n)
	}
	for i := 0; i < n && i < len(all); i++ {
		if want := fmt.Sprintf("rec-%04d", i); all[i] != want {
			t.Fatalf("record %d is %q, want %q (a duplicate or a gap); stderr:\n%s\n%s", i, all[i], want, k1.stderr.String(), k2.stderr.String())
		}
	}
	t.Logf("kcat members consumed %d and %d records", len(k1.lines), len(k2.lines))
}
