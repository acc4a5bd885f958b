package workgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/txntest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	txntest.Stop()
	os.Exit(code)
}

// ledger records which worker runs which singleton, and any moment two
// ran one at once.
type ledger struct {
	mu      sync.Mutex
	running map[string]string // singleton → worker
	double  []string
}

func (l *ledger) set(worker string, ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, w := range l.running {
		if w == worker && !contains(ids, id) {
			delete(l.running, id)
		}
	}
	for _, id := range ids {
		if w, ok := l.running[id]; ok && w != worker {
			l.double = append(l.double, fmt.Sprintf("%s on %s and %s", id, w, worker))
		}
		l.running[id] = worker
	}
}

func (l *ledger) snapshot() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for k, v := range l.running {
		out[k] = v
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestGroupPlacesSingletonsAndHandsOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tg := range txntest.Brokers(t) {
		t.Run(tg.Name, func(t *testing.T) {
			off := map[string]string{"source.a": "1", "source.b": "2", "source.c": "3"}
			led := &ledger{running: map[string]string{}}
			group := "wg-" + strings.ReplaceAll(t.Name(), "/", "-")
			type worker struct {
				cancel context.CancelFunc
				done   chan error
			}
			start := func(name string) *worker {
				g, err := New(Config{Client: kafkaclient.Options{Brokers: []string{tg.Addr}}, Group: group, Worker: name,
					Logger: zaptest.NewLogger(t).Named(name), Run: func(ids []string, _ *Assignment) { led.set(name, ids) }})
				if err != nil {
					t.Fatal(err)
				}
				g.Update("h", off)
				ctx, cancel := context.WithCancel(context.Background())
				w := &worker{cancel: cancel, done: make(chan error, 1)}
				go func() { w.done <- g.Run(ctx) }()
				t.Cleanup(func() { cancel(); <-w.done })
				return w
			}
			placed := func(workers ...string) func() error {
				return func() error {
					s := led.snapshot()
					if len(s) != len(off) {
						return fmt.Errorf("running %v", s)
					}
					per := map[string]int{}
					for _, w := range s {
						if !contains(workers, w) {
							return fmt.Errorf("running %v: %s is not a live worker", s, w)
						}
						per[w]++
					}
					for _, w := range workers {
						if per[w] == 0 && len(workers) <= len(off) {
							return fmt.Errorf("running %v: %s runs nothing", s, w)
						}
					}
					return nil
				}
			}
			w1 := start("w1")
			testkit.CheckFor(t, 20*time.Second, placed("w1"))
			start("w2")
			start("w3")
			testkit.CheckFor(t, 30*time.Second, placed("w1", "w2", "w3"))
			// A clean stop (LeaveGroup) hands w1's singleton over within 2 s.
			before := led.snapshot()
			t0 := time.Now()
			w1.cancel()
			if err := <-w1.done; err != nil {
				t.Fatal(err)
			}
			w1.done <- nil
			testkit.CheckFor(t, 10*time.Second, placed("w2", "w3"))
			took := time.Since(t0)
			t.Logf("hand-off after a clean stop: %v (before: %v, after: %v)", took, before, led.snapshot())
			if took > 2*time.Second {
				t.Errorf("hand-off took %v, want at most 2s", took)
			}
			led.mu.Lock()
			defer led.mu.Unlock()
			if len(led.double) > 0 {
				t.Fatalf("singletons ran on two workers at once: %v", led.double)
			}
		})
	}
}

func TestGroupNameOfAConsumerGroupIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tg := range txntest.Brokers(t) {
		t.Run(tg.Name, func(t *testing.T) {
			group := "consumers-" + tg.Name
			cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{tg.Addr}}, kgo.ConsumerGroup(group),
				kgo.ConsumeTopics("wg-topic"), kgo.AllowAutoTopicCreation())
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// The consumer is a member once its first poll has joined.
			testkit.CheckFor(t, 20*time.Second, func() error {
				pctx, c := context.WithTimeout(ctx, 500*time.Millisecond)
				defer c()
				cl.PollFetches(pctx)
				adm := kafkaclientAdmin(t, tg.Addr)
				gs, err := adm.DescribeGroups(ctx, group)
				if err != nil {
					return err
				}
				if len(gs[group].Members) == 0 {
					return errors.New("consumer not joined yet")
				}
				return nil
			})
			g, err := New(Config{Client: kafkaclient.Options{Brokers: []string{tg.Addr}}, Group: group, Worker: "w1", Logger: zaptest.NewLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			err = g.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), "another protocol type") || !strings.Contains(err.Error(), group) {
				t.Fatalf("Run = %v, want an error naming the group and the protocol type", err)
			}
			// The same consumer group with no member left, only its
			// committed offsets: the coordinator would let a worker group
			// take it over; the worker refuses.
			adm := kafkaclientAdmin(t, tg.Addr)
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: "wg-topic", Partition: 0, At: 0, LeaderEpoch: -1})
			cl.Close()
			testkit.CheckFor(t, 20*time.Second, func() error {
				gs, err := adm.DescribeGroups(ctx, group)
				if err != nil {
					return err
				}
				if n := len(gs[group].Members); n > 0 {
					return fmt.Errorf("%d members left", n)
				}
				if _, err := adm.CommitOffsets(ctx, group, offs); err != nil {
					return err
				}
				return nil
			})
			g, err = New(Config{Client: kafkaclient.Options{Brokers: []string{tg.Addr}}, Group: group, Worker: "w1", Logger: zaptest.NewLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			err = g.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), "committed offsets (topics wg-topic)") || !strings.Contains(err.Error(), group) {
				t.Fatalf("Run on an empty consumer group = %v, want an error naming the group and its committed offsets", err)
			}
			if gs, err := adm.DescribeGroups(ctx, group); err != nil || gs[group].ProtocolType == ProtocolType {
				t.Fatalf("the consumer group became a worker group (%v, %v)", gs[group].ProtocolType, err)
			}
		})
	}
}

func kafkaclientAdmin(t *testing.T, addr string) *kadm.Client {
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
