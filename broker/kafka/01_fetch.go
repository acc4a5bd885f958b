package kafka

// Fetch (key 1), versions 4-12.
//
// v4 is the first version with record batch v2 semantics (last stable
// offset, aborted transactions); zstd batches need v10+ clients, which is
// the client's concern (batches are served as stored). Only the
// partition's leader serves fetches (NOT_LEADER_OR_FOLLOWER elsewhere;
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the request's current
// leader epoch is older / newer than ours). Consumers (replica id -1) see
// only records below the high watermark; with isolation_level=1
// (read_committed) only records below the last stable offset, and the
// partition's AbortedTransactions overlapping what is returned (from the
// log's aborted-transaction index), so the consumer drops aborted data.
// While a new leader is still loading its producer state read_committed
// gets no records yet (and ListOffsets OFFSET_NOT_AVAILABLE).
// LastStableOffset is always filled in. A follower's fetch (replica id >= 0, a broker
// replicating the partition) reads up to the log end, and its fetch
// offset is that follower's log end offset: the leader records it
// (broker/replica), which moves the high watermark and the ISR.
//
// Long poll: when fewer than MinBytes are available and no partition has an
// error, the handler waits on the partitions' log HWChanged channels (never
// polls) until enough data arrives, MaxWaitMillis passes since the request
// was read, or the connection/server shuts down, and then answers with
// what it has. It is registered async, so a waiting Fetch does not hold up
// the reading of the connection's later requests (their responses still go
// out after it, in order).
//
// Limits: PartitionMaxBytes per partition and MaxBytes (v3+) for the
// response; as KIP-74 says, the first batch of the first non-empty
// partition is returned whole even if larger, later partitions only when
// they fit.
//
// Record bytes are never copied into the encoded response: fetchReply
// writes the framing around log Sections, which go out with sendfile.
//
// Fetch sessions (v7+): the broker creates none; it answers SessionID 0, so
// clients send full fetches (a request naming a session id gets
// FETCH_SESSION_ID_NOT_FOUND). OFFSET_OUT_OF_RANGE carries the log start
// offset and high watermark.

import (
	"errors"
	"reflect"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/log"
)

func init() { registerAsync(kmsg.Fetch.Int16(), 4, 12, handleFetch) }

func handleFetch(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.FetchRequest)
	if req.Version >= 7 && req.SessionID != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	throttle := s.fetchQuota(r, req)
	deadline := r.Received.Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	denied := s.fetchDenied(r, req)
	first := true
	for {
		reply, waitOn, ready := s.buildFetch(req, first, denied)
		first = false
		now := time.Now()
		if ready || !now.Before(deadline) || r.Ctx.Err() != nil || len(waitOn) == 0 {
			if throttle != nil {
				reply = throttle(reply)
			}
			reply.countBytesOut(s)
			return reply, nil
		}
		reply.release()
		if timer == nil {
			timer = time.NewTimer(deadline.Sub(now))
		} else {
			timer.Reset(deadline.Sub(now))
		}
		waitAny(r, waitOn, timer)
	}
}

// fetchDenied asks Kafka's questions of a fetch: a follower's needs
// CLUSTER_ACTION on the cluster (else every partition is
// TOPIC_AUTHORIZATION_FAILED), a consumer's READ on each topic. nil: all
// allowed.
func (s *Server) fetchDenied(r *Request, req *kmsg.FetchRequest) []bool {
	if s.cfg.Authorizer == nil {
		return nil
	}
	var denied []bool
	deny := func(i int) {
		if denied == nil {
			denied = make([]bool, len(req.Topics))
		}
		denied[i] = true
	}
	if req.ReplicaID >= 0 {
		if !s.authorizeCluster(r, acl.OpClusterAction) {
			for i := range req.Topics {
				deny(i)
			}
		}
		return denied
	}
	z := s.topicAuthz(r, acl.OpRead)
	for i := range req.Topics {
		if !z.ok(req.Topics[i].Topic) {
			deny(i)
		}
	}
	return denied
}

// waitAny blocks until one of chans is closed, the timer fires, or the
// request's context ends.
func waitAny(r *Request, chans []<-chan struct{}, timer *time.Timer) {
	if len(chans) == 1 {
		select {
		case <-chans[0]:
		case <-timer.C:
		case <-r.Ctx.Done():
		}
		return
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.Ctx.Done())})
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	chosen, _, _ := reflect.Select(cases)
	if chosen != 0 && !timer.Stop() {
		// The timer fired concurrently: drain it so Reset works.
		select {
		case <-timer.C:
		default:
		}
	}
}

