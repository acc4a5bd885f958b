package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"weir/broker/metadata"
	"weir/internal/testkit"
)

// addObserver starts a node with id that is not in the voter list: it
// joins the quorum as an observer.
func (q *testQuorum) addObserver(id int32) *Node {
	q.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		q.t.Fatal(err)
	}
	nd, err := Start(Config{
		NodeID: id, Listener: ln, Voters: q.voters, Dir: filepath.Join(q.t.TempDir(), "raft"),
		HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 600 * time.Millisecond,
		RaftTimeout: 300 * time.Millisecond, PreferredLeaderInterval: -1,
		Logger: zaptest.NewLogger(q.t).Named(fmt.Sprintf("node%d", id)),
	})
	if err != nil {
		q.t.Fatal(err)
	}
	q.t.Cleanup(func() { nd.Close() })
	if err := nd.RegisterBroker(context.Background(), metadata.Broker{NodeID: id, Host: "127.0.0.1", Port: 9200 + id}); err != nil {
		q.t.Fatal(err)
	}
	return nd
}

func ids(rs []metadata.QuorumReplica) []int32 {
	var out []int32
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// describe returns the quorum's state through node nd once check
// accepts it.
func describe(t *testing.T, nd *Node, check func(metadata.QuorumState) error) metadata.QuorumState {
	t.Helper()
	var st metadata.QuorumState
	testkit.CheckFor(t, 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		if st, err = nd.DescribeQuorum(ctx); err != nil {
			return err
		}
		return check(st)
	})
	return st
}

func TestDescribeQuorumMapsRaftState(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 3)
	dirs := map[int32]metadata.UUID{}
	for _, nd := range q.nodes {
		if nd.DirectoryID() == (metadata.UUID{}) || dirs[nd.cfg.NodeID] != (metadata.UUID{}) {
			t.Fatalf("node %d: directory id %v", nd.cfg.NodeID, nd.DirectoryID())
		}
		dirs[nd.cfg.NodeID] = nd.DirectoryID()
	}
	st := describe(t, q.nodes[2], func(st metadata.QuorumState) error {
		if !slices.Equal(ids(st.Voters), []int32{1, 2, 3}) || len(st.Observers) != 0 {
			return fmt.Errorf("voters %v observers %v", ids(st.Voters), ids(st.Observers))
		}
		var leo int64 = -2
		for _, v := range st.Voters {
			if v.DirectoryID != dirs[v.ID] {
				return fmt.Errorf("voter %d: directory id %v, want %v", v.ID, v.DirectoryID, dirs[v.ID])
			}
			if v.LastFetch <= 0 || v.LastCaughtUp <= 0 {
				return fmt.Errorf("voter %d: no fetch/caught-up time yet: %+v", v.ID, v)
			}
			if leo != -2 && v.LogEndOffset != leo {
				return fmt.Errorf("voters' log end offsets differ: %+v", st.Voters)
			}
			leo = v.LogEndOffset
			if len(v.Endpoints) != 1 || v.Endpoints[0].Name != "CONTROLLER" || net.JoinHostPort(v.Endpoints[0].Host, strconv.Itoa(int(v.Endpoints[0].Port))) != q.voters[v.ID-1].Addr {
				return fmt.Errorf("voter %d: endpoints %+v", v.ID, v.Endpoints)
			}
		}
		if st.HighWatermark != leo {
			return fmt.Errorf("high watermark %d, log end offset %d", st.HighWatermark, leo)
		}
		return nil
	})
	if st.LeaderID != q.nodes[0].ControllerID() || st.LeaderEpoch < 1 || st.HighWatermark < 1 {
		t.Fatalf("quorum state %+v (controller %d)", st, q.nodes[0].ControllerID())
	}
	// meta.properties as Kafka's add-controller reads it.
	testkit.CheckFor(t, 5*time.Second, func() error {
		props, err := readProperties(filepath.Join(q.dirs[0], MetaPropertiesFile))
		if err != nil {
			return err
		}
		want := map[string]string{"version": "1", "node.id": "1", "directory.id": dirs[1].String(), "cluster.id": q.nodes[0].Image().ClusterID()}
		for k, v := range want {
			if props[k] != v {
				return fmt.Errorf("meta.properties %s=%q, want %q (%v)", k, props[k], v, props)
			}
		}
		return nil
	})
}

