package pipelines_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/txntest"
	"weir/pipelines"
)

func TestMain(m *testing.M) {
	// Under -short the t.Parallel tests run runners against in-process
	// brokers and mostly wait (about 3 s of CPU in 16 s at two at a time):
	// four at a time. This package's -short run is among the last of
	// `go test -short ./...`, where nothing else is left to overlap it.
	testkit.WaitingParallelShort(4)
	code := m.Run()
	txntest.Stop()
	os.Exit(code)
}

const exactlyOncePipeline = `
topic "events" {
  partitions = 2
}

source "file" "in" {
  topic         = topic.events
  include       = ["${path.root}/in/*.log"]
  poll_interval = "20ms"
  %s
}
`

// TestSourceExactlyOnce: exactly_once = true on a source block makes it
// transactional (its transactional id weir-source-<name> is known to the
// coordinator), its records are read with read_committed exactly once
// across a restart of the runner, and the setting is part of the
// source's hash (a reload restarts it).
func TestSourceExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			e := newEnv(t)
			e.write("p.hcl", fmt.Sprintf(exactlyOncePipeline, ""))
			plain := e.load().Sources[0]
			e.write("p.hcl", fmt.Sprintf(exactlyOncePipeline, "exactly_once = true"))
			cfg := e.load()
			if s := cfg.Sources[0]; !s.ExactlyOnce || plain.ExactlyOnce || s.Hash == plain.Hash {
				t.Fatalf("exactly_once %v (plain %v), hash %s vs %s", s.ExactlyOnce, plain.ExactlyOnce, s.Hash, plain.Hash)
			}
			in := e.write("in/x.log", "")
			run := func() *pipelines.Runner {
				r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{tb.Addr}}, SchemaRegistry: e.reg,
					Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), RestartBackoff: 200 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(r.Stop)
				if _, err := r.Apply(context.Background(), cfg); err != nil {
					t.Fatal(err)
				}
				return r
			}
			appendN := func(from, to int) {
				f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				for i := from; i < to; i++ {
					fmt.Fprintf(f, "line %04d\n", i)
				}
			}
			waitCommitted := func(n int) {
				testbroker.CheckFor(t, 60*time.Second, func() error {
					if got := len(txntest.ReadCommitted(t, tb.Addr, "events")); got < n {
						return fmt.Errorf("%d of %d records committed", got, n)
					}
					return nil
				})
			}
			r := run()
			appendN(0, 500)
			waitCommitted(500)
			cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{tb.Addr}})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ds, err := kadm.NewClient(cl).DescribeTransactions(context.Background(), "weir-source-in")
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := ds["weir-source-in"]; !ok || d.Err != nil || d.ProducerID < 0 {
				t.Fatalf("transactional id weir-source-in: %+v", ds)
			}
			r.Stop()
			appendN(500, 800)
			run()
			waitCommitted(800)
			recs := txntest.ReadCommitted(t, tb.Addr, "events")
			if len(recs) != 800 {
				t.Fatalf("%d records committed, want 800 (each line once)", len(recs))
			}
		})
	}
}