// buildFetch reads what is available now. It returns the reply, the
// channels that signal new data for the partitions read, and whether the
// reply should be sent now (errors, or at least MinBytes of records).
// denied, when not nil, marks the topics (by request index) the client
// may not read: TOPIC_AUTHORIZATION_FAILED.
func (s *Server) buildFetch(req *kmsg.FetchRequest, first bool, denied []bool) (*fetchReply, []<-chan struct{}, bool) {
	follower := req.ReplicaID >= 0
	committed := !follower && req.IsolationLevel == 1
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	reply := &fetchReply{FetchResponse: resp, srcs: make([][]recordSource, len(req.Topics))}
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	tab := s.parts.load()
	remaining := int64(req.MaxBytes)
	if req.MaxBytes <= 0 {
		remaining = 1<<63 - 1
	}
	var (
		waitOn    []<-chan struct{}
		total     int64
		hasError  bool
		haveFirst bool
	)
	for i := range req.Topics {
		rt := &req.Topics[i]
		ft := &resp.Topics[i]
		ft.Topic = rt.Topic
		ft.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		reply.srcs[i] = make([]recordSource, len(rt.Partitions))
		ts := tab[rt.Topic]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			fp := &ft.Partitions[j]
			*fp = kmsg.NewFetchResponseTopicPartition()
			fp.Partition = rp.Partition
			fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = -1, -1, -1
			var p *partition
			if ts != nil && rp.Partition >= 0 && int(rp.Partition) < len(ts.parts) {
				p = ts.parts[rp.Partition]
			}
			switch {
			case denied != nil && denied[i]:
				fp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil:
				fp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case follower && first && p.rep != nil:
				// The follower's fetch offset is its log end offset.
				if _, err := p.rep.FollowerFetch(req.ReplicaID, rp.FetchOffset, rp.CurrentLeaderEpoch); err != nil {
					fp.ErrorCode = replicaErr(err).Code
				}
			default:
				if e := p.leaderErr(rp.CurrentLeaderEpoch); e != nil {
					fp.ErrorCode = e.Code
				}
			}
			if fp.ErrorCode == 0 && p.log == nil {
				fp.ErrorCode = kerr.NotLeaderForPartition.Code
			}
			if fp.ErrorCode != 0 {
				hasError = true
				continue
			}
			waitOn = append(waitOn, p.log.HWChanged())
			hw := p.log.HighWatermark()
			start := p.log.StartOffset()
			leo := p.log.EndOffset()
			lso, known := p.lastStableOffsetKnown()
			fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = hw, lso, start
			if rp.FetchOffset < start || rp.FetchOffset > leo {
				fp.ErrorCode = kerr.OffsetOutOfRange.Code
				hasError = true
				continue
			}
			upTo := hw
			switch {
			case follower:
				upTo = leo
			case committed:
				upTo = lso
				if !known {
					upTo = 0 // producer state loading: nothing yet
				}
				fp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			if rp.FetchOffset >= upTo || remaining <= 0 {
				continue
			}
			var throttled bool
			if follower && p.rep != nil {
				// Replication throttle (broker/replica/throttle.go): an
				// out-of-sync follower of a throttled replica gets no
				// records while the leader rate is exceeded.
				var hold bool
				if throttled, hold = s.replicas.LeaderThrottle(p.rep, req.ReplicaID); hold {
					continue
				}
			}
			limit := min(int64(rp.PartitionMaxBytes), remaining)
			if limit <= 0 {
				continue
			}
			sec, err := p.log.Read(rp.FetchOffset, int32(limit), upTo)
			if err != nil {
				if errors.Is(err, log.ErrOffsetOutOfRange) {
					fp.ErrorCode = kerr.OffsetOutOfRange.Code
				} else {
					s.storageError(rt.Topic, rp.Partition, err)
					s.warn.Log("read/"+rt.Topic+"-"+strconv.Itoa(int(rp.Partition)), err.Error(), "fetch read failed", zap.Error(err))
					fp.ErrorCode = kerr.KafkaStorageError.Code
				}
				hasError = true
				continue
			}
			n := sec.Len()
			if n == 0 || (haveFirst && n > limit) {
				sec.Release()
				continue
			}
			haveFirst = true
			reply.srcs[i][j] = sec
			if committed {
				bound := upTo
				if u := sec.UpperBound(); u >= 0 && u < bound {
					bound = u
				}
				for _, a := range p.log.CollectAborted(rp.FetchOffset, bound) {
					fp.AbortedTransactions = append(fp.AbortedTransactions,
						kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
				}
			}
			remaining -= n
			total += n
			if throttled {
				s.replicas.RecordLeader(n)
			}
		}
	}
	return reply, waitOn, hasError || total >= int64(req.MinBytes)
}

// countBytesOut adds the reply's record bytes to the per-topic metric.
func (f *fetchReply) countBytesOut(s *Server) {
	tab := s.parts.load()
	for i, ps := range f.srcs {
		var n int64
		for _, src := range ps {
			if src != nil {
				n += src.Len()
			}
		}
		if n > 0 {
			if ts := tab[f.Topics[i].Topic]; ts != nil {
				ts.bytesOut.Add(float64(n))
			}
		}
	}
}
