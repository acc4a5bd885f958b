package brokertest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/metadata"
)

// BenchmarkReassignThrottled moves one partition of WEIR_BENCH_MOVE_MIB
// MiB (default 64; the figure is 1024) from broker 1 to broker 2
// with leader/follower.replication.throttled.rate of
// WEIR_BENCH_THROTTLE_MIB MiB/s (default 8) set as
// kafka-reassign-partitions --throttle sets it, and, as the baseline in
// the same run, the same move with no throttle. It reports the throttled
// move's average rate over the whole move (MiB/s), its steady rate once
// the quota's first 11 s window has passed (the first window lets about
// 10 s worth through at once, as Kafka's quota does), and the unthrottled
// rate.
func BenchmarkReassignThrottled(b *testing.B) {
	sizeMiB, rateMiB := envInt("WEIR_BENCH_MOVE_MIB", 64), envInt("WEIR_BENCH_THROTTLE_MIB", 8)
	for i := 0; i < b.N; i++ {
		c := NewCluster(b, Brokers(2))
		base := moveOnce(b, c, "base", sizeMiB, -1)
		thr := moveOnce(b, c, "thr", sizeMiB, rateMiB)
		b.ReportMetric(thr.avg, "throttled-MiB/s")
		b.ReportMetric(thr.steady, "steady-MiB/s")
		b.ReportMetric(thr.steady/float64(rateMiB), "steady/throttle")
		b.ReportMetric(base.avg, "unthrottled-MiB/s")
		c.Close()
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

type moveRate struct{ avg, steady float64 }

// moveOnce creates topic on broker 1 with sizeMiB MiB, moves it to broker
// 2 (throttled at rateMiB MiB/s unless < 0) and measures the copy from
// broker 2's log size.
func moveOnce(b *testing.B, c *Cluster, topic string, sizeMiB, rateMiB int) moveRate {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c.CreateTopicSpec(ctx, 1, metadata.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	c.WaitFor(20*time.Second, func() error { _, err := c.LeaderOf(topic, 0); return err })
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	defer cl.Close()
	produceBytes(b, cl, topic, 0, sizeMiB*64, 16<<10)
	total := c.Broker(1).Log(topic, 0).Size()
	adm := kadm.NewClient(cl)
	if rateMiB >= 0 {
		v := strconv.Itoa(rateMiB << 20)
		cfg := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: &v}, {Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: &v}}
		if err := alterErrT(adm.AlterBrokerConfigs(ctx, cfg, 1, 2)); err != nil {
			b.Fatal(err)
		}
		l, f := "0:1", "0:2"
		tc := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: &l}, {Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: &f}}
		if err := alterErrT(adm.AlterTopicConfigs(ctx, tc, topic)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{2})
	start := time.Now()
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || rs.Error() != nil {
		b.Fatalf("reassigning: %v %v", err, rs.Error())
	}
	var at11 time.Time
	var size11 int64
	for {
		// The reassignment may not be applied on the broker read yet.
		if p := c.Partition(topic, 0); !p.Reassigning() && len(p.Replicas) == 1 && p.Replicas[0] == 2 {
			break
		}
		if l := c.Broker(2).Log(topic, 0); l != nil && at11.IsZero() && time.Since(start) >= 11*time.Second {
			at11, size11 = time.Now(), l.Size()
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	b.StopTimer()
	mib := float64(total) / (1 << 20)
	r := moveRate{avg: mib / took.Seconds()}
	if !at11.IsZero() {
		r.steady = (float64(total-size11) / (1 << 20)) / time.Since(at11).Seconds()
	}
	b.Logf("%s: %.1f MiB moved in %v (throttle %d MiB/s): %.2f MiB/s overall, %.2f MiB/s after the first 11 s", topic, mib, took.Round(time.Millisecond), rateMiB, r.avg, r.steady)
	if rateMiB >= 0 {
		d := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.rate"}, {Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"}}
		if err := alterErrT(adm.AlterBrokerConfigs(ctx, d, 1, 2)); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

func alterErrT(rs kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%s: %w: %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
