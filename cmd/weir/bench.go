package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/spf13/cobra"

	"weir/ingest/bench"
	"weir/internal/kafkaclient"
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
acknowledgement; consume reports each fetch request's round trip;
roundtrip sends one request at a time (kgo, or raw requests on one
connection as the broker-side baseline).

--cpuprofile, --memprofile and --trace write the load generator's own CPU
profile, allocation profile and execution trace (the broker serves its own at the admin listener's
/debug/pprof/).`,
			Example: `  weir bench produce --topic bench --records 5000000 --record-size 100 --acks 1 --partitions 8
  weir bench produce --topic lat --records 200000 --throughput 50000 --acks 1   # latency at a fixed rate
  weir bench consume --topic bench --records 5000000
  weir bench roundtrip --topic rtt --records 10000 --mode kgo          # unloaded single-record latency
  weir bench roundtrip --records 10000 --mode raw-apiversions           # broker baseline`,
		}
		cmd.AddCommand(benchProduceCmd(g), benchConsumeCmd(g), benchRoundTripCmd(g))
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
	prof := addProfileFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&cfg.Topic, "topic", "weir-bench", "topic to produce to")
	fl.Int64Var(&cfg.Records, "records", 1_000_000, "number of records to produce")
	fl.IntVar(&cfg.RecordSize, "record-size", 100, "value size in bytes (random, incompressible)")
	fl.StringVar(&acks, "acks", "1", "acknowledgements: 0, 1, all (-1)")
	fl.StringVar(&codec, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	fl.Int32Var(&cfg.Partitions, "partitions", 8, "create the topic with this many partitions if it is missing (0: leave it to auto-creation)")
	fl.Int16Var(&cfg.Replication, "replication-factor", 0, "replication factor when creating the topic (0: broker default)")
	fl.Float64Var(&cfg.Throughput, "throughput", -1, "cap in records/s for latency runs (-1: unlimited)")
	fl.Int64Var(&cfg.Warmup, "warmup-records", 0, "first records (of --records) sent at the same rate but left out of the figures (connections, metadata, heap growth)")
	fl.IntVar(&cfg.Producers, "producers", 1, "parallel producer clients, each with its own connections")
	fl.DurationVar(&cfg.Linger, "linger", 0, "how long a partition's batch waits for more records")
	fl.Int32Var(&cfg.BatchBytes, "batch-max-bytes", 1<<20, "largest record batch in bytes")
	fl.IntVar(&cfg.MaxBuffered, "max-buffered-records", 100_000, "records each client buffers before Produce blocks")
	fl.IntVar(&cfg.BufferBytes, "buffer-memory", 32<<20, "bytes each client buffers before Produce blocks (Kafka's buffer.memory)")
	fl.IntVar(&cfg.MaxInflight, "max-inflight", 5, "produce requests in flight per broker (acks 0 and 1)")
	fl.DurationVar(&cfg.Report, "report-interval", 5*time.Second, "progress line interval (negative: none)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var err error
		if cfg.Acks, err = kafkaclient.ParseAcks(acks); err != nil {
			return err
		}
		if cfg.Compression, err = kafkaclient.ParseCompression(codec); err != nil {
			return err
		}
		if cfg.Brokers, cfg.Security, err = cf.bench(); err != nil {
			return err
		}
		cfg.Out = cmd.OutOrStdout()
		ctx, stop := signalContext(cmd)
		defer stop()
		err = prof.run(func() error { _, err := bench.Produce(ctx, cfg); return err })
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
	prof := addProfileFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&cfg.Topic, "topic", "weir-bench", "topic to read (from the earliest offset, no consumer group)")
	fl.Int64Var(&cfg.Records, "records", 0, "stop after this many records (0: read until idle)")
	fl.DurationVar(&cfg.Idle, "idle-timeout", 10*time.Second, "stop when no record arrives for this long")
	fl.Int32Var(&cfg.FetchMaxBytes, "fetch-max-bytes", 64<<20, "bytes per fetch response")
	fl.Int32Var(&cfg.PartitionBytes, "partition-max-bytes", 8<<20, "bytes per partition per fetch response")
	fl.DurationVar(&cfg.Report, "report-interval", 5*time.Second, "progress line interval (negative: none)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var err error
		if cfg.Brokers, cfg.Security, err = cf.bench(); err != nil {
			return err
		}
		cfg.Out = cmd.OutOrStdout()
		ctx, stop := signalContext(cmd)
		defer stop()
		err = prof.run(func() error { _, err := bench.Consume(ctx, cfg); return err })
		return cf.explain(err)
	}
	return cmd
}

