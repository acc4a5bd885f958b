package group_test

// Process-level tests: a real `weir broker` binary, killed with SIGKILL and
// restarted over the same data directory, and the `weir group` CLI.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// weirBinary is the weir command (internal/weirbin: built once per test
// process, or scripts/test's); TestMain removes it.
func weirBinary(t *testing.T) string {
	t.Helper()
	return weirbin.Build(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	weirbin.Cleanup()
	os.Exit(code)
}

type brokerProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

// startBrokerProc runs `weir broker` on addr and waits until it answers.
func startBrokerProc(t *testing.T, dataDir, addr string) *brokerProc {
	t.Helper()
	p, err := tryBrokerProc(t, dataDir, addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startBrokerProcOnFreeAddr runs `weir broker` for the first time over
// dataDir on a free 127.0.0.1 port and returns it with its address
// (restarts use the same one: startBrokerProc). A port picked free can be
// taken by another process before the broker binds it (hog passes saw it
// in other tests): the broker then exits on "address already in use", and
// it starts again on another port (nobody has the address yet).
func startBrokerProcOnFreeAddr(t *testing.T, dataDir string) (*brokerProc, string) {
	t.Helper()
	for {
		addr := testkit.FreeAddr(t)
		p, err := tryBrokerProc(t, dataDir, addr)
		if err == nil {
			return p, addr
		}
		if !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("weir broker could not bind %s (taken meanwhile): starting it on another port", addr)
	}
}

// tryBrokerProc runs `weir broker` on addr and waits until it answers; the
// error has the broker's output when it exited first.
func tryBrokerProc(t *testing.T, dataDir, addr string) (*brokerProc, error) {
	t.Helper()
	p := &brokerProc{stderr: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(weirBinary(t), "broker", "--data-dir", dataDir, "--kafka-addr", addr, "--admin-addr", "127.0.0.1:0", "--registry-addr", "off", "--log-level", "warn")
	p.cmd.Stderr = p.stderr
	p.cmd.Stdout = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = testkit.Poll(30*time.Second, func() error {
		select {
		case <-p.done: // the output is complete once Wait returned
			return testkit.Stop(fmt.Errorf("weir broker exited: %v\n%s", p.cmd.ProcessState, p.stderr))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return cl.Ping(ctx)
	})
	if err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *brokerProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.done
}

func weir(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(weirBinary(t), args...).CombinedOutput()
	return string(out), err
}

// firstOffsets runs a group consumer until it has seen a record of every
// partition and returns the first offset it got for each.
func firstOffsets(t *testing.T, addr, group, topic string, parts int) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	first := map[int32]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(first) < parts {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s: saw the first record of only %d of %d partitions: %v", group, len(first), parts, first)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	return first
}

func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for p, o := range os[topic] {
		out[p] = o.At
	}
	return out
}

func sameOffsets(got map[int32]int64, want ...int64) bool {
	if len(got) != len(want) {
		return false
	}
	for p, w := range want {
		if got[int32(p)] != w {
			return false
		}
	}
	return true
}

func TestProcessCommitsSurviveKillAndResetOffsets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the weir binary")
	}
	dataDir := t.TempDir()
	b, addr := startBrokerProcOnFreeAddr(t, dataDir)

	const (
		topic = "orders"
		group = "resume"
		parts = 3
		per   = 100
	)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < parts*per; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: []byte("v-" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A group member consumes everything, commits 50/60/70 and leaves.
	{
		cc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		n := 0
		for n < parts*per {
			fs := cc.PollFetches(pctx)
			if pctx.Err() != nil {
				t.Fatalf("consumed %d of %d", n, parts*per)
			}
			n += fs.NumRecords()
		}
		cancel()
		var commitErr error
		cc.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {
			0: {Epoch: -1, Offset: 50}, 1: {Epoch: -1, Offset: 60}, 2: {Epoch: -1, Offset: 70},
		}}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							err = fmt.Errorf("commit %s/%d: error %d", rt.Topic, rp.Partition, rp.ErrorCode)
						}
					}
				}
			}
			commitErr = err
		})
		if commitErr != nil {
			t.Fatal(commitErr)
		}
		cc.Close()
	}
	if got := committed(t, adm, group, topic); !sameOffsets(got, 50, 60, 70) {
		t.Fatalf("committed %v before the kill", got)
	}

	// kill -9, restart over the same data directory.
	b.kill()
	startBrokerProc(t, dataDir, addr)
	if got := committed(t, adm, group, topic); !sameOffsets(got, 50, 60, 70) {
		t.Fatalf("committed %v after kill -9 and restart, want 50 60 70", got)
	}
	// The records themselves must be visible again (high watermark back at
	// the log end: single-node, every acknowledged record is committed).
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != per {
			t.Errorf("partition %d: end offset (high watermark) %d after kill -9 and restart, want %d: acknowledged records are invisible to consumers (broker/kafka or broker/log: reopened logs keep the last checkpointed high watermark)", o.Partition, o.Offset, per)
		}
	})
	// One more record per partition (this also moves a stale high
	// watermark, so the rest of the test checks the group side).
	recs = recs[:0]
	for p := 0; p < parts; p++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("late")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := firstOffsets(t, addr, group, topic, parts); !sameOffsets(got, 50, 60, 70) {
		t.Fatalf("a consumer after the restart started at %v, want 50 60 70", got)
	}

	// weir group list / describe (lag against the log end of 100).
	out, err := weir(t, "group", "list", "--brokers", addr)
	if err != nil || !strings.Contains(out, group) || !strings.Contains(out, "Empty") {
		t.Fatalf("weir group list: %v\n%s", err, out)
	}
	out, err = weir(t, "group", "describe", group, "--brokers", addr)
	if err != nil || !strings.Contains(out, "TOTAL LAG 123") || !strings.Contains(out, "state=Empty") {
		t.Fatalf("weir group describe: %v\n%s", err, out)
	}

	// reset-offsets: a dry run changes nothing; --execute moves the group
	// and its next consumer starts there.
	out, err = weir(t, "group", "reset-offsets", group, "--topic", topic, "--to-offset", "10", "--brokers", addr)
	if err != nil || !strings.Contains(out, "dry run") || strings.Count(out, " 10\n") != parts {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if got := committed(t, adm, group, topic); !sameOffsets(got, 50, 60, 70) {
		t.Fatalf("a dry run changed the offsets: %v", got)
	}
	for _, c := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--shift-by", "-5"}, []int64{45, 55, 65}},
		{[]string{"--to-earliest"}, []int64{0, 0, 0}},
		{[]string{"--to-latest"}, []int64{101, 101, 101}},
		{[]string{"--to-datetime", "2000-01-01T00:00:00Z"}, []int64{0, 0, 0}},
		{[]string{"--to-offset", "1000"}, []int64{101, 101, 101}}, // clamped to the log end
	} {
		out, err := weir(t, append([]string{"group", "reset-offsets", group, "--topic", topic, "--brokers", addr}, c.args...)...)
		if err != nil {
			t.Fatalf("reset %v: %v\n%s", c.args, err, out)
		}
		for p, w := range c.want {
			if !strings.Contains(out, fmt.Sprintf("%s  %s  %d ", group, topic, p)) || !strings.Contains(out, fmt.Sprintf("  %d\n", w)) {
				t.Errorf("reset %v plan lacks partition %d -> %d:\n%s", c.args, p, w, out)
			}
		}
	}
	out, err = weir(t, "group", "reset-offsets", group, "--topic", topic+":0,2", "--to-offset", "10", "--execute", "--brokers", addr)
	if err != nil || !strings.Contains(out, "committed 2 offsets") {
		t.Fatalf("reset --execute: %v\n%s", err, out)
	}
	if got := committed(t, adm, group, topic); !sameOffsets(got, 10, 60, 10) {
		t.Fatalf("after reset: %v, want 10 60 10", got)
	}
	if got := firstOffsets(t, addr, group, topic, parts); !sameOffsets(got, 10, 60, 10) {
		t.Fatalf("the next consumer started at %v, want 10 60 10", got)
	}

	// weir consume --group: a first run prints 150 records and commits
	// them; a second run resumes there and reads the rest (-e).
	out, err = weir(t, "consume", topic, "--group", "cli", "--offset", "earliest", "-n", "150", "--brokers", addr)
	if err != nil {
		t.Fatalf("consume --group: %v\n%s", err, out)
	}
	first := strings.Fields(out)
	var sum int64
	for _, o := range committed(t, adm, "cli", topic) {
		sum += o
	}
	if len(first) != 150 || sum != 150 {
		t.Fatalf("consume --group -n 150 printed %d records and committed %d", len(first), sum)
	}
	// (--offset earliest applies to partitions the first run left uncommitted.)
	out, err = weir(t, "consume", topic, "--group", "cli", "-e", "--offset", "earliest", "--balancer", "roundrobin", "--brokers", addr)
	if err != nil {
		t.Fatalf("consume --group -e: %v\n%s", err, out)
	}
	seen := map[string]int{}
	for _, v := range append(first, strings.Fields(out)...) {
		seen[v]++
	}
	for i := 0; i < parts*per; i++ {
		if n := seen["v-"+strconv.Itoa(i)]; n != 1 {
			t.Errorf("record v-%d printed %d times by the two group runs", i, n)
		}
	}
	if seen["late"] != parts || len(seen) != parts*per+1 {
		t.Errorf("the two group runs printed %d distinct values, late %d times", len(seen), seen["late"])
	}
	if out, err := weir(t, "consume", topic, "--group", "cli", "--balancer", "sticky", "--brokers", addr); err == nil || !strings.Contains(out, `"sticky"`) {
		t.Errorf("bad balancer: %v\n%s", err, out)
	}

	// An active group cannot be reset; bad flags are named.
	active, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for !active.PollFetches(ctx).IsClientClosed() {
		}
	}()
	testkit.CheckFor(t, 30*time.Second, func() error {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil || d[group].State != "Stable" {
			return fmt.Errorf("group not stable: %v %v", d[group].State, err)
		}
		return nil
	})
	if out, err := weir(t, "group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute", "--brokers", addr); err == nil || !strings.Contains(out, "active members") {
		t.Errorf("reset of an active group: %v\n%s", err, out)
	}
	if out, err := weir(t, "group", "delete", group, "--brokers", addr); err == nil || !strings.Contains(out, "active members") {
		t.Errorf("delete of an active group: %v\n%s", err, out)
	}
	active.Close()
	if out, err := weir(t, "group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--to-latest", "--brokers", addr); err == nil || !strings.Contains(out, "exactly one of") {
		t.Errorf("two targets: %v\n%s", err, out)
	}
	if out, err := weir(t, "group", "reset-offsets", group, "--topic", "nosuch", "--to-earliest", "--brokers", addr); err == nil || !strings.Contains(out, `"nosuch"`) {
		t.Errorf("unknown topic: %v\n%s", err, out)
	}
	out, err = weir(t, "group", "delete", group, "--brokers", addr)
	if err != nil || !strings.Contains(out, "deleted group "+group) {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	if got := committed(t, adm, group, topic); len(got) != 0 {
		t.Fatalf("offsets after delete: %v", got)
	}
	out, err = weir(t, "group", "describe", group, "--brokers", addr)
	if err != nil || !strings.Contains(out, "no such group") {
		t.Fatalf("describe after delete: %v\n%s", err, out)
	}
}
