package kafka

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"weir/broker/log"
	"weir/broker/metadata"
	"weir/broker/replica"
	"weir/broker/topicconfig"
	"weir/broker/txn"
)

// The partition table maps topic names to the topics of the metadata and
// the logs of the partitions this broker hosts (is a replica of). It
// follows the metadata: a watcher opens logs for created topics and
// partitions, applies config changes and leadership changes (through the
// replica manager, broker/replica), and deletes the logs of deleted
// topics. Readers (Produce, Fetch, ListOffsets) load the current table
// without locks; it is copied on every change of the topics.

// topicState is one topic of the metadata. Immutable once published,
// except the logs' and replicas' own state and the counters.
type topicState struct {
	name  string
	id    metadata.UUID
	meta  *metadata.Topic // the image's topic this state was built from
	parts []*partition    // every partition of the topic, hosted here or not
	cfg   topicconfig.Resolved
	gen   uint64 // partitionTable.dynGen when cfg was resolved

	bytesIn, recordsIn, bytesOut, produceErrors prometheus.Counter
}

// partition is one partition of a topic. Only the partitions this broker
// is a replica of are hosted: they have a log and a replica.
type partition struct {
	index int32
	// hosted: this broker is one of the partition's replicas.
	hosted bool
	// log is nil when not hosted, or when the log could not be opened
	// (KAFKA_STORAGE_ERROR).
	log *log.Log
	// rep is the partition's replication role (leader or follower); nil
	// when log is nil.
	rep *replica.Partition

	// prod is the partition's producer state (idempotence) while this
	// broker leads it; nil otherwise or when it could not be loaded. Read
	// and written under prodMu (producers()).
	prodMu sync.Mutex
	prod   *txn.Partition
}

// producers returns the producer state (nil when not leading).
func (p *partition) producers() *txn.Partition {
	p.prodMu.Lock()
	defer p.prodMu.Unlock()
	return p.prod
}

// leaderErr is the Kafka error for a request that needs this broker to
// lead the partition (reqEpoch -1: no epoch given); nil when it does.
func (p *partition) leaderErr(reqEpoch int32) *kerr.Error {
	switch {
	case !p.hosted:
		return kerr.NotLeaderForPartition
	case p.log == nil:
		return kerr.KafkaStorageError
	}
	return replicaErr(p.rep.CheckLeader(reqEpoch))
}

