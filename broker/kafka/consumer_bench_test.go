package kafka

// KIP-848 against the classic protocol (results in BENCHMARKS.md,
// "## broker/group"):
//
//	go test ./broker/kafka -run '^$' -bench 'BenchmarkGroupJoin100' -benchtime 1x -count 5

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkGroupJoin100 measures how long a group of 100 franz-go members
// in this process takes to settle after a 101st member joins, from the
// new member's start: <mode>-ms/owned until the 101 own disjoint
// partitions covering all 200 (as their assignment callbacks report;
// classic members also in one generation), <mode>-ms/stable until the
// broker also sees the group settled (classic: Stable; consumer: Stable,
// every member has heartbeated at the new epoch — the members the change
// did not concern keep consuming meanwhile). Each iteration measures every
// mode once, in rotating order (the shared machine's load drifts):
// "consumer" is KIP-848 (ServerSideBalancer, uniform assignor);
// "classic-cooperative" the classic protocol with franz-go's default
// cooperative-sticky balancer, "classic-eager" with the eager range
// balancer. Both protocols heartbeat every 200 ms
// (group.consumer.heartbeat.interval.ms; the classic clients'
// heartbeat.interval.ms), group.initial.rebalance.delay.ms=0. The
// reported figures are means over b.N iterations (run with -benchtime 1x).
func BenchmarkGroupJoin100(b *testing.B) {
	const parts = 200
	cfg := testGroupConfig()
	cfg.ConsumerHeartbeatInterval = 200 * time.Millisecond
	cfg.ConsumerSessionTimeout = 30 * time.Second
	br := startGroupBroker(b, cfg)
	createTopic(b, br, "join-100", parts, nil)

	modes := []string{"consumer", "classic-cooperative", "classic-eager"}
	owned := map[string]time.Duration{}
	stable := map[string]time.Duration{}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		for k := range modes {
			mode := modes[(it+k)%len(modes)]
			o, s := measureJoin(b, br, mode, fmt.Sprintf("join100-%s-%d", mode, it), parts)
			owned[mode] += o
			stable[mode] += s
		}
	}
	for _, mode := range modes {
		b.ReportMetric(float64(owned[mode].Milliseconds())/float64(b.N), mode+"-ms/owned")
		b.ReportMetric(float64(stable[mode].Milliseconds())/float64(b.N), mode+"-ms/stable")
	}
}

// measureJoin starts 100 members of group in mode, waits until they are
// settled, then starts a 101st and returns how long until the partitions
// are owned again (covered) and until the group is settled.
func measureJoin(b *testing.B, br *testBroker, mode, group string, parts int) (owned, stable time.Duration) {
	const (
		members = 100
		topic   = "join-100"
	)
	coord, err := br.srv.groups()
	if err != nil {
		b.Fatal(err)
	}
	consumerProtocol := strings.HasPrefix(mode, "consumer")
	var (
		mu   sync.Mutex
		own  []map[int32]bool
		cls  []*kgo.Client
		wg   sync.WaitGroup
		stop = func() {
			mu.Lock()
			all := cls
			mu.Unlock() // (closing calls the revoke callbacks, which lock mu)
			for _, cl := range all {
				wg.Add(1)
				go func() { defer wg.Done(); cl.Close() }()
			}
			wg.Wait()
		}
	)
	defer stop()
	start := func() {
		mu.Lock()
		i := len(own)
		own = append(own, map[int32]bool{})
		mu.Unlock()
		drop := func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			mu.Lock()
			for _, p := range r[topic] {
				delete(own[i], p)
			}
			mu.Unlock()
		}
		opts := []kgo.Opt{
			kgo.SeedBrokers(br.addr),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(),
			kgo.SessionTimeout(30 * time.Second),
			kgo.HeartbeatInterval(200 * time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				for _, p := range a[topic] {
					own[i][p] = true
				}
				mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(drop),
			kgo.OnPartitionsLost(drop),
		}
		switch {
		case consumerProtocol:
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
		case mode == "classic-eager":
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		cls = append(cls, cl)
		mu.Unlock()
		go func() {
			for !cl.PollFetches(context.Background()).IsClientClosed() {
			}
		}()
	}
	// covered: every member owns partitions, each partition exactly one
	// member (the assignment has settled as the clients see it).
	covered := func(n int) error {
		mu.Lock()
		defer mu.Unlock()
		if len(own) != n {
			return fmt.Errorf("%d members started", len(own))
		}
		seen := map[int32]bool{}
		gens := map[int32]bool{}
		for i := range own {
			if len(own[i]) == 0 {
				return fmt.Errorf("member %d owns nothing", i)
			}
			for p := range own[i] {
				if seen[p] {
					return fmt.Errorf("partition %d owned twice", p)
				}
				seen[p] = true
			}
			_, g := cls[i].GroupMetadata()
			gens[g] = true
		}
		if len(seen) != parts {
			return fmt.Errorf("%d of %d partitions owned", len(seen), parts)
		}
		if !consumerProtocol && len(gens) != 1 {
			return fmt.Errorf("members in %d generations", len(gens))
		}
		return nil
	}
	// settled: covered, and the broker sees the group settled.
	settled := func(n int) error {
		if err := covered(n); err != nil {
			return err
		}
		if consumerProtocol {
			if d := coord.ConsumerDescribe([]string{group})[0]; d.State != "Stable" || len(d.Members) != n {
				return fmt.Errorf("group %s with %d members", d.State, len(d.Members))
			}
			return nil
		}
		if d := coord.Describe([]string{group})[0]; d.State != "Stable" || len(d.Members) != n {
			return fmt.Errorf("group %s with %d members", d.State, len(d.Members))
		}
		return nil
	}
	wait := func(cond func(int) error, n int, limit time.Duration) {
		deadline := time.Now().Add(limit)
		for {
			err := cond(n)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: %d members not settled in %v: %v", mode, n, limit, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for range members {
		start()
	}
	wait(settled, members, 2*time.Minute)
	t0 := time.Now()
	start()
	wait(covered, members+1, time.Minute)
	owned = time.Since(t0)
	wait(settled, members+1, time.Minute)
	return owned, time.Since(t0)
}
