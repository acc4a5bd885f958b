package kafka

// Group benchmarks (results in BENCHMARKS.md, "## broker/group"):
//
//	go test ./broker/kafka -run '^$' -bench 'BenchmarkGroup' -benchtime 1x -count 5     (rebalance)
//	go test ./broker/kafka -run '^$' -bench 'BenchmarkOffsetCommit' -count 5

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkGroupRebalance10x100 measures, per iteration, the rebalance a
// 10th franz-go member causes in a Stable group of 9 over 100 partitions:
// from the 10th member's start until all 10 own disjoint partitions that
// cover all 100 in one generation (initial rebalance delay 0, range
// balancer, heartbeat interval 100 ms: the 9 learn of the rebalance by
// heartbeat, as with any Kafka broker).
func BenchmarkGroupRebalance10x100(b *testing.B) {
	br := startGroupBroker(b, testGroupConfig())
	const (
		members = 10
		parts   = 100
		topic   = "rebalance-100"
	)
	createTopic(b, br, topic, parts, nil)
	var total time.Duration
	for it := 0; it < b.N; it++ {
		group := fmt.Sprintf("rebalance-%d", it)
		var (
			mu    sync.Mutex
			owned = map[int]map[int32]bool{}
		)
		cls := make([]*kgo.Client, 0, members)
		var last time.Time
		start := func(i int) {
			owned[i] = map[int32]bool{}
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(br.addr),
				kgo.ConsumerGroup(group),
				kgo.ConsumeTopics(topic),
				kgo.Balancers(kgo.RangeBalancer()),
				kgo.SessionTimeout(6*time.Second),
				kgo.HeartbeatInterval(100*time.Millisecond),
				kgo.DisableAutoCommit(),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
					mu.Lock()
					for _, p := range a[topic] {
						owned[i][p] = true
					}
					mu.Unlock()
				}),
				kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
					mu.Lock()
					for _, p := range r[topic] {
						delete(owned[i], p)
					}
					mu.Unlock()
				}),
			)
			if err != nil {
				b.Fatal(err)
			}
			cls = append(cls, cl)
			go func() {
				for {
					if cl.PollFetches(context.Background()).IsClientClosed() {
						return
					}
				}
			}()
		}
		complete := func() bool {
			mu.Lock()
			defer mu.Unlock()
			seen := map[int32]bool{}
			var gens []int32
			for i, cl := range cls {
				if len(owned[i]) == 0 {
					return false
				}
				for p := range owned[i] {
					if seen[p] {
						return false
					}
					seen[p] = true
				}
				_, g := cl.GroupMetadata()
				gens = append(gens, g)
			}
			sort.Slice(gens, func(a, b int) bool { return gens[a] < gens[b] })
			return len(seen) == parts && gens[0] == gens[len(gens)-1]
		}
		wait := func() {
			deadline := time.Now().Add(30 * time.Second)
			for !complete() {
				if time.Now().After(deadline) {
					b.Fatal("rebalance did not complete in 30s")
				}
				time.Sleep(time.Millisecond)
			}
		}
		b.StopTimer()
		for i := 0; i < members-1; i++ {
			start(i)
		}
		wait()
		b.StartTimer()
		last = time.Now()
		start(members - 1)
		wait()
		took := time.Since(last)
		total += took
		b.StopTimer()
		for _, cl := range cls {
			cl.Close()
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-after-last-join")
}

// BenchmarkOffsetCommit measures OffsetCommit throughput: 64 concurrent
// committers over 4 connections, each committing one partition's offset
// per request for its own group (simple commits), answered after the
// append to __consumer_offsets.
func BenchmarkOffsetCommit(b *testing.B) {
	cfg := testGroupConfig()
	cfg.OffsetsTopicPartitions = 50
	br := startGroupBroker(b, cfg)
	createTopic(b, br, "committed", 8, nil)
	const (
		conns   = 4
		workers = 64
	)
	cls := make([]*kgo.Client, conns)
	for i := range cls {
		cls[i] = br.client()
	}
	// Warm up: find the coordinator and create __consumer_offsets.
	for w := 0; w < workers; w++ {
		req := commitReq(fmt.Sprintf("bench-%d", w), "", -1, "committed", int32(w%8))
		resp := request[*kmsg.OffsetCommitResponse](b, cls[w%conns], req)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			b.Fatalf("warm-up commit: error %d", c)
		}
	}
	var next atomic.Int64
	var failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := cls[w%conns]
			group := fmt.Sprintf("bench-%d", w)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				req := commitReq(group, "", -1, "committed", int32(w%8))
				req.Topics[0].Partitions[0].Offset = i
				resp, err := req.RequestWith(context.Background(), cl)
				if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d commits failed", n)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "commits/s")
}
