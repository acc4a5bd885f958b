package brokertest

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestAutoPreferredLeaderRebalance: with Kafka's automatic leader
// rebalance (auto.leader.rebalance.enable, default true, checked every
// leader.imbalance.check.interval.seconds), a broker that restarts gets
// the leadership of the partitions it is the preferred replica of back
// once it is in their ISRs, without any election asked for.
func TestAutoPreferredLeaderRebalance(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, BrokerConfig(map[string]string{"leader.imbalance.check.interval.seconds": "1"}))
	c.CreateTopic("rb", 6, 3, nil)
	preferred := func() map[int32]int32 {
		out := map[int32]int32{}
		for p := int32(0); p < 6; p++ {
			out[p] = c.Partition("rb", p).Replicas[0]
		}
		return out
	}()
	led := func(id int32) (n int) {
		for _, pref := range preferred {
			if pref == id {
				n++
			}
		}
		return n
	}
	if led(1) == 0 {
		t.Fatalf("broker 1 is the preferred replica of no partition: %v", preferred)
	}
	c.Kill(1)
	c.WaitFor(20*time.Second, func() error {
		for p := int32(0); p < 6; p++ {
			if l, err := c.LeaderOf("rb", p); err != nil || l == 1 {
				return fmt.Errorf("rb-%d leader %d: %v", p, l, err)
			}
		}
		return nil
	})
	c.Restart(1)
	c.WaitFor(30*time.Second, func() error {
		for p, pref := range preferred {
			l, err := c.LeaderOf("rb", p)
			if err != nil {
				return err
			}
			if l != pref {
				return fmt.Errorf("rb-%d led by %d, preferred %d (ISR %v)", p, l, pref, c.Partition("rb", p).ISR)
			}
			if isr := c.Partition("rb", p).ISR; !slices.Contains(isr, 1) {
				return fmt.Errorf("rb-%d ISR %v lacks 1", p, isr)
			}
		}
		return nil
	})
}
