package kafka

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"weir/broker/log"
	"weir/broker/metadata"
	"weir/broker/topicconfig"
	"weir/broker/txn"
)

// The partition table maps topic names to the open logs this broker hosts.
// It follows the metadata: a watcher opens logs for created topics and
// partitions, applies config changes, and deletes the logs of deleted
// topics. Readers (Produce, Fetch, ListOffsets) load the current table
// without locks; it is copied on every change (changes are rare).

// topicState is one hosted topic. Immutable once published, except the
// logs' own state and the counters.
type topicState struct {
	name  string
	id    metadata.UUID
	parts []*partition
	cfg   topicconfig.Resolved

	bytesIn, recordsIn, bytesOut, produceErrors prometheus.Counter
}

// partition is one hosted partition.
type partition struct {
	index int32
	// log is nil when the log could not be opened (KAFKA_STORAGE_ERROR).
	log *log.Log
	// leaderEpoch is the partition's leader epoch from the metadata.
	leaderEpoch atomic.Int32

	// prod is the partition's producer state (idempotence); nil when the
	// log is nil or the state could not be loaded.
	prod *txn.Partition
}

type partitionTable struct {
	s  *Server
	mu sync.Mutex // serializes changes
	m  atomic.Pointer[map[string]*topicState]
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

// sync brings the table in line with img: opens missing partitions,
// applies configs, and closes and deletes the logs of topics gone from img
// (deleteGone) or just drops them from the table.
func (pt *partitionTable) sync(img *metadata.Image, deleteGone bool) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	s := pt.s
	old := pt.load()
	next := make(map[string]*topicState, img.NumTopics())
	nparts := 0
	for _, t := range img.Topics() {
		prev := old[t.Name]
		if prev != nil && prev.id != t.ID {
			// Same name, new topic: the old one is gone.
			pt.dropTopic(prev, deleteGone)
			prev = nil
		}
		res, err := s.cfg.BrokerConfig.Resolve(t.Configs)
		if err != nil {
			s.log.Error("topic has invalid config overrides; using broker defaults", zap.String("topic", t.Name), zap.Error(err))
			res, _ = s.cfg.BrokerConfig.Resolve(nil)
		}
		ts := &topicState{name: t.Name, id: t.ID, cfg: res}
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
				if p.log != nil && p.log.Config() != lcfg {
					p.log.SetConfig(lcfg)
				}
				p.leaderEpoch.Store(mp.LeaderEpoch)
			} else {
				p = &partition{index: int32(i)}
				p.leaderEpoch.Store(mp.LeaderEpoch)
				l, err := s.logs.Open(t.Name, int32(i), lcfg)
				if err != nil {
					s.log.Error("opening partition log failed", zap.String("topic", t.Name), zap.Int("partition", i), zap.Error(err))
				} else {
					p.log = l
					// Single node: this broker is the whole ISR, so every
					// record in the log is committed. The HW checkpoint may
					// be stale after a crash (kill -9); the HW is the LEO.
					l.SetHighWatermark(l.EndOffset())
					s.openProducerState(t.Name, p)
				}
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
		if p.prod != nil {
			if deleteLogs {
				p.prod.Discard()
			} else if err := p.prod.Close(); err != nil {
				s.log.Warn("closing producer state failed", zap.String("topic", ts.name), zap.Int32("partition", p.index), zap.Error(err))
			}
		}
		if p.log == nil || !deleteLogs {
			continue
		}
		if err := s.logs.Delete(ts.name, p.index); err != nil && !errors.Is(err, log.ErrClosed) {
			s.log.Error("deleting partition log failed", zap.String("topic", ts.name), zap.Int32("partition", p.index), zap.Error(err))
		}
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

// closeAll closes every partition's producer state (writing its final
// snapshot); the logs themselves belong to the LogManager.
func (pt *partitionTable) closeAll() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	for _, ts := range pt.load() {
		for _, p := range ts.parts {
			if p.prod == nil {
				continue
			}
			if err := p.prod.Close(); err != nil {
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
