package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"weir/broker/metadata"
)

// leader is the controller's work while this node is the Raft leader: one
// goroutine takes requests (commands, heartbeats, liveness ticks) in
// batches, plans their records against a scratch copy of the image, and
// proposes each batch as one Raft entry. Because it waits for each entry
// to apply before planning the next batch, plans always start from the
// image every node will have.
type leader struct {
	n     *Node
	queue chan *request
	done  chan struct{}
	ended chan struct{}

	// liveness, owned by the loop goroutine
	lastSeen map[int32]time.Time
	shutting map[int32]bool
}

type request struct {
	ctx   context.Context
	cmd   *Command
	hb    *HeartbeatArgs
	reply chan result
}

type result struct {
	cmd   CommandReply
	hb    HeartbeatReply
	err   error
	index uint64
}

// leadershipLoop starts and stops the leader's work as Raft reports
// leadership changes.
func (n *Node) leadershipLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case isLeader := <-n.leaderNotify:
			if isLeader {
				n.startLeading()
			} else {
				n.stopLeading()
			}
		}
	}
}

func (n *Node) currentLeader() *leader {
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	return n.lead
}

func (n *Node) startLeading() {
	// Apply everything committed before serving: plans must start from
	// the latest image.
	if err := n.raft.Barrier(10 * time.Second).Error(); err != nil {
		n.log.Warn("controller barrier after election failed", zap.Error(err))
		return
	}
	n.leadMu.Lock()
	if n.lead != nil {
		n.leadMu.Unlock()
		return
	}
	l := &leader{n: n, queue: make(chan *request, 256), done: make(chan struct{}), ended: make(chan struct{}),
		lastSeen: map[int32]time.Time{}, shutting: map[int32]bool{}}
	// A new controller does not know when brokers last heartbeated: every
	// live broker gets half a session (at least four heartbeats) to reach
	// it, so a broker that died with the old controller is fenced sooner
	// than a full session after the election.
	now := n.now()
	grace := max(n.cfg.SessionTimeout/2, 4*n.cfg.HeartbeatInterval)
	for _, b := range n.Image().LiveBrokers() {
		l.lastSeen[b.NodeID] = now.Add(min(grace-n.cfg.SessionTimeout, 0))
	}
	n.lead = l
	n.leadMu.Unlock()
	n.log.Info("controller leadership gained", zap.Int32("node_id", n.cfg.NodeID))
	go l.run()
}

func (n *Node) stopLeading() {
	n.leadMu.Lock()
	l := n.lead
	n.lead = nil
	n.leadMu.Unlock()
	if l != nil {
		close(l.done)
		<-l.ended
		n.log.Info("controller leadership lost", zap.Int32("node_id", n.cfg.NodeID))
	}
}

func (l *leader) submit(ctx context.Context, r *request) result {
	r.ctx = ctx
	r.reply = make(chan result, 1)
	select {
	case l.queue <- r:
	case <-l.done:
		return result{err: ErrNotController}
	case <-ctx.Done():
		return result{err: fmt.Errorf("%w: %v", ErrNoController, ctx.Err())}
	}
	select {
	case res := <-r.reply:
		return res
	case <-l.done:
		// The loop answers what it took before it ends.
		select {
		case res := <-r.reply:
			return res
		case <-l.ended:
			select {
			case res := <-r.reply:
				return res
			default:
				return result{err: ErrNotController}
			}
		}
	case <-ctx.Done():
		return result{err: fmt.Errorf("%w: %v", ErrNoController, ctx.Err())}
	}
}

func (l *leader) submitCommand(ctx context.Context, c Command) CommandReply {
	res := l.submit(ctx, &request{cmd: &c})
	if res.err != nil {
		return CommandReply{Err: toWire(res.err)}
	}
	return res.cmd
}

