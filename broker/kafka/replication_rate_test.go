package kafka

import (
	"math"
	"testing"

	"weir/broker/topicconfig"
)

// The replication throttle rates are parsed at each dynamic change, not
// at each read: brokerLongLive reads the static value, then each
// per-broker or cluster-default change (and its removal) at once,
// agreeing with brokerLong's parse at every step.
func TestBrokerLongLiveFollowsDynamicChanges(t *testing.T) {
	bc, err := topicconfig.NewBroker(map[string]string{"leader.replication.throttled.rate": "5000"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: Config{BrokerConfig: bc}}
	leader := s.brokerLongLive("leader.replication.throttled.rate")
	follower := s.brokerLongLive("follower.replication.throttled.rate")
	check := func(when string, wantLeader, wantFollower int64) {
		t.Helper()
		if l, f := leader(), follower(); l != wantLeader || f != wantFollower {
			t.Fatalf("%s: leader rate %d, follower rate %d; want %d, %d", when, l, f, wantLeader, wantFollower)
		}
		for _, name := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			if got, want := s.brokerLongLive(name)(), s.brokerLong(name)(); got != want {
				t.Fatalf("%s: %s %d, brokerLong reads %d", when, name, got, want)
			}
		}
	}
	check("static", 5000, math.MaxInt64)
	bc.SetDynamic(map[string]string{"leader.replication.throttled.rate": "1000"}, map[string]string{"follower.replication.throttled.rate": "2000"})
	check("dynamic", 1000, 2000)
	bc.SetDynamic(nil, map[string]string{"leader.replication.throttled.rate": "3000"})
	check("per-broker value removed", 3000, math.MaxInt64)
	bc.SetDynamic(nil, nil)
	check("all removed", 5000, math.MaxInt64)
}