func TestReplaceVoterWhileServing(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 3)
	ctx := context.Background()
	obs := q.addObserver(4)
	describe(t, q.nodes[0], func(st metadata.QuorumState) error {
		if !slices.Equal(ids(st.Observers), []int32{4}) || st.Observers[0].DirectoryID != obs.DirectoryID() || st.Observers[0].LogEndOffset != st.HighWatermark {
			return fmt.Errorf("observers %+v (hw %d)", st.Observers, st.HighWatermark)
		}
		return nil
	})
	if err := obs.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// Bad input first: nothing may change.
	ep := []metadata.QuorumEndpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(obs.Addr().(*net.TCPAddr).Port)}}
	if err := obs.AddVoter(ctx, 2, q.nodes[1].DirectoryID(), ep); !errors.Is(err, metadata.ErrDuplicateVoter) {
		t.Fatalf("adding voter 2 again: %v", err)
	}
	if err := obs.AddVoter(ctx, 4, obs.DirectoryID(), []metadata.QuorumEndpoint{{Name: "OTHER", Host: "127.0.0.1", Port: 1}}); !errors.Is(err, metadata.ErrInvalidVoter) {
		t.Fatalf("adding voter 4 without a controller listener: %v", err)
	}
	if err := obs.AddVoter(ctx, 4, newDirectoryID(), ep); !errors.Is(err, metadata.ErrVoterNotReady) {
		t.Fatalf("adding voter 4 with another directory id: %v", err)
	}
	wrong := []metadata.QuorumEndpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(q.nodes[2].Addr().(*net.TCPAddr).Port)}}
	if err := obs.AddVoter(ctx, 4, obs.DirectoryID(), wrong); !errors.Is(err, metadata.ErrVoterNotReady) || !strings.Contains(err.Error(), "the controller there is ReplicaKey(id=3") {
		t.Fatalf("adding voter 4 at node 3's address: %v", err)
	}
	if err := obs.AddVoter(ctx, 5, newDirectoryID(), ep); !errors.Is(err, metadata.ErrVoterNotReady) {
		t.Fatalf("adding voter 5, which does not run: %v", err)
	}
	if err := q.nodes[0].RemoveVoter(ctx, 4, obs.DirectoryID()); !errors.Is(err, metadata.ErrVoterNotFound) {
		t.Fatalf("removing observer 4: %v", err)
	}
	if err := q.nodes[0].RemoveVoter(ctx, 1, newDirectoryID()); !errors.Is(err, metadata.ErrVoterNotFound) {
		t.Fatalf("removing voter 1 with another directory id: %v", err)
	}
	if err := q.nodes[0].UnregisterBroker(ctx, 2); !errors.Is(err, metadata.ErrBrokerIsVoter) {
		t.Fatalf("unregistering voter 2: %v", err)
	}
	if err := q.nodes[0].UnregisterBroker(ctx, 9); !errors.Is(err, metadata.ErrBrokerNotRegistered) {
		t.Fatalf("unregistering broker 9: %v", err)
	}
	describe(t, q.nodes[2], func(st metadata.QuorumState) error {
		if !slices.Equal(ids(st.Voters), []int32{1, 2, 3}) || !slices.Equal(ids(st.Observers), []int32{4}) {
			return fmt.Errorf("after bad input: voters %v observers %v", ids(st.Voters), ids(st.Observers))
		}
		return nil
	})

	// Replace the leader by 4 while topics are created (a removed
	// leader steps down and goes on as an observer).
	old := q.nodes[0].ControllerID()
	oi := int(old - 1)
	other := q.nodes[(oi+1)%3]
	stop := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := other.CreateTopic(cctx, metadata.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: 1, ReplicationFactor: 2})
			cancel()
			// A create committed by a leader that stepped down before
			// answering is found by the node's retry.
			if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
				errs <- fmt.Errorf("creating t%d during the voter change: %w", i, err)
				return
			}
		}
	}()
	if err := other.AddVoter(ctx, 4, obs.DirectoryID(), ep); err != nil {
		t.Fatalf("adding voter 4: %v", err)
	}
	if err := other.RemoveVoter(ctx, old, q.nodes[oi].DirectoryID()); err != nil {
		t.Fatalf("removing voter %d: %v", old, err)
	}
	var rest []int32
	for id := int32(1); id <= 4; id++ {
		if id != old {
			rest = append(rest, id)
		}
	}
	st := describe(t, obs, func(st metadata.QuorumState) error {
		if !slices.Equal(ids(st.Voters), rest) || !slices.Equal(ids(st.Observers), []int32{old}) {
			return fmt.Errorf("voters %v observers %v", ids(st.Voters), ids(st.Observers))
		}
		if st.Observers[0].DirectoryID != q.nodes[oi].DirectoryID() {
			return fmt.Errorf("observer %d reports no directory id yet: %+v", old, st.Observers[0])
		}
		return nil
	})
	if st.LeaderID == old {
		t.Fatalf("removed voter %d still leads: %+v", old, st)
	}
	close(stop)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// The removed voter follows the metadata as an observer.
	if _, err := obs.CreateTopic(ctx, metadata.TopicSpec{Name: "seen", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		if _, ok := q.nodes[oi].Image().Topic("seen"); !ok {
			return fmt.Errorf("observer %d does not see topic seen", old)
		}
		return nil
	})

	// Decommission the old voter's broker: stop it, unregister it.
	q.nodes[oi].Close()
	q.nodes[oi] = nil
	if err := obs.UnregisterBroker(ctx, old); err != nil {
		t.Fatalf("unregistering broker %d: %v", old, err)
	}
	if _, ok := obs.Image().Broker(old); ok {
		t.Fatalf("broker %d still registered", old)
	}
	describe(t, other, func(st metadata.QuorumState) error {
		if !slices.Equal(ids(st.Voters), rest) || len(st.Observers) != 0 {
			return fmt.Errorf("after decommission: voters %v observers %v", ids(st.Voters), ids(st.Observers))
		}
		return nil
	})
	if err := obs.UnregisterBroker(ctx, old); !errors.Is(err, metadata.ErrBrokerNotRegistered) {
		t.Fatalf("unregistering broker %d twice: %v", old, err)
	}
	// The new quorum serves.
	if _, err := obs.CreateTopic(ctx, metadata.TopicSpec{Name: "after", Partitions: 1, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveLastVoterRefused(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 1)
	ctx := context.Background()
	nd := q.nodes[0]
	if err := nd.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	err := nd.RemoveVoter(ctx, 1, nd.DirectoryID())
	if !errors.Is(err, metadata.ErrVoterNotFound) {
		t.Fatalf("removing the last voter: %v", err)
	}
	want := fmt.Sprintf("Cannot remove voter ReplicaKey(id=1, directoryId=Optional[%s]) from the set of voters [ReplicaKey(id=1, directoryId=Optional[%s])]", nd.DirectoryID(), nd.DirectoryID())
	if got := err.Error(); got != "voter not found: "+want {
		t.Fatalf("error %q, want %q", got, want)
	}
	describe(t, nd, func(st metadata.QuorumState) error {
		if !slices.Equal(ids(st.Voters), []int32{1}) || st.LeaderID != 1 {
			return fmt.Errorf("after refusing: %+v", st)
		}
		return nil
	})
}

// An observer the leader no longer hears from leaves DescribeQuorum
// after the observer session (Kafka's leader forgets observers that stop
// fetching); it stays a Raft nonvoter until it is unregistered, and
// shows again when it comes back.
func TestSilentObserverLeavesDescribe(t *testing.T) {
	t.Parallel()
	q := newQuorumTuned(t, 3, func(c *Config) { c.ObserverTimeout = time.Second })
	obs := q.addObserver(4)
	describe(t, q.nodes[0], func(st metadata.QuorumState) error {
		if !slices.Equal(ids(st.Observers), []int32{4}) {
			return fmt.Errorf("observers %v", ids(st.Observers))
		}
		return nil
	})
	obs.Close()
	describe(t, q.nodes[0], func(st metadata.QuorumState) error {
		if len(st.Observers) != 0 {
			return fmt.Errorf("observers %v after observer 4 stopped", ids(st.Observers))
		}
		return nil
	})
	servers, err := q.nodes[0].configuration()
	if err != nil || len(servers) != 4 {
		t.Fatalf("raft configuration %v: %v", servers, err)
	}
}

// lastCaughtUpTimestamp: the leader's time of the newest entry a replica
// had at its last report.
func TestTrackerCaughtUp(t *testing.T) {
	var q quorumTracker
	t0 := time.Unix(1000, 0)
	q.observe(1, 2, RaftReport{LastIndex: 5}, t0, 5) // caught up at t0
	q.observe(1, 3, RaftReport{LastIndex: 5}, t0.Add(time.Second), 8)
	q.observe(1, 3, RaftReport{LastIndex: 8}, t0.Add(2*time.Second), 9)
	m2, _ := q.member(1, 2)
	m3, _ := q.member(1, 3)
	if !m2.caughtUp.Equal(t0) || !m2.lastFetch.Equal(t0) {
		t.Fatalf("node 2: %+v", m2)
	}
	// Node 3 had 8 at 2s, which the leader's log ended at since 1s.
	if !m3.caughtUp.Equal(t0.Add(time.Second)) || !m3.lastFetch.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("node 3: caught up %v, last fetch %v", m3.caughtUp, m3.lastFetch)
	}
	// A new term forgets everything.
	if _, ok := q.member(2, 3); ok {
		t.Fatal("node 3 known in term 2")
	}
}
