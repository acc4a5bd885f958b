package group

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit"
)

// faultStorage is a one-partition __consumer_offsets in memory with the
// fault a real broker gives only under load, and not on demand: an
// append that reaches the leader's log but times out waiting for its
// replicas (REQUEST_TIMED_OUT). The test then decides what became of it:
// committed after all, or truncated by a new leader that never had it.
type faultStorage struct {
	mu        sync.Mutex
	log       [][]byte
	committed int  // batches on every replica
	failNext  bool // the next Append times out
}

func (s *faultStorage) Partitions() int32                { return 1 }
func (s *faultStorage) CreateTopic(int32) (int32, error) { return 1, nil }

func (s *faultStorage) Append(p int32, batch []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, bytes.Clone(batch))
	if s.failNext {
		s.failNext = false
		return fmt.Errorf("appending to %s-%d: %w: offset %d not replicated", OffsetsTopic, p, kerr.RequestTimedOut, len(s.log))
	}
	s.committed = len(s.log)
	return nil
}

func (s *faultStorage) Replay(_ int32, fn func([]byte) error) error {
	s.mu.Lock()
	bs := slices.Clone(s.log)
	s.mu.Unlock()
	for _, b := range bs {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func (s *faultStorage) WaitLogCommitted(ctx context.Context, _ int32) error {
	return testkit.Poll(time.Until(deadlineOf(ctx)), func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.committed < len(s.log) {
			return fmt.Errorf("%d of %d batches committed", s.committed, len(s.log))
		}
		return nil
	})
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}

// settle commits the uncommitted batches (the replicas caught up) or,
// with truncate, drops them (a new leader without them took over).
func (s *faultStorage) settle(truncate bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if truncate {
		s.log = s.log[:s.committed]
	}
	s.committed = len(s.log)
}

// A consumer group's coordinator whose append fails must not go on
// answering from the changes it could not write: members would act on
// an assignment the log may never hold (a leader change truncates it),
// and the next coordinator would disagree with them. It reloads the
// partition from its log once the log is committed, as Kafka's runtime
// reverts to its last committed state; meanwhile it answers
// COORDINATOR_LOAD_IN_PROGRESS. Both outcomes of the failed append are
// checked: truncated (B never joined) and committed after all (B joined).
func TestCoordinatorRevertsFailedAppend(t *testing.T) {
	for _, truncated := range []bool{true, false} {
		t.Run(fmt.Sprintf("truncated=%v", truncated), func(t *testing.T) {
			st := &faultStorage{}
			topics := &staticTopics{byName: map[string]TopicInfo{}}
			topics.add("t", 2)
			c, err := NewCoordinator(DefaultConfig(), st, Options{Topics: func() Topics { return topics }})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			hb := func(member string, epoch int32, owned ...int32) *kmsg.ConsumerGroupHeartbeatResponse {
				t.Helper()
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group, req.MemberID, req.MemberEpoch = "g", member, epoch
				req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, []string{"t"}
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				if len(owned) > 0 {
					rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
					rt.TopicID, rt.Partitions = topics.byName["t"].ID, owned
					req.Topics = append(req.Topics, rt)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				resp, err := c.ConsumerHeartbeat(ctx, req, "client", "/127.0.0.1")
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			if r := hb("A", 0); r.ErrorCode != 0 || r.MemberEpoch != 1 || assigned(r) != "[[0 1]]" {
				t.Fatalf("A's join: error %d, epoch %d, assignment %s", r.ErrorCode, r.MemberEpoch, assigned(r))
			}
			if r := hb("A", 1, 0, 1); r.ErrorCode != 0 {
				t.Fatalf("A's heartbeat: error %d", r.ErrorCode)
			}

			st.failNext = true
			if r := hb("B", 0); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
				t.Fatalf("B's join whose append failed: error %d, want COORDINATOR_NOT_AVAILABLE", r.ErrorCode)
			}
			// Not answered from B's unwritten join (A would be told to
			// give partition 1 up): the partition is reloading.
			if r := hb("A", 1, 0, 1); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
				t.Fatalf("A's heartbeat after the failed append: error %d, epoch %d, assignment %s; want COORDINATOR_LOAD_IN_PROGRESS", r.ErrorCode, r.MemberEpoch, assigned(r))
			}

			st.settle(truncated)
			var r *kmsg.ConsumerGroupHeartbeatResponse
			testkit.CheckFor(t, 10*time.Second, func() error {
				if r = hb("A", 1, 0, 1); r.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
					return errors.New("still reloading")
				}
				return nil
			})
			d := c.ConsumerDescribe([]string{"g"})[0]
			if truncated {
				// The log has A alone: A keeps both partitions.
				if r.ErrorCode != 0 || assigned(r) != "[[0 1]]" || len(d.Members) != 1 {
					t.Fatalf("after the truncated append: A error %d, epoch %d, assignment %s; %d members, want A alone with both partitions", r.ErrorCode, r.MemberEpoch, assigned(r), len(d.Members))
				}
				if r := hb("B", 0); r.ErrorCode != 0 || r.MemberEpoch == 0 {
					t.Fatalf("B's join again: error %d, epoch %d", r.ErrorCode, r.MemberEpoch)
				}
				return
			}
			// The log has B's join: A gives partition 1 up.
			if r.ErrorCode != 0 || assigned(r) != "[[0]]" || len(d.Members) != 2 {
				t.Fatalf("after the committed append: A error %d, epoch %d, assignment %s; %d members, want A and B", r.ErrorCode, r.MemberEpoch, assigned(r), len(d.Members))
			}
		})
	}
}
