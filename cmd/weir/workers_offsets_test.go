package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/txntest"
	"weir/internal/weirbin"
)

// TestWorkerGroupOffsetsTopicDeleted: the source positions topic
// (_weir_connect_offsets) is deleted under a worker group running its
// mysql source (a singleton), twice.
//
//  1. While the owner runs: its next commit creates the topic again
//     compacted (not auto-created with the broker's cleanup.policy=delete)
//     and stores its position again.
//  2. Then a failover before the owner's next commit (the owner frozen
//     with SIGSTOP, the topic deleted, the owner killed): the new owner
//     finds no position of a source that ran before (its transactional
//     id's producer epoch > 0) and fails with an error naming the topic
//     and the ways on, instead of snapshotting again (every row twice).
//     Rows inserted meanwhile are not lost: `weir connector positions
//     --recover-from` rebuilds the position from the records' headers and
//     the source resumes with every row once, the owners' records in turn
//     (checkSingletonRuns). --reset then refuses (positions exist).
//
// Weir only: the Apache Kafka peer's offsets topic is shared by the
// package's tests.
func TestWorkerGroupOffsetsTopicDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: worker processes and MariaDB")
	}
	bin := weirbin.Build(t)
	srv := mysqltest.Shared(t)
	b := testbroker.Start(t)
	c := newWorkerCluster(t, bin, srv, b.Addr)
	c.start("w1")
	c.start("w2")
	for i := 0; i < 3; i++ {
		c.insert()
	}
	c.waitRow(3, 60*time.Second)
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{b.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deleteOffsets := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := adm.DeleteTopic(ctx, connectors.DefaultOffsetsTopic); err != nil {
			t.Fatal(err)
		}
	}
	compacted := func() {
		t.Helper()
		testkit.CheckFor(t, 20*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rc, err := adm.DescribeTopicConfigs(ctx, connectors.DefaultOffsetsTopic)
			if err == nil {
				_, err = rc.On(connectors.DefaultOffsetsTopic, nil)
			}
			if err != nil {
				return err
			}
			for _, r := range rc {
				for _, c := range r.Configs {
					if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
						return fmt.Errorf("%s: cleanup.policy=%s (%v), want compact", connectors.DefaultOffsetsTopic, c.MaybeValue(), c.Source)
					}
				}
			}
			return nil
		})
	}
	hasPosition := func() error {
		recs, err := txntest.ReadCommittedErr(b.Addr, connectors.DefaultOffsetsTopic)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if string(r.Key) == `["shop","`+"binlog"+`"]` || strings.Contains(string(r.Value), `"seq"`) {
				return nil
			}
		}
		return fmt.Errorf("no source position in %s yet (%d records)", connectors.DefaultOffsetsTopic, len(recs))
	}

	// 1. Deleted while the owner runs.
	deleteOffsets()
	for i := 0; i < 2; i++ {
		c.insert()
	}
	c.waitRow(5, 30*time.Second)
	testkit.CheckFor(t, 30*time.Second, hasPosition)
	compacted()

	// 2. Deleted, then a failover before the owner's next commit.
	victim := c.owner()
	other := map[string]string{"w1": "w2", "w2": "w1"}[victim]
	if err := c.workers[victim].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deleteOffsets()
	c.workers[victim].cmd.Process.Signal(syscall.SIGKILL)
	c.exited(victim)
	for i := 0; i < 3; i++ {
		c.insert()
	}
	// The new owner fails, naming the topic and the ways on.
	testkit.CheckFor(t, 30*time.Second, func() error {
		b, _ := os.ReadFile(c.workers[other].log)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "source positions lost: "+connectors.DefaultOffsetsTopic+" holds no position of") &&
				strings.Contains(l, "weir connector positions shop --recover-from") && strings.Contains(l, "--reset") {
				return nil
			}
		}
		return fmt.Errorf("%s has not refused to start source.shop without positions yet", other)
	})
	compacted()
	// It did not snapshot again: every row so far is in the topic once.
	ids, err := canalIDs(b.Addr, c.rowsTopic)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if ids[i] != 1 {
			t.Errorf("row %d is in the topic %d times (read_committed) after the failover without positions, want once", i, ids[i])
		}
	}
	if ids[6] != 0 {
		t.Errorf("row 6, inserted after the failover, is in the topic: the source ran without its positions")
	}
	out := mustWeir(t, "", "connector", "positions", "shop", "--brokers", b.Addr,
		"--recover-from", c.prefix+".schema-changes", "--recover-from", c.rowsTopic)
	t.Logf("weir connector positions: %s", out)
	if !strings.Contains(out, "1 position(s) recovered") {
		t.Errorf("weir connector positions --recover-from: %q, want 1 position recovered", out)
	}
	if _, e, err := runWeir(t, "", "connector", "positions", "shop", "--brokers", b.Addr, "--reset"); err == nil || !strings.Contains(err.Error(), "already holds positions") {
		t.Errorf("weir connector positions --reset with positions stored: %v %s, want a refusal", err, e)
	}
	// The source resumes on its next restart (the runner's backoff):
	// the rows inserted meanwhile arrive once, none before them again.
	c.waitRow(c.insert(), 60*time.Second)
	checkSingletonRuns(t, b.Addr, c.rowsTopic, []string{victim, other})
	ids, err = canalIDs(b.Addr, c.rowsTopic)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < c.next; i++ {
		if ids[i] != 1 {
			t.Errorf("row %d is in the topic %d times (read_committed), want once", i, ids[i])
		}
	}
}
