package kafka

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient/balancer"
	"weir/internal/testkit"
)

// ownership tracks which member owns which partition, from the franz-go
// assignment hooks, and records any partition owned by two members in the
// same generation.
type ownership struct {
	mu      sync.Mutex
	current map[int]map[int32]bool
	byGen   map[int32]map[int32]int
	errs    []string
}

func newOwnership() *ownership {
	return &ownership{current: map[int]map[int32]bool{}, byGen: map[int32]map[int32]int{}}
}

func (o *ownership) assigned(m int, gen int32, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur := o.current[m]
	if cur == nil {
		cur = map[int32]bool{}
		o.current[m] = cur
	}
	for _, p := range ps {
		cur[p] = true
	}
	g := o.byGen[gen]
	if g == nil {
		g = map[int32]int{}
		o.byGen[gen] = g
	}
	for p := range cur {
		if owner, ok := g[p]; ok && owner != m {
			o.errs = append(o.errs, fmt.Sprintf("generation %d: partition %d owned by members %d and %d", gen, p, owner, m))
		}
		g[p] = m
	}
}

func (o *ownership) revoked(m int, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		delete(o.current[m], p)
	}
}

func (o *ownership) lost(m int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.current[m] = nil
}

func (o *ownership) violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.errs...)
}

// gmember is one franz-go group consumer of the tests.
type gmember struct {
	i      int
	cl     *kgo.Client
	dialer *killableDialer
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, b *testBroker, o *ownership, i int, group, topic, strategy string, session time.Duration, extra ...kgo.Opt) *gmember {
	t.Helper()
	bopt, err := balancer.Opt(strategy)
	if err != nil {
		t.Fatal(err)
	}
	m := &gmember{i: i, dialer: &killableDialer{}, done: make(chan struct{})}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(b.addr),
		kgo.Dialer(m.dialer.dial),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		bopt,
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(session / 8),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.DisableAutoCommit(),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, a map[string][]int32) {
			_, gen := cl.GroupMetadata()
			o.assigned(i, gen, a[topic])
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { o.revoked(i, r[topic]) }),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { o.lost(i) }),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	t.Cleanup(func() { m.stop(false) })
	return m
}

// stop ends the member; leave=true leaves the group cleanly (Close),
// otherwise the client is abandoned in the background.
func (m *gmember) stop(leave bool) {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.cancel = nil
	if leave {
		m.cl.Close()
		<-m.done
		return
	}
	m.dialer.kill()
	go m.cl.Close()
}

// coverage checks that the members in ms own disjoint, non-empty sets of
// partitions covering 0..n-1, all in one generation as the broker sees it.
func coverage(b *testBroker, o *ownership, group string, ms []*gmember, n int32) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[int32]int{}
	var gens []int32
	for _, m := range ms {
		cur := o.current[m.i]
		if len(cur) == 0 {
			return fmt.Errorf("member %d owns nothing", m.i)
		}
		for p := range cur {
			if other, ok := seen[p]; ok {
				return fmt.Errorf("partition %d owned by members %d and %d", p, other, m.i)
			}
			seen[p] = m.i
		}
		_, gen := m.cl.GroupMetadata()
		gens = append(gens, gen)
	}
	if int32(len(seen)) != n {
		return fmt.Errorf("%d of %d partitions owned: %v", len(seen), n, seen)
	}
	for _, g := range gens {
		if g != gens[0] {
			return fmt.Errorf("members in different generations %v", gens)
		}
	}
	// The broker agrees: the group is Stable in that generation with
	// exactly these members.
	coord, err := b.srv.groups()
	if err != nil {
		return err
	}
	d := coord.Describe([]string{group})[0]
	if d.State != "Stable" || len(d.Members) != len(ms) {
		return fmt.Errorf("broker: group %s with %d members", d.State, len(d.Members))
	}
	return nil
}

func TestGroupBalancersFranz(t *testing.T) {
	for _, strategy := range balancer.Names {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			b := startGroupBroker(t, testGroupConfig())
			const parts = 12
			topic, group := "bal-"+strategy, "g-"+strategy
			createTopic(t, b, topic, parts, nil)
			o := newOwnership()
			const session = 1500 * time.Millisecond
			ms := make([]*gmember, 3)
			for i := range ms {
				ms[i] = startMember(t, b, o, i, group, topic, strategy, session)
			}
			testkit.CheckFor(t, 30*time.Second, func() error { return coverage(b, o, group, ms, parts) })

			// A member that leaves: the others take its partitions.
			start := time.Now()
			ms[0].stop(true)
			testkit.CheckFor(t, 20*time.Second, func() error { return coverage(b, o, group, ms[1:], parts) })
			t.Logf("%s: rebalance after a leave took %v", strategy, time.Since(start))

			// A member that stops heartbeating (its connections die): the
			// last one takes everything once the session times out.
			start = time.Now()
			ms[1].stop(false)
			testkit.CheckFor(t, 20*time.Second, func() error { return coverage(b, o, group, ms[2:], parts) })
			took := time.Since(start)
			t.Logf("%s: takeover after a silent member took %v (session %v)", strategy, took, session)
			// The broker can only notice after the session timeout; the
			// survivor learns on its next heartbeat and rejoins.
			if limit := session + 2*time.Second; took > limit {
				t.Errorf("takeover took %v, want under %v", took, limit)
			}
			if v := o.violations(); len(v) > 0 {
				sort.Strings(v)
				t.Fatalf("partitions owned twice in one generation:\n%s", strings.Join(v, "\n"))
			}
		})
	}
}