func benchRoundTripCmd(g *globalFlags) *cobra.Command {
	var (
		cfg  bench.RoundTripConfig
		acks string
		mode string
	)
	cmd := &cobra.Command{
		Use:   "roundtrip",
		Short: "Send one request at a time and report round-trip latency (unloaded latency)",
		Long: `Sends --records requests one after another, each after the previous
one's response, after --warmup unmeasured ones, and prints the latency
quantiles. Modes:

  kgo              one record per ProduceSync on a kgo client with linger 0
                   (what an application sees)
  raw-produce      a one-record Produce request on one raw connection
                   (the broker's share, without the client's goroutines)
  raw-apiversions  ApiVersions on one raw connection (loopback + the
                   broker's request path, no log append)
  all              the three above, one after the other

Produce modes write to partition 0 of --topic (created with one partition
if missing).`,
		Args: cobra.NoArgs,
	}
	cf := addClientFlags(cmd, g)
	prof := addProfileFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&cfg.Topic, "topic", "weir-roundtrip", "topic to produce to (produce modes)")
	fl.StringVar(&mode, "mode", "kgo", "kgo, raw-produce, raw-apiversions or all")
	fl.Int64Var(&cfg.Records, "records", 10_000, "measured round trips")
	fl.Int64Var(&cfg.Warmup, "warmup", 200, "unmeasured round trips first")
	fl.IntVar(&cfg.RecordSize, "record-size", 100, "value size in bytes")
	fl.StringVar(&acks, "acks", "1", "acknowledgements: 1 or all (-1)")
	fl.DurationVar(&cfg.Interval, "interval", 0, "pause between round trips (0: back to back)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var err error
		if cfg.Acks, err = kafkaclient.ParseAcks(acks); err != nil {
			return err
		}
		if cfg.Brokers, cfg.Security, err = cf.bench(); err != nil {
			return err
		}
		modes := []bench.RoundTripMode{bench.RoundTripMode(mode)}
		if mode == "all" {
			modes = bench.RoundTripModes
		}
		cfg.Out = cmd.OutOrStdout()
		ctx, stop := signalContext(cmd)
		defer stop()
		err = prof.run(func() error {
			for _, m := range modes {
				c := cfg
				c.Mode = m
				if _, err := bench.RoundTrip(ctx, c); err != nil {
					return err
				}
			}
			return nil
		})
		return cf.explain(err)
	}
	return cmd
}

// profileFlags are the load generator's own profiling outputs.
type profileFlags struct {
	cpu, mem, trace string
	cmd             *cobra.Command // its output gets the process's CPU line
}

func addProfileFlags(cmd *cobra.Command) *profileFlags {
	p := &profileFlags{cmd: cmd}
	cmd.Flags().StringVar(&p.cpu, "cpuprofile", "", "write the load generator's CPU profile to this file (go tool pprof)")
	cmd.Flags().StringVar(&p.mem, "memprofile", "", "write the load generator's allocation profile to this file at the end (go tool pprof -sample_index=alloc_space)")
	cmd.Flags().StringVar(&p.trace, "trace", "", "write the load generator's execution trace to this file (go tool trace)")
	return p
}

// run runs f with the requested profiles recording, then prints the
// load generator's CPU time and its time waiting for a CPU (Linux), which
// tells a busy machine from a slow broker.
func (p *profileFlags) run(f func() error) error {
	if before, err := bench.ReadSchedStat(0); err == nil {
		defer func() {
			if after, err := bench.ReadSchedStat(0); err == nil {
				fmt.Fprintf(p.cmd.OutOrStdout(), "load generator process: %s\n", after.Sub(before))
			}
		}()
	}
	if p.cpu != "" {
		fh, err := os.Create(p.cpu)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer fh.Close()
		if err := pprof.StartCPUProfile(fh); err != nil {
			return fmt.Errorf("--cpuprofile %s: %w", p.cpu, err)
		}
		defer pprof.StopCPUProfile()
	}
	if p.trace != "" {
		fh, err := os.Create(p.trace)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer fh.Close()
		if err := trace.Start(fh); err != nil {
			return fmt.Errorf("--trace %s: %w", p.trace, err)
		}
		defer trace.Stop()
	}
	if p.mem != "" {
		defer func() {
			if fh, err := os.Create(p.mem); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(fh, 0)
				fh.Close()
			}
		}()
	}
	return f()
}