func (l *leader) submitHeartbeat(ctx context.Context, hb HeartbeatArgs) (HeartbeatReply, error) {
	if hb.Raft != nil {
		l.n.quorum.observe(l.n.raft.CurrentTerm(), hb.Broker.NodeID, *hb.Raft, l.n.now(), l.n.raft.LastIndex())
	}
	res := l.submit(ctx, &request{hb: &hb})
	return res.hb, res.err
}

const maxBatch = 128

func (l *leader) run() {
	defer close(l.ended)
	n := l.n
	tick := time.NewTicker(max(n.cfg.SessionTimeout/8, 20*time.Millisecond))
	defer tick.Stop()
	var prefC <-chan time.Time
	if n.cfg.PreferredLeaderInterval > 0 {
		pt := time.NewTicker(n.cfg.PreferredLeaderInterval)
		defer pt.Stop()
		prefC = pt.C
	}
	var again bool // the last preferred pass was cut at maxPreferred
	for {
		var batch []*request
		var liveness, preferred bool
		if again {
			// Kafka's controller reschedules a cut rebalance at once.
			select {
			case <-l.done:
				l.drain()
				return
			default:
			}
			preferred = true
		} else {
			select {
			case <-l.done:
				l.drain()
				return
			case r := <-l.queue:
				batch = append(batch, r)
			case <-tick.C:
				liveness = true
			case <-prefC:
				preferred = true
			}
		}
	more:
		for len(batch) < maxBatch {
			select {
			case r := <-l.queue:
				batch = append(batch, r)
			default:
				break more
			}
		}
		again = l.process(batch, liveness, preferred)
	}
}

// maxPreferred bounds the preferred-leader elections of one pass (one
// Raft entry); Kafka's controller does at most 1000 per pass
// (maxElectionsPerImbalance) and runs the next pass at once.
const maxPreferred = 1000

// drain answers queued requests after leadership ended.
func (l *leader) drain() {
	for {
		select {
		case r := <-l.queue:
			r.reply <- result{err: ErrNotController}
		default:
			return
		}
	}
}