// replicaErr maps broker/replica errors to Kafka errors.
func replicaErr(err error) *kerr.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replica.ErrNotLeader):
		return kerr.NotLeaderForPartition
	case errors.Is(err, replica.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch
	case errors.Is(err, replica.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend
	case errors.Is(err, replica.ErrTimeout):
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}

type partitionTable struct {
	s  *Server
	mu sync.Mutex // serializes changes
	m  atomic.Pointer[map[string]*topicState]
	// dynGen counts the dynamic broker config changes applied
	// (followBrokerConfigs): topics resolved before the latest one are
	// resolved again by the next sync.
	dynGen atomic.Uint64
}

func (pt *partitionTable) load() map[string]*topicState {
	if m := pt.m.Load(); m != nil {
		return *m
	}
	return nil
}

// lookup returns the partition, or nil when the topic or partition is not
// hosted here.
func (pt *partitionTable) lookup(topic string, part int32) (*topicState, *partition) {
	ts := pt.load()[topic]
	if ts == nil {
		return nil, nil
	}
	if part < 0 || int(part) >= len(ts.parts) {
		return ts, nil
	}
	return ts, ts.parts[part]
}

// sync brings the table in line with img: opens the logs of new
// partitions this broker is a replica of, applies configs and leadership
// changes, and closes and deletes the logs of topics gone from img
// (deleteGone) or just drops them from the table. Topics whose image
// entry did not change are kept as they are.
func (pt *partitionTable) sync(img *metadata.Image, deleteGone bool) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	s := pt.s
	self := s.cfg.NodeID
	old := pt.load()
	gen := pt.dynGen.Load()
	next := make(map[string]*topicState, img.NumTopics())
	nparts := 0
	for _, t := range img.Topics() {
		prev := old[t.Name]
		if prev != nil && prev.id != t.ID {
			// Same name, new topic: the old one is gone.
			pt.dropTopic(prev, deleteGone)
			prev = nil
		}
		if prev != nil && prev.meta == t && prev.gen == gen {
			next[t.Name] = prev
			nparts += len(prev.parts)
			continue
		}
		res, err := s.cfg.BrokerConfig.Resolve(t.Configs)
		if err != nil {
			s.errs.Log("config/"+t.Name, err.Error(), "topic has invalid config overrides; using broker defaults", zap.String("topic", t.Name), zap.Error(err))
			if res, err = s.cfg.BrokerConfig.Resolve(nil); err != nil {
				// The broker's own (dynamic) defaults conflict: Kafka's.
				res, _ = topicconfig.Resolve(nil)
			}
		}
		ts := &topicState{name: t.Name, id: t.ID, meta: t, cfg: res, gen: gen}
		if prev != nil {
			ts.bytesIn, ts.recordsIn, ts.bytesOut, ts.produceErrors = prev.bytesIn, prev.recordsIn, prev.bytesOut, prev.produceErrors
		} else {
			ts.bytesIn = s.metrics.bytesIn.WithLabelValues(t.Name)
			ts.recordsIn = s.metrics.recordsIn.WithLabelValues(t.Name)
			ts.bytesOut = s.metrics.bytesOut.WithLabelValues(t.Name)
			ts.produceErrors = s.metrics.produceErrors.WithLabelValues(t.Name)
		}
		lcfg := logConfig(res)
		for i, mp := range t.Partitions {
			var p *partition
			if prev != nil && i < len(prev.parts) {
				p = prev.parts[i]
			} else {
				p = &partition{index: int32(i)}
			}
			if p.hosted && !slices.Contains(mp.Replicas, self) {
				// Reassigned away (a completed reassignment, or a cancelled
				// one that was adding this broker): stop replicating and
				// delete the log, as Kafka's StopReplica with delete.
				pt.dropPartition(t.Name, p, deleteGone)
				p = &partition{index: int32(i)}
			}
			if !p.hosted && slices.Contains(mp.Replicas, self) {
				p.hosted = true
				l, err := s.logs.Open(t.Name, int32(i), lcfg)
				if err != nil {
					s.log.Error("opening partition log failed", zap.String("topic", t.Name), zap.Int("partition", i), zap.Error(err))
				} else {
					p.log = l
					p.rep = s.replicas.Add(t.Name, int32(i), l)
					s.hostedBy.Store(p.rep, p)
				}
			}
			if p.log != nil {
				if p.log.Config() != lcfg {
					p.log.SetConfig(lcfg)
				}
				s.replicas.Update(p.rep, mp)
			}
			ts.parts = append(ts.parts, p)
		}
		nparts += len(ts.parts)
		next[t.Name] = ts
	}
	for name, ts := range old {
		if _, ok := next[name]; !ok {
			pt.dropTopic(ts, deleteGone)
		}
	}
	pt.m.Store(&next)
	s.metrics.partitions.Set(float64(nparts))
}

// dropTopic deletes (or only forgets) a topic's logs.
func (pt *partitionTable) dropTopic(ts *topicState, deleteLogs bool) {
	s := pt.s
	for _, p := range ts.parts {
		pt.dropPartitionLog(ts.name, p, deleteLogs)
	}
	if deleteLogs {
		s.metrics.bytesIn.DeleteLabelValues(ts.name)
		s.metrics.recordsIn.DeleteLabelValues(ts.name)
		s.metrics.bytesOut.DeleteLabelValues(ts.name)
		s.metrics.produceErrors.DeleteLabelValues(ts.name)
		s.metrics.logSize.DeleteLabelValues(ts.name)
	}
	s.log.Info("topic removed", zap.String("topic", ts.name), zap.Bool("logs_deleted", deleteLogs))
}

