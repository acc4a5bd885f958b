package eostest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest"
	"weir/broker/brokertest/testbroker"
)

// Benchmarks of transactions with franz-go, each with its baseline in
// the same run (compare ratios: the machine is shared):
//
//	go test -run '^$' -bench . -count 5 ./broker/brokertest/eostest/
//
// EOS_BENCH_TARGET=kafka runs them against Apache Kafka instead of an
// in-process weir broker (testbroker).

const benchValue = 1024

// benchBytes is an incompressible record value, sent uncompressed: the
// benchmarks move the bytes they count (franz-go compresses with snappy
// by default, and a zero value shrinks to nothing).
var benchBytes = func() []byte {
	b := make([]byte, benchValue)
	rand.NewChaCha8([32]byte{1}).Read(b)
	return b
}()

// benchSeeds starts the benchmark's broker (weir unless
// EOS_BENCH_TARGET=kafka), skipping on weir while scenario is pending.
func benchSeeds(b *testing.B, scenario string) []string {
	b.Helper()
	if os.Getenv("EOS_BENCH_TARGET") == "kafka" {
		return []string{apacheKafka(b)}
	}
	pendingOnWeir(b, scenario)
	return []string{testbroker.Start(b).Addr}
}

func benchTopic(b *testing.B, seeds []string, name string, partitions int32) string {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := name + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic); err != nil || r.Err != nil {
		b.Fatalf("creating %s: %v %v", topic, err, r.Err)
	}
	return topic
}

// BenchmarkTxnProduce: 1 KiB records, acks=all, from the idempotent
// producer (the baseline) and from a transactional producer committing
// every 100 ms (issue 17's target: at least 0.8x the baseline).
//
// On weir every run (each b.N round of each sub-benchmark) gets a broker
// of its own over a new directory, removed after it: with one broker for
// both, the transactional run, always second, inherited the gigabytes the
// baseline had written (dirty pages, page cache, the log) and measured
// ~0.3x the baseline on a quiet machine, and a non-transactional producer
// flushing every 100 ms after the same 2.5 GB was as slow
// (BENCHMARKS.md).
func BenchmarkTxnProduce(b *testing.B) {
	run := func(every time.Duration) func(b *testing.B) {
		return func(b *testing.B) {
			seeds := benchSeeds(b, "bench/txn-produce")
			topic := benchTopic(b, seeds, "bench-produce", 3)
			warmTransactions(b, seeds, topic)
			produceBench(b, seeds, topic, every)
		}
	}
	b.Run("idempotent", run(0))
	b.Run("txn100ms", run(100*time.Millisecond))
}

// BenchmarkTxnProduceCluster: BenchmarkTxnProduce on an in-process
// cluster of 3 weir brokers (brokertest.NewCluster), the topic's 3
// partitions with one replica each, so each broker leads one and at most
// one of them is on the transaction coordinator's broker; the
// __transaction_state partitions have 3 replicas. What it adds to the
// single broker: the first produce of a transaction to a partition is
// verified with the coordinator over the inter-broker listener, markers
// go to the other brokers, and every __transaction_state write waits for
// its followers. weir only (EOS_BENCH_TARGET=kafka skips it).
func BenchmarkTxnProduceCluster(b *testing.B) {
	if os.Getenv("EOS_BENCH_TARGET") == "kafka" {
		b.Skip("weir only")
	}
	pendingOnWeir(b, "bench/txn-produce")
	run := func(every time.Duration) func(b *testing.B) {
		return func(b *testing.B) {
			c := brokertest.NewCluster(b, brokertest.Brokers(3))
			topic := "bench-cluster"
			c.CreateTopic(topic, 3, 1, nil)
			seeds := c.Addrs()
			warmTransactions(b, seeds, topic)
			produceBench(b, seeds, topic, every)
		}
	}
	b.Run("idempotent", run(0))
	b.Run("txn100ms", run(100*time.Millisecond))
}

// warmTransactions commits one transaction to topic before the timing
// starts: the first one waits for the transaction state topic to be
// created and its coordinator loaded (seconds on Kafka).
func warmTransactions(b testing.TB, seeds []string, topic string) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.TransactionalID(fmt.Sprintf("bench-warm-%d", time.Now().UnixNano())))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		b.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: benchBytes}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		b.Fatal(err)
	}
}

func produceBench(b *testing.B, seeds []string, topic string, txnEvery time.Duration) {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression())}
	if txnEvery > 0 {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("bench-%d", time.Now().UnixNano())))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	value := benchBytes
	errs := make(chan error, 1)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case errs <- err:
			default:
			}
		}
	}
	commits := 0
	var flushing, ending time.Duration // summed over the commits
	end := func() {
		t0 := time.Now()
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if txnEvery > 0 {
			t1 := time.Now()
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
			commits++
			flushing += t1.Sub(t0)
			ending += time.Since(t1)
		}
	}
	b.SetBytes(benchValue)
	b.ResetTimer()
	began := time.Now()
	if txnEvery > 0 {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, promise)
		if txnEvery > 0 && time.Since(began) >= txnEvery {
			end()
			began = time.Now()
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
		}
	}
	end()
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if txnEvery > 0 {
		// What a commit costs the producer: the flush that drains its
		// pipeline before EndTxn, and EndTxn itself.
		b.ReportMetric(float64(commits), "commits")
		b.ReportMetric(float64(flushing.Microseconds())/1000/float64(commits), "flush-ms/commit")
		b.ReportMetric(float64(ending.Microseconds())/1000/float64(commits), "endtxn-ms/commit")
	}
}

// BenchmarkReadCommitted: one consumer reads a topic of 20,000 1 KiB
// records written in committed transactions of 500 records (so the log
// holds 40 markers), at read_uncommitted (the baseline) and at
// read_committed (issue 17's target: at least 0.9x the baseline). An
// op is one read of the whole topic.
func BenchmarkReadCommitted(b *testing.B) {
	const records, perTxn = 20000, 500
	seeds := benchSeeds(b, "bench/read-committed")
	topic := benchTopic(b, seeds, "bench-read", 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.TransactionalID(fmt.Sprintf("bench-read-%d", time.Now().UnixNano())))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	value := benchBytes
	for i := 0; i < records; i += perTxn {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		rs := make([]*kgo.Record, perTxn)
		for j := range rs {
			rs[j] = &kgo.Record{Value: value}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
	}
	cl.Close()
	for _, level := range []struct {
		name string
		l    kgo.IsolationLevel
	}{{"read_uncommitted", kgo.ReadUncommitted()}, {"read_committed", kgo.ReadCommitted()}} {
		b.Run(level.name, func(b *testing.B) {
			b.SetBytes(records * benchValue)
			for range b.N {
				c, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level.l),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				for n < records {
					fs := c.PollFetches(rctx)
					if err := fs.Err0(); err != nil {
						b.Fatalf("after %d of %d records: %v", n, records, err)
					}
					n += fs.NumRecords()
				}
				cancel()
				c.Close()
				if n != records {
					b.Fatalf("read %d records, want %d", n, records)
				}
			}
		})
	}
}
