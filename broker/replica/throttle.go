package replica

// Replication throttles, as Kafka's ReplicationQuotaManager: a broker
// measures the bytes it replicates for throttled replicas, as a leader
// (sent to followers) and as a follower (fetched from leaders), each
// against its own rate in bytes per second (the broker configs
// leader.replication.throttled.rate and
// follower.replication.throttled.rate, dynamic), measured over
// replication.quota.window.num windows of
// replication.quota.window.size.seconds (11 × 1 s) as client quotas are
// (broker/quota's Rate). Which replicas are throttled is per topic:
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas list "partition:broker" pairs
// (or "*": every replica of the topic); a broker throttles the pairs
// naming itself. While a rate is exceeded:
//
//   - a follower leaves its throttled partitions that are not caught up
//     (the leader's high watermark above its log end) out of its fetches
//     (Kafka's ReplicaFetcherThread.shouldFollowerThrottle);
//   - a leader answers a follower outside the ISR with no records for a
//     throttled partition (ReplicaManager.shouldLeaderThrottle).
//
// In-sync replicas are never held back, so acks=all produce is not slowed
// by a reassignment's throttle. kafka-reassign-partitions --throttle sets
// both rates on the brokers involved and both lists on the topics, and
// --verify removes them once the reassignment is done.

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"weir/broker/quota"
)

// The topic configs listing the throttled replicas.
const (
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// Throttle measures one direction's replication bytes against a rate.
// Safe for concurrent use.
type Throttle struct {
	limit func() int64 // bytes/s; < 0 or MaxInt64: unlimited
	now   func() time.Time
	w     quota.Window

	mu   sync.Mutex
	rate quota.Rate
}

// NewThrottle returns a throttle reading its limit from limit (each check:
// a dynamic config change applies at once); nil limit: never throttles.
func NewThrottle(w quota.Window, limit func() int64, now func() time.Time) *Throttle {
	if w.Samples <= 0 || w.SizeMs <= 0 {
		w = quota.DefaultWindow
	}
	if now == nil {
		now = time.Now
	}
	return &Throttle{limit: limit, now: now, w: w}
}

// Limited reports whether a limit is set.
func (t *Throttle) Limited() bool {
	if t == nil || t.limit == nil {
		return false
	}
	l := t.limit()
	return l >= 0 && l < math.MaxInt64
}

// Exceeded reports whether the measured rate is above the limit now.
func (t *Throttle) Exceeded() bool {
	if !t.Limited() {
		return false
	}
	limit := float64(t.limit())
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate.Measure(t.w, t.now().UnixMilli()) > limit
}

// Record adds n replicated bytes of throttled replicas.
func (t *Throttle) Record(n int64) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	t.rate.Record(t.w, float64(n), t.now().UnixMilli())
	t.mu.Unlock()
}

// Rate returns the measured rate in bytes per second.
func (t *Throttle) Rate() float64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate.Measure(t.w, t.now().UnixMilli())
}

type throttledSet struct {
	all   bool
	pairs map[[2]int32]bool
}

func (s throttledSet) has(p, broker int32) bool { return s.all || s.pairs[[2]int32{p, broker}] }

// Throttled reports whether value, a *.replication.throttled.replicas
// config, throttles partition p's replica on broker. Malformed entries
// (refused when the config is set) throttle nothing. It parses value
// each call; the Manager keeps its parsed lists (throttledLists).
func Throttled(value string, p, broker int32) bool {
	return value != "" && parseThrottled(value).has(p, broker)
}

// throttledLists are a Manager's parsed throttled-replica lists, by
// topic and config name, each with the config value it was parsed from:
// a list is parsed again only when its topic's config changed
// (AlterTopicConfig; the metadata images share a topic's configs, strings
// included, until then, so the check is a pointer-equal string compare).
// Topics with no such config hold no entry.
type throttledLists struct {
	mu sync.RWMutex
	m  map[throttleKey]parsedThrottled
}

type throttleKey struct{ topic, name string }

type parsedThrottled struct {
	value string
	set   throttledSet
}

// throttled reports whether value, the current config name of topic,
// throttles partition p's replica on broker.
func (l *throttledLists) throttled(topic, name, value string, p, broker int32) bool {
	k := throttleKey{topic, name}
	l.mu.RLock()
	e, ok := l.m[k]
	l.mu.RUnlock()
	if ok && e.value == value {
		return e.set.has(p, broker)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if value == "" {
		delete(l.m, k)
		return false
	}
	if l.m == nil {
		l.m = map[throttleKey]parsedThrottled{}
	}
	e = parsedThrottled{value: value, set: parseThrottled(value)}
	l.m[k] = e
	return e.set.has(p, broker)
}

func parseThrottled(value string) throttledSet {
	if strings.TrimSpace(value) == "*" {
		return throttledSet{all: true}
	}
	s := throttledSet{pairs: map[[2]int32]bool{}}
	for _, item := range strings.Split(value, ",") {
		ps, bs, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			continue
		}
		p, err1 := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		b, err2 := strconv.ParseInt(strings.TrimSpace(bs), 10, 32)
		if err1 == nil && err2 == nil {
			s.pairs[[2]int32{int32(p), int32(b)}] = true
		}
	}
	return s
}
