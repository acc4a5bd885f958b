package kafka

// ListOffsets (key 2), versions 0-10.
//
// Per partition, Timestamp selects:
//
//	-2 (earliest)       the log start offset, with the leader epoch of
//	                    the epoch-cache entry holding it (Kafka's)
//	-1 (latest)         the high watermark (read_uncommitted) or the last
//	                    stable offset (read_committed, v2+; equal
//	                    without transactions)
//	-3 (max timestamp)  v7+: the last offset of the batch with the largest
//	                    max timestamp (Kafka's batch-level approximation)
//	-4 (earliest local) v8+: the log start offset (weir has no tiered
//	                    storage, so the local log is the whole log; Kafka
//	                    answers the same when remote storage is off)
//	-5 (latest tiered)  v9+: offset -1, leader epoch -1 (nothing is tiered;
//	                    Kafka's UnifiedLog without remote storage)
//	>= 0                the first offset whose batch has a timestamp >= it
//	                    (the time index, batch granularity); -1/-1 if none
//	                    below the high watermark (read_committed: the
//	                    last stable offset), as Kafka's lastFetchableOffset
//
// v0 answers in the old format, OldStyleOffsets: [offset] for -1/-2, and
// for a timestamp the offset found (or the high watermark), capped by
// MaxNumOffsets. Timestamps come back -1 for -1/-2 as Kafka does. Only
// the partition's leader answers (NOT_LEADER_OR_FOLLOWER elsewhere). v4+
// checks CurrentLeaderEpoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH)
// and returns the leader epoch. Any other negative timestamp, or one
// asked below the version that introduced it, is UNSUPPORTED_VERSION for
// that partition (Kafka's isListOffsetsTimestampUnsupported). v10 only
// adds TimeoutMs, which bounds remote-storage lookups weir never makes.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"go.uber.org/zap"
	"weir/broker/acl"

	"weir/broker/log"
)

func init() { register(kmsg.ListOffsets.Int16(), 0, 10, handleListOffsets) }

func handleListOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	tab := s.parts.load()
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(rt.Partitions))
		ts := tab[rt.Topic]
		describable := s.authorize(r, acl.OpDescribe, acl.ResourceTopic, rt.Topic)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			var p *partition
			if ts != nil && rp.Partition >= 0 && int(rp.Partition) < len(ts.parts) {
				p = ts.parts[rp.Partition]
			}
			reqEpoch := int32(-1)
			if req.Version >= 4 {
				reqEpoch = rp.CurrentLeaderEpoch
			}
			var lerr *kerr.Error
			if p != nil {
				lerr = p.leaderErr(reqEpoch)
			}
			switch {
			case !describable:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case lerr != nil:
				sp.ErrorCode = lerr.Code
			case listOffsetsTimestampUnsupported(rp.Timestamp, req.Version):
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			case rp.Timestamp == -5:
				// Latest tiered: nothing is in remote storage.
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			default:
				off, tsv, code := s.listOffset(ts, p, rp.Timestamp, req.Version >= 2 && req.IsolationLevel == 1)
				sp.ErrorCode = code
				sp.Offset, sp.Timestamp = off, tsv
				sp.LeaderEpoch = p.rep.LeaderEpoch()
				if rp.Timestamp == -2 || rp.Timestamp == -4 {
					sp.LeaderEpoch = epochAt(p.log.Epochs(), off)
				}
				if req.Version == 0 && code == 0 {
					if off < 0 {
						off = p.log.HighWatermark()
					}
					if rp.MaxNumOffsets > 0 {
						sp.OldStyleOffsets = []int64{off}
					} else {
						sp.OldStyleOffsets = []int64{}
					}
				}
			}
		}
	}
	return resp, nil
}

// listOffset resolves one partition's timestamp query.
func (s *Server) listOffset(ts *topicState, p *partition, t int64, committed bool) (offset, timestamp int64, code int16) {
	hw := p.log.HighWatermark()
	if committed {
		var known bool
		if hw, known = p.lastStableOffsetKnown(); !known {
			// The producer state is still loading after a leader change:
			// Kafka's answer while offsets cannot be guaranteed yet.
			return -1, -1, kerr.OffsetNotAvailable.Code
		}
	}
	switch t {
	case -2, -4:
		return p.log.StartOffset(), -1, 0
	case -1:
		return hw, -1, 0
	case -3:
		best, bestTs := int64(-1), int64(-1)
		err := p.log.ScanBatches(p.log.StartOffset(), func(h log.BatchHeader) error {
			if h.BaseOffset >= hw {
				return errStopScan
			}
			if h.MaxTimestamp > bestTs {
				best, bestTs = h.LastOffset(), h.MaxTimestamp
			}
			return nil
		})
		if err != nil && err != errStopScan {
			s.storageError(ts.name, p.index, err)
			s.log.Warn("scanning batches for max timestamp failed", zap.String("topic", ts.name), zap.Int32("partition", p.index), zap.Error(err))
			return -1, -1, kerr.KafkaStorageError.Code
		}
		return best, bestTs, 0
	}
	off, bts, ok, err := p.log.OffsetForTimestamp(t)
	if err != nil {
		s.storageError(ts.name, p.index, err)
		s.log.Warn("offset for timestamp failed", zap.String("topic", ts.name), zap.Int32("partition", p.index), zap.Error(err))
		return -1, -1, kerr.KafkaStorageError.Code
	}
	if !ok || off >= hw {
		return -1, -1, 0
	}
	return off, bts, 0
}

// epochAt is the leader epoch of offset: that of the last cache entry
// starting at or before it, -1 when none does. For the log start offset
// (earliest, earliest-local) this is Kafka's answer: the earliest entry
// of its leader-epoch cache, truncated to the log start, when that entry
// starts at or before the log start.
func epochAt(epochs []log.EpochEntry, offset int64) int32 {
	e := int32(-1)
	for _, x := range epochs {
		if x.StartOffset > offset {
			break
		}
		e = x.Epoch
	}
	return e
}

// listOffsetsTimestampUnsupported reports a special (negative) timestamp
// this version does not know, as Kafka's ReplicaManager: -1/-2 from v0 (v0
// is the old format, which weir serves), -3 from v7, -4 from v8, -5 from v9.
func listOffsetsTimestampUnsupported(t int64, version int16) bool {
	if t >= 0 {
		return false
	}
	min, ok := listOffsetsSpecialMinVersion[t]
	return !ok || version < min
}

var listOffsetsSpecialMinVersion = map[int64]int16{-1: 0, -2: 0, -3: 7, -4: 8, -5: 9}

type stopScan struct{}

func (stopScan) Error() string { return "stop scan" }

var errStopScan error = stopScan{}
