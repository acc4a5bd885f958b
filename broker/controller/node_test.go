package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"weir/broker/metadata"
	"weir/internal/testkit"
)

type testQuorum struct {
	t      *testing.T
	dirs   []string
	voters []Voter
	nodes  []*Node
	tune   func(*Config) // adjusts every node's config (nil: none)
}

func newQuorum(t *testing.T, n int) *testQuorum { return newQuorumTuned(t, n, nil) }

func newQuorumTuned(t *testing.T, n int, tune func(*Config)) *testQuorum {
	q := &testQuorum{t: t, tune: tune}
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		q.voters = append(q.voters, Voter{ID: int32(i + 1), Addr: ln.Addr().String()})
		q.dirs = append(q.dirs, filepath.Join(t.TempDir(), "raft"))
	}
	q.nodes = make([]*Node, n)
	for i := range lns {
		q.start(i, lns[i])
	}
	t.Cleanup(func() {
		for _, nd := range q.nodes {
			if nd != nil {
				nd.Close()
			}
		}
	})
	return q
}

func (q *testQuorum) start(i int, ln net.Listener) {
	q.t.Helper()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", q.voters[i].Addr); err != nil {
			q.t.Fatal(err)
		}
	}
	cfg := Config{
		NodeID: int32(i + 1), Listener: ln, Voters: q.voters, Dir: q.dirs[i],
		HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 600 * time.Millisecond,
		RaftTimeout: 300 * time.Millisecond, PreferredLeaderInterval: -1,
		Logger: zaptest.NewLogger(q.t).Named(fmt.Sprintf("node%d", i+1)),
	}
	if q.tune != nil {
		q.tune(&cfg)
	}
	nd, err := Start(cfg)
	if err != nil {
		q.t.Fatal(err)
	}
	if err := nd.RegisterBroker(context.Background(), metadata.Broker{NodeID: int32(i + 1), Host: "127.0.0.1", Port: int32(9100 + i)}); err != nil {
		q.t.Fatal(err)
	}
	q.nodes[i] = nd
}

func (q *testQuorum) live(i int) []int32 {
	var out []int32
	for _, b := range q.nodes[i].Image().LiveBrokers() {
		out = append(out, b.NodeID)
	}
	return out
}

func TestQuorumRegistersCreatesAndFences(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 3)
	testkit.CheckFor(t, 20*time.Second, func() error {
		for i := range q.nodes {
			if got := q.live(i); len(got) != 3 {
				return fmt.Errorf("node %d sees live brokers %v", i+1, got)
			}
			if q.nodes[i].Image().ClusterID() == "" {
				return fmt.Errorf("node %d: no cluster id", i+1)
			}
		}
		return nil
	})
	ctx := context.Background()
	// Any node can create; the caller sees its topic at once.
	tp, err := q.nodes[2].CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.Partitions) != 3 {
		t.Fatalf("created %+v", tp)
	}
	if _, ok := q.nodes[2].Image().Topic("t"); !ok {
		t.Fatal("creator does not see its topic")
	}
	if _, err := q.nodes[1].CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, metadata.ErrTopicExists) {
		t.Fatalf("duplicate create through another node: %v", err)
	}
	if _, err := q.nodes[0].CreateTopic(ctx, metadata.TopicSpec{Name: "x", Partitions: 1, ReplicationFactor: 4}); !errors.Is(err, metadata.ErrInvalidReplicationFactor) {
		t.Fatalf("rf 4 of 3: %v", err)
	}
	// ISR change by the leader of partition 0, with stale-epoch refusal.
	p0, _ := q.nodes[2].Image().Partition("t", 0)
	req := metadata.AlterPartition{Topic: "t", Partition: 0, Leader: p0.Leader, LeaderEpoch: p0.LeaderEpoch, PartitionEpoch: p0.PartitionEpoch, ISR: p0.Replicas[:2]}
	if _, err := q.nodes[p0.Leader-1].AlterPartition(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := q.nodes[0].AlterPartition(ctx, req); !errors.Is(err, metadata.ErrStalePartitionEpoch) {
		t.Fatalf("stale AlterPartition: %v", err)
	}

	// Client quotas through any node, replicated to all.
	x := "x"
	if err := q.nodes[1].AlterClientQuotas(ctx, []metadata.ClientQuota{
		{Entity: []metadata.QuotaEntityPart{{Type: "client-id", Name: &x}}, Key: "producer_byte_rate", Value: 1024},
		{Entity: []metadata.QuotaEntityPart{{Type: "user"}}, Key: "consumer_byte_rate", Value: 2048},
	}); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		for i := range q.nodes {
			if n := len(q.nodes[i].Image().ClientQuotas()); n != 2 {
				return fmt.Errorf("node %d has %d quota entities", i+1, n)
			}
		}
		return nil
	})

	// Stop a node that is not the controller leader: it is fenced and
	// loses its leaderships; the others converge.
	victim := -1
	for i, nd := range q.nodes {
		if !nd.IsLeader() {
			victim = i
			break
		}
	}
	q.nodes[victim].Close()
	q.nodes[victim] = nil
	vid := int32(victim + 1)
	testkit.CheckFor(t, 10*time.Second, func() error {
		for i, nd := range q.nodes {
			if nd == nil {
				continue
			}
			im := nd.Image()
			if im.Live(vid) {
				return fmt.Errorf("node %d still sees %d live", i+1, vid)
			}
			tp, _ := im.Topic("t")
			for j, p := range tp.Partitions {
				if p.Leader == vid || p.Leader < 0 {
					return fmt.Errorf("node %d: t-%d leader %d", i+1, j, p.Leader)
				}
				for _, r := range p.ISR {
					if r == vid {
						return fmt.Errorf("node %d: t-%d ISR %v still has %d", i+1, j, p.ISR, vid)
					}
				}
			}
		}
		return nil
	})
	// It returns (same Raft state) and is unfenced.
	q.start(victim, nil)
	testkit.CheckFor(t, 20*time.Second, func() error {
		for i := range q.nodes {
			if got := q.live(i); len(got) != 3 {
				return fmt.Errorf("node %d sees live brokers %v", i+1, got)
			}
		}
		return nil
	})
	if _, ok := q.nodes[victim].Image().Topic("t"); !ok {
		t.Fatal("restarted node did not replay the topic")
	}
}

