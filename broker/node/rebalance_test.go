package node

import (
	"testing"
	"time"

	"weir/broker/topicconfig"
)

// TestPreferredLeaderInterval: the controller's automatic preferred
// leader election follows Kafka's broker configs unless set explicitly.
func TestPreferredLeaderInterval(t *testing.T) {
	for _, c := range []struct {
		set  time.Duration
		cfg  map[string]string
		want time.Duration
	}{
		{0, nil, 300 * time.Second},
		{0, map[string]string{"leader.imbalance.check.interval.seconds": "7"}, 7 * time.Second},
		{0, map[string]string{"auto.leader.rebalance.enable": "false", "leader.imbalance.check.interval.seconds": "7"}, -1},
		{0, map[string]string{"auto.leader.rebalance.enable": "FALSE"}, -1},
		{0, map[string]string{"auto.leader.rebalance.enable": "true", "leader.imbalance.per.broker.percentage": "0"}, 300 * time.Second},
		{time.Second, map[string]string{"auto.leader.rebalance.enable": "false"}, time.Second},
		{-1, nil, -1},
	} {
		b, err := topicconfig.NewBroker(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := preferredLeaderInterval(c.set, b); got != c.want {
			t.Errorf("set %v, configs %v: %v, want %v", c.set, c.cfg, got, c.want)
		}
	}
	if _, err := topicconfig.NewBroker(map[string]string{"leader.imbalance.check.interval.seconds": "0"}); err == nil {
		t.Error("leader.imbalance.check.interval.seconds=0 accepted")
	}
}