// process plans one batch and proposes it as one entry. It reports
// whether a preferred-leader pass made maxPreferred elections and was
// written (more may be waiting).
func (l *leader) process(batch []*request, liveness, preferred bool) (more bool) {
	n := l.n
	img := n.Image()
	var recs []metadata.Record
	add := func(rs []metadata.Record) error {
		next := img
		for _, r := range rs {
			var err error
			if next, err = next.Apply(r); err != nil {
				return err
			}
		}
		img = next
		recs = append(recs, rs...)
		return nil
	}
	now := n.now()
	unclean := l.unclean
	results := make([]result, len(batch))
	if img.ClusterID() == "" {
		_ = add([]metadata.Record{{Type: metadata.TypeInitCluster, InitCluster: &metadata.InitCluster{ClusterID: metadata.NewUUID().String()}}})
	}
	for i, r := range batch {
		switch {
		case r.cmd != nil && r.cmd.Kind == KindAlterReassignments:
			rs, res := l.planReassignments(img, *r.cmd)
			err := add(rs)
			results[i] = result{err: err, cmd: CommandReply{Reassignments: res}}
		case r.cmd != nil:
			first, pre := img.NextProducerID(), img
			rs, t, err := planCommand(img, *r.cmd)
			if err == nil {
				err = add(rs)
			}
			results[i] = result{err: err, cmd: CommandReply{Topic: t}}
			if r.cmd.Kind == KindProducerIDs {
				results[i].cmd.First = first
			}
			if r.cmd.Kind == KindElectLeaders && err == nil {
				// The same decisions planCommand made, with their results.
				_, results[i].cmd.Elections = metadata.BuildElectLeaders(pre, *r.cmd.Elect)
			}
			if r.cmd.Kind == KindDeleteACLs && err == nil {
				_, results[i].cmd.DeletedACLs, _ = metadata.BuildDeleteACLs(pre, r.cmd.ACLFilters)
			}
		case r.hb != nil:
			b := r.hb.Broker
			id := b.NodeID
			l.lastSeen[id] = now
			l.shutting[id] = r.hb.ShuttingDown
			var rs []metadata.Record
			if r.hb.ShuttingDown {
				rs = FenceBroker(img, id, unclean)
			} else if cur, ok := img.Broker(id); ok && cur.Fenced && cur.Host == b.Host && cur.Port == b.Port {
				rs = UnfenceBroker(img, id, unclean)
			} else {
				if cur, ok := img.Broker(id); ok && !cur.Fenced && storageSummary(cur) != storageSummary(b) {
					n.log.Warn("broker reports a change of its log directories", zap.Int32("broker", id),
						zap.String("from", storageSummary(cur)), zap.String("to", storageSummary(b)))
				}
				rs = RegisterBroker(img, b, unclean)
			}
			err := add(rs)
			if cur, _ := img.Broker(id); err == nil && !cur.Fenced && !metadata.SameRegistration(cur, b) {
				// Unfenced just now, with a storage state to record too.
				err = add(RegisterBroker(img, b, unclean))
			}
			cur, _ := img.Broker(id)
			results[i] = result{err: err, hb: HeartbeatReply{Fenced: cur.Fenced}}
		}
	}
	if liveness {
		for _, b := range img.LiveBrokers() {
			seen, ok := l.lastSeen[b.NodeID]
			if !ok {
				l.lastSeen[b.NodeID] = now
				continue
			}
			if now.Sub(seen) > n.cfg.SessionTimeout {
				n.log.Warn("broker missed its heartbeats; fencing it", zap.Int32("broker", b.NodeID), zap.Duration("since_last", now.Sub(seen)))
				if err := add(FenceBroker(img, b.NodeID, unclean)); err != nil {
					n.log.Error("fencing broker failed", zap.Int32("broker", b.NodeID), zap.Error(err))
				}
			}
		}
	}
	if preferred {
		rs := PreferredLeaders(img, maxPreferred)
		if err := add(rs); err != nil {
			n.log.Error("preferred leader election failed", zap.Error(err))
		} else {
			more = len(rs) >= maxPreferred
		}
	}
	var index uint64
	if len(recs) > 0 {
		data, err := metadata.EncodeRecords(recs)
		if err == nil {
			f := n.raft.Apply(data, 10*time.Second)
			if err = f.Error(); err == nil {
				index = f.Index()
			} else if err == raft.ErrNotLeader || err == raft.ErrLeadershipLost || err == raft.ErrRaftShutdown {
				err = fmt.Errorf("%w: %v", ErrNotController, err)
			}
		}
		if err != nil {
			more = false
			n.log.Warn("proposing metadata records failed", zap.Int("records", len(recs)), zap.Error(err))
			for i := range results {
				if results[i].err == nil {
					results[i].err = err
				}
			}
		}
	}
	for i, r := range batch {
		res := results[i]
		res.cmd.Index, res.hb.Index, res.index = index, index, index
		r.reply <- res
	}
	return more
}

// unclean resolves unclean.leader.election.enable for a topic.
func (l *leader) unclean(t *metadata.Topic) bool {
	res, err := l.n.cfg.BrokerConfig.Resolve(t.Configs)
	if err != nil {
		return false
	}
	v, _, ok := res.Value("unclean.leader.election.enable")
	return ok && v == "true"
}

// storageSummary is a broker's storage state for logs: its state, then
// each directory that cannot write with its number of partitions.
func storageSummary(b metadata.Broker) string {
	out := storageName(b.Storage)
	for _, d := range b.Dirs {
		n := 0
		for _, ps := range d.Partitions {
			n += len(ps)
		}
		out += fmt.Sprintf(", %s %s (%d partitions)", d.Path, d.State, n)
	}
	return out
}

// storageName is a storage state for logs ("ok" for writable).
func storageName(s metadata.StorageState) string {
	if s == metadata.StorageOK {
		return "ok"
	}
	return string(s)
}
