package main

import (
	"time"

	"github.com/spf13/cobra"

	"weir/ingest/bench"
	"weir/ingest/client"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "bench",
			Short: "Measure produce and consume throughput and latency",
			Long: `Load generators in the manner of Kafka's kafka-producer-perf-test and
kafka-consumer-perf-test. They print a progress line every --report-interval
and a summary: records/s, MB/s (MiB), and latency p50/p99/p99.9/max.
Produce latency is from handing a record to the client to its
acknowledgement; consume reports each fetch request's round trip.`,
			Example: `  weir bench produce --topic bench --records 5000000 --record-size 100 --acks 1 --partitions 8
  weir bench produce --topic lat --records 200000 --throughput 50000 --acks 1   # latency at a fixed rate
  weir bench consume --topic bench --records 5000000`,
		}
		cmd.AddCommand(benchProduceCmd(g), benchConsumeCmd(g))
		return cmd
	})
}

func benchProduceCmd(g *globalFlags) *cobra.Command {
	var (
		cfg         bench.ProduceConfig
		acks, codec string
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce fixed-size records as fast as allowed and report throughput and latency",
		Args:  cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	fl := cmd.Flags()
	fl.StringVar(&cfg.Topic, "topic", "weir-bench", "topic to produce to")
	fl.Int64Var(&cfg.Records, "records", 1_000_000, "number of records to produce")
	fl.IntVar(&cfg.RecordSize, "record-size", 100, "value size in bytes (random, incompressible)")
	fl.StringVar(&acks, "acks", "1", "acknowledgements: 0, 1, all (-1)")
	fl.StringVar(&codec, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	fl.Int32Var(&cfg.Partitions, "partitions", 8, "create the topic with this many partitions if it is missing (0: leave it to auto-creation)")
	fl.Int16Var(&cfg.Replication, "replication-factor", 0, "replication factor when creating the topic (0: broker default)")
	fl.Float64Var(&cfg.Throughput, "throughput", -1, "cap in records/s for latency runs (-1: unlimited)")
	fl.IntVar(&cfg.Producers, "producers", 1, "parallel producer clients, each with its own connections")
	fl.DurationVar(&cfg.Linger, "linger", 0, "how long a partition's batch waits for more records")
	fl.Int32Var(&cfg.BatchBytes, "batch-max-bytes", 1<<20, "largest record batch in bytes")
	fl.IntVar(&cfg.MaxBuffered, "max-buffered-records", 100_000, "records each client buffers before Produce blocks")
	fl.IntVar(&cfg.BufferBytes, "buffer-memory", 32<<20, "bytes each client buffers before Produce blocks (Kafka's buffer.memory)")
	fl.IntVar(&cfg.MaxInflight, "max-inflight", 5, "produce requests in flight per broker (acks 0 and 1)")
	fl.DurationVar(&cfg.Report, "report-interval", 5*time.Second, "progress line interval (negative: none)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var err error
		if cfg.Acks, err = client.ParseAcks(acks); err != nil {
			return err
		}
		if cfg.Compression, err = client.ParseCompression(codec); err != nil {
			return err
		}
		if cfg.Brokers, err = cf.seeds(); err != nil {
			return err
		}
		cfg.Out = cmd.OutOrStdout()
		ctx, stop := signalContext(cmd)
		defer stop()
		_, err = bench.Produce(ctx, cfg)
		return cf.explain(err)
	}
	return cmd
}

func benchConsumeCmd(g *globalFlags) *cobra.Command {
	var cfg bench.ConsumeConfig
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Read a topic from the beginning and report throughput and fetch latency",
		Args:  cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	fl := cmd.Flags()
	fl.StringVar(&cfg.Topic, "topic", "weir-bench", "topic to read (from the earliest offset, no consumer group)")
	fl.Int64Var(&cfg.Records, "records", 0, "stop after this many records (0: read until idle)")
	fl.DurationVar(&cfg.Idle, "idle-timeout", 10*time.Second, "stop when no record arrives for this long")
	fl.Int32Var(&cfg.FetchMaxBytes, "fetch-max-bytes", 64<<20, "bytes per fetch response")
	fl.Int32Var(&cfg.PartitionBytes, "partition-max-bytes", 8<<20, "bytes per partition per fetch response")
	fl.DurationVar(&cfg.Report, "report-interval", 5*time.Second, "progress line interval (negative: none)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var err error
		if cfg.Brokers, err = cf.seeds(); err != nil {
			return err
		}
		cfg.Out = cmd.OutOrStdout()
		ctx, stop := signalContext(cmd)
		defer stop()
		_, err = bench.Consume(ctx, cfg)
		return cf.explain(err)
	}
	return cmd
}
