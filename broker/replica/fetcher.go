package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/log"
)

// fetchState is one partition's place in a fetcher, for one leader epoch.
type fetchState struct {
	epoch int32

	// appendMu is held while the fetcher writes to the partition's log;
	// unfollow takes it to wait out an append in flight, then sets
	// stopped so none starts.
	appendMu sync.Mutex
	stopped  bool

	// owned by the fetcher goroutine
	truncated    bool
	backoffUntil time.Time
	// caughtUp: the last fetch reached the leader's high watermark (a
	// caught-up follower is never throttled).
	caughtUp bool
}

// fetcher copies the partitions one leader broker leads into the local
// logs: per partition, first truncation by leader epoch
// (OffsetForLeaderEpoch, KIP-101/279), then Fetch requests with this
// broker's replica id from the log end offset, appended as they are
// (log.AppendReplica). One goroutine and one connection per leader.
type fetcher struct {
	m      *Manager
	leader int32

	mu    sync.Mutex
	parts map[*Partition]*fetchState
	cl    *client // the connection in use, nil between connections
	wake  chan struct{}
	stop  chan struct{}
	once  sync.Once
}

func newFetcher(m *Manager, leader int32) *fetcher {
	return &fetcher{m: m, leader: leader, parts: map[*Partition]*fetchState{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (f *fetcher) add(p *Partition, fs *fetchState) {
	f.mu.Lock()
	f.parts[p] = fs
	cl := f.cl
	f.mu.Unlock()
	f.poke(cl)
}

func (f *fetcher) remove(p *Partition, fs *fetchState) {
	f.mu.Lock()
	if f.parts[p] == fs {
		delete(f.parts, p)
	}
	f.mu.Unlock()
}

// poke wakes the loop and cuts a long poll in flight, so a new partition
// is fetched at once rather than after replica.fetch.wait.max.ms.
func (f *fetcher) poke(cl *client) {
	select {
	case f.wake <- struct{}{}:
	default:
	}
	if cl != nil {
		cl.nc.SetReadDeadline(time.Now())
	}
}

func (f *fetcher) shutdown() {
	f.once.Do(func() { close(f.stop) })
	f.mu.Lock()
	cl := f.cl
	f.mu.Unlock()
	if cl != nil {
		cl.close()
	}
}

func (f *fetcher) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.stop:
		return false
	case <-t.C:
		return true
	case <-f.wake:
		return true
	}
}

func (f *fetcher) run() {
	lg := f.m.log.With(zap.Int32("leader", f.leader))
	backoff := 50 * time.Millisecond
	var cl *client
	defer func() {
		if cl != nil {
			cl.close()
		}
	}()
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		f.mu.Lock()
		n := len(f.parts)
		f.mu.Unlock()
		if n == 0 {
			if !f.sleep(time.Second) {
				return
			}
			continue
		}
		if cl == nil {
			addr, ok := f.m.brokerAddr(f.leader)
			var err error
			if !ok {
				err = fmt.Errorf("broker %d has no registered address", f.leader)
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				cl, err = dialClient(ctx, f.m.cfg.Dial, addr, "weir-replica-"+strconv.Itoa(int(f.m.cfg.NodeID)))
				cancel()
			}
			if err != nil {
				lg.Debug("connecting to the leader failed", zap.Error(err))
				if !f.sleep(backoff) {
					return
				}
				backoff = min(backoff*2, time.Second)
				continue
			}
			f.mu.Lock()
			f.cl = cl
			f.mu.Unlock()
		}
		err := f.round(cl, lg)
		if err != nil {
			f.mu.Lock()
			f.cl = nil
			f.mu.Unlock()
			cl.close()
			cl = nil
			if errors.Is(err, errStopped) {
				return
			}
			if !isDeadline(err) {
				lg.Debug("replica fetch failed; reconnecting", zap.Error(err))
				if !f.sleep(backoff) {
					return
				}
				backoff = min(backoff*2, time.Second)
			}
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

func isDeadline(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// work is the partitions of one round.
type work struct {
	p  *Partition
	fs *fetchState
}

func (f *fetcher) snapshot(now time.Time) (truncate, fetch []work, wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	wait = time.Second
	for p, fs := range f.parts {
		if now.Before(fs.backoffUntil) {
			wait = min(wait, fs.backoffUntil.Sub(now))
			continue
		}
		if !fs.truncated {
			truncate = append(truncate, work{p, fs})
		} else {
			fetch = append(fetch, work{p, fs})
		}
	}
	return truncate, fetch, wait
}

// round runs one truncation request and/or one fetch request.
func (f *fetcher) round(cl *client, lg *zap.Logger) error {
	select {
	case <-f.stop:
		return errStopped
	default:
	}
	now := f.m.now()
	truncate, fetch, wait := f.snapshot(now)
	if len(truncate) > 0 {
		if err := f.truncate(cl, truncate, lg); err != nil {
			return err
		}
		return nil
	}
	if len(fetch) == 0 {
		if !f.sleep(wait) {
			return errStopped
		}
		return nil
	}
	return f.fetch(cl, fetch, lg)
}

func (f *fetcher) backoff(fs *fetchState, d time.Duration) {
	f.mu.Lock()
	fs.backoffUntil = f.m.now().Add(d)
	f.mu.Unlock()
}

// truncate asks the leader where each partition's latest local epoch
// ends and cuts the local log there (KIP-279: repeated while the leader
// answers with an older epoch than ours).
func (f *fetcher) truncate(cl *client, ws []work, lg *zap.Logger) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = f.m.cfg.NodeID
	byTopic := map[string]int{}
	for _, w := range ws {
		i, ok := byTopic[w.p.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[w.p.Topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = w.p.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = w.p.Index
		rp.CurrentLeaderEpoch = w.fs.epoch
		rp.LeaderEpoch = w.p.log.LatestEpoch()
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	if err := cl.roundTrip(req, resp, time.Now().Add(10*time.Second)); err != nil {
		return err
	}
	for _, w := range ws {
		var rp *kmsg.OffsetForLeaderEpochResponseTopicPartition
		for i := range resp.Topics {
			if resp.Topics[i].Topic != w.p.Topic {
				continue
			}
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].Partition == w.p.Index {
					rp = &resp.Topics[i].Partitions[j]
				}
			}
		}
		if rp == nil {
			f.backoff(w.fs, 200*time.Millisecond)
			continue
		}
		if rp.ErrorCode != 0 {
			lg.Debug("OffsetForLeaderEpoch refused", zap.String("partition", w.p.Name()), zap.Error(kerr.ErrorForCode(rp.ErrorCode)))
			f.backoff(w.fs, 50*time.Millisecond)
			continue
		}
		done, err := f.truncateTo(w, rp.LeaderEpoch, rp.EndOffset, lg)
		if err != nil {
			f.m.storageError(w.p, err)
			f.m.warn.Log("truncate/"+w.p.Name(), err.Error(), "truncating the follower log failed",
				zap.Int32("leader", f.leader), zap.String("partition", w.p.Name()), zap.Error(err))
			f.backoff(w.fs, time.Second)
			continue
		}
		if done {
			w.fs.truncated = true
		}
	}
	return nil
}

// truncateTo applies the leader's answer (its epoch <= ours, and where it
// ends). It reports whether truncation is complete.
func (f *fetcher) truncateTo(w work, leaderEpoch int32, leaderEnd int64, lg *zap.Logger) (bool, error) {
	l := w.p.log
	w.fs.appendMu.Lock()
	defer w.fs.appendMu.Unlock()
	if w.fs.stopped {
		return false, nil
	}
	leo := l.EndOffset()
	var to int64
	done := true
	switch {
	case leaderEpoch < 0 || leaderEnd < 0:
		// The leader knows none of our epochs (or we have none): keep what
		// is committed for sure.
		to = min(l.HighWatermark(), leo)
		if l.LatestEpoch() < 0 {
			to = leo // nothing to compare: fetching will tell
		}
	default:
		ourEpoch, ourEnd := l.EndOffsetForEpoch(leaderEpoch)
		if ourEpoch != leaderEpoch {
			// We never had the leader's epoch: cut to where our older
			// epoch ends and ask again.
			to, done = min(ourEnd, leo), false
			if ourEnd < 0 {
				to, done = min(leaderEnd, leo), true
			}
		} else {
			to = min(ourEnd, leaderEnd, leo)
		}
	}
	if to < leo {
		lg.Info("follower truncating its divergent tail", zap.String("partition", w.p.Name()),
			zap.Int64("from_log_end", leo), zap.Int64("to", to), zap.Int32("leader_epoch", leaderEpoch), zap.Int64("leader_end_offset", leaderEnd))
		if err := l.TruncateTo(to); err != nil {
			return false, err
		}
		if f.m.cfg.OnTruncate != nil {
			f.m.cfg.OnTruncate(w.p)
		}
	}
	return done, nil
}

// throttleBackoff is how long a fetcher whose every partition is held by
// the follower throttle waits before checking the rate again.
const throttleBackoff = 50 * time.Millisecond

// fetch sends one Fetch for ws and appends what comes back.
func (f *fetcher) fetch(cl *client, ws []work, lg *zap.Logger) error {
	cfg := &f.m.cfg
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = cfg.NodeID
	req.MaxWaitMillis = int32(cfg.FetchMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = cfg.FetchMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	type key struct {
		topic string
		part  int32
	}
	idx := map[key]work{}
	byTopic := map[string]int{}
	throttled := map[*Partition]bool{}
	held := 0
	for _, w := range ws {
		if f.m.followerQuota.Limited() && f.m.throttled(w.p, FollowerThrottledReplicas) {
			throttled[w.p] = true
			if !w.fs.caughtUp && f.m.followerQuota.Exceeded() {
				held++ // Kafka's shouldFollowerThrottle: left out of this fetch
				continue
			}
		}
		i, ok := byTopic[w.p.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[w.p.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = w.p.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = w.p.Index
		rp.CurrentLeaderEpoch = w.fs.epoch
		rp.FetchOffset = w.p.log.EndOffset()
		rp.LastFetchedEpoch = w.p.log.LatestEpoch()
		rp.LogStartOffset = w.p.log.StartOffset()
		rp.PartitionMaxBytes = cfg.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		idx[key{w.p.Topic, w.p.Index}] = w
	}
	if len(req.Topics) == 0 && held > 0 {
		// Everything is throttled: wait for the rate to come down.
		if !f.sleep(throttleBackoff) {
			return errStopped
		}
		return nil
	}
	resp := kmsg.NewPtrFetchResponse()
	if err := cl.roundTrip(req, resp, time.Now().Add(cfg.FetchMaxWait+3*time.Second)); err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("fetch from broker %d: %w", f.leader, kerr.ErrorForCode(resp.ErrorCode))
	}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			w, ok := idx[key{rt.Topic, rp.Partition}]
			if !ok {
				continue
			}
			f.handle(w, rp, lg)
			if throttled[w.p] {
				f.m.followerQuota.Record(int64(len(rp.RecordBatches)))
			}
		}
	}
	return nil
}

// handle appends one partition's fetched batches, or reacts to its error.
func (f *fetcher) handle(w work, rp *kmsg.FetchResponseTopicPartition, lg *zap.Logger) {
	l := w.p.log
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		w.fs.appendMu.Lock()
		defer w.fs.appendMu.Unlock()
		if w.fs.stopped {
			return
		}
		leo := l.EndOffset()
		if leo < rp.LogStartOffset {
			lg.Info("follower behind the leader's log start; restarting its log there", zap.String("partition", w.p.Name()),
				zap.Int64("log_end", leo), zap.Int64("leader_log_start", rp.LogStartOffset))
			if err := l.ResetTo(rp.LogStartOffset); err != nil {
				lg.Error("resetting the follower log failed", zap.String("partition", w.p.Name()), zap.Error(err))
				f.backoff(w.fs, time.Second)
			}
			if f.m.cfg.OnTruncate != nil {
				f.m.cfg.OnTruncate(w.p)
			}
			return
		}
		// Ahead of the leader (an unclean election): keep what it has
		// committed and fetch again.
		to := max(min(rp.HighWatermark, leo), l.StartOffset())
		lg.Warn("follower ahead of the leader; truncating to the leader's high watermark", zap.String("partition", w.p.Name()),
			zap.Int64("log_end", leo), zap.Int64("leader_hw", rp.HighWatermark))
		if err := l.TruncateTo(to); err != nil {
			lg.Error("truncating the follower log failed", zap.String("partition", w.p.Name()), zap.Error(err))
		}
		if f.m.cfg.OnTruncate != nil {
			f.m.cfg.OnTruncate(w.p)
		}
		f.backoff(w.fs, 50*time.Millisecond)
		return
	default:
		// NOT_LEADER, FENCED/UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC...: the
		// metadata will tell us where to go.
		lg.Debug("replica fetch refused", zap.String("partition", w.p.Name()), zap.Error(err))
		f.backoff(w.fs, 50*time.Millisecond)
		return
	}
	b := wholeBatches(rp.RecordBatches)
	w.fs.appendMu.Lock()
	defer w.fs.appendMu.Unlock()
	if w.fs.stopped {
		return
	}
	if len(b) > 0 {
		info, err := l.AppendReplica(b)
		if err == nil && info.FirstOffset <= info.LastOffset && f.m.cfg.OnReplicaAppend != nil {
			f.m.cfg.OnReplicaAppend(w.p, b, info)
		}
		if err != nil {
			f.m.storageError(w.p, err)
			f.m.warn.Log("append/"+w.p.Name(), err.Error(), "appending fetched batches failed; truncating by epoch again",
				zap.Int32("leader", f.leader), zap.String("partition", w.p.Name()), zap.Error(err))
			w.fs.truncated = false
			f.backoff(w.fs, 100*time.Millisecond)
			return
		}
	}
	if len(b) > 0 {
		f.m.warn.End("append/" + w.p.Name())
	}
	w.fs.caughtUp = l.EndOffset() >= rp.HighWatermark
	l.SetHighWatermark(min(rp.HighWatermark, l.EndOffset()))
	// Compaction stays below the leader's last stable offset: the
	// follower keeps no producer state of its own.
	l.SetFirstUnstableOffset(rp.LastStableOffset)
}

// wholeBatches cuts a trailing partial batch.
func wholeBatches(b []byte) []byte {
	pos := 0
	for pos < len(b) {
		h, err := log.ParseBatchHeader(b[pos:])
		if err != nil || int64(len(b)-pos) < h.Size() {
			break
		}
		pos += int(h.Size())
	}
	return b[:pos]
}
