package main

import (
	"context"
	"fmt"
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
// (_weir_connect_offsets) is deleted while a worker group runs its mysql
// source (a singleton). What the code does today, proved here: the
// owner's next commit writes its position again (its producer recreates
// the topic, with the broker's defaults: cleanup.policy=delete, logged),
// and a kill -9 of the owner after that hands the source over with every
// row in the topic once (read_committed) and the workers' records in turn
// (checkSingletonRuns). Not covered: a failover before that next commit,
// or a deletion while no worker runs the source (the new owner then finds
// no position). Weir only: the Apache Kafka peer's offsets topic is
// shared by the package's tests.
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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).DeleteTopic(ctx, connectors.DefaultOffsetsTopic); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		c.insert()
	}
	c.waitRow(5, 30*time.Second)
	// The owner's next commit writes its position to the topic again.
	testkit.CheckFor(t, 30*time.Second, func() error {
		recs, err := txntest.ReadCommittedErr(b.Addr, connectors.DefaultOffsetsTopic)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if strings.Contains(string(r.Value), `"seq"`) {
				return nil
			}
		}
		return fmt.Errorf("no source position in %s yet (%d records)", connectors.DefaultOffsetsTopic, len(recs))
	})
	rc, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, connectors.DefaultOffsetsTopic)
	if err == nil {
		for _, r := range rc {
			for _, c := range r.Configs {
				if c.Key == "cleanup.policy" {
					t.Logf("%s recreated: cleanup.policy=%v (%v)", connectors.DefaultOffsetsTopic, c.MaybeValue(), c.Source)
				}
			}
		}
	}
	victim := c.owner()
	c.workers[victim].cmd.Process.Signal(syscall.SIGKILL)
	c.waitRow(c.insert(), 30*time.Second)
	c.exited(victim)
	checkSingletonRuns(t, b.Addr, c.rowsTopic, []string{victim, c.owner()})
	ids, err := canalIDs(b.Addr, c.rowsTopic)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < c.next; i++ {
		if ids[i] != 1 {
			t.Errorf("row %d is in the topic %d times (read_committed), want once", i, ids[i])
		}
	}
}