// dropPartition stops hosting one partition of a topic that stays (this
// broker is no longer one of its replicas) and deletes its log.
func (pt *partitionTable) dropPartition(topic string, p *partition, deleteLog bool) {
	pt.dropPartitionLog(topic, p, deleteLog)
	pt.s.log.Info("partition moved off this broker", zap.String("topic", topic), zap.Int32("partition", p.index), zap.Bool("log_deleted", deleteLog && p.log != nil))
}

// dropPartitionLog stops replicating p, closes its producer state and
// deletes (or only forgets) its log.
func (pt *partitionTable) dropPartitionLog(topic string, p *partition, deleteLogs bool) {
	s := pt.s
	if p.rep != nil {
		s.replicas.Remove(p.rep)
		s.hostedBy.Delete(p.rep)
	}
	p.prodMu.Lock()
	prod := p.prod
	p.prod = nil
	p.prodMu.Unlock()
	if prod != nil {
		if deleteLogs {
			prod.Discard()
		} else if err := prod.Close(); err != nil {
			s.log.Warn("closing producer state failed", zap.String("topic", topic), zap.Int32("partition", p.index), zap.Error(err))
		}
	}
	if p.log == nil || !deleteLogs {
		return
	}
	if err := s.logs.Delete(topic, p.index); err != nil && !errors.Is(err, log.ErrClosed) {
		s.log.Error("deleting partition log failed", zap.String("topic", topic), zap.Int32("partition", p.index), zap.Error(err))
	}
}

// closeAll closes every partition's producer state (writing its final
// snapshot); the logs themselves belong to the LogManager.
func (pt *partitionTable) closeAll() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	for _, ts := range pt.load() {
		for _, p := range ts.parts {
			p.prodMu.Lock()
			prod := p.prod
			p.prod = nil
			p.prodMu.Unlock()
			if prod == nil {
				continue
			}
			if err := prod.Close(); err != nil {
				pt.s.log.Warn("closing producer state failed", zap.String("topic", ts.name), zap.Int32("partition", p.index), zap.Error(err))
			}
		}
	}
}

// logConfig converts a topic's resolved configuration to the log's.
func logConfig(r topicconfig.Resolved) log.Config {
	c := log.DefaultConfig()
	c.SegmentBytes = int64(r.SegmentBytes)
	c.SegmentMs = time.Duration(r.SegmentMs) * time.Millisecond
	c.IndexIntervalBytes = r.IndexIntervalBytes
	c.RetentionMs = msOrForever(r.RetentionMs)
	c.RetentionBytes = r.RetentionBytes
	c.Compact = r.Compact
	c.Delete = r.Delete
	c.DeleteRetentionMs = time.Duration(r.DeleteRetentionMs) * time.Millisecond
	c.MinCompactionLagMs = time.Duration(r.MinCompactionLagMs) * time.Millisecond
	c.MaxCompactionLagMs = msOrForever(r.MaxCompactionLagMs)
	c.MinCleanableDirtyRatio = r.MinCleanableRatio
	c.FlushMessages = r.FlushMessages
	c.FlushMs = msOrForever(r.FlushMs)
	c.LogAppendTime = r.LogAppendTime
	return c
}

// msOrForever converts milliseconds to a Duration; negative stays negative
// (unlimited) and values too large for a Duration saturate.
func msOrForever(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	if ms > int64(1<<63-1)/int64(time.Millisecond) {
		return 1<<63 - 1
	}
	return time.Duration(ms) * time.Millisecond
}

// sampleLogSizes refreshes the log size gauges (called at scrape time).
func (pt *partitionTable) sampleLogSizes() {
	for name, ts := range pt.load() {
		var n int64
		for _, p := range ts.parts {
			if p.log != nil {
				n += p.log.Size()
			}
		}
		pt.s.metrics.logSize.WithLabelValues(name).Set(float64(n))
	}
}