func TestQuorumSurvivesLeaderLossAndControlledShutdown(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 3)
	testkit.CheckFor(t, 20*time.Second, func() error {
		for i := range q.nodes {
			if got := q.live(i); len(got) != 3 {
				return fmt.Errorf("node %d sees live brokers %v", i+1, got)
			}
		}
		return nil
	})
	ctx := context.Background()
	if _, err := q.nodes[0].CreateTopic(ctx, metadata.TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	lead := -1
	for i, nd := range q.nodes {
		if nd.IsLeader() {
			lead = i
		}
	}
	if lead < 0 {
		t.Fatal("no leader")
	}
	// Controlled shutdown of the controller leader: its partitions move
	// before it goes.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := q.nodes[lead].Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	lid := int32(lead + 1)
	if LeadsAny(q.nodes[lead].Image(), lid) {
		t.Fatalf("node %d still leads after controlled shutdown: %s", lid, show(q.nodes[lead].Image()))
	}
	q.nodes[lead].Close()
	q.nodes[lead] = nil
	// The remaining two elect a controller and still take writes.
	other := (lead + 1) % 3
	testkit.CheckFor(t, 20*time.Second, func() error {
		_, err := q.nodes[other].CreateTopic(ctx, metadata.TopicSpec{Name: "u", Partitions: 1, ReplicationFactor: 2})
		if errors.Is(err, metadata.ErrTopicExists) {
			return nil
		}
		return err
	})
	if id := q.nodes[other].ControllerID(); id == lid || id < 0 {
		t.Fatalf("controller id %d after the old leader left", id)
	}
}

// A voter restarted after a controller election with no metadata change
// since (its log then ends with the new leader's LogNoop and LogBarrier,
// for which Raft never calls the FSM) is ready once it has the leader's log: it does
// not wait for the next metadata record (restarting brokers of a loaded
// test cluster, where elections come often, waited out their deadline).
func TestRestartedVoterReadyWhenLogEndsWithNoop(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 3)
	testkit.CheckFor(t, 20*time.Second, func() error {
		for i := range q.nodes {
			if got := q.live(i); len(got) != 3 {
				return fmt.Errorf("node %d sees live brokers %v", i+1, got)
			}
		}
		return nil
	})
	lead := -1
	for i, nd := range q.nodes {
		if nd.IsLeader() {
			lead = i
		}
	}
	if lead < 0 {
		t.Fatal("no leader")
	}
	down := (lead + 1) % 3
	q.nodes[down].Close()
	q.nodes[down] = nil
	testkit.CheckFor(t, 20*time.Second, func() error {
		if got := q.live(lead); len(got) != 2 {
			return fmt.Errorf("leader sees live brokers %v", got)
		}
		return nil
	})
	// The leader hands over to the other live voter: the new term's
	// entries are a noop and a barrier, and nothing changes after them.
	if err := q.nodes[lead].raft.LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	other := 3 - lead - down
	testkit.CheckFor(t, 20*time.Second, func() error {
		nd := q.nodes[other]
		if !nd.IsLeader() {
			return fmt.Errorf("node %d does not lead yet", other+1)
		}
		if applied, commit := nd.AppliedIndex(), nd.raft.CommitIndex(); applied >= commit {
			return fmt.Errorf("the log does not end with the new term's entries yet (applied %d, commit %d)", applied, commit)
		}
		return nil
	})
	// The restarted voter does not register (a broker registers once it
	// serves, after WaitReady), so no record follows the noop.
	ln, err := net.Listen("tcp", q.voters[down].Addr)
	if err != nil {
		t.Fatal(err)
	}
	nd, err := Start(Config{
		NodeID: int32(down + 1), Listener: ln, Voters: q.voters, Dir: q.dirs[down],
		HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 600 * time.Millisecond,
		RaftTimeout: 300 * time.Millisecond, PreferredLeaderInterval: -1,
		Logger: zaptest.NewLogger(t).Named(fmt.Sprintf("node%d", down+1)),
	})
	if err != nil {
		t.Fatal(err)
	}
	q.nodes[down] = nd
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := nd.WaitReady(ctx); err != nil {
		applied, commit, last, initialized := nd.CatchUp()
		var types []string
		for i := applied + 1; i <= last; i++ {
			var l raft.Log
			if err := nd.store.GetLog(i, &l); err != nil {
				types = append(types, err.Error())
			} else {
				types = append(types, l.Type.String())
			}
		}
		t.Fatalf("%v (applied %d, raft applied %d, commit %d, last %d, initialized %v, entries after applied %v)", err, applied, nd.raft.AppliedIndex(), commit, last, initialized, types)
	}
}
